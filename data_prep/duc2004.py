"""Builds the DUC 2004 task-1 test set: each document with its human "model" summaries.

The input is NIST's distribution as users unpack it:

* ``--docs_dir``: the task 1 and 2 documents, the folder
  ``duc2004_testdata/tasks1and2/duc2004_tasks1and2_docs/docs`` of
  ``DUC2004_Summarization_Documents.tgz``: one folder per document set (``d30001t``,
  ...), each holding one file per document, named by its DOCNO (``APW19981016.0240``),
  in SGML-like markup::

    <DOC>
    <DOCNO> APW19981016.0240 </DOCNO>
    <DOCTYPE> NEWS </DOCTYPE>
    <TEXT>
    Cambodian leader Hun Sen on Friday rejected ...
    </TEXT>
    </DOC>

  A file holding several ``<DOC>`` elements is read too.
* ``--models_dir``: the task-1 human summaries, ``eval/models/1`` from
  ``duc2004_results/ROUGE/duc2004.task1.ROUGE.models.tar.gz``: one plain-text summary per
  file, named ``D30001.P.10.T.A.APW19981016.0240`` (see ``MODEL_NAME``). Each document has
  four, by different annotators.

Rules, in the order they are applied:

1. Structure is strict: a document file without ``<DOC>``, a ``<DOC>`` without its
  ``</DOC>``, a nested ``<DOC>``, or a ``<DOC>`` without exactly one non-empty
  ``<DOCNO>`` and exactly one ``<TEXT>...</TEXT>`` is an error naming the file and the
  line where that ``<DOC>`` starts; so is a DOCNO seen twice. Markup inside TEXT is
  treated leniently: tags (``<P>``, ...) become spaces, entities HTML knows are unescaped
  in any case (``&AMP;``, ``&amp;``, ``&lt;``), the LDC ones it does not know (``&MD;``,
  ``&UR;``, ...) become spaces, and whitespace is collapsed. Files are UTF-8, or Latin-1
  when they are not valid UTF-8. Hidden files and folders are ignored.
2. Model files: names that do not match ``MODEL_NAME`` are skipped (counted and logged);
  a summary that is empty after cleaning is skipped (counted). The same annotator twice
  for one document is dropped when the text is the same (counted) and an error otherwise.
  Summaries of documents that are not in ``--docs_dir`` are counted.
3. Pairing is by DOCNO (case-insensitive); references are ordered by annotator letter.
  A document with no reference is skipped (counted, warned); one with fewer than
  ``--expected_references`` (4) is kept and warned about (counted). A document whose
  TEXT is empty is skipped (counted): the See batcher would drop it and the decoded
  summaries would no longer line up with ``references.json``.
4. Tokenisation is ``acvi_tf.text.tokenizers.tokenize``: split into sentences,
  lowercased, NLTK's ``TreebankWordTokenizer``, tokens joined by single spaces. The
  article is the document text; the ``.bin`` abstract is the first reference as
  ``<s> tokens </s>`` (only so that the See pipeline can read the file; scoring uses all
  references, see ``pointer_generator.duc2004_eval``).
5. Order: document-set folders by name, files by name, ``<DOC>`` elements in file order.

Output, each file written atomically: ``{out_dir}/test.bin``,
``{out_dir}/chunked/test_000.bin``, ... (1,000 records each; stale chunks of an earlier,
larger build are removed) and ``{out_dir}/references.json``: a list, in ``.bin`` order, of
``{"docid": DOCNO, "references": [tokenised reference, ...]}``.

Usage::

  python -m data_prep.duc2004 --docs_dir=.../duc2004_tasks1and2_docs/docs \\
      --models_dir=.../duc2004_results/ROUGE/eval/models/1 --out_dir=duc2004
"""

import dataclasses
import html
import json
import os
import re
import tempfile
from typing import Dict, List, Mapping, Optional, Sequence

from absl import flags, logging

from acvi_tf import config as config_lib
from acvi_tf import errors
from acvi_tf import progress as progress_lib
from acvi_tf.formats import bin_files, see_vocab
from acvi_tf.text.tokenizers import tokenize

SPLIT = "test"
CHUNK_SIZE = 1000
EXPECTED_REFERENCES = 4
REFERENCES_FILE = "references.json"

# A task-1 model summary's file name, e.g. D30001.P.10.T.A.APW19981016.0240:
#   D30001            the document set (its folder is d30001t: the set, then a letter)
#   P                 the summary type (P: per-document, very short)
#   10                the target size in words
#   T                 the selector of the document set
#   A                 the annotator who wrote the summary (one letter)
#   APW19981016.0240  the DOCNO of the summarised document (may itself hold dots)
# Matched case-insensitively; a trailing letter on the set (D30001T) is accepted.
MODEL_NAME = re.compile(
    r"""
    ^(?P<docset>D\d+)[A-Z]?
    \.(?P<type>[A-Z])
    \.(?P<size>\d+)
    \.(?P<selector>[A-Z])
    \.(?P<annotator>[A-Z])
    \.(?P<docid>[A-Z0-9]\S*)$
    """,
    re.IGNORECASE | re.VERBOSE,
)

_DOC_TAG = re.compile(r"<(/?)DOC(?:\s[^>]*)?>", re.IGNORECASE)
_DOCNO = re.compile(r"<DOCNO(?:\s[^>]*)?>(.*?)</DOCNO\s*>", re.IGNORECASE | re.DOTALL)
_TEXT = re.compile(r"<TEXT(?:\s[^>]*)?>(.*?)</TEXT\s*>", re.IGNORECASE | re.DOTALL)
_TAG = re.compile(r"<[^<>]*>")
_UNKNOWN_ENTITY = re.compile(r"&[A-Za-z][A-Za-z0-9]*;")
_CHUNK_NAME = re.compile(r"^%s_\d{3,}\.bin$" % SPLIT)


class DucDataError(errors.UserError, ValueError):
    """The DUC 2004 input cannot be read or does not have the expected structure."""


@dataclasses.dataclass(frozen=True)
class Document:
    """One ``<DOC>`` element.

    Attributes:
      docset: the name of its document-set folder (``d30001t``).
      docid: the DOCNO, stripped (``APW19981016.0240``).
      text: the cleaned TEXT: no tags, entities resolved, whitespace collapsed.
      path: the file it came from.
      line: the line where its ``<DOC>`` starts (1-based).
    """

    docset: str
    docid: str
    text: str
    path: str
    line: int


@dataclasses.dataclass(frozen=True)
class ModelSummary:
    """One human summary of one document.

    Attributes:
      docid: the DOCNO from the file name.
      annotator: the annotator letter, upper case.
      text: the cleaned summary text.
      path: the file it came from.
    """

    docid: str
    annotator: str
    text: str
    path: str


@dataclasses.dataclass(frozen=True)
class Example:
    """One output record.

    Attributes:
      docid: the DOCNO.
      article: the tokenised document text.
      references: the tokenised references, in annotator order.
    """

    docid: str
    article: str
    references: tuple

    @property
    def abstract(self) -> str:
        """The first reference as See's ``<s> tokens </s>``."""
        return "%s %s %s" % (see_vocab.SENTENCE_START, self.references[0], see_vocab.SENTENCE_END)


@dataclasses.dataclass
class Stats:
    """What the build read, skipped and wrote; ``summary()`` formats it as one line."""

    document_sets: int = 0
    documents_read: int = 0
    empty_documents: int = 0
    model_files: int = 0
    unrecognised_model_files: int = 0
    empty_models: int = 0
    duplicate_models: int = 0
    models_without_document: int = 0
    no_references: int = 0
    fewer_references: int = 0
    written: int = 0

    def summary(self) -> str:
        """The counts of the build, on one line."""
        return (
            "wrote %d documents; read %d documents in %d sets and %d model files; skipped "
            "%d documents without references and %d with empty text; %d documents have "
            "fewer references than expected; model files: %d unrecognised names, %d empty, "
            "%d duplicates dropped, %d for documents not in --docs_dir"
            % (
                self.written,
                self.documents_read,
                self.document_sets,
                self.model_files,
                self.no_references,
                self.empty_documents,
                self.fewer_references,
                self.unrecognised_model_files,
                self.empty_models,
                self.duplicate_models,
                self.models_without_document,
            )
        )


def read_text(path: str) -> str:
    """The contents of ``path`` as text: UTF-8, or Latin-1 when it is not valid UTF-8.

    Raises:
      DucDataError: the file cannot be read.
    """
    try:
        with open(path, "rb") as f:
            data = f.read()
    except OSError as e:
        raise DucDataError("cannot read %s: %s" % (path, e)) from e
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError:
        return data.decode("latin-1")


def clean_markup(markup: str) -> str:
    """Tags to spaces, entities resolved (unknown ones to spaces), whitespace collapsed."""
    text = html.unescape(_TAG.sub(" ", markup))
    return " ".join(_UNKNOWN_ENTITY.sub(" ", text).split())


def _line_of(text, position):
    return text.count("\n", 0, position) + 1


def _doc_bodies(text, path):
    """Yields ``(line, body)`` for each ``<DOC>...</DOC>``; strict about their nesting."""
    start = None
    for tag in _DOC_TAG.finditer(text):
        line = _line_of(text, tag.start())
        if not tag.group(1):
            if start is not None:
                raise DucDataError(
                    "%s:%d: <DOC> inside the <DOC> that starts on line %d"
                    % (path, line, _line_of(text, start.start()))
                )
            start = tag
        elif start is None:
            raise DucDataError("%s:%d: </DOC> without a <DOC> before it" % (path, line))
        else:
            yield _line_of(text, start.start()), text[start.end() : tag.start()]
            start = None
    if start is not None:
        raise DucDataError(
            "%s:%d: <DOC> without its </DOC>" % (path, _line_of(text, start.start()))
        )


def _single(pattern, body, name, path, line):
    matches = pattern.findall(body)
    if len(matches) != 1:
        raise DucDataError(
            "%s:%d: the <DOC> starting on this line has %s <%s>...</%s> element; exactly "
            "one is needed" % (path, line, "no" if not matches else "more than one", name, name)
        )
    return matches[0]


def parse_documents(text: str, path: str, docset: str) -> List[Document]:
    """Parses the ``<DOC>`` elements of one document file.

    Args:
      text: the file's contents.
      path: the file name, for error messages.
      docset: the name of the document-set folder.

    Returns:
      A list of ``Document`` in file order.

    Raises:
      DucDataError: the structure is wrong (see the module docstring); the message names
        the file and the line where the offending ``<DOC>`` starts.
    """
    documents = [
        Document(
            docset=docset,
            docid=clean_markup(_single(_DOCNO, body, "DOCNO", path, line)),
            text=clean_markup(_single(_TEXT, body, "TEXT", path, line)),
            path=path,
            line=line,
        )
        for line, body in _doc_bodies(text, path)
    ]
    if not documents:
        raise DucDataError(
            "%s:1: no <DOC> element; --docs_dir must hold document-set "
            "folders of DUC document files" % path
        )
    for document in documents:
        if not document.docid:
            raise DucDataError(
                "%s:%d: the <DOC> starting on this line has an empty <DOCNO>"
                % (path, document.line)
            )
    return documents


def _visible_entries(directory):
    try:
        entries = sorted(os.scandir(directory), key=lambda entry: entry.name)
    except OSError as e:
        raise DucDataError("cannot list %s: %s" % (directory, e)) from e
    return [entry for entry in entries if not entry.name.startswith(".")]


def read_documents(docs_dir: str, stats: Stats) -> List[Document]:
    """Reads every document of every document-set folder of ``docs_dir``.

    Args:
      docs_dir: the folder of document-set folders.
      stats: a ``Stats`` whose counters are updated.

    Returns:
      A list of ``Document``: folders by name, files by name, ``<DOC>`` in file order.

    Raises:
      DucDataError: no document-set folder, a malformed file, or a DOCNO seen twice.
    """
    folders = [entry for entry in _visible_entries(docs_dir) if entry.is_dir()]
    if not folders:
        raise DucDataError(
            "%s holds no document-set folder; give the 'docs' folder of the DUC 2004 "
            "documents (.../duc2004_tasks1and2_docs/docs, with d30001t/, ...)" % docs_dir
        )
    documents, seen = [], {}
    for folder in folders:
        stats.document_sets += 1
        for entry in _visible_entries(folder.path):
            if not entry.is_file():
                continue
            for document in parse_documents(read_text(entry.path), entry.path, folder.name):
                key = document.docid.upper()
                if key in seen:
                    first = seen[key]
                    raise DucDataError(
                        "%s:%d: DOCNO %s was already read from %s:%d"
                        % (document.path, document.line, document.docid, first.path, first.line)
                    )
                seen[key] = document
                documents.append(document)
    stats.documents_read = len(documents)
    return documents


def parse_model_name(name: str) -> Optional[Dict[str, str]]:
    """Splits a model summary file name with ``MODEL_NAME``.

    Args:
      name: a file name such as ``D30001.P.10.T.A.APW19981016.0240``.

    Returns:
      A dict with ``docset``, ``type``, ``size``, ``selector``, ``annotator`` (upper
      case) and ``docid``, or None when the name does not match.
    """
    match = MODEL_NAME.match(name)
    if match is None:
        return None
    fields = match.groupdict()
    fields["annotator"] = fields["annotator"].upper()
    return fields


def _add_model(by_doc, summary, stats):
    annotators = by_doc.setdefault(summary.docid.upper(), {})
    earlier = annotators.get(summary.annotator)
    if earlier is None:
        annotators[summary.annotator] = summary
    elif earlier.text == summary.text:
        stats.duplicate_models += 1
        logging.warning("%s repeats %s; dropped", summary.path, earlier.path)
    else:
        raise DucDataError(
            "%s and %s both hold annotator %s's summary of %s, with different texts; "
            "remove one of them" % (earlier.path, summary.path, summary.annotator, summary.docid)
        )


def read_models(models_dir: str, stats: Stats) -> Dict[str, Dict[str, ModelSummary]]:
    """Reads the one-summary-per-file task-1 model summaries of ``models_dir``.

    Args:
      models_dir: the folder of model files (``eval/models/1``).
      stats: a ``Stats`` whose counters are updated.

    Returns:
      A dict DOCNO (upper case) -> dict annotator letter -> ``ModelSummary``.

    Raises:
      DucDataError: no file name matches ``MODEL_NAME``, or one annotator has two
        different summaries of a document.
    """
    by_doc, unrecognised = {}, []
    for entry in _visible_entries(models_dir):
        if not entry.is_file():
            continue
        stats.model_files += 1
        fields = parse_model_name(entry.name)
        if fields is None:
            unrecognised.append(entry.name)
            continue
        text = clean_markup(read_text(entry.path))
        if not text:
            stats.empty_models += 1
            logging.warning("%s: empty summary; skipped", entry.path)
            continue
        _add_model(
            by_doc, ModelSummary(fields["docid"], fields["annotator"], text, entry.path), stats
        )
    stats.unrecognised_model_files = len(unrecognised)
    if unrecognised:
        logging.warning(
            "%d file(s) in %s are not named like D30001.P.10.T.A.APW19981016."
            "0240 and were skipped: %s",
            len(unrecognised),
            models_dir,
            ", ".join(unrecognised[:5]) + (", ..." if len(unrecognised) > 5 else ""),
        )
    if not by_doc:
        raise DucDataError(
            "%s holds no model summary named like D30001.P.10.T.A.APW19981016.0240; give "
            "the task-1 models folder (eval/models/1 of duc2004.task1.ROUGE.models.tar.gz)"
            % models_dir
        )
    return by_doc


def _example(document, by_doc, stats, expected_references):
    """The ``Example`` of one document, or None when it is skipped (counted, warned)."""
    where = "%s (%s:%d)" % (document.docid, document.path, document.line)
    annotators = by_doc.get(document.docid.upper(), {})
    if not annotators:
        stats.no_references += 1
        logging.warning("document %s has no reference summary; skipped", where)
        return None
    article = tokenize(document.text)
    if not article:
        stats.empty_documents += 1
        logging.warning("document %s has an empty TEXT; skipped", where)
        return None
    if len(annotators) < expected_references:
        stats.fewer_references += 1
        logging.warning(
            "document %s has %d reference(s), expected %d",
            where,
            len(annotators),
            expected_references,
        )
    references = tuple(tokenize(annotators[letter].text) for letter in sorted(annotators))
    return Example(document.docid, article, references)


def pair(
    documents: Sequence[Document],
    by_doc: Mapping[str, Mapping[str, ModelSummary]],
    stats: Stats,
    expected_references: int = EXPECTED_REFERENCES,
) -> List[Example]:
    """Tokenises each document with its references, with progress lines; skips and counts
    the unusable ones.

    Args:
      documents: ``Document`` objects in output order.
      by_doc: ``read_models``'s dict.
      stats: a ``Stats`` whose counters are updated.
      expected_references: documents with fewer references are warned about.

    Returns:
      A list of ``Example`` in the order of ``documents``.
    """
    examples = []
    progress = progress_lib.Progress(len(documents), "tokenised documents")
    for done, document in enumerate(documents, start=1):
        example = _example(document, by_doc, stats, expected_references)
        if example:
            examples.append(example)
        progress(done)
    known = {document.docid.upper() for document in documents}
    stats.models_without_document = sum(
        len(annotators) for docid, annotators in by_doc.items() if docid not in known
    )
    if stats.models_without_document:
        logging.warning(
            "%d model summaries are of documents not in --docs_dir", stats.models_without_document
        )
    return examples


def _write_json_atomically(path, value):
    directory = os.path.dirname(os.path.abspath(path))
    os.makedirs(directory, exist_ok=True)
    with tempfile.NamedTemporaryFile(
        "w", encoding="utf-8", dir=directory, delete=False, prefix=".partial-"
    ) as f:
        try:
            json.dump(value, f, indent=1, ensure_ascii=False)
            f.write("\n")
        except BaseException:
            f.close()
            os.unlink(f.name)
            raise
    umask = os.umask(0)
    os.umask(umask)
    os.chmod(f.name, 0o666 & ~umask)  # NamedTemporaryFile makes it 0600
    os.replace(f.name, path)


def write_outputs(out_dir: str, examples: Sequence[Example]) -> None:
    """Writes ``test.bin``, ``chunked/test_NNN.bin`` and ``references.json``.

    Chunks left from an earlier, larger build are removed, so ``out_dir`` matches this one.

    Args:
      out_dir: the output folder (created if needed).
      examples: ``Example`` objects in output order.
    """
    pairs = [(example.article, example.abstract) for example in examples]
    chunk_dir = os.path.join(out_dir, "chunked")
    os.makedirs(chunk_dir, exist_ok=True)
    written = {
        os.path.basename(path)
        for path in bin_files.write_chunked(chunk_dir, SPLIT, pairs, CHUNK_SIZE)
    }
    for name in os.listdir(chunk_dir):
        if _CHUNK_NAME.match(name) and name not in written:
            os.remove(os.path.join(chunk_dir, name))
    bin_files.write_bin_file(os.path.join(out_dir, SPLIT + ".bin"), pairs)
    _write_json_atomically(
        os.path.join(out_dir, REFERENCES_FILE),
        [{"docid": example.docid, "references": list(example.references)} for example in examples],
    )


def build(
    docs_dir: str, models_dir: str, out_dir: str, expected_references: int = EXPECTED_REFERENCES
) -> Stats:
    """Reads the DUC 2004 task-1 documents and model summaries and writes the test set.

    Args:
      docs_dir: the folder of document-set folders.
      models_dir: the folder of task-1 model summary files.
      out_dir: the output folder.
      expected_references: documents with fewer references are warned about.

    Returns:
      The ``Stats`` of the build.

    Raises:
      DucDataError: the input cannot be read or parsed, or no document has a reference;
        nothing is written then.
    """
    stats = Stats()
    documents = read_documents(docs_dir, stats)
    examples = pair(documents, read_models(models_dir, stats), stats, expected_references)
    if not examples:
        raise DucDataError(
            "no document of %s has a usable model summary in %s; do the "
            "folders belong together?" % (docs_dir, models_dir)
        )
    write_outputs(out_dir, examples)
    stats.written = len(examples)
    return stats


def define_flags(fv: flags.FlagValues = flags.FLAGS) -> None:
    """Defines the command-line flags.

    Called only when the module runs as a program, so that several builders (and their
    tests) can be imported into one process without clashing flags.
    """
    flags.DEFINE_string(
        "docs_dir",
        None,
        "The DUC 2004 'docs' folder: one folder per document "
        "set (d30001t, ...), each with one file per document.",
        flag_values=fv,
    )
    flags.DEFINE_string(
        "models_dir",
        None,
        "The task-1 model summaries (eval/models/1), one "
        "file per summary, named like D30001.P.10.T.A.APW19981016.0240.",
        flag_values=fv,
    )
    flags.DEFINE_string(
        "out_dir",
        None,
        "Directory for test.bin, chunked/test_NNN.bin and references.json.",
        flag_values=fv,
    )
    flags.DEFINE_integer(
        "expected_references",
        EXPECTED_REFERENCES,
        "Warn about documents with fewer reference summaries than this.",
        lower_bound=1,
        flag_values=fv,
    )
    flags.mark_flags_as_required(["docs_dir", "models_dir", "out_dir"], flag_values=fv)


def run(config: config_lib.Config) -> None:
    """Builds the DUC 2004 test set from the flags and prints the summary line."""
    stats = build(config.docs_dir, config.models_dir, config.out_dir, config.expected_references)
    print("Built %s: %s" % (config.out_dir, stats.summary()))


if __name__ == "__main__":
    config_lib.run_command(define_flags, run)
