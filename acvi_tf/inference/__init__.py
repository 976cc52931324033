"""What the hosts' inference shares: decoding (the protocol, beam search, greedy),
the SavedModel export, the commands' flags and line I/O, and the side-by-side
comparison of two decodes (``compare``)."""
