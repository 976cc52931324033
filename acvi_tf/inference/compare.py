"""Two decodes of one test set side by side, with a paired bootstrap test of the difference.

``python -m acvi_tf.inference.compare --a=A --b=B [--reference=FILE] [--out=DIR]``
reads what the hosts' decodes write:

* the summarizer's decode folder, ``decoded/NNNNNN_decoded.txt`` and
  ``reference/NNNNNN_reference.txt`` (one sentence a line; See et al.'s original code
  writes the same layout and the same raw text: its ``make_html_safe`` returns its input
  unchanged): per-example ROUGE-1, ROUGE-2 and ROUGE-L F with ROUGE-1.5.5
  (``rouge``'s per-document scores; ``rouge-score`` where ROUGE-1.5.5 cannot score);
* a translation file, one sentence a line (``nmt.run_nmt``'s ``output_test``, or its
  ``--inference_output_file``), with ``--reference`` the reference file and optionally
  ``--source`` the source file: per-sentence BLEU statistics, tokenized as tensorflow/nmt
  scores them (``acvi_tf.metrics.bleu``);
* the captioner's decode folder (``captions.json``, or that file itself), with
  ``--reference`` the split's ``<split>.jsonl`` (``clip`` and raw ``references`` a line):
  per-caption CIDEr-D with the document frequencies of the whole test set.

Both decodes must hold the same test set: the same examples, and for the summarizer the
same reference summaries. ``--out`` (default ``compare_<A>_<B>`` in the current folder)
receives ``comparison.json`` (the corpus scores, the bootstrap of each metric, every
example's scores and their differences) and ``comparison.html`` (one page, no network:
the scores and the bootstrap at the top, then the examples of largest difference first).
A difference is always B's score minus A's.
"""

import json
import os
import re
from typing import Any, Dict, List, NamedTuple, Optional, Sequence

import numpy as np
from absl import app, flags, logging

from acvi_tf import config as config_lib
from acvi_tf import errors, files
from acvi_tf.config import Config
from acvi_tf.formats import bpe
from acvi_tf.inference import report as report_lib
from acvi_tf.metrics import bleu as bleu_lib
from acvi_tf.metrics import bootstrap as bootstrap_lib
from acvi_tf.metrics import captions as captions_lib
from acvi_tf.metrics import rouge as rouge_lib

TASKS = ("auto", "summarizer", "nmt", "captioner")
JSON_FILE = "comparison.json"
HTML_FILE = "comparison.html"
# What each task's decode is, for messages.
_KINDS = {
    "summarizer": "a summarizer decode folder",
    "nmt": "a translation file",
    "captioner": "a captioner decode",
}


class CompareError(errors.UserError, ValueError):
    """The two decodes cannot be compared; the message names the files and the fix."""


class Decodes(NamedTuple):
    """Two decodes of one test set, read and checked.

    Attributes:
      task: ``summarizer``, ``nmt`` or ``captioner``.
      ids: each example's name (its index, or the captioner's clip).
      sources: each example's source text, or None when the decodes do not hold it.
      references: each example's references (a list of strings).
      a: system A's output of each example (a list of sentences for the summarizer).
      b: system B's, the same way.
    """

    task: str
    ids: List[str]
    sources: Optional[List[str]]
    references: List[List[str]]
    a: List[Any]
    b: List[Any]


class Scored(NamedTuple):
    """Per-example scores of both systems and the bootstrap of each metric.

    Attributes:
      metrics: ``(label, key)`` of each metric, the one the page sorts by first.
      scores_a: one ``{key: score}`` per example for system A.
      scores_b: the same for system B.
      bootstraps: ``{key: bootstrap_lib.BootstrapResult}`` of the corpus metrics.
      scorer: which tool gave the per-example scores.
    """

    metrics: List[tuple]
    scores_a: List[Dict[str, float]]
    scores_b: List[Dict[str, float]]
    bootstraps: Dict[str, bootstrap_lib.BootstrapResult]
    scorer: str


def define_flags(fv: flags.FlagValues) -> None:
    """Defines this command's flags on ``fv``.

    Args:
      fv: where the flags go.
    """
    flags.DEFINE_string("a", None, "System A's decode folder or translation file.", flag_values=fv)
    flags.DEFINE_string("b", None, "System B's, of the same test set.", flag_values=fv)
    flags.DEFINE_string(
        "reference",
        None,
        "Translations: the reference file, one sentence a line. Captions: the split's "
        "<split>.jsonl. Summaries: not used (the decode folders hold them).",
        flag_values=fv,
    )
    flags.DEFINE_string(
        "source", None, "Translations: the source file, shown on the page.", flag_values=fv
    )
    flags.DEFINE_boolean(
        "bpe", False, "Translations: remove BPE (@@ ) before scoring.", flag_values=fv
    )
    flags.DEFINE_boolean(
        "allow_partial",
        False,
        "Summaries: compare an interrupted decode (a manifest.json without metrics.json) "
        "on the examples both decodes hold.",
        flag_values=fv,
    )
    flags.DEFINE_enum(
        "task", "auto", TASKS, "What the decodes are; auto: by their layout.", flag_values=fv
    )
    flags.DEFINE_string(
        "out", None, "Where the comparison goes (default: compare_<A>_<B> here).", flag_values=fv
    )
    flags.DEFINE_integer(
        "samples", bootstrap_lib.SAMPLES, "Bootstrap resamples.", lower_bound=1, flag_values=fv
    )
    flags.DEFINE_integer("seed", bootstrap_lib.SEED, "Seed of the resampling.", flag_values=fv)
    flags.DEFINE_integer(
        "html_examples",
        1000,
        "Examples on the page, largest difference first (comparison.json has all).",
        lower_bound=1,
        flag_values=fv,
    )
    flags.mark_flags_as_required(["a", "b"], flag_values=fv)


def detect_task(path: str) -> str:
    """The kind of decode at ``path``: ``summarizer`` (a folder with ``decoded/`` and
    ``reference/``), ``captioner`` (a folder with ``captions.json``, or a ``.json`` file)
    or ``nmt`` (any other file).

    Raises:
      CompareError: ``path`` is a folder of neither kind, or does not exist.
    """
    if os.path.isdir(path):
        if all(os.path.isdir(os.path.join(path, sub)) for sub in ("decoded", "reference")):
            return "summarizer"
        if os.path.isfile(os.path.join(path, "captions.json")):
            return "captioner"
        raise CompareError(
            "%s is a folder without decoded/ and reference/ (a summarizer decode) or "
            "captions.json (a captioner decode); give a decode folder or a translation file" % path
        )
    if os.path.isfile(path):
        return "captioner" if path.endswith(".json") else "nmt"
    raise CompareError("%s does not exist; give a decode folder or a translation file" % path)


def _summaries(folder, kind):
    """``{index: [sentence, ...]}`` of ``folder/<kind>/NNNNNN_<kind>.txt``."""
    pattern = re.compile(r"^(\d+)_%s\.txt$" % kind)
    path = os.path.join(folder, kind)
    found = {}
    for name in os.listdir(path):
        match = pattern.match(name)
        if match:
            with open(os.path.join(path, name), encoding="utf-8") as f:
                lines = [line for line in f.read().splitlines() if line.strip()]
            found[int(match.group(1))] = lines
    return found


# A single-pass decode of this project writes its manifest first and its metrics last
# (See et al.'s decode folders have neither).
DECODE_MANIFEST, DECODE_METRICS = "manifest.json", "metrics.json"


def _interrupted(folder):
    """Whether ``folder`` is a decode of this project that has not finished."""
    return os.path.exists(os.path.join(folder, DECODE_MANIFEST)) and not os.path.exists(
        os.path.join(folder, DECODE_METRICS)
    )


def _read_summarizer(config):
    pairs = []
    for name in ("a", "b"):
        folder = config[name]
        outputs, references = _summaries(folder, "decoded"), _summaries(folder, "reference")
        if set(outputs) != set(references):
            first = min(set(outputs) ^ set(references))
            raise CompareError(
                "%s: example %06d has a decoded summary or a reference but not both; "
                "finish the decode (it resumes) or decode again" % (folder, first)
            )
        if _interrupted(folder):
            if not config.allow_partial:
                raise CompareError(
                    "%s is an interrupted decode (%d summaries, no %s); finish it (its "
                    "decode command resumes), or give --allow_partial to compare the "
                    "examples both decodes hold" % (folder, len(outputs), DECODE_METRICS)
                )
            logging.warning("%s is an interrupted decode of %d summaries", folder, len(outputs))
        pairs.append((outputs, references))
    (out_a, ref_a), (out_b, ref_b) = pairs
    if config.allow_partial:
        both = sorted(set(out_a) & set(out_b))
        logging.warning(
            "Comparing the %d examples both decodes hold (A holds %d, B %d)",
            len(both),
            len(out_a),
            len(out_b),
        )
        out_a, out_b = {i: out_a[i] for i in both}, {i: out_b[i] for i in both}
    _check_same_examples(config, sorted(out_a), sorted(out_b))
    indices = sorted(out_a)
    for index in indices:
        if " ".join(ref_a[index]).split() != " ".join(ref_b[index]).split():
            raise CompareError(
                "%s and %s do not hold the same test set: the references of example %06d "
                "differ (%r against %r); compare decodes of the same data file"
                % (
                    config.a,
                    config.b,
                    index,
                    " ".join(ref_a[index])[:80],
                    " ".join(ref_b[index])[:80],
                )
            )
    return Decodes(
        task="summarizer",
        ids=["%06d" % i for i in indices],
        sources=None,
        references=[["\n".join(ref_a[i])] for i in indices],
        a=[out_a[i] for i in indices],
        b=[out_b[i] for i in indices],
    )


def _check_same_examples(config, ids_a, ids_b):
    """Both decodes hold the examples ``ids_a`` and ``ids_b``: the same, else one error."""
    if ids_a == ids_b:
        return
    if len(ids_a) != len(ids_b):
        detail = "%s holds %d examples, %s %d" % (config.a, len(ids_a), config.b, len(ids_b))
    else:
        first = sorted(set(ids_a) ^ set(ids_b), key=str)[0]
        detail = "example %s is in only one of them" % first
    raise CompareError(
        "%s and %s do not hold the same test set: %s; compare complete decodes of the same "
        "test set" % (config.a, config.b, detail)
    )


def _hold(count):
    return "holds" if count == 1 else "hold"


def _require_reference(config, what):
    if not config.reference:
        raise app.UsageError("--reference is required to compare %s" % what)


def _read_nmt(config):
    a, b = (
        files.read_input_lines(config.a, CompareError),
        files.read_input_lines(config.b, CompareError),
    )
    _check_same_examples(config, list(range(len(a))), list(range(len(b))))
    _require_reference(config, "translations (the reference file)")
    references = files.read_input_lines(config.reference, CompareError)
    sources = files.read_input_lines(config.source, CompareError) if config.source else None
    for path, lines in ((config.reference, references), (config.source, sources)):
        if lines is not None and len(lines) != len(a):
            raise CompareError(
                "%s holds %d lines but %s and %s %d translations; give the files of their "
                "test set" % (path, len(lines), config.a, config.b, len(a))
            )
    pieces = [
        path
        for path, lines in ((config.a, a), (config.b, b), (config.reference, references))
        if any(bpe.remove_bpe(line) != line for line in lines)
    ]
    if pieces and len(pieces) < 3 and not config.bpe:
        raise CompareError(
            "%s %s BPE pieces (@@) and the other files words, so their n-grams would not "
            "match; give --bpe to compare words" % (" and ".join(pieces), _hold(len(pieces)))
        )
    if config.bpe:
        a, b = [bpe.remove_bpe(x) for x in a], [bpe.remove_bpe(x) for x in b]
        references = [bpe.remove_bpe(x) for x in references]
    return Decodes("nmt", [str(i) for i in range(len(a))], sources, [[r] for r in references], a, b)


def _captions(path):
    if os.path.isdir(path):
        path = os.path.join(path, "captions.json")
    captions = files.read_json(
        path, "decode again (video_caption.run_captioning --mode=decode)", error=CompareError
    )
    if not all(isinstance(c, str) for c in captions.values()):
        raise CompareError("%s must map each clip to its caption (a string)" % path)
    return captions


def _read_captioner(config):
    a, b = _captions(config.a), _captions(config.b)
    _check_same_examples(config, sorted(a), sorted(b))
    _require_reference(config, "captions (the split's .jsonl)")
    references = {}
    for number, line in files.utf8_lines(config.reference, CompareError):
        if line.strip():
            try:
                record = json.loads(line)
                references[record["clip"]] = list(record["references"])
            except (ValueError, KeyError, TypeError) as e:
                raise CompareError(
                    "%s:%d: not a clip record with clip and references (%s); give the "
                    "split's .jsonl that data_prep.msvd wrote" % (config.reference, number, e)
                ) from e
    missing = sorted(set(a) - set(references))
    if missing:
        raise CompareError(
            "%s has no references of clip %s; give the split the decodes captioned"
            % (config.reference, missing[0])
        )
    ids = sorted(a)
    return Decodes(
        "captioner",
        ids,
        ids,
        [references[i] for i in ids],
        [a[i] for i in ids],
        [b[i] for i in ids],
    )


def read_decodes(config: Config) -> Decodes:
    """Reads the two decodes of ``config`` (``a``, ``b``, ``reference``, ``source``,
    ``bpe``, ``task``) and checks that they hold the same test set.

    Raises:
      CompareError: the decodes are of different kinds, of different test sets, or
        cannot be read; the message names both and the first differing example.
      app.UsageError: ``--reference`` is missing where the decodes need it.
    """
    task = config.task
    if task == "auto":
        task_a, task_b = detect_task(config.a), detect_task(config.b)
        if task_a != task_b:
            raise CompareError(
                "%s is %s but %s %s; compare two decodes of one kind"
                % (config.a, _KINDS[task_a], config.b, _KINDS[task_b])
            )
        task = task_a
    return {"summarizer": _read_summarizer, "nmt": _read_nmt, "captioner": _read_captioner}[task](
        config
    )


_ROUGE_METRICS = [
    ("ROUGE-1 F", "rouge_1_f_score"),
    ("ROUGE-2 F", "rouge_2_f_score"),
    ("ROUGE-L F", "rouge_l_f_score"),
]


def _score_summarizer(decodes, samples, seed):
    scored_a = rouge_lib.rouge(decodes.references, decodes.a)
    scored_b = rouge_lib.rouge(decodes.references, decodes.b)
    keys = [key for _, key in _ROUGE_METRICS]
    scores_a = [{k: s[k] for k in keys} for s in scored_a.per_document]
    scores_b = [{k: s[k] for k in keys} for s in scored_b.per_document]
    tools = sorted({scored_a.tool, scored_b.tool})
    return Scored(
        _ROUGE_METRICS,
        scores_a,
        scores_b,
        _mean_bootstraps(scores_a, scores_b, keys, samples, seed),
        " and ".join(tools),
    )


def _mean_bootstraps(scores_a, scores_b, keys, samples, seed):
    return {
        key: bootstrap_lib.paired_bootstrap(
            np.array([s[key] for s in scores_a]),
            np.array([s[key] for s in scores_b]),
            samples=samples,
            seed=seed,
        )
        for key in keys
    }


def _score_nmt(decodes, samples, seed):
    stats_a = bleu_lib.sentence_statistics(decodes.references, decodes.a)
    stats_b = bleu_lib.sentence_statistics(decodes.references, decodes.b)
    scores_a = [
        {"sentence_bleu": bleu_lib.bleu_of_statistics(row, sentence=True)} for row in stats_a
    ]
    scores_b = [
        {"sentence_bleu": bleu_lib.bleu_of_statistics(row, sentence=True)} for row in stats_b
    ]
    corpus = bootstrap_lib.paired_bootstrap(
        stats_a, stats_b, bleu_lib.bleu_of_statistics, samples, seed
    )
    return Scored(
        [("sentence BLEU", "sentence_bleu")],
        scores_a,
        scores_b,
        {"bleu": corpus},
        "tokenized BLEU-4 from sacrebleu's statistics; sentence BLEU as its sentence_bleu",
    )


def _score_captioner(decodes, samples, seed):
    # one run of the PTB tokenizer (one Java start) for the references and both systems;
    # an empty caption goes in as "." (the tokenizer needs a token a line) and scores 0
    texts = {("reference", i): refs for i, refs in zip(decodes.ids, decodes.references)}
    for name, outputs in (("a", decodes.a), ("b", decodes.b)):
        texts.update({(name, i): [c if c.strip() else "."] for i, c in zip(decodes.ids, outputs)})
    tokens = captions_lib.ptb_tokenize(texts)
    references = {i: tokens["reference", i] for i in decodes.ids}
    scores = []
    for name in ("a", "b"):
        hypotheses = {i: tokens[name, i][0] for i in decodes.ids}
        cider = captions_lib.cider_per_caption(references, hypotheses, tokenize=False)
        scores.append([{"cider_d": cider[i]} for i in decodes.ids])
    return Scored(
        [("CIDEr-D", "cider_d")],
        scores[0],
        scores[1],
        _mean_bootstraps(scores[0], scores[1], ["cider_d"], samples, seed),
        "pycocoevalcap's CIDEr-D after the PTB tokenizer",
    )


def score(decodes: Decodes, samples: int, seed: int) -> Scored:
    """Per-example scores of both systems and the bootstrap of each corpus metric.

    Args:
      decodes: what ``read_decodes`` read.
      samples: bootstrap resamples.
      seed: their seed.

    Returns:
      A ``Scored``: summaries get ROUGE-1, ROUGE-2 and ROUGE-L F (their means
      bootstrapped); translations sentence BLEU (corpus BLEU bootstrapped from the
      sentences' statistics, key ``bleu``); captions CIDEr-D (its mean bootstrapped).
    """
    task = {"summarizer": _score_summarizer, "nmt": _score_nmt, "captioner": _score_captioner}
    return task[decodes.task](decodes, samples, seed)


_CORPUS_LABELS = {
    "bleu": "BLEU",
    "rouge_1_f_score": "ROUGE-1 F",
    "rouge_2_f_score": "ROUGE-2 F",
    "rouge_l_f_score": "ROUGE-L F",
    "cider_d": "CIDEr-D",
}


def comparison(config: Config, decodes: Decodes, scored: Scored) -> Dict[str, Any]:
    """The record written to ``comparison.json``.

    Returns:
      ``{task, a, b, examples, scorer, corpus: [{metric, key, a, b, difference, low,
      high, p_value, samples, seed}], metrics: [{label, key}], per_example: [{id,
      source, reference, a, b, scores_a, scores_b, difference}]}``, the examples in
      test-set order.
    """
    corpus = [
        dict(metric=_CORPUS_LABELS[key], key=key, **result._asdict())
        for key, result in scored.bootstraps.items()
    ]
    per_example = []
    for i, example_id in enumerate(decodes.ids):
        a, b = scored.scores_a[i], scored.scores_b[i]
        per_example.append(
            dict(
                id=example_id,
                source=decodes.sources[i] if decodes.sources else None,
                reference=decodes.references[i],
                a=_text(decodes.a[i]),
                b=_text(decodes.b[i]),
                scores_a=a,
                scores_b=b,
                difference={key: b[key] - a[key] for key in a},
            )
        )
    return dict(
        task=decodes.task,
        a=config.a,
        b=config.b,
        examples=len(decodes.ids),
        scorer=scored.scorer,
        corpus=corpus,
        metrics=[dict(label=label, key=key) for label, key in scored.metrics],
        per_example=per_example,
    )


def _text(output):
    return output if isinstance(output, str) else "\n".join(output)


def ranked(per_example: Sequence[Dict[str, Any]], key: str) -> List[Dict[str, Any]]:
    """The examples by the size of their difference in ``key``, largest first (B's
    largest wins and losses first); ties in test-set order."""
    order = sorted(
        range(len(per_example)), key=lambda i: (-abs(per_example[i]["difference"][key]), i)
    )
    return [per_example[i] for i in order]


def _out_folder(config):
    """``--out``, else ``compare_<A>_<B>``: each decode's name, with its folder's name
    in front when the two names are the same (``output_test`` of two runs)."""
    if config.out:
        return config.out
    paths = [os.path.normpath(os.path.abspath(path)) for path in (config.a, config.b)]
    names = [os.path.basename(path) for path in paths]
    if names[0] == names[1]:
        names = [
            "%s_%s" % (os.path.basename(os.path.dirname(path)), os.path.basename(path))
            for path in paths
        ]
    return "compare_%s_%s" % tuple(names)


def run(config: Config) -> Dict[str, Any]:
    """Compares the decodes ``--a`` and ``--b``; writes ``comparison.json`` and
    ``comparison.html`` into ``--out``.

    Returns:
      The ``comparison.json`` record.

    Raises:
      CompareError: as ``read_decodes``, or ``--out`` already holds a comparison.
    """
    out = _out_folder(config)
    if os.path.exists(os.path.join(out, JSON_FILE)):
        raise CompareError("%s already holds %s; give a new --out or remove it" % (out, JSON_FILE))
    decodes = read_decodes(config)
    if not decodes.ids:
        raise CompareError("%s and %s hold no example" % (config.a, config.b))
    record = comparison(config, decodes, score(decodes, config.samples, config.seed))
    files.atomic_write_text(os.path.join(out, JSON_FILE), json.dumps(record, indent=1) + "\n")
    files.atomic_write_text(
        os.path.join(out, HTML_FILE),
        report_lib.comparison_page(
            record,
            ranked(record["per_example"], record["metrics"][0]["key"])[: config.html_examples],
        ),
    )
    for row in record["corpus"]:
        logging.info(
            "%s: A %.4f, B %.4f, B - A %+.4f (95%% interval %+.4f to %+.4f, p-value %.3f)",
            row["metric"],
            *report_lib.corpus_numbers(row),
        )
    logging.info("Wrote %s and %s in %s", JSON_FILE, HTML_FILE, out)
    return record


if __name__ == "__main__":
    config_lib.run_command(define_flags, run)
