"""The Runner (``runner``) and what a host declares to it (``task``)."""
