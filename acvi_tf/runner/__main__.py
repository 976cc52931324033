"""``python -m acvi_tf.runner``: the generic command (``acvi_tf.runner.command``)."""

from acvi_tf.runner import command

# --help prints the main module's docstring: the command's usage
__doc__ = command.__doc__

if __name__ == "__main__":
    command.main()
