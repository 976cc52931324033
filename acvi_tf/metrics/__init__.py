"""Evaluation metrics shared by the three models.

``rouge``: ROUGE-1.5.5 through pyrouge, with ``rouge-score`` as a labelled fallback;
``meteor``: METEOR 1.5 (exact and full); ``bleu``: tokenized corpus BLEU-4 as
tensorflow/nmt, and each sentence's statistics; ``copying``: the novel-word and
OOV-adoption rates and lead-N; ``captions``: coco-caption's metrics (CIDEr-D also per
caption); ``bootstrap``: the paired bootstrap test of the difference between two systems.
"""
