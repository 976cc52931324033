"""Tokenisers: NLTK/Treebank and the in-graph tensorflow-text and BPE ones."""
