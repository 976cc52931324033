"""Builds a small real translation corpus: Debian package descriptions, English -> German.

The inputs are two Debian translation indexes of the same archive, ``Translation-en`` and
``Translation-de`` (RFC-822 style records: ``Package``, ``Description-md5`` and
``Description-<lang>``, whose first line is the one-line synopsis and whose indented lines
form the long description, paragraphs separated by a line holding only ``.``). They are
read with the record parser of ``data_prep.debian_descriptions``.

The output is the text layout of the IWSLT'15 corpora on the Stanford NMT page, with
neutral split names: ``train.{en,de}``, ``dev.{en,de}`` (the role of ``tst2012``) and
``test.{en,de}`` (the role of ``tst2013``), one tokenised sentence or paragraph per line,
line k of ``X.en`` translated by line k of ``X.de``; ``vocab.en`` and ``vocab.de`` in the
tensorflow/nmt format; and ``bpe/``, the same splits after joint BPE, with its ``codes``
and its own ``vocab.en``/``vocab.de``.

Rules, in the order they are applied:

1. Join: an English and a German record belong together when they have the same
   ``Description-md5`` (the md5 of the English description the German one translates).
   Within each index the first record of an md5 is used; later records with the same md5
   (other packages sharing the description) are counted and ignored.
2. Alignment: every joined description gives its synopsis pair (English synopsis, German
   synopsis) and, when both long descriptions have the same number of paragraphs, the
   pairs (English paragraph k, German paragraph k). With different paragraph counts only
   the synopsis pair is used. A paragraph's lines are joined by single spaces.
3. Tokenisation: both sides go through ``acvi_tf.text.tokenize`` (sentence split,
   lowercased NLTK Treebank tokens joined by single spaces; it serves German as well).
   Pairs with an empty side are dropped (counted). The tokenizer splits every ``@`` off
   as a token of its own, so the BPE separator ``@@`` never occurs in the text and
   removing ``@@ `` from a BPE file always gives back the word-level text.
4. Deduplication: one pair is kept per distinct tokenised (English, German) pair, the first
   in English-index order; later copies are dropped (counted).
5. Pairs with more than ``--max_len`` tokens on either side are dropped (counted).
6. Split by a stable hash of the description: ``int(sha1(md5).hexdigest(), 16) % 100``
   below 90 is train, below 95 dev, the rest test, so all pairs of one description land
   in one split. Each split is written in ascending hash order (the pairs of one
   description in their order: synopsis, then paragraphs); ``--max_{train,dev,test}``
   keep the first pairs of that order, so a capped split is a prefix of the uncapped one.
7. Vocab files (``vocab.en``, ``vocab.de``): ``<unk>``, ``<s>``, ``</s>``, then every token
   of that language's train file seen at least ``--min_count`` times, most frequent first,
   ties in alphabetical (code point) order. One token per line.
8. BPE (``bpe/``): one joint set of ``--bpe_merges`` merge operations is learned with
   ``subword_nmt`` on ``train.en`` plus ``train.de`` (written to ``bpe/codes``) and applied
   to every split; ``bpe/vocab.{en,de}`` list every BPE unit of the BPE'd train files in the
   format of rule 7 (``--min_count`` does not apply there).

Every file is written atomically (a temporary file, then ``os.replace``).

Usage::

  python -m data_prep.debian_translations --out_dir=iwslt_style \\
      [--en_file=/var/lib/apt/lists/..._main_i18n_Translation-en.lz4] \\
      [--de_file=/var/lib/apt/lists/..._main_i18n_Translation-de.lz4]
"""

import collections
import dataclasses
import io
import os

from absl import flags, logging
from subword_nmt.apply_bpe import BPE
from subword_nmt.learn_bpe import learn_bpe

from acvi_tf import config as config_lib
from acvi_tf import files
from acvi_tf.formats import nmt_text
from acvi_tf.text import tokenize
from data_prep import debian_descriptions as dd
from data_prep import splits as splits_lib
from data_prep import summarization

SPLITS = ("train", "dev", "test")
LANGUAGES = ("en", "de")
BPE_SEPARATOR = "@@"
BPE_DIR = "bpe"
APT_LISTS_GLOB = "/var/lib/apt/lists/*_main_i18n_Translation-%s*"


@dataclasses.dataclass(frozen=True)
class Pair:
    """One tokenised translation pair and its split key.

    Attributes:
      md5: the ``Description-md5`` of the description it came from.
      en: the tokenised English text.
      de: the tokenised German text.
      hash_value: ``int(sha1(md5).hexdigest(), 16)``.
    """

    md5: str
    en: str
    de: str
    hash_value: int


@dataclasses.dataclass
class Stats:
    """What the build read, dropped and wrote; ``summary()`` formats it."""

    records_read: dict = dataclasses.field(default_factory=dict)
    repeated_md5: dict = dataclasses.field(default_factory=dict)
    joined: int = 0
    paragraphs_aligned: int = 0
    paragraphs_mismatched: int = 0
    candidate_pairs: int = 0
    empty_dropped: int = 0
    duplicates_dropped: int = 0
    too_long_dropped: int = 0
    pairs_before_caps: dict = dataclasses.field(default_factory=dict)
    pairs: dict = dataclasses.field(default_factory=dict)
    vocab_size: dict = dataclasses.field(default_factory=dict)
    bpe_merges: int = 0
    bpe_vocab_size: dict = dataclasses.field(default_factory=dict)

    def summary(self):
        """A multi-line, human-readable account of the build."""
        lines = []
        for lang in LANGUAGES:
            lines.append(
                "Translation-%s records: %d (%d repeating an earlier md5)"
                % (lang, self.records_read.get(lang, 0), self.repeated_md5.get(lang, 0))
            )
        lines += [
            "descriptions joined on md5: %d (paragraphs aligned in %d, counts differ in %d)"
            % (self.joined, self.paragraphs_aligned, self.paragraphs_mismatched),
            "candidate pairs: %d; dropped: %d empty, %d duplicate, %d too long"
            % (
                self.candidate_pairs,
                self.empty_dropped,
                self.duplicates_dropped,
                self.too_long_dropped,
            ),
        ]
        for split in SPLITS:
            lines.append(
                "%-5s pairs: %d (of %d before the cap)"
                % (split, self.pairs.get(split, 0), self.pairs_before_caps.get(split, 0))
            )
        lines.append(
            "vocab: en %d, de %d (with the 3 special tokens)"
            % (self.vocab_size.get("en", 0), self.vocab_size.get("de", 0))
        )
        lines.append(
            "bpe: %d merges; vocab en %d, de %d"
            % (self.bpe_merges, self.bpe_vocab_size.get("en", 0), self.bpe_vocab_size.get("de", 0))
        )
        return "\n".join(lines)


def default_index(lang):
    """The ``main`` Translation-``lang`` index apt downloaded (release suite first).

    Args:
      lang: the language code, ``en`` or ``de``.

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
            "no Translation-%s index matches %s; pass --%s_file, or download one with "
            "translations enabled: `apt-get update -o Acquire::Languages::=%s` (in Docker "
            "images remove /etc/apt/apt.conf.d/docker-no-languages first)"
            % (lang, pattern, lang, lang)
        ) from None


def _check_record(fields, start, lang, path):
    for name in ("Description-md5", "Description-" + lang):
        if name not in fields:
            raise dd.TranslationFileError(
                "%s:%d: the record starting on this line has no %s field; is this a Debian "
                "Translation-%s index?" % (path, start, name, lang)
            )


def keyed_by_md5(lines, lang, path):
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


def read_descriptions(path, lang, stats):
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


def aligned_texts(english, german, stats):
    """The (English, German) raw text pairs of one joined description.

    Args:
      english: the English ``Record``.
      german: the German ``Record`` with the same md5.
      stats: a ``Stats`` whose alignment counters are updated.

    Returns:
      A list of text pairs: the synopses, then paragraph k with paragraph k when both
      sides have the same number of paragraphs.
    """
    texts = [(english.synopsis, german.synopsis)]
    if len(english.paragraphs) == len(german.paragraphs):
        stats.paragraphs_aligned += 1
        texts.extend(zip(english.paragraphs, german.paragraphs))
    else:
        stats.paragraphs_mismatched += 1
    return texts


def make_pairs(english, german, max_len, stats):
    """Joins, aligns, tokenises, deduplicates and filters the translation pairs.

    Args:
      english: dict md5 -> English ``Record``, in file order.
      german: dict md5 -> German ``Record``.
      max_len: the most tokens kept on either side.
      stats: a ``Stats`` whose counters are updated.

    Returns:
      A list of ``Pair`` in English-index order.
    """
    seen, pairs = set(), []
    for md5, en_record in english.items():
        de_record = german.get(md5)
        if de_record is None:
            continue
        stats.joined += 1
        hash_value = summarization.key_hash(md5)
        for en_text, de_text in aligned_texts(en_record, de_record, stats):
            stats.candidate_pairs += 1
            tokens = (tokenize(en_text), tokenize(de_text))
            if not all(tokens):
                stats.empty_dropped += 1
            elif tokens in seen:
                stats.duplicates_dropped += 1
            elif max(len(text.split(" ")) for text in tokens) > max_len:
                seen.add(tokens)
                stats.too_long_dropped += 1
            else:
                seen.add(tokens)
                pairs.append(Pair(md5, tokens[0], tokens[1], hash_value))
    return pairs


def split_of(hash_value):
    """The split of a hash: ``hash % 100`` < 90 train, < 95 dev, else test."""
    return splits_lib.split_of(hash_value, SPLITS)


def split_pairs(pairs, caps=None):
    """Splits pairs by hash, each split in ascending hash order and capped (see
    ``data_prep.splits.split_by_hash``)."""
    return splits_lib.split_by_hash(pairs, SPLITS, caps)


def vocab_tokens(lines, min_count=1):
    """The vocab entries after the special tokens, for tokenised ``lines``.

    Args:
      lines: tokenised lines, tokens separated by single spaces.
      min_count: the fewest occurrences a token needs.

    Returns:
      The tokens seen at least ``min_count`` times, special tokens excluded, most frequent
      first, ties in alphabetical (code point) order.
    """
    counter = collections.Counter(token for line in lines for token in line.split())
    kept = [
        (token, count)
        for token, count in counter.items()
        if count >= min_count and token not in nmt_text.SPECIALS
    ]
    return [token for token, _ in sorted(kept, key=lambda item: (-item[1], item[0]))]


def write_lines(path, lines):
    """Writes ``lines``, one per line, atomically."""
    files.atomic_write_text(path, "".join(line + "\n" for line in lines))


def write_text_corpus(out_dir, texts, min_count=1):
    """Writes ``{split}.{lang}`` and ``vocab.{lang}`` for texts[split][lang].

    Args:
      out_dir: the output directory (created if needed).
      texts: dict split -> dict language -> list of tokenised lines.
      min_count: passed to ``vocab_tokens``.

    Returns:
      A dict language -> the number of vocab lines written.
    """
    os.makedirs(out_dir, exist_ok=True)
    for split in SPLITS:
        for lang in LANGUAGES:
            write_lines(os.path.join(out_dir, "%s.%s" % (split, lang)), texts[split][lang])
    return {
        lang: nmt_text.write_vocab(
            os.path.join(out_dir, "vocab." + lang), vocab_tokens(texts["train"][lang], min_count)
        )
        for lang in LANGUAGES
    }


def learn_joint_bpe(lines, merges):
    """Learns BPE merge operations with ``subword_nmt`` on ``lines``.

    Args:
      lines: the tokenised training lines of both languages.
      merges: the number of merge operations to learn (fewer when no pair occurs twice).

    Returns:
      The text of the codes file.
    """
    codes = io.StringIO()
    learn_bpe(io.StringIO("".join(line + "\n" for line in lines)), codes, merges)
    return codes.getvalue()


def apply_bpe(codes, texts):
    """Segments every line of texts[split][lang] with the BPE ``codes``.

    Args:
      codes: the text of a codes file.
      texts: dict split -> dict language -> list of tokenised lines.

    Returns:
      The same structure with BPE-segmented lines (units joined by ``@@ ``).
    """
    bpe = BPE(io.StringIO(codes), separator=BPE_SEPARATOR)
    return {
        split: {lang: [bpe.process_line(line) for line in lines] for lang, lines in by_lang.items()}
        for split, by_lang in texts.items()
    }


def build(en_file, de_file, out_dir, max_len=50, caps=None, min_count=1, bpe_merges=8000):
    """Reads both indexes and writes the word-level corpus and its BPE variant.

    Args:
      en_file: plain, ``.gz``, ``.xz`` or ``.lz4`` Translation-en file.
      de_file: the same for Translation-de.
      out_dir: the output directory (created if needed); BPE files go to ``out_dir/bpe``.
      max_len: pairs with more tokens on either side are dropped.
      caps: optional dict split -> the most pairs to keep.
      min_count: the fewest train occurrences of a word-level vocab entry.
      bpe_merges: the number of joint BPE merge operations.

    Returns:
      The ``Stats`` of the build.

    Raises:
      TranslationFileError: a file cannot be read or parsed; nothing is written then.
    """
    stats = Stats()
    english = read_descriptions(en_file, "en", stats)
    german = read_descriptions(de_file, "de", stats)
    pairs = make_pairs(english, german, max_len, stats)
    stats.pairs_before_caps = collections.Counter(split_of(p.hash_value) for p in pairs)
    splits = split_pairs(pairs, caps)
    stats.pairs = {split: len(members) for split, members in splits.items()}
    texts = {
        split: {"en": [p.en for p in members], "de": [p.de for p in members]}
        for split, members in splits.items()
    }
    stats.vocab_size = write_text_corpus(out_dir, texts, min_count)

    codes = learn_joint_bpe(texts["train"]["en"] + texts["train"]["de"], bpe_merges)
    stats.bpe_merges = len(codes.splitlines()) - 1  # the first line is "#version: 0.2"
    bpe_dir = os.path.join(out_dir, BPE_DIR)
    os.makedirs(bpe_dir, exist_ok=True)
    files.atomic_write_text(os.path.join(bpe_dir, "codes"), codes)
    stats.bpe_vocab_size = write_text_corpus(bpe_dir, apply_bpe(codes, texts))
    return stats


def define_flags(fv=flags.FLAGS):
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
    flags.DEFINE_string("de_file", None, "Like --en_file, for Translation-de.", flag_values=fv)
    flags.DEFINE_string(
        "out_dir",
        None,
        "Directory for {train,dev,test}.{en,de}, vocab.{en,de} and bpe/.",
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
        "Joint BPE merge operations learned on train.en + train.de.",
        lower_bound=1,
        flag_values=fv,
    )
    flags.mark_flag_as_required("out_dir", flag_values=fv)


def run(config):
    """Builds the corpus from the flags and prints the summary."""
    caps = {"train": config.max_train, "dev": config.max_dev, "test": config.max_test}
    en_file = config.en_file or default_index("en")
    de_file = config.de_file or default_index("de")
    logging.info("reading %s and %s", en_file, de_file)
    stats = build(
        en_file,
        de_file,
        config.out_dir,
        config.max_len,
        caps,
        config.min_count,
        config.bpe_merges,
    )
    print("Built %s from %s and %s\n%s" % (config.out_dir, en_file, de_file, stats.summary()))


if __name__ == "__main__":
    config_lib.run_command(define_flags, run)
