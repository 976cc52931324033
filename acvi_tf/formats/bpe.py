"""Joint BPE with subword-nmt, the WMT'16 recipe the paper and tensorflow/nmt follow.

tensorflow/nmt's ``scripts/wmt16_en_de.sh`` (and Sennrich's wmt16-scripts) learn one set
of merges on the concatenated source and target training text (``learn_bpe.py -s N``,
minimum pair frequency 2) and apply it to every file of both languages with the ``@@``
separator; ``data_prep.translation`` builds corpora that way. Translations are scored
after the ``@@`` markers are removed. This module segments new text with a corpus's
codes and undoes the segmentation.
"""

import re

from subword_nmt import apply_bpe as apply_bpe_lib

SEPARATOR = "@@"
_BPE_MARKER = re.compile(r"@@( |$)", re.MULTILINE)


def segmenter(codes_path: str):
    """``line -> the line segmented with the merges of codes_path`` (``@@`` separator),
    as the builders segment their files."""
    with open(codes_path, encoding="utf-8") as codes:
        bpe = apply_bpe_lib.BPE(codes, separator=SEPARATOR)
    return bpe.process_line


def remove_bpe(text: str) -> str:
    """Undoes BPE: drops every ``"@@ "`` and a ``"@@"`` ending a line."""
    return _BPE_MARKER.sub("", text)
