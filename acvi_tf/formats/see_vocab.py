"""See et al.'s vocabulary file and the special tokens of their corpus.

The file has one ``word count`` line per word, most frequent first (``make_datafiles.py``
writes the 200,000 most common). It must not hold the sentence markers ``<s>`` and
``</s>`` that wrap each abstract sentence in the ``.bin`` files, nor the four tokens the
model reserves ids 0-3 for: [UNK], [PAD], [START], [STOP].
"""

import collections
from typing import List

from absl import logging

from acvi_tf import errors, files

UNKNOWN_TOKEN = "[UNK]"
PAD_TOKEN = "[PAD]"
START_DECODING = "[START]"
STOP_DECODING = "[STOP]"
SENTENCE_START = "<s>"
SENTENCE_END = "</s>"
RESERVED = (UNKNOWN_TOKEN, PAD_TOKEN, START_DECODING, STOP_DECODING)
# How to build a vocabulary with words, for ``vocabulary.require_a_word``'s message.
BUILD_HINT = "want 'word count' lines, most frequent first; build it with data_prep"
VOCAB_SIZE = 200000  # See's make_datafiles.py keeps the 200,000 most common words


class VocabError(errors.UserError, ValueError):
    """A vocab file breaks See's rules; the message names the file, the line and the fix."""


def read_words(vocab_file: str, max_words: int = 0) -> List[str]:
    """The words of a vocab file, in file order (none when the file has none: the
    commands that read one refuse that with ``vocabulary.require_a_word``).

    A line that is not ``word count`` is skipped with a warning, as See's reader does.

    Args:
      vocab_file: the file.
      max_words: the most words read; 0 reads the whole file.

    Returns:
      The list of words.

    Raises:
      VocabError: the file is missing or not UTF-8, holds ``<s>``, ``</s>`` or a
        reserved token, or holds a word twice.
    """
    words, seen = [], set()
    for line_number, line in files.utf8_lines(vocab_file, VocabError):
        pieces = line.split()
        if len(pieces) != 2:
            logging.warning(
                "%s:%d: skipping malformed vocab line %r (want 'word count')",
                vocab_file,
                line_number,
                line.rstrip("\n"),
            )
            continue
        word = pieces[0]
        if word in (SENTENCE_START, SENTENCE_END) + RESERVED:
            raise VocabError(
                "%s:%d: %r must not be in the vocab file (<s>, </s>, [UNK], [PAD], "
                "[START] and [STOP] are reserved); remove the line"
                % (vocab_file, line_number, word)
            )
        if word in seen:
            raise VocabError(
                "%s:%d: duplicated word %r; each word must appear once"
                % (vocab_file, line_number, word)
            )
        seen.add(word)
        words.append(word)
        if max_words and len(words) >= max_words:
            break
    return words


def write_vocab(path: str, counter: collections.Counter, size: int = VOCAB_SIZE) -> int:
    """Writes the ``size`` most common words as ``word count`` lines, atomically.

    Args:
      path: the vocab file.
      counter: a ``collections.Counter`` of words.
      size: the most words written (See's 200,000).

    Returns:
      The number of lines written.
    """
    entries = counter.most_common(size)
    files.atomic_write_text(path, "".join("%s %d\n" % entry for entry in entries))
    return len(entries)
