"""Decoding with a trained pointer-generator: batched beam search, output files, ROUGE.

``Summarizer.decode`` runs See et al.'s beam search (``acvi_tf.inference.beam_search``)
on many articles in one compiled call. ``decode_single_pass`` writes See et al.'s folder
``decode_{split}_{E}maxenc_{B}beam_{m}mindec_{M}maxdec_ckpt-N/`` with ``reference/`` and
``decoded/`` (``%06d_reference.txt`` / ``%06d_decoded.txt``, one sentence per line; a
decoded summary is split after every "." token) and scores it with ROUGE-1.5.5,
METEOR and the copying measures (``ROUGE_results.txt``, ``metrics.json``, TensorBoard);
``lead_baseline`` scores the first N article sentences the same way. ``decode_examples``
is the original's non-single-pass mode: log article, reference and summary, write
``attn_vis_data.json``.
"""

import contextlib
import fcntl
import json
import os
import re
import shutil
import time
from typing import IO, Any, Callable, Dict, List, Optional, Sequence, Tuple, Union

import numpy as np
import tensorflow as tf
from absl import logging

from acvi_tf import files
from acvi_tf import progress as progress_lib
from acvi_tf.formats import see_vocab
from acvi_tf.inference import decoding
from acvi_tf.inference import report as report_lib
from acvi_tf.inference.folders import DecodeFolderError, refuse_finished
from acvi_tf.metrics import copying
from acvi_tf.metrics import meteor as meteor_lib
from acvi_tf.metrics import rouge as rouge_lib
from pointer_generator import batcher as batcher_lib
from pointer_generator import vocab as vocab_lib

DECODE_FIELDS = ("enc_batch", "enc_padding_mask", "enc_batch_extend_vocab", "max_art_oovs")


class Summarizer:
    """Batched beam-search decoding with a ``PointerGenerator``.

    Args:
      model: a built ``PointerGenerator`` with its weights loaded.
      vocab: the ``Vocab``.
      beam_size: K (the original's 4; the ACVI paper's 5).
      max_dec_steps: the longest summary (120 at test time in the papers).
      min_dec_steps: shorter hypotheses that stop are dropped (35).
      coverage_on: decode with the coverage feature (coverage models).
      initial_state_attention: the original decode-time attention (see
        ``PointerGenerator.start``).
      length_normalization, gnmt_alpha: the beam's ranking (the original: "average").
      jit_compile: compile the beam search with XLA.
      record_attention: keep the chosen summaries' attention and p_gen (for
        ``attn_vis_data.json``); off, decoding skips that bookkeeping.

    Attributes:
      search: the compiled beam search, ``{DECODE_FIELDS} -> beam_search's dict``.
      search_with_attention: the same, always recording the attention and p_gen.
    """

    def __init__(
        self,
        model: decoding.DecodingModel,
        vocab: vocab_lib.Vocab,
        beam_size: int = 4,
        max_dec_steps: int = 120,
        min_dec_steps: int = 35,
        coverage_on: bool = False,
        initial_state_attention: bool = True,
        length_normalization: str = "average",
        gnmt_alpha: float = 0.6,
        jit_compile: bool = False,
        record_attention: bool = True,
    ) -> None:
        self.model = model
        self.vocab = vocab
        self.start_id = vocab.word2id(see_vocab.START_DECODING)
        self.stop_id = vocab.word2id(see_vocab.STOP_DECODING)
        signature = {name: batcher_lib.BATCH_SIGNATURE[name] for name in DECODE_FIELDS}

        def compiled(record):
            settings = decoding.SearchSettings(
                max_dec_steps,
                self.start_id,
                self.stop_id,
                beam_size=beam_size,
                min_steps=min_dec_steps,
                length_normalization=length_normalization,
                gnmt_alpha=gnmt_alpha,
                probabilities=model.probability_scores,
                record_extras=record,
                shrink=not jit_compile,
            )
            return decoding.compile_decode(
                model,
                lambda inputs: decoding.STRATEGIES["see_beam"](settings),
                signature,
                jit_compile,
                start_options=dict(
                    initial_state_attention=initial_state_attention, coverage_on=coverage_on
                ),
                with_posterior=record,
            )

        self.search = compiled(record_attention)
        self.search_with_attention = (
            self.search if record_attention else compiled(True)
        )  # traced on first use only

    def decode(self, batch: Dict[str, Any], record: bool = False) -> List[Dict[str, Any]]:
        """Beam-search summaries of a batch of articles (NumPy results).

        Args:
          batch: the batcher's batch.
          record: record the attention and p_gen (and the posterior's) even without
            ``record_attention``.

        Returns:
          A list, one dict per article: ``ids`` (extended-vocabulary ids), ``words``,
          and with ``record_attention`` or ``record`` ``attn`` [len, N] and ``p_gens``
          [len], what the context mechanism shows of its posterior
          (``decoding.example_posterior``: ``sigma`` [N], ``kl`` and ``scale`` [len]) and
          ``labels`` (``report_labels``).
        """
        search = self.search_with_attention if record else self.search
        out = {
            name: value.numpy()  # one copy each, not one per article
            for name, value in search({name: batch[name] for name in DECODE_FIELDS}).items()
        }
        art_oovs = np.asarray(batch["art_oovs"])
        results = []
        for i, length in enumerate(out["lengths"]):
            ids = out["ids"][i, :length].tolist()
            oovs = [as_text(w) for w in art_oovs[i]]
            result = dict(ids=ids, words=vocab_lib.outputids2words(ids, self.vocab, oovs))
            if "attn" in out:
                result["attn"] = out["attn"][i, :length]
                result["p_gens"] = out["p_gen"][i, :length]
                row = {name: value[i] for name, value in out.items()}
                result.update(decoding.example_posterior(row, length))
                result["labels"] = decoding.posterior_labels(self.model)
            results.append(result)
        return results


def as_text(value: Union[bytes, str]) -> str:
    """A batch's string field as text (the batcher gives bytes)."""
    return value.decode("utf-8") if isinstance(value, bytes) else value


def split_sentences(words: Sequence[str]) -> List[str]:
    """The original's split of a decoded summary: a sentence ends after every "."."""
    sentences, current = [], []
    for word in words:
        current.append(word)
        if word == ".":
            sentences.append(" ".join(current))
            current = []
    if current:
        sentences.append(" ".join(current))
    return sentences


SPLITS = ("train", "val", "test")


def data_split(data_path: str, given: Optional[str] = None) -> str:
    """The split a decode of ``data_path`` names its folder after: ``given``
    (``--decode_split``), else the one the file name names as a word (``test_000.bin``,
    ``test_*`` and ``val.bin``, as the builders and See et al.'s ``make_datafiles.py`` name
    them). See et al.'s code looks for the words anywhere in the path, so
    ``interval/test_000.bin`` was ``val``; a name without a split word is an error here.

    Raises:
      DecodeFolderError: neither names a split.
    """
    if given:
        return given
    words = re.split(r"[^a-z]+", os.path.basename(data_path).lower())
    named = [split for split in SPLITS if split in words]
    if len(named) != 1:
        raise DecodeFolderError(
            "--data_path=%s: its file name names %s split (train, val or test), which names "
            "the decode folder; give --decode_split=test (or train, val)"
            % (data_path, "more than one" if named else "no")
        )
    return named[0]


def decode_dir_name(
    split: str,
    max_enc_steps: int,
    beam_size: int,
    min_dec_steps: int,
    max_dec_steps: int,
    checkpoint_path: str,
) -> str:
    """``decode_{split}_{E}maxenc_{B}beam_{m}mindec_{M}maxdec_ckpt-N`` as the original
    (``split``: ``data_split``'s)."""
    step = re.search(r"(\d+)(?:_cov_init)?$", os.path.basename(checkpoint_path))
    return "decode_%s_%dmaxenc_%dbeam_%dmindec_%dmaxdec_ckpt-%s" % (
        split,
        max_enc_steps,
        beam_size,
        min_dec_steps,
        max_dec_steps,
        step.group(1) if step else os.path.basename(checkpoint_path),
    )


def _write_text(path, lines):
    files.atomic_write_text(path, "\n".join(lines) + ("\n" if lines else ""))


def _manifest(batcher, settings):
    """What a single-pass decode's output depends on: ``settings`` (the checkpoint, the
    flags) and the data files, by absolute path, each with the SHA-256 of its content."""
    data = {os.path.abspath(p): files.sha256(p) for p in sorted(batcher.paths)}
    return dict(settings, data=data)


def prepare_folder(
    decode_dir: str, overwrite: bool, manifest: Dict[str, Any], shared: bool = False
) -> bool:
    """Creates ``decode_dir``, or checks that an interrupted decode in it may be resumed.

    A folder without ``metrics.json`` is an interrupted decode: it is resumed, its
    complete ``reference``/``decoded`` pairs kept (both are written atomically), if its
    ``manifest.json`` equals ``manifest`` (the same data, checkpoint and flags). A
    finished one is kept unless ``overwrite``. ``shared``: the shards of one decode
    write the folder together, so it is never removed, only made or joined.

    Returns:
      Whether the folder was there already (resumed, or joined by a shard).
    """
    record = os.path.join(decode_dir, MANIFEST)
    manifest = json.loads(json.dumps(manifest))  # as it reads back: lists, not tuples
    if overwrite and shared:
        raise DecodeFolderError(
            "--decode_overwrite would remove what the other shards wrote to %s; remove the "
            "folder before the shards start" % decode_dir
        )
    if os.path.exists(decode_dir) and not overwrite:
        refuse_finished(decode_dir)
        if os.path.exists(record) or not shared:
            _check_manifest(decode_dir, record, manifest)
            return True
    elif os.path.exists(decode_dir):
        shutil.rmtree(decode_dir)
    for sub in PAIR_KINDS:
        os.makedirs(os.path.join(decode_dir, sub), exist_ok=True)
    files.atomic_write_text(record, json.dumps(manifest, indent=1, sort_keys=True) + "\n")
    return False


def _check_manifest(decode_dir, record, manifest):
    """Refuses to resume a decode whose ``manifest.json`` is unreadable or differs."""
    saved = {}
    if os.path.exists(record):
        with open(record, "rb") as f:
            try:
                saved = json.loads(f.read().decode("utf-8"))
            except ValueError:  # JSON or UTF-8
                saved = None
        if not isinstance(saved, dict):
            raise DecodeFolderError(
                "%s cannot be read, so what the interrupted decode in %s decoded is "
                "unknown; pass --decode_overwrite to decode afresh" % (record, decode_dir)
            )
    differences = manifest_differences(saved, manifest)
    if differences:
        raise DecodeFolderError(
            "%s holds an interrupted decode whose %s differs from this decode in %s; "
            "resuming would mix the two: decode with the folder's data and flags, or pass "
            "--decode_overwrite (or remove the folder) to decode afresh"
            % (decode_dir, MANIFEST, ", ".join(differences))
        )


def manifest_differences(saved: dict, manifest: dict) -> List[str]:
    """Each field in which two decode manifests differ, with both values.

    A field whose value is a dict in both (the flags, the data files) is compared entry
    by entry: a flag is named ``--name``, a data file ``data file <path>``.

    Args:
      saved: the folder's manifest.
      manifest: this decode's.

    Returns:
      ``<field> (<saved value> there, <this value> here)`` for each difference, in
      order; a value missing on one side is ``none``, a dict ``<n> entries``.
    """
    found = []
    for key in sorted(set(saved) | set(manifest)):
        old, new = saved.get(key), manifest.get(key)
        if isinstance(old, dict) and isinstance(new, dict):
            labels = _FIELD_LABELS.get(key, key + " %s")
            found += [
                _difference(labels % name, old.get(name), new.get(name))
                for name in sorted(set(old) | set(new))
                if old.get(name) != new.get(name)
            ]
        elif old != new:
            found.append(_difference(key, old, new))
    return found


# How ``manifest_differences`` names an entry of a dict field.
_FIELD_LABELS = {"flags": "--%s", "data": "data file %s"}


def _difference(label, old, new):
    return "%s (%s there, %s here)" % (label, _shown(old), _shown(new))


def _shown(value):
    if isinstance(value, dict):
        return "%d entries" % len(value)
    return "none" if value is None else value


PAIR_KINDS = ("reference", "decoded")
MANIFEST = "manifest.json"


def pair_path(decode_dir: str, kind: str, index: int) -> str:
    """The file of article ``index``'s ``kind`` (one of ``PAIR_KINDS``), as See's
    decoder names it: ``<kind>/<index, 6 digits>_<kind>.txt``."""
    return os.path.join(decode_dir, kind, "%06d_%s.txt" % (index, kind))


def write_pair(
    decode_dir: str, index: int, reference: Sequence[str], decoded: Sequence[str]
) -> None:
    """Writes article ``index``'s reference and decoded summary, a sentence a line,
    each file atomically."""
    _write_text(pair_path(decode_dir, "reference", index), reference)
    _write_text(pair_path(decode_dir, "decoded", index), decoded)


def read_lines(path: str) -> List[str]:
    """The lines of a UTF-8 text file (a summary's sentences)."""
    with open(path, encoding="utf-8") as f:
        return f.read().splitlines()


def has_pair(decode_dir: str, index: int) -> bool:
    """Whether article ``index``'s reference and decoded summary are both written."""
    return all(os.path.exists(pair_path(decode_dir, kind, index)) for kind in PAIR_KINDS)


def lock_shard(decode_dir: str, shard: Tuple[int, int]) -> IO[str]:
    """Locks a shard of the decode folder for this process: a second decode of the same
    folder and shard stops in one line; other shards go on. The lock file lies beside the
    folder (``.<folder>.lock``, ``.<folder>.shard-<i>-of-<n>.lock``), which
    ``--decode_overwrite`` replaces.

    Args:
      decode_dir: the decode folder.
      shard: ``(index, count)`` of this process among the decode's shards.

    Returns:
      The open lock file; the lock holds until it is closed or the process ends.

    Raises:
      acvi_tf.training.files.FolderInUseError: another process decodes that shard.
    """
    index, count = shard
    part = ".shard-%d-of-%d" % (index, count) if count > 1 else ""
    return files.lock_beside(decode_dir, "decode", part)


def decode_single_pass(
    summarizer: Summarizer,
    batcher: batcher_lib.Batcher,
    decode_dir: str,
    overwrite: bool = False,
    total: Optional[int] = None,
    with_meteor: bool = True,
    settings: Optional[Dict[str, Any]] = None,
    shard: Tuple[int, int] = (0, 1),
    report_examples: int = report_lib.DEFAULT_DETAIL,
) -> Optional[Dict[str, Any]]:
    """Decodes every article once, writes See's folder and scores it (``score_folder``).

    An interrupted run (the folder exists, no ``metrics.json``) is resumed: articles
    with both files written are read back, not decoded again. ``manifest.json`` records
    the data files (with the SHA-256 of their content) and ``settings``; a resume with
    any difference is refused, naming each.

    With ``shard=(i, n)`` this process decodes batch ``b`` of the data only when
    ``b % n == i``, into the same folder as the other shards (the batches, and so the
    summaries, are the ones a single run makes: the files are the same byte for byte).
    The shard that finds every article's files written, its own last, scores the
    folder; the others return None. Running any shard again scores a complete folder.

    The first ``report_examples`` articles are decoded with their attention, p_gen and
    (ACVI) posterior recorded, each written to ``report/%06d.json`` before its pair, so
    that ``report.html`` (``score_folder``) shows them, resumed or not.

    Args:
      summarizer: a ``Summarizer``.
      batcher: a ``single_pass`` ``Batcher`` (its batch size is the articles per call).
      decode_dir: the folder to create or resume.
      overwrite: replace an existing folder instead of resuming or refusing.
      total: number of articles, for the ETA of the progress line.
      with_meteor: also score with METEOR.
      settings: what else the decode's output depends on, for ``manifest.json``: the
        checkpoint, the hashes of the checkpoint and the vocabulary, ``flags`` (a dict
        of the flags that change the output).
      shard: ``(index, count)`` of this process among the decode's shards.
      report_examples: how many articles carry per-token detail in ``report.html``.

    Returns:
      The metrics dict of ``score_folder``, or None while other shards have articles
      left.
    """
    index, count = shard
    manifest = _manifest(batcher, settings or {})
    if count > 1:  # the shards must cut the data into the same batches
        manifest.update(num_shards=count, decode_batch_size=batcher.batch_size)
    lock = lock_shard(decode_dir, shard)  # held while this shard decodes
    try:
        if prepare_folder(decode_dir, overwrite, manifest, shared=count > 1):
            _log_existing(decode_dir, shard)
        mine = _shard_size(total, batcher.batch_size, index, count) if total else None
        label = "shard %d of %d: " % (index, count) if count > 1 else ""
        articles, done, new = [], 0, 0  # all articles read; this shard's done; decoded now
        start = time.time()
        for number, batch in enumerate(batcher.batches()):
            first = len(articles)
            articles.extend(as_text(a) for a in batch["original_articles"])
            if number % count != index:
                continue
            done += len(articles) - first
            if all(has_pair(decode_dir, i) for i in range(first, len(articles))):
                continue  # decoded before an interruption
            results = summarizer.decode(batch, record=first < report_examples)
            for i, result in enumerate(results):
                reference = as_text(batch["original_abstract_sents"][i]).split("\n")
                if first + i < report_examples:
                    _write_detail(decode_dir, first + i, batch, i, result)
                write_pair(decode_dir, first + i, reference, split_sentences(result["words"]))
            new += len(articles) - first
            rate = new / max(time.time() - start, 1e-9)
            left = mine - done if mine else 0
            logging.info(
                "%sdecoded %d%s articles, %.2f articles/s%s",
                label,
                done,
                "/%d" % mine if mine else "",
                rate,
                " ETA %.0fs" % (left / rate) if left > 0 and rate else "",
            )
        missing = sum(not has_pair(decode_dir, i) for i in range(len(articles)))
        if missing:
            logging.info(
                "Shard %d of %d is done; %d of %d articles wait for the other shards, and the "
                "last to finish scores %s",
                index,
                count,
                missing,
                len(articles),
                decode_dir,
            )
            return None
        with _merge_lock(decode_dir) if count > 1 else contextlib.nullcontext():
            scored = os.path.join(decode_dir, "metrics.json")
            if os.path.exists(scored):  # another shard scored
                return files.read_json(scored, "remove it, and any shard rescores the folder")
            references = [
                read_lines(pair_path(decode_dir, "reference", i)) for i in range(len(articles))
            ]
            hypotheses = [
                read_lines(pair_path(decode_dir, "decoded", i)) for i in range(len(articles))
            ]
            return score_folder(
                decode_dir,
                articles,
                references,
                hypotheses,
                lambda w: summarizer.vocab.word2id(w) != 0,
                with_meteor,
            )

    finally:
        lock.close()


REPORT_DETAIL = "report"


def _write_detail(decode_dir, index, batch, row, result):
    """Writes an article's ``report/%06d.json``: the per-token detail of ``report.html``."""
    source = as_text(batch["original_articles"][row]).split()[: int(batch["enc_lens"][row])]
    detail = report_lib.example_detail(
        source,
        result["words"],
        " ".join(as_text(batch["original_abstract_sents"][row]).split("\n")),
        result.get("attn"),
        result.get("p_gens"),
        result.get("sigma"),
        result.get("kl"),
        result.get("scale"),
        result.get("labels"),
    )
    path = os.path.join(decode_dir, REPORT_DETAIL, "%06d.json" % index)
    files.atomic_write_text(path, json.dumps(detail, ensure_ascii=False))


def _read_details(decode_dir, count):
    """The ``report/%06d.json`` details of a decode folder's first ``count`` articles,
    by article number (those written)."""
    folder = os.path.join(decode_dir, REPORT_DETAIL)
    names = sorted(os.listdir(folder)) if os.path.isdir(folder) else []
    details = {}
    for name in names:
        match = re.fullmatch(r"(\d{6})\.json", name)
        if match and int(match.group(1)) < count:
            fix = "remove it; the report then shows that article without detail"
            details[int(match.group(1))] = files.read_json(os.path.join(folder, name), fix)
    return details


def _log_existing(decode_dir, shard):
    """Says that this decode continues in a folder that was there already: a resume of
    an interrupted decode, or a shard joining the others' folder (new or resumed)."""
    written = len(os.listdir(os.path.join(decode_dir, "decoded")))
    if shard[1] > 1:
        logging.info(
            "Shard %d of %d joins the decode in %s (%d summaries written)",
            *shard,
            decode_dir,
            written,
        )
    else:
        logging.info(
            "Resuming the interrupted decode in %s (%d summaries written)", decode_dir, written
        )


def _shard_size(total, batch_size, index, count):
    """How many of ``total`` articles, read in batches of ``batch_size``, are in the
    batches of shard ``index`` of ``count`` (every ``count``-th batch from ``index``)."""
    batches = range(index, -(-total // batch_size), count)
    return sum(min(batch_size, total - b * batch_size) for b in batches)


@contextlib.contextmanager
def _merge_lock(decode_dir):
    """Holds ``decode_dir/merge.lock`` (one shard scores at a time)."""
    with open(os.path.join(decode_dir, "merge.lock"), "a", encoding="utf-8") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(lock, fcntl.LOCK_UN)


def lead_baseline(
    batcher: batcher_lib.Batcher,
    decode_dir: str,
    num_sentences: int,
    in_vocab: Callable[[str], bool],
    overwrite: bool = False,
    with_meteor: bool = True,
) -> Dict[str, Any]:
    """The lead-N baseline (first N article sentences) in the same folder layout and scores."""
    if os.path.exists(decode_dir) and not overwrite:
        raise FileExistsError(
            "%s already exists; remove it or pass --decode_overwrite" % decode_dir
        )
    prepare_folder(decode_dir, True, _manifest(batcher, {"lead": num_sentences}))  # afresh
    articles, references, hypotheses = [], [], []
    for batch in batcher.batches():
        for i in range(len(batch["enc_lens"])):
            article = as_text(batch["original_articles"][i])
            reference = as_text(batch["original_abstract_sents"][i]).split("\n")
            lead = copying.lead_sentences(article, num_sentences)
            write_pair(decode_dir, len(hypotheses), reference, lead)
            articles.append(article)
            references.append(reference)
            hypotheses.append(lead)
    notes = (REPORT_NOTES[0], LEAD_NOTE % num_sentences)
    return score_folder(decode_dir, articles, references, hypotheses, in_vocab, with_meteor, notes)


def score_folder(
    decode_dir: str,
    articles: Sequence[str],
    references: Sequence[List[str]],
    hypotheses: Sequence[List[str]],
    in_vocab: Callable[[str], bool],
    with_meteor: bool = True,
    notes: Optional[Sequence[str]] = None,
) -> Dict[str, Any]:
    """ROUGE-1.5.5, METEOR (exact and full), novel-word and OOV-adoption rates.

    Writes ``ROUGE_results.txt`` (the original's report), ``report.html``
    (``write_report``) and ``metrics.json`` (everything, last: a decode folder without it
    is resumed) into ``decode_dir`` and TensorBoard scalars next to them.

    Args:
      decode_dir: the decode folder.
      articles: source articles (strings).
      references: reference summaries, each a list of sentences.
      hypotheses: generated summaries, each a list of sentences.
      in_vocab: ``word -> bool`` for the OOV adoption rate.
      with_meteor: run METEOR (each mode starts the jar, which loads its tables).
      notes: the report's notes (None: ``REPORT_NOTES``, a decode's).

    Returns:
      A dict of the measures (ROUGE keys as pyrouge names them), with ``rouge_tool``,
      ``rouge_stand_ins`` (the words scored through ASCII stand-ins) and, when
      ``rouge-score`` scored, ``rouge_fallback`` (why).

    Raises:
      DecodeFolderError: there is nothing to score (the data held no usable article).
    """
    if not hypotheses:
        raise DecodeFolderError(
            "%s: nothing to score: the data files held no usable article (the log names "
            "the skipped records); check --data_path" % decode_dir
        )
    logging.info(
        "Scoring %d summaries with ROUGE%s",
        len(hypotheses),
        " and METEOR 1.5 (exact, full)" if with_meteor else "",
    )
    start = time.time()
    with progress_lib.stage("ROUGE of %d summaries" % len(hypotheses)):
        scored = rouge_lib.rouge(references, hypotheses)
    report = rouge_report(scored)
    _write_text(os.path.join(decode_dir, "ROUGE_results.txt"), report.splitlines())
    flat_refs = [" ".join(r) for r in references]
    flat_hyps = [" ".join(h) for h in hypotheses]
    metrics = {
        k: v for k, v in scored.scores.items() if k.startswith(("rouge_1_", "rouge_2_", "rouge_l_"))
    }
    metrics["rouge_tool"] = scored.tool
    metrics["rouge_stand_ins"] = scored.stand_ins
    if scored.fallback:
        metrics["rouge_fallback"] = scored.fallback
    try:
        for mode in meteor_lib.MODES if with_meteor else ():
            with progress_lib.stage("METEOR (%s) of %d summaries" % (mode, len(flat_hyps))):
                metrics["meteor_" + mode] = meteor_lib.meteor(flat_refs, flat_hyps, mode)[0]
    except meteor_lib.MeteorUnavailableError as e:
        logging.warning("METEOR not computed: %s", e)
    metrics["novel_word_rate"] = copying.novel_word_rate(articles, flat_hyps)
    metrics["oov_adoption_rate"] = copying.oov_adoption_rate(
        articles, flat_hyps, flat_refs, in_vocab
    )
    metrics["num_summaries"] = len(hypotheses)
    write_report(decode_dir, articles, hypotheses, scored.per_document, in_vocab, metrics, notes)
    _write_text(
        os.path.join(decode_dir, "metrics.json"),
        json.dumps(metrics, indent=2, sort_keys=True).splitlines(),
    )
    with tf.summary.create_file_writer(decode_dir).as_default(step=0):
        for name, value in metrics.items():
            if isinstance(value, float) and not name.endswith(("_cb", "_ce")):
                tf.summary.scalar("eval/" + name, value)
    logging.info("%s", _score_line(metrics, decode_dir, time.time() - start))
    return metrics


# What the report's list scores each summary with.
REPORT_SCORES = (("ROUGE-L F1", "rouge_l_f_score"), ("ROUGE-1 F1", "rouge_1_f_score"))
# What they are, given the tool that scored (``rouge_lib.Rouge.tool``).
REPORT_SCORE_LABEL = (
    "per-summary ROUGE-L and ROUGE-1 F1 from %s, the run that scored the corpus (ROUGE-1.5.5 "
    "reports the mean of 1,000 bootstrap resamples of them, within resampling noise of "
    "their plain mean)"
)
REPORT_NOTES = (
    "Copy rate: the share of a summary's tokens found in its article; OOVs: the summary's "
    "tokens that are article words outside the vocabulary.",
    report_lib.POSTERIOR_NOTE,
)
# The lead baseline's note, given N.
LEAD_NOTE = (
    "A baseline: each summary is its article's first %d sentence(s), with no model, so no "
    "attention, p_gen or posterior."
)
# Where the report's examples without detail have their summary and reference.
REPORT_ELSEWHERE = (
    "Its summary and reference are this folder's decoded/ and reference/ files numbered as "
    "in the list (decoded/000007_decoded.txt for #7); its article is the same example of "
    "the --data_path files."
)


def write_report(
    decode_dir: str,
    articles: Sequence[str],
    hypotheses: Sequence[List[str]],
    per_summary: Sequence[Dict[str, float]],
    in_vocab: Callable[[str], bool],
    metrics: Dict[str, Any],
    notes: Optional[Sequence[str]] = None,
) -> None:
    """Writes ``decode_dir/report.html`` (``acvi_tf.inference.report``): ``metrics``, every
    summary with its ``REPORT_SCORES``, length, copy rate and OOVs, and the per-token
    detail that the decode wrote to ``report/`` (``decode_single_pass``).

    Args:
      decode_dir, articles, hypotheses, in_vocab: as ``score_folder``'s.
      per_summary: each summary's ROUGE scores (``rouge_lib.Rouge.per_document``).
      metrics: the folder's metrics, ``rouge_tool`` among them.
      notes: the page's notes (None: ``REPORT_NOTES``).
    """
    rows = [
        report_lib.example_row(
            i,
            " ".join(hypothesis).split(),
            {name: scores[key] for name, key in REPORT_SCORES},
            article.split(),
            in_vocab,
        )
        for i, (article, hypothesis, scores) in enumerate(zip(articles, hypotheses, per_summary))
    ]
    report_lib.write_report(
        os.path.join(decode_dir, "report.html"),
        os.path.basename(os.path.normpath(decode_dir)),
        metrics,
        rows,
        _read_details(decode_dir, len(rows)),
        REPORT_SCORE_LABEL % metrics["rouge_tool"],
        REPORT_NOTES if notes is None else notes,
        REPORT_ELSEWHERE,
    )


def _score_line(metrics, decode_dir, seconds):
    """One line of a decode's scores (F and METEOR x100), the time they took and where
    they are written."""
    scores = ", ".join(
        "%s %.2f" % (name, 100 * metrics[key])
        for name, key in (
            ("ROUGE-1 F", "rouge_1_f_score"),
            ("ROUGE-2 F", "rouge_2_f_score"),
            ("ROUGE-L F", "rouge_l_f_score"),
            ("METEOR exact", "meteor_exact"),
            ("METEOR full", "meteor_full"),
        )
        if key in metrics
    )
    return "Scored %d summaries in %.1f s (%s): %s; novel-word rate %.3f; all in %s" % (
        metrics["num_summaries"],
        seconds,
        metrics["rouge_tool"],
        scores,
        metrics["novel_word_rate"],
        os.path.join(decode_dir, "metrics.json"),
    )


def rouge_report(scored: Any) -> str:
    """The original's ``ROUGE_results.txt`` text: F, recall, precision with 95% CIs,
    under a line that says which tool scored (``scored``: ``rouge_lib.rouge``'s)."""
    notes = []
    if scored.stand_ins:
        notes.append("%d non-ASCII words through ASCII stand-ins" % scored.stand_ins)
    if scored.fallback:
        notes.append("ROUGE-1.5.5 could not score: %s; no confidence intervals" % scored.fallback)
    lines = ["Scored with %s%s" % (scored.tool, " (%s)" % "; ".join(notes) if notes else "")]
    scores = scored.scores
    for kind, name in zip(rouge_lib.ROUGE_TYPES, ("1", "2", "L")):
        lines.append("ROUGE-%s:" % name)
        for measure in ("f_score", "recall", "precision"):
            key = "%s_%s" % (kind, measure)
            if key + "_cb" in scores:
                lines.append(
                    "%s: %.4f with confidence interval (%.4f, %.4f)"
                    % (key, scores[key], scores[key + "_cb"], scores[key + "_ce"])
                )
            else:
                lines.append("%s: %.4f" % (key, scores[key]))
    return "\n".join(lines)


def _f_scores(scores):
    """The ROUGE-1, ROUGE-2 and ROUGE-L F scores of a ``rouge_lib.Rouge.scores``, as
    ``score_folder`` names them."""
    return {"rouge_%s_f_score" % n: scores["rouge_%s_f_score" % n] for n in ("1", "2", "l")}


def decode_examples(
    summarizer: Summarizer, batch: Dict[str, Any], decode_dir: str
) -> List[Dict[str, Any]]:
    """The non-single-pass output: log each example, write ``attn_vis_data.json`` (the
    first example) and ``report.html`` (every example of the batch, with its detail, under
    the batch's ROUGE F scores)."""
    os.makedirs(decode_dir, exist_ok=True)
    results = summarizer.decode(batch)
    vocab = summarizer.vocab
    marked = []
    for i, result in enumerate(results):
        article = " ".join(
            as_text(batch["original_articles"][i]).split()[: int(batch["enc_lens"][i])]
        )
        oovs = [as_text(w) for w in np.asarray(batch["art_oovs"])[i] if as_text(w)]
        abstract = as_text(batch["original_abstracts"][i])
        marked.append(
            (
                vocab_lib.show_art_oovs(article, vocab),
                vocab_lib.show_abs_oovs(abstract, vocab, oovs),
            )
        )
        logging.info("ARTICLE:  %s", marked[-1][0])
        logging.info("REFERENCE SUMMARY: %s", marked[-1][1])
        logging.info("GENERATED SUMMARY: %s", " ".join(result["words"]))
    first = results[0]
    data = {
        "article_lst": marked[0][0].split(),
        "decoded_lst": first["words"],
        "abstract_str": marked[0][1],
        "attn_dists": first["attn"].tolist(),
        "p_gens": first["p_gens"].tolist(),
    }
    files.atomic_write_text(os.path.join(decode_dir, "attn_vis_data.json"), json.dumps(data))
    articles, references, hypotheses = [], [], []
    for i, result in enumerate(results):
        _write_detail(decode_dir, i, batch, i, result)
        articles.append(as_text(batch["original_articles"][i]))
        references.append(as_text(batch["original_abstract_sents"][i]).split("\n"))
        hypotheses.append(split_sentences(result["words"]))
    scored = rouge_lib.rouge(references, hypotheses)
    write_report(
        decode_dir,
        articles,
        hypotheses,
        scored.per_document,
        lambda w: vocab.word2id(w) != 0,
        dict(_f_scores(scored.scores), num_summaries=len(results), rouge_tool=scored.tool),
    )
    return results
