"""tensorflow/nmt's text files: lines, tokens, parallel files and vocabularies.

The rules are those of tensorflow/nmt's ``utils/vocab_utils.py`` and
``utils/iterator_utils.py``:

* text files are read like ``tf.data.TextLineDataset``: lines end at ``"\\n"`` (a ``"\\r"``
  before it is part of the line ending), and nothing else in a line is touched;
* a line is split into tokens on the ASCII space only, as TF1's ``tf.string_split`` does
  (tabs and no-break spaces stay inside tokens); runs of spaces give no empty tokens;
* a vocab file has one token per line and starts with ``<unk>``, ``<s>``, ``</s>``
  (ids 0, 1, 2); ``check_vocab`` writes a repaired copy when it does not.
"""

import codecs
import os
from typing import Iterable, List, Tuple

from absl import logging

from acvi_tf import errors, files
from acvi_tf.formats import vocabulary

UNK = "<unk>"
SOS = "<s>"
EOS = "</s>"
UNK_ID = 0
SOS_ID = 1
EOS_ID = 2
SPECIALS = (UNK, SOS, EOS)
# How to build a vocabulary with words, for ``vocabulary.require_a_word``'s message.
BUILD_HINT = "one token per line; build it with data_prep.translation"


class NmtDataError(errors.UserError, ValueError):
    """A vocab or text file breaks the rules; the message names the file, line and fix."""


def read_lines(path: str) -> List[str]:
    """The lines of a UTF-8 text file, as ``tf.data.TextLineDataset`` reads them.

    Lines end at ``"\\n"``; a ``"\\r"`` just before it is dropped too; a final line
    without a newline counts; a byte order mark at the start is dropped. Unicode line
    separators (U+2028, U+0085, ...) do not end a line, unlike ``str.splitlines``.

    Args:
      path: the file.

    Returns:
      The list of lines without their line endings.

    Raises:
      NmtDataError: the file is missing or a line is not valid UTF-8.
    """
    try:
        with open(path, "rb") as f:
            data = f.read()
    except FileNotFoundError as e:
        raise NmtDataError("%s: no such file; check the path" % path) from e
    if data.startswith(codecs.BOM_UTF8):  # Windows tools and Excel write one
        data = data[len(codecs.BOM_UTF8) :]
    raw_lines = data.split(b"\n")
    if raw_lines[-1] == b"":
        raw_lines.pop()
    lines = []
    for line_number, raw in enumerate(raw_lines, start=1):
        if raw.endswith(b"\r"):
            raw = raw[:-1]
        try:
            lines.append(raw.decode("utf-8"))
        except UnicodeDecodeError as e:
            raise NmtDataError(
                "%s:%d: byte 0x%02x at byte %d of the line is not UTF-8; re-encode the "
                "file as UTF-8 (for example `iconv -f LATIN1 -t UTF-8`)"
                % (path, line_number, raw[e.start], e.start + 1)
            ) from e
    return lines


def tokenize(line: str) -> List[str]:
    """Tokens of a line split on the ASCII space, as TF1's ``tf.string_split``."""
    return [token for token in line.split(" ") if token]


def read_vocab_tokens(vocab_file: str) -> List[str]:
    """The tokens of a vocab file, one per line, checked for blanks and duplicates."""
    tokens, first_line = [], {}
    for line_number, line in enumerate(read_lines(vocab_file), start=1):
        token = line.strip(" \t\r\f\v")
        if not token:
            raise NmtDataError(
                "%s:%d: empty line; a vocab file has one token per line, "
                "delete the line" % (vocab_file, line_number)
            )
        if " " in token or "\t" in token:
            raise NmtDataError(
                "%s:%d: %r holds whitespace; a vocab file has one token per line (for a "
                "'word count' file keep the first column: cut -f1 -d' ')"
                % (vocab_file, line_number, token)
            )
        if token in first_line:
            raise NmtDataError(
                "%s:%d: %r repeats line %d; each token must appear once, "
                "delete one of the lines" % (vocab_file, line_number, token, first_line[token])
            )
        first_line[token] = line_number
        tokens.append(token)
    return tokens


def check_vocab(vocab_file: str, out_dir: str) -> Tuple[int, str]:
    """Checks that a vocab starts with ``<unk> <s> </s>``; writes a repaired copy if not.

    tensorflow/nmt's ``check_vocab``: when the first three tokens are not the specials,
    the specials are put first in a new file ``out_dir/<basename of vocab_file>``. Unlike
    tensorflow/nmt, a special found further down is moved rather than duplicated (a
    duplicate would make the lookup table ambiguous).

    Args:
      vocab_file: one token per line.
      out_dir: folder of the repaired copy.

    Returns:
      ``(vocab_size, path)``: the size including the specials and the file to use (the
      original when it was already right).

    Raises:
      NmtDataError: the file is missing, not UTF-8, has an empty line, a line with
        whitespace or a repeated token, no token besides the specials, or the repaired
        copy would overwrite it.
    """
    tokens = read_vocab_tokens(vocab_file)
    words = len(set(tokens) - set(SPECIALS))
    vocabulary.require_a_word(vocab_file, SPECIALS, words, NmtDataError, fix=BUILD_HINT)
    if tuple(tokens[:3]) == SPECIALS:
        logging.info(
            "Vocab %s: %d tokens, starts with %s", vocab_file, len(tokens), " ".join(SPECIALS)
        )
        return len(tokens), vocab_file
    new_file = os.path.join(out_dir, os.path.basename(vocab_file))
    if os.path.abspath(new_file) == os.path.abspath(vocab_file):
        raise NmtDataError(
            "%s does not start with %s and the repaired copy would "
            "overwrite it; give an out_dir other than its folder" % (vocab_file, " ".join(SPECIALS))
        )
    moved = ["%s (line %d)" % (t, tokens.index(t) + 1) for t in SPECIALS if t in tokens]
    added = [t for t in SPECIALS if t not in tokens]
    repaired = list(SPECIALS) + [t for t in tokens if t not in SPECIALS]
    files.atomic_write_text(new_file, "".join(t + "\n" for t in repaired))
    logging.warning(
        "Vocab %s starts with %s, not %s: wrote %s with the specials first (added: %s; moved: %s)",
        vocab_file,
        " ".join(tokens[:3]),
        " ".join(SPECIALS),
        new_file,
        ", ".join(added) or "none",
        ", ".join(moved) or "none",
    )
    return len(repaired), new_file


def read_parallel(src_path: str, tgt_path: str) -> List[Tuple[str, str]]:
    """Aligned ``(src_line, tgt_line)`` pairs of two parallel text files.

    Args:
      src_path: source file, one sentence per line.
      tgt_path: target file, aligned line by line.

    Returns:
      The list of pairs; lines keep everything but their line ending.

    Raises:
      NmtDataError: a file is missing or not UTF-8, or the line counts differ.
    """
    src_lines = read_lines(src_path)
    tgt_lines = read_lines(tgt_path)
    if len(src_lines) != len(tgt_lines):
        raise NmtDataError(
            "%s has %d lines but %s has %d; parallel files need one sentence per line on "
            "both sides, aligned (check for a truncated file or a stray newline)"
            % (src_path, len(src_lines), tgt_path, len(tgt_lines))
        )
    return list(zip(src_lines, tgt_lines))


def write_vocab(path: str, tokens: Iterable[str]) -> int:
    """Writes a vocab file: ``<unk> <s> </s>``, then ``tokens`` in order, atomically.

    Args:
      path: the vocab file.
      tokens: the other tokens (a special among them keeps its place at the top).

    Returns:
      The vocab size, specials included.
    """
    tokens = list(SPECIALS) + [token for token in tokens if token not in SPECIALS]
    files.atomic_write_text(path, "".join(token + "\n" for token in tokens))
    return len(tokens)
