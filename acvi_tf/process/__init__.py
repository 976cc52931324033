"""The command's process: clean stops on SIGINT and SIGTERM (``stops``), which every
layer above may check."""
