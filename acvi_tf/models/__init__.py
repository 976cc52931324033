"""Whole models the hosts share: the Transformer baseline (``transformer``)."""
