"""What the hosts' inference shares: decoding (the protocol, beam search, greedy),
the SavedModel export and the commands' flags and line I/O."""
