"""Corpus builders for the paper's corpora and the shipped demo samples."""
