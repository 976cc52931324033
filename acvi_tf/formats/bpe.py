"""Joint BPE with subword-nmt, the WMT'16 recipe the paper and tensorflow/nmt follow.

tensorflow/nmt's ``scripts/wmt16_en_de.sh`` (and Sennrich's wmt16-scripts) learn one set
of merges on the concatenated source and target training text (``learn_bpe.py -s N``,
minimum pair frequency 2), apply it to every file of both languages with the ``@@``
separator, and build one vocab from the BPE'd training text of both sides: ``<unk> <s>
</s>`` then the tokens by decreasing frequency (``get_vocab.py``, ties in order of first
appearance). Translations are scored after the ``@@`` markers are removed.
"""

import collections
import io
import itertools
import re
from typing import Sequence

from absl import logging
from subword_nmt import apply_bpe as apply_bpe_lib
from subword_nmt import learn_bpe as learn_bpe_lib

from acvi_tf import files
from acvi_tf.formats import nmt_text

SEPARATOR = "@@"
_BPE_MARKER = re.compile(r"@@( |$)", re.MULTILINE)


def learn_joint_bpe(
    train_files: Sequence[str], num_merges: int, codes_path: str, min_frequency: int = 2
) -> None:
    """Learns BPE merges on the concatenation of the training files.

    Args:
      train_files: tokenized training text of both languages.
      num_merges: number of merge operations (32,000 in the WMT'16 recipe).
      codes_path: output codes file (subword-nmt format, ``#version: 0.2`` header).
      min_frequency: stop when no pair is this frequent (subword-nmt's default 2).
    """
    lines = itertools.chain.from_iterable(nmt_text.read_lines(path) for path in train_files)
    codes = io.StringIO()
    learn_bpe_lib.learn_bpe(lines, codes, num_merges, min_frequency=min_frequency)
    files.atomic_write_text(codes_path, codes.getvalue())
    logging.info(
        "Learned %d BPE merges from %s into %s",
        codes.getvalue().count("\n") - 1,
        ", ".join(train_files),
        codes_path,
    )


def apply_bpe(codes_path: str, in_path: str, out_path: str) -> None:
    """Writes ``in_path`` segmented with the merges of ``codes_path`` (``@@`` separator).

    Tokens are split on spaces as subword-nmt does; runs of spaces collapse to one.
    """
    with open(codes_path, encoding="utf-8") as codes:
        bpe = apply_bpe_lib.BPE(codes, separator=SEPARATOR)
    lines = nmt_text.read_lines(in_path)
    files.atomic_write_text(out_path, "".join(bpe.segment(line) + "\n" for line in lines))
    logging.info("Applied BPE to %d lines of %s: %s", len(lines), in_path, out_path)


def segmenter(codes_path: str):
    """``line -> the line segmented with the merges of codes_path`` (``@@`` separator),
    as the builders segment their files."""
    with open(codes_path, encoding="utf-8") as codes:
        bpe = apply_bpe_lib.BPE(codes, separator=SEPARATOR)
    return bpe.process_line


def remove_bpe(text: str) -> str:
    """Undoes BPE: drops every ``"@@ "`` and a ``"@@"`` ending a line."""
    return _BPE_MARKER.sub("", text)


def build_vocab(paths: Sequence[str], vocab_path: str) -> int:
    """Writes a tensorflow/nmt vocab: ``<unk> <s> </s>``, then tokens by frequency.

    Args:
      paths: tokenized (BPE'd) text files; the counts are joint over all of them.
      vocab_path: output file, one token per line.

    Returns:
      The vocab size, specials included.
    """
    counts = collections.Counter()
    for path in paths:
        for line in nmt_text.read_lines(path):
            counts.update(nmt_text.tokenize(line))
    for special in nmt_text.SPECIALS:
        if counts.pop(special, 0):
            logging.warning(
                "%s occurs in the text of %s; it keeps its special id", special, ", ".join(paths)
            )
    size = nmt_text.write_vocab(vocab_path, [token for token, _ in counts.most_common()])
    logging.info("Wrote %s: %d tokens", vocab_path, size)
    return size
