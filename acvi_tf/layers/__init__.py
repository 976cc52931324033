"""Encoder layers the hosts share: the LSTM (``recurrent``)."""
