"""Context mechanisms: the contract, soft attention, ACVI, the latent-alignment
mechanisms, their registry, and their part of the training objective."""
