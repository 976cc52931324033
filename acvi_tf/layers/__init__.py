"""Encoder and decoder layers the hosts share: the LSTM and the Transformer."""
