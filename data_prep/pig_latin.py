"""Builds the character-level English -> Pig Latin task of the attention assignment.

The task is the one of the CSC413 (University of Toronto) assignment "Attention-Based
Neural Machine Translation" in the reading list: every example is one word and its Pig
Latin form, read and written character by character. The assignment states the rules
only in outline (a leading consonant moves to the end and "ay" is added, a leading vowel
keeps the word and adds "way", some consonant pairs such as "sh" move as a block);
``pig_latin`` follows the exact behaviour of the assignment's data file
``pig_latin_data.txt`` (the unique words of "Sense and Sensibility" and their
translations). Checked against a public copy of that file, it reproduces every pair made
of letters and hyphens except two dotted abbreviations ("m.d." and "m.p.", listed there
as ``md mayday`` and ``mp maypay``).

The words are not Austen's but the demo corpora's: the first field of every line of
``--words_file`` (by default the shipped Debian summarization vocab,
``data_prep/samples/debian_descriptions/vocab``, so the build needs only shipped data).

Rules, in the order they are applied:

1. A word is kept when it is lowercase letters, optionally in hyphen-separated parts
   (``[a-z]+(-[a-z]+)*``, the assignment's 26 letters and dash), and has at most
   ``--max_word_chars`` characters; other lines are counted and skipped.
2. Deduplication: the first occurrence of a word is kept.
3. Split by a stable hash of the word: ``int(sha1(word).hexdigest(), 16) % 100`` below 90
   is train, below 95 dev, the rest test. Each split is written in ascending hash order;
   ``--max_{train,dev,test}`` keep the words with the smallest hashes.
4. Files: ``{train,dev,test}.src`` hold the words and ``{train,dev,test}.tgt`` their Pig
   Latin forms, one word per line with its characters separated by single spaces
   (``s h o p`` -> ``o p s h a y``), so that whitespace tokenisation gives characters.
   ``vocab.src`` and ``vocab.tgt`` (identical, the assignment's shared vocabulary) are in
   the tensorflow/nmt format: ``<unk>``, ``<s>``, ``</s>``, then ``a`` ... ``z`` and ``-``.

Every file is written atomically (a temporary file, then ``os.replace``).

Usage::

  python -m data_prep.pig_latin --out_dir=pig_latin \\
      [--words_file=data_prep/samples/debian_descriptions/vocab]
"""

import collections
import dataclasses
import os
import re
import string
from typing import Dict, Iterable, List, Mapping, Optional, Sequence

from absl import flags, logging

from acvi_tf import config as config_lib
from acvi_tf import errors
from acvi_tf.formats import nmt_text
from data_prep import splits as splits_lib
from data_prep.translation import SPLITS, write_lines

VOWELS = "aeiou"
CHARACTERS = tuple(string.ascii_lowercase) + ("-",)
DEFAULT_WORDS_FILE = os.path.join(
    os.path.dirname(os.path.abspath(__file__)), "samples", "debian_descriptions", "vocab"
)

_WORD = re.compile(r"[a-z]+(?:-[a-z]+)*")


class WordsFileError(errors.UserError, ValueError):
    """The words file cannot be read; the message names the file (and line)."""


def _onset_length(part):
    """The length of the leading consonant cluster moved to the end of ``part``."""
    for index, char in enumerate(part):
        is_qu = char == "u" and index > 0 and part[index - 1] == "q"
        if char in VOWELS + "y" and not is_qu:
            return index
    return len(part)


def _translate_part(part):
    if part[0] in VOWELS:
        return part + "way"
    onset = _onset_length(part)
    return part[onset:] + part[:onset] + "ay"


def pig_latin(word: str) -> str:
    """Translates one word to Pig Latin with the rules of the assignment's data.

    Rules:

    1. A part starting with a vowel (``a e i o u``) is kept and gets ``way``:
       ``impress`` -> ``impressway``, ``of`` -> ``ofway``.
    2. Otherwise the leading consonants up to the first vowel move to the end as a block
       and ``ay`` is added: ``team`` -> ``eamtay``, ``shopping`` -> ``oppingshay``,
       ``the`` -> ``ethay``, ``strong`` -> ``ongstray``.
    3. ``y`` ends the consonant block like a vowel (``fly`` -> ``yflay``,
       ``hysterical`` -> ``ystericalhay``), also as the first letter, where the block is
       empty and only ``ay`` is added (``yet`` -> ``yetay``, ``younger`` -> ``youngeray``);
       it never takes ``way``.
    4. A ``u`` right after ``q`` belongs to the block: ``quit`` -> ``itquay``,
       ``square`` -> ``aresquay``.
    5. A part without a vowel or ``y`` moves whole: ``mrs`` -> ``mrsay``.
    6. A hyphenated word is translated part by part, the hyphens kept:
       ``good-humoured`` -> ``oodgay-umouredhay``, ``self-evident`` -> ``elfsay-evidentway``.

    Args:
      word: lowercase letters, optionally in hyphen-separated parts.

    Returns:
      The Pig Latin form.

    Raises:
      ValueError: ``word`` is not of that form.
    """
    if not _WORD.fullmatch(word):
        raise ValueError(
            "pig_latin takes lowercase letters in hyphen-separated parts, got %r" % (word,)
        )
    return "-".join(_translate_part(part) for part in word.split("-"))


def characters(text: str) -> str:
    """``text`` as space-separated characters: ``shop`` -> ``s h o p``."""
    return " ".join(text)


@dataclasses.dataclass
class Stats:
    """What the build read, dropped and wrote; ``summary()`` formats it."""

    lines_read: int = 0
    not_words: int = 0
    too_long: int = 0
    duplicates: int = 0
    words_before_caps: dict = dataclasses.field(default_factory=dict)
    words: dict = dataclasses.field(default_factory=dict)
    vocab_size: int = 0

    def summary(self) -> str:
        """A multi-line, human-readable account of the build."""
        lines = [
            "lines read: %d; skipped: %d not [a-z]+(-[a-z]+)*, %d too long, "
            "%d duplicate" % (self.lines_read, self.not_words, self.too_long, self.duplicates)
        ]
        for split in SPLITS:
            lines.append(
                "%-5s words: %d (of %d before the cap)"
                % (split, self.words.get(split, 0), self.words_before_caps.get(split, 0))
            )
        lines.append("vocab: %d (with the 3 special tokens)" % self.vocab_size)
        return "\n".join(lines)


def read_words(path: str, max_word_chars: int, stats: Stats) -> List[str]:
    """Reads the candidate words: the first field of every line of ``path``.

    Args:
      path: a word list or a ``word count`` vocab file (UTF-8).
      max_word_chars: the longest word kept, in characters.
      stats: a ``Stats`` whose counters are updated.

    Returns:
      The kept words, deduplicated, in file order.

    Raises:
      WordsFileError: the file cannot be opened or is not UTF-8.
    """
    words = {}
    try:
        with open(path, "rb") as f:
            for number, raw in enumerate(f, start=1):
                try:
                    fields = raw.decode("utf-8").split()
                except UnicodeDecodeError as e:
                    raise WordsFileError("%s:%d: not UTF-8 text (%s)" % (path, number, e)) from e
                stats.lines_read += 1
                word = fields[0] if fields else ""
                if not _WORD.fullmatch(word):
                    stats.not_words += 1
                elif len(word) > max_word_chars:
                    stats.too_long += 1
                elif word in words:
                    stats.duplicates += 1
                else:
                    words[word] = None
    except OSError as e:
        raise WordsFileError("cannot read --words_file %s: %s" % (path, e)) from e
    return list(words)


def split_words(
    words: Iterable[str], caps: Optional[Mapping[str, Optional[int]]] = None
) -> Dict[str, List[str]]:
    """Splits words by hash, orders each split by hash and applies the caps.

    Args:
      words: distinct words.
      caps: optional dict split -> the most words to keep (None or missing: all).

    Returns:
      A dict split -> list of words in ascending hash order.
    """
    caps = caps or {}
    splits = {split: [] for split in SPLITS}
    for hash_value, word in sorted((splits_lib.key_hash(word), word) for word in words):
        splits[splits_lib.split_of(hash_value, SPLITS)].append(word)
    for split, members in splits.items():
        if caps.get(split) is not None:
            del members[caps[split] :]
    return splits


def build(
    words_file: str,
    out_dir: str,
    max_word_chars: int = 20,
    caps: Optional[Mapping[str, Optional[int]]] = None,
    allow_empty: Sequence[str] = (),
) -> Stats:
    """Reads the words and writes the character-level task into ``out_dir``.

    Args:
      words_file: a word list or ``word count`` vocab file.
      out_dir: the output directory (created if needed).
      max_word_chars: longer words are skipped.
      caps: optional dict split -> the most words to keep.
      allow_empty: the splits that may get no word.

    Returns:
      The ``Stats`` of the build.

    Raises:
      WordsFileError: the words file cannot be read; nothing is written then.
      data_prep.splits.EmptySplitError: a split not in ``allow_empty`` nor capped to 0
        would get no word; nothing is written then.
    """
    stats = Stats()
    words = read_words(words_file, max_word_chars, stats)
    stats.words_before_caps = collections.Counter(
        splits_lib.split_of(splits_lib.key_hash(w), SPLITS) for w in words
    )
    splits = split_words(words, caps)
    splits_lib.require_records({s: len(m) for s, m in splits.items()}, allow_empty, caps, "words")
    os.makedirs(out_dir, exist_ok=True)
    for split, members in splits.items():
        stats.words[split] = len(members)
        write_lines(os.path.join(out_dir, split + ".src"), map(characters, members))
        write_lines(
            os.path.join(out_dir, split + ".tgt"), (characters(pig_latin(word)) for word in members)
        )
    for side in ("src", "tgt"):
        stats.vocab_size = nmt_text.write_vocab(os.path.join(out_dir, "vocab." + side), CHARACTERS)
    return stats


def define_flags(fv: flags.FlagValues = flags.FLAGS) -> None:
    """Defines the command-line flags.

    Called only when the module runs as a program, so that several builders (and their
    tests) can be imported into one process without clashing flags.
    """
    flags.DEFINE_string(
        "words_file",
        DEFAULT_WORDS_FILE,
        "Word list or `word count` vocab file; the first field of each line is a candidate word.",
        flag_values=fv,
    )
    flags.DEFINE_string(
        "out_dir",
        None,
        "Directory for {train,dev,test}.{src,tgt} and vocab.{src,tgt}.",
        flag_values=fv,
    )
    flags.DEFINE_integer(
        "max_word_chars", 20, "Skip words with more characters.", lower_bound=1, flag_values=fv
    )
    flags.DEFINE_integer(
        "max_train",
        None,
        "Keep at most this many train words (smallest hashes first). Default: all.",
        lower_bound=0,
        flag_values=fv,
    )
    flags.DEFINE_integer(
        "max_dev", None, "Like --max_train, for dev.", lower_bound=0, flag_values=fv
    )
    flags.DEFINE_integer(
        "max_test", None, "Like --max_train, for test.", lower_bound=0, flag_values=fv
    )
    splits_lib.define_allow_empty(SPLITS, fv)
    flags.mark_flag_as_required("out_dir", flag_values=fv)


def run(config: config_lib.Config) -> None:
    """Builds the task from the flags and prints the summary."""
    caps = {"train": config.max_train, "dev": config.max_dev, "test": config.max_test}
    logging.info("reading %s", config.words_file)
    stats = build(
        config.words_file, config.out_dir, config.max_word_chars, caps, config.allow_empty
    )
    print("Built %s from %s\n%s" % (config.out_dir, config.words_file, stats.summary()))


if __name__ == "__main__":
    config_lib.run_command(define_flags, run)
