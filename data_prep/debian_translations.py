"""Builds a small real translation corpus: Debian package descriptions, English -> any
language Debian translates them into (German by default).

The inputs are two Debian translation indexes of the same archive, ``Translation-en``
and ``Translation-<lang>`` (RFC-822 style records: ``Package``, ``Description-md5`` and
``Description-<lang>``, whose first line is the one-line synopsis and whose indented
lines form the long description, paragraphs separated by a line holding only ``.``).
They are read with the record parser of ``data_prep.debian_descriptions``; the pairs then
go through ``data_prep.translation`` (its rules, with empty pairs dropped rather than
refused), which writes ``{train,dev,test}.{en,<lang>}``, ``vocab.{en,<lang>}`` and
``bpe/``.

What this reader adds:

1. Join: an English and a translated record belong together when they have the same
   ``Description-md5`` (the md5 of the English description the translation translates).
   Within each index the first record of an md5 is used; later records with the same md5
   (other packages sharing the description) are counted and ignored.
2. Alignment: every joined description gives its synopsis pair and, when both long
   descriptions have the same number of paragraphs, the pairs (English paragraph k,
   translated paragraph k). With different paragraph counts only the synopsis pair is
   used.
3. The split key is the md5, so all pairs of one description land in one split, in their
   order (synopsis, then paragraphs). Tokens are lowercased NLTK Treebank tokens; pairs
   with more than ``--max_len`` tokens on either side are dropped.

Usage::

  python -m data_prep.debian_translations --out_dir=iwslt_style [--lang=de] \\
      [--en_file=/var/lib/apt/lists/..._main_i18n_Translation-en.lz4] \\
      [--lang_file=/var/lib/apt/lists/..._main_i18n_Translation-de.lz4]
"""

import dataclasses
from typing import Dict, Iterable, Iterator, List, Mapping, Optional, Sequence, Tuple

from absl import flags, logging

from acvi_tf import config as config_lib
from acvi_tf.text import tokenizers
from data_prep import debian_descriptions as dd
from data_prep import splits as splits_lib
from data_prep import translation

APT_LISTS_GLOB = "/var/lib/apt/lists/*_main_i18n_Translation-%s*"


@dataclasses.dataclass
class Stats(translation.Stats):
    """The corpus build's counts with what reading and joining the indexes adds."""

    records_read: dict = dataclasses.field(default_factory=dict)
    repeated_md5: dict = dataclasses.field(default_factory=dict)
    joined: int = 0
    paragraphs_aligned: int = 0
    paragraphs_mismatched: int = 0

    def summary(self) -> str:
        """A multi-line, human-readable account of the build."""
        lines = [
            "Translation-%s records: %d (%d repeating an earlier md5)"
            % (lang, self.records_read.get(lang, 0), self.repeated_md5.get(lang, 0))
            for lang in self.records_read
        ]
        lines.append(
            "descriptions joined on md5: %d (paragraphs aligned in %d, counts differ in %d)"
            % (self.joined, self.paragraphs_aligned, self.paragraphs_mismatched)
        )
        return "\n".join(lines + [super().summary()])


def default_index(lang: str) -> str:
    """The ``main`` Translation-``lang`` index apt downloaded (release suite first).

    Args:
      lang: the language code (``en``, ``de``, ``it``, ...).

    Returns:
      The path of the index.

    Raises:
      TranslationFileError: apt has no such index.
    """
    pattern = APT_LISTS_GLOB % lang
    try:
        return dd.default_translation_file(pattern)
    except dd.TranslationFileError:
        raise dd.TranslationFileError(
            "no Translation-%s index matches %s; pass --%s, or download one with "
            "translations enabled: `apt-get update -o Acquire::Languages::=%s` (in Docker "
            "images remove /etc/apt/apt.conf.d/docker-no-languages first)"
            % (lang, pattern, "en_file" if lang == "en" else "lang_file", lang)
        ) from None


def _check_record(fields, start, lang, path):
    for name in ("Description-md5", "Description-" + lang):
        if name not in fields:
            raise dd.TranslationFileError(
                "%s:%d: the record starting on this line has no %s field; is this a Debian "
                "Translation-%s index?" % (path, start, name, lang)
            )


def keyed_by_md5(lines: Iterable[str], lang: str, path: str) -> Iterator[str]:
    """Presents a Translation-``lang`` index to ``parse_records`` keyed by its md5.

    ``parse_records`` reads ``Translation-en`` and keys a record by ``Package``. Field names
    are renamed line by line (so line numbers in its messages stay right):
    ``Package`` -> ``X-Package``, ``Description-md5`` -> ``Package`` and
    ``Description-<lang>`` -> ``Description-en``. The returned records' ``package`` is thus
    the md5. A record without ``Description-md5`` or ``Description-<lang>`` is reported
    here, under the real field names, before ``parse_records`` sees it.

    Args:
      lines: the index's text lines.
      lang: the language code of the index.
      path: the file name used in error messages.

    Yields:
      The lines, renamed.

    Raises:
      TranslationFileError: a record lacks one of the two fields or has an empty md5.
    """
    renames = {
        "Package": "X-Package",
        "Description-md5": "Package",
        "Description-" + lang: "Description-en",
    }
    fields, start = set(), None
    for number, line in enumerate(lines, start=1):
        if not line.strip():
            if fields:
                _check_record(fields, start, lang, path)
            fields = set()
        elif line[0] not in " \t":
            name, colon, value = line.partition(":")
            if not fields:
                start = number
            fields.add(name)
            if name == "Description-md5" and not value.strip():
                raise dd.TranslationFileError("%s:%d: empty Description-md5 field" % (path, number))
            if colon and name in renames:
                line = renames[name] + colon + value
        yield line
    if fields:
        _check_record(fields, start, lang, path)


def read_descriptions(path: str, lang: str, stats: Stats) -> Dict[str, dd.Record]:
    """Reads a Translation index into md5 -> ``Record`` (first record of each md5).

    Args:
      path: plain, ``.gz``, ``.xz`` or ``.lz4`` Translation-``lang`` file.
      lang: its language code.
      stats: a ``Stats`` whose record counters are updated.

    Returns:
      A dict md5 -> ``debian_descriptions.Record`` (its ``package`` is the md5), in file
      order.

    Raises:
      TranslationFileError: the file cannot be read or parsed.
    """
    descriptions = {}
    stats.records_read[lang] = stats.repeated_md5[lang] = 0
    try:
        with dd.open_lines(path) as lines:
            for record in dd.parse_records(keyed_by_md5(lines, lang, path), path):
                stats.records_read[lang] += 1
                if record.package in descriptions:
                    stats.repeated_md5[lang] += 1
                else:
                    descriptions[record.package] = record
    except UnicodeDecodeError as e:
        raise dd.TranslationFileError(
            "%s is not UTF-8 text (%s); is it a Translation-%s index?" % (path, e, lang)
        ) from e
    return descriptions


def aligned_texts(english: dd.Record, translated: dd.Record, stats: Stats) -> List[Tuple[str, str]]:
    """The (English, translated) raw text pairs of one joined description.

    Args:
      english: the English ``Record``.
      translated: the translated ``Record`` with the same md5.
      stats: a ``Stats`` whose alignment counters are updated.

    Returns:
      A list of text pairs: the synopses, then paragraph k with paragraph k when both
      sides have the same number of paragraphs.
    """
    texts = [(english.synopsis, translated.synopsis)]
    if len(english.paragraphs) == len(translated.paragraphs):
        stats.paragraphs_aligned += 1
        texts.extend(zip(english.paragraphs, translated.paragraphs))
    else:
        stats.paragraphs_mismatched += 1
    return texts


def sources(
    english: Mapping[str, dd.Record], translated: Mapping[str, dd.Record], stats: Stats
) -> Iterator[translation.Source]:
    """The raw pairs of the joined descriptions, keyed by md5, in English-index order."""
    for md5, en_record in english.items():
        other = translated.get(md5)
        if other is None:
            continue
        stats.joined += 1
        for en_text, other_text in aligned_texts(en_record, other, stats):
            yield translation.Source(en_text, other_text, md5, "description %s" % md5)


def make_pairs(
    english: Mapping[str, dd.Record],
    translated: Mapping[str, dd.Record],
    max_len: int,
    stats: Stats,
) -> List[translation.Pair]:
    """Tokenised pairs of the joined descriptions (``translation.make_pairs``, empty
    pairs dropped)."""
    return translation.make_pairs(
        sources(english, translated, stats),
        tokenizers.batch_tokenizer("treebank"),
        max_len,
        stats,
        True,
    )


def build(
    en_file: str,
    lang_file: str,
    out_dir: str,
    lang: str = "de",
    max_len: int = 50,
    caps: Optional[Mapping[str, Optional[int]]] = None,
    min_count: int = 1,
    bpe_merges: int = 8000,
    allow_empty: Sequence[str] = (),
) -> Stats:
    """Reads both indexes and writes the word-level corpus and its BPE variant.

    Args:
      en_file: plain, ``.gz``, ``.xz`` or ``.lz4`` Translation-en file.
      lang_file: the same for Translation-``lang``.
      out_dir: the output directory (created if needed); BPE files go to ``out_dir/bpe``.
      lang: the target language code.
      max_len: pairs with more tokens on either side are dropped.
      caps: optional dict split -> the most pairs to keep.
      min_count: the fewest train occurrences of a word-level vocab entry.
      bpe_merges: the number of joint BPE merge operations (0: no ``bpe/``).
      allow_empty: the splits that may get no pair.

    Returns:
      The ``Stats`` of the build.

    Raises:
      TranslationFileError: a file cannot be read or parsed; nothing is written then.
      data_prep.splits.EmptySplitError: a split not in ``allow_empty`` would get no
        pair; nothing is written then.
    """
    stats = Stats()
    english = read_descriptions(en_file, "en", stats)
    translated = read_descriptions(lang_file, lang, stats)
    pairs = make_pairs(english, translated, max_len, stats)
    languages = ("en", lang)
    translation.write_corpus(
        pairs, out_dir, languages, stats, caps, min_count, bpe_merges, allow_empty=allow_empty
    )
    translation.write_corpus_record(out_dir, languages, "treebank", True, bpe_merges)
    return stats


def define_flags(fv: flags.FlagValues = flags.FLAGS) -> None:
    """Defines the command-line flags.

    Called only when the module runs as a program, so that several builders (and their
    tests) can be imported into one process without clashing flags.
    """
    flags.DEFINE_string(
        "en_file",
        None,
        "Debian Translation-en index (plain, .gz, .xz or .lz4). Default: "
        "the first /var/lib/apt/lists/*_main_i18n_Translation-en* (release suite first).",
        flag_values=fv,
    )
    flags.DEFINE_string(
        "lang", "de", "The target language: a Translation-<lang> index of Debian's.", flag_values=fv
    )
    flags.DEFINE_string(
        "lang_file", None, "Like --en_file, for Translation-<lang>.", flag_values=fv
    )
    flags.DEFINE_string(
        "out_dir",
        None,
        "Directory for {train,dev,test}.{en,<lang>}, vocab.{en,<lang>} and bpe/.",
        flag_values=fv,
    )
    flags.DEFINE_integer(
        "max_len",
        50,
        "Drop pairs with more tokens than this on either side.",
        lower_bound=1,
        flag_values=fv,
    )
    flags.DEFINE_integer(
        "max_train",
        None,
        "Keep at most this many train pairs (smallest description hashes first). Default: all.",
        lower_bound=0,
        flag_values=fv,
    )
    flags.DEFINE_integer(
        "max_dev", None, "Like --max_train, for dev.", lower_bound=0, flag_values=fv
    )
    flags.DEFINE_integer(
        "max_test", None, "Like --max_train, for test.", lower_bound=0, flag_values=fv
    )
    flags.DEFINE_integer(
        "min_count",
        1,
        "Word-level vocab: keep train tokens seen at least this often.",
        lower_bound=1,
        flag_values=fv,
    )
    flags.DEFINE_integer(
        "bpe_merges",
        8000,
        "Joint BPE merge operations learned on both train files (0: no bpe/).",
        lower_bound=0,
        flag_values=fv,
    )
    splits_lib.define_allow_empty(translation.SPLITS, fv)
    flags.mark_flag_as_required("out_dir", flag_values=fv)


def run(config: config_lib.Config) -> None:
    """Builds the corpus from the flags and prints the summary."""
    caps = {"train": config.max_train, "dev": config.max_dev, "test": config.max_test}
    en_file = config.en_file or default_index("en")
    lang_file = config.lang_file or default_index(config.lang)
    logging.info("reading %s and %s", en_file, lang_file)
    stats = build(
        en_file,
        lang_file,
        config.out_dir,
        config.lang,
        config.max_len,
        caps,
        config.min_count,
        config.bpe_merges,
        config.allow_empty,
    )
    print("Built %s from %s and %s\n%s" % (config.out_dir, en_file, lang_file, stats.summary()))


if __name__ == "__main__":
    config_lib.run_command(define_flags, run)
