"""The context study's records, and the tables of the docs generated from them.

``bench/compare_contexts.py`` keeps each variant's runs of one invocation as one record,
``bench/results/compare_contexts/<task>-<corpus>-<steps>steps/<name>.json``: the
variant, the revision and TensorFlow version of the runs, the seeds, the date, the flags
and each run's validation NLL and task metric. A record is never rewritten: a rerun of
the same variant adds a record beside the old ones. Records recovered from git history,
where only the aggregate was kept, hold ``nll`` and ``metric`` as the ``mean +- std``
cells of their source file (``source`` names the commit) instead of ``runs``.

Each table of the docs is a block between ``<!-- table: NAME -->`` and ``<!-- /table -->``
lines; ``TABLES`` builds it from the records its cells name (task, corpus, steps,
variant, revision, seeds). ``python bench/tables.py`` rewrites the blocks;
``--check`` only reports the blocks that differ (exit status 1).

Usage::

  python bench/tables.py [--check]
"""

import decimal
import json
import os
import re
import sys
from typing import Callable, Dict, List, Optional, Sequence, Tuple, Union

import numpy as np
from absl import flags

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
from acvi_tf import config as config_lib  # noqa: E402 (the project root goes on the path first)
from acvi_tf import errors, files  # noqa: E402

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
RECORDS = os.path.join(ROOT, "bench", "results", "compare_contexts")
DOCS = ("README.md", os.path.join("docs", "acvi.md"), os.path.join("docs", "performance.md"))
_BLOCK = re.compile(r"^<!-- table: ([\w-]+) -->\n(.*?)^<!-- /table -->$", re.M | re.S)


class RecordError(errors.UserError, ValueError):
    """A table names a record that is missing or ambiguous, or a record is malformed."""


def seeds_name(seeds: Sequence[int]) -> str:
    """``seeds1-3`` for consecutive seeds, ``seeds1_5_9`` otherwise."""
    seeds = sorted(seeds)
    if len(seeds) > 1 and seeds == list(range(seeds[0], seeds[-1] + 1)):
        return "seeds%d-%d" % (seeds[0], seeds[-1])
    return "seeds" + "_".join(str(s) for s in seeds)


def record_name(record: dict) -> str:
    """The record's file name without ``.json``: variant, revision, TensorFlow, seeds."""
    revision = re.sub(r"[^a-z0-9_.]+", "-", record["revision"].lower())
    return "%s-%s-tf%s-%s" % (
        record["variant"],
        revision,
        record["tensorflow"],
        seeds_name(record["seeds"]),
    )


def folder_name(task: str, corpus: str, steps: int) -> str:
    """The folder of one task, corpus and step count's records."""
    return "%s-%s-%dsteps" % (task, corpus, steps)


def dumps(record: dict) -> str:
    """The record as JSON text: one field a line, one run a line."""
    lines = []
    for key, value in record.items():
        if key == "runs":
            runs = ",\n".join("  " + json.dumps(run) for run in value)
            lines.append(' "runs": [\n%s\n ]' % runs)
        else:
            lines.append(" %s: %s" % (json.dumps(key), json.dumps(value)))
    return "{\n" + ",\n".join(lines) + "\n}\n"


def write_record(record: dict, folder: Optional[str] = None) -> str:
    """Keeps ``record`` under ``folder`` without touching any record there.

    A record with the same name and the same runs is already kept; one with the same name
    and other numbers (another run at the same revision) gets the next free suffix.

    Args:
      record: its ``task``, ``corpus``, ``steps``, ``variant``, ``revision``,
        ``tensorflow``, ``seeds`` and ``runs``, and what else it keeps.
      folder: the records' root folder; None: ``RECORDS``.

    Returns:
      The record's id: its path under ``folder`` without ``.json``.
    """
    folder = folder or RECORDS
    subfolder = folder_name(record["task"], record["corpus"], record["steps"])
    os.makedirs(os.path.join(folder, subfolder), exist_ok=True)
    name, count = record_name(record), 1
    while True:
        record_id = "%s/%s%s" % (subfolder, name, "" if count == 1 else "-%d" % count)
        path = os.path.join(folder, record_id + ".json")
        if not os.path.exists(path):
            files.atomic_write_text(path, dumps(record))
            return record_id
        with open(path, encoding="utf-8") as f:
            if json.load(f).get("runs") == record["runs"]:
                return record_id
        count += 1


def load_records(folder: Optional[str] = None) -> Dict[str, dict]:
    """Every record under ``folder`` (None: ``RECORDS``), by id (its path there without
    ``.json``)."""
    folder = folder or RECORDS
    records = {}
    for subfolder in sorted(os.listdir(folder)):
        for name in sorted(os.listdir(os.path.join(folder, subfolder))):
            if name.endswith(".json"):
                with open(os.path.join(folder, subfolder, name), encoding="utf-8") as f:
                    records["%s/%s" % (subfolder, name[: -len(".json")])] = json.load(f)
    return records


def _cell_numbers(
    record: dict, which: Union[str, Tuple[str, ...]]
) -> Tuple[decimal.Decimal, decimal.Decimal]:
    """``(mean, std)`` of the record's ``nll``, ``metric`` or another number of its runs
    (a tuple: their sum in each run); exact decimals when the record keeps only its
    source's rounded cell."""
    if "runs" in record:
        names = (which,) if isinstance(which, str) else which
        values = [sum(run[name] for name in names) for run in record["runs"]]
        return decimal.Decimal(np.mean(values)), decimal.Decimal(np.std(values))
    mean, std = record[which].split(" +- ")
    return decimal.Decimal(mean), decimal.Decimal(std)


def benchmark_cells(record: dict) -> List[str]:
    """A BENCHMARKS.md row's cells after the variant: NLL, metric and the training KL per
    token (``mean +- std``; empty where the runs did not record it), seeds, revision and
    TensorFlow version."""
    if "runs" in record:
        cells = []
        for which in ("nll", "metric", "kl_per_token"):
            values = [run[which] for run in record["runs"] if which in run]
            kept = len(values) == len(record["runs"])
            cells.append("%.4f +- %.4f" % (np.mean(values), np.std(values)) if kept else "")
    else:
        cells = [record["nll"], record["metric"], ""]
    seeds = ",".join(str(s) for s in record["seeds"])
    return cells + [seeds, record["revision"], record["tensorflow"]]


def benchmark_rows(
    latest: Dict[str, str], records: Optional[Dict[str, dict]] = None
) -> List[List[str]]:
    """BENCHMARKS.md's rows of a compare_contexts table.

    Args:
      latest: variant -> the id of the record its row shows, in the table's order.
      records: the records by id; None: those in ``RECORDS``.
    """
    records = load_records() if records is None else records
    return [[variant, *benchmark_cells(records[rid])] for variant, rid in latest.items()]


class Pick:
    """One record of a table's cell: task, corpus, steps, variant, revision, seeds."""

    def __init__(
        self, corpus: Tuple[str, str, int], variant: str, revision: str, seeds: str = "1-3"
    ) -> None:
        """Names the record.

        Args:
          corpus: ``(task, corpus, steps)``.
          variant: the ``compare_contexts`` variant.
          revision: the revision that ran it.
          seeds: ``1-3`` (consecutive) or ``1_5_9``.
        """
        self.corpus, self.variant, self.revision, self.seeds = corpus, variant, revision, seeds

    def find(self, records: Dict[str, dict]) -> dict:
        """The one record this names among ``records``.

        Raises:
          RecordError: none or several match.
        """
        prefix = "%s/%s-%s-tf" % (folder_name(*self.corpus), self.variant, self.revision)
        found = [
            record_id
            for record_id, record in records.items()
            if record_id.startswith(prefix)
            and record["variant"] == self.variant
            and seeds_name(record["seeds"]) == "seeds" + self.seeds
        ]
        if len(found) != 1:
            raise RecordError(
                "%s: %d records of %s on %s at revision %s with seeds %s (want 1): run "
                "bench/compare_contexts.py or name the record's revision and seeds"
                % (
                    os.path.relpath(RECORDS, ROOT),
                    len(found),
                    self.variant,
                    "/".join(map(str, self.corpus)),
                    self.revision,
                    self.seeds,
                )
            )
        return records[found[0]]


def _rounded(
    record: dict, which: Union[str, Tuple[str, ...]], digits: int, scale: int
) -> List[decimal.Decimal]:
    """``[mean, std]`` of ``which`` times ``scale``, to ``digits`` decimals (half up at an
    exact tie of a kept cell)."""
    quantum = decimal.Decimal(1).scaleb(-digits)
    return [
        (x * scale).quantize(quantum, rounding=decimal.ROUND_HALF_UP)
        for x in _cell_numbers(record, which)
    ]


def _stat(record: dict, which: Union[str, Tuple[str, ...]], digits: int, scale: int = 1) -> str:
    """``mean ± std`` of ``which`` times ``scale``, to ``digits`` decimals."""
    return "%s ± %s" % tuple(_rounded(record, which, digits, scale))


# (task, corpus, steps) of the study's corpora
PIG_LATIN = ("translation", "shipped", 400)
SHAPES = ("captioning", "shipped", 400)
DEBIAN = ("summarization", "shipped", 400)
DEBIAN_FULL = ("summarization", "debian_full", 1000)
ENDE = ("translation", "debian_en_de", 1000)
ENDE_FULL = ("translation", "ende_full", 2000)
# each corpus's task metric: decimals and scale (ROUGE-L F1 in percent)
METRIC = {
    PIG_LATIN: (1, 1),
    SHAPES: (2, 1),
    DEBIAN: (1, 100),
    DEBIAN_FULL: (1, 100),
    ENDE: (1, 1),
    ENDE_FULL: (1, 1),
}


def _metric(record: dict, corpus: Tuple[str, str, int]) -> str:
    return _stat(record, "metric", *METRIC[corpus])


def _table(header: Sequence[str], rows: Sequence[Sequence[str]]) -> str:
    lines = []
    for row in [header, ["---"] * len(header)] + list(rows):
        lines.append("|" + "|".join(" %s " % cell if cell else " " for cell in row) + "|")
    lines[1] = lines[1].replace(" ", "")
    return "\n".join(lines)


def _metric_and_nll(
    records: Dict[str, dict],
    pick: Optional[Pick],
    nll_digits: int,
    bold: str = "",
    tensorflow: str = "2.21",
) -> str:
    """A cell ``metric (NLL)``: ``bold`` is ``metric`` or ``both``; a record of another
    TensorFlow than ``tensorflow`` is marked ``(TF x.y)``; no pick: empty."""
    if pick is None:
        return ""
    record = pick.find(records)
    metric = _metric(record, pick.corpus)
    nll = "(%s)" % _stat(record, "nll", nll_digits)
    if bold == "metric":
        metric = "**%s**" % metric
    cell = "%s %s" % (metric, nll)
    if bold == "both":
        cell = "**%s**" % cell
    version = ".".join(record["tensorflow"].split(".")[:2])
    return cell + (" (TF %s)" % version if version != tensorflow else "")


_STUDY_VARIANTS = (
    "sa",
    "acvi-mc",
    "acvi-mc-warmup",
    "acvi-bound",
    "acvi-bound-warmup",
    "acvi-exact",
    "acvi-exact-warmup",
    "acvi-bound-0.01",
    "acvi-exact-0.01",
    "acvi-gumbel-mc",
    "structured",
    "ved",
    "variational",
)


def study_shipped(records: Dict[str, dict]) -> str:
    """The first study: every variant on the shipped corpora, TensorFlow 2.15, dc81116."""
    rows = []
    for variant in _STUDY_VARIANTS:
        cells = ["`%s`" % variant]
        for corpus, nll_digits in ((DEBIAN, 2), (PIG_LATIN, 3), (SHAPES, 2)):
            record = Pick(corpus, variant, "dc81116").find(records)
            cells += [_stat(record, "nll", nll_digits), _metric(record, corpus)]
        rows.append(cells)
    header = ["variant", "summarization: val NLL", "ROUGE-L F1 x100", "translation: dev NLL"]
    header += ["dev BLEU", "captioning: val NLL", "val CIDEr-D"]
    return _table(header, rows)


# the recheck's corpora: (label, corpus, NLL decimals, revision of sa, of bound 0.01, of
# bound 0.001, of no KL term (None: not run))
_RECHECK = (
    ("Pig Latin dev (400), BLEU", PIG_LATIN, 3, "66b5e6a", "66b5e6a", "66b5e6a", "66b5e6a"),
    ("moving shapes val (400), CIDEr-D", SHAPES, 3, "66b5e6a", "66b5e6a", "66b5e6a", "66b5e6a"),
    (
        "Debian sample test (400), ROUGE-L F1 x100",
        DEBIAN,
        2,
        "66b5e6a",
        "66b5e6a",
        "66b5e6a",
        "66b5e6a",
    ),
    (
        "whole Debian test (1,000), ROUGE-L F1 x100",
        DEBIAN_FULL,
        2,
        "66b5e6a",
        "abf7c05",
        "66b5e6a",
        None,
    ),
    ("En-De sample dev (1,000), BLEU", ENDE, 2, "66b5e6a", "5eca919", "66b5e6a", None),
    ("whole En-De dev (2,000), BLEU", ENDE_FULL, 2, "239fac4", "239fac4", "66b5e6a", "20406c5"),
)
# cells in bold: (corpus, variant) -> what
_RECHECK_BOLD = {
    (SHAPES, "acvi-bound-0.01"): "metric",
    (ENDE, "acvi-bound-0.001"): "metric",
    (ENDE_FULL, "acvi-bound-0.01"): "both",
}


def default_recheck(records: Dict[str, dict]) -> str:
    """The default's choice on TensorFlow 2.21: sa, bound at 0.01 and 0.001, no KL."""
    variants = ("sa", "acvi-bound-0.01", "acvi-bound-0.001", "acvi-noise-only")
    rows = []
    for label, corpus, nll_digits, *revisions in _RECHECK:
        cells = [label]
        for variant, revision in zip(variants, revisions):
            pick = Pick(corpus, variant, revision) if revision else None
            bold = _RECHECK_BOLD.get((corpus, variant), "")
            cells.append(_metric_and_nll(records, pick, nll_digits, bold))
        rows.append(cells)
    header = ["corpus (steps), metric", "`sa`", "`bound`, 0.01", "`bound`, 0.001 (default)"]
    return _table(header + ["no KL term"], rows)


# the shipped corpora's eight-seed runs: (label, corpus, NLL decimals, revision)
_EIGHT_SEEDS = (
    ("Pig Latin dev (400), BLEU", PIG_LATIN, 3, "8de5d81"),
    ("moving shapes val (400), CIDEr-D", SHAPES, 3, "4b5dfc4"),
    ("Debian sample test (400), ROUGE-L F1 x100", DEBIAN, 2, "4b5dfc4"),
)


def eight_seeds(records: Dict[str, dict]) -> str:
    """Soft attention and the default with seeds 1-8 on the shipped corpora."""
    rows = []
    for label, corpus, nll_digits, revision in _EIGHT_SEEDS:
        cells = [label]
        for variant in ("sa", "acvi-bound-0.001"):
            cells.append(
                _metric_and_nll(records, Pick(corpus, variant, revision, "1-8"), nll_digits)
            )
        rows.append(cells)
    return _table(["corpus (steps), metric", "`sa`", "`bound`, 0.001 (default)"], rows)


def free_bits(records: Dict[str, dict]) -> str:
    """``bound`` at weight 1 with free bits of 1 and 8 nats, beside the default."""
    labels = ("Pig Latin, BLEU (NLL)", "moving shapes, CIDEr-D (NLL)")
    labels += ("Debian sample, ROUGE-L F1 x100 (NLL)",)
    rows = []
    for label, (_, corpus, nll_digits, revision) in zip(labels, _EIGHT_SEEDS):
        cells = [label]
        for variant in ("acvi-bound-freebits-1", "acvi-bound-freebits-8"):
            cells.append(_metric_and_nll(records, Pick(corpus, variant, revision), nll_digits))
        default = Pick(corpus, "acvi-bound-0.001", revision, "1-8")
        cells.append(_metric_and_nll(records, default, nll_digits))
        rows.append(cells)
    return _table(["corpus, metric", "λ = 1", "λ = 8", "default (above, 8 seeds)"], rows)


# the larger corpora: variant -> (its label's note, revision on the whole Debian corpus,
# revision on the En-De sample)
_LARGER = {
    "sa": ("", "66b5e6a", "66b5e6a"),
    "acvi-mc": (" (the paper's words)", "abf7c05", "5eca919"),
    "acvi-mc-warmup": ("", "4b5dfc4", "5eca919"),
    "acvi-bound": ("", "4b5dfc4", "5eca919"),
    "acvi-bound-warmup": ("", "4b5dfc4", "5eca919"),
    "acvi-exact": ("", "abf7c05", "5eca919"),
    "acvi-exact-warmup": ("", "4b5dfc4", "5eca919"),
    "acvi-bound-0.01": ("", "abf7c05", "5eca919"),
    "acvi-bound-0.001": (" (default)", "66b5e6a", "66b5e6a"),
    "structured": ("", "4b5dfc4", "8de5d81"),
    "ved": ("", "4b5dfc4", "8de5d81"),
    "variational": ("", "4b5dfc4", "5eca919"),
}


def larger_corpora(records: Dict[str, dict]) -> str:
    """The study's variants on the whole Debian corpus and the En-De sample."""
    rows = []
    for variant, (note, debian, ende) in _LARGER.items():
        bold = "metric" if variant == "acvi-bound-0.001" else ""
        rows.append(
            [
                "`%s`%s" % (variant, note),
                _metric_and_nll(records, Pick(DEBIAN_FULL, variant, debian), 2),
                _metric_and_nll(records, Pick(ENDE, variant, ende), 2, bold),
            ]
        )
    return _table(["variant", "whole Debian test, ROUGE-L F1 x100", "En-De sample dev, BLEU"], rows)


# the mixture sampler's runs: (label, corpus, NLL decimals, revision of the eight-seed
# runs of soft attention and the default)
_MIXTURE_REVISION = "7308a5d"
# the mixture sampler on the larger corpora
_LARGER_MIXTURE_REVISION = "2a91cc8"
# its `bound` and weight-0.001 variants on the whole En-De corpus
_ENDE_FULL_MIXTURE_REVISION = "c2d5f28"
# the runs that keep their training KL and NLL per token: the best estimator at weight 1
# on every corpus, and what it is compared with
_ELBO_REVISION = "f3bcb6c"
_MIXTURE_VARIANTS = (
    "acvi-mixture-mc",
    "acvi-mixture-bound",
    "acvi-mixture-mc-0.001",
    "acvi-mixture-bound-0.001",
)


def mixture_study(records: Dict[str, dict]) -> str:
    """The mixture sampler with ``mc`` and ``bound`` at weights 1 and 0.001 on the
    shipped corpora, beside soft attention, the default and the literal objective."""
    rows = []
    for label, corpus, nll_digits, revision in _EIGHT_SEEDS:
        cells = [label]
        for variant in ("sa", "acvi-bound-0.001"):
            cells.append(
                _metric_and_nll(records, Pick(corpus, variant, revision, "1-8"), nll_digits)
            )
        cells.append(_metric_and_nll(records, Pick(corpus, "acvi-mc", "dc81116"), nll_digits))
        for variant in _MIXTURE_VARIANTS:
            pick = Pick(corpus, variant, _MIXTURE_REVISION)
            cells.append(_metric_and_nll(records, pick, nll_digits))
        rows.append(cells)
    header = ["corpus (steps), metric", "`sa` (8 seeds)", "default (8 seeds)"]
    header += ["literal: eq. 25, `mc`, 1", "`mixture`, `mc`, 1", "`mixture`, `bound`, 1"]
    header += ["`mixture`, `mc`, 0.001", "`mixture`, `bound`, 0.001"]
    return _table(header, rows)


# the mixture sampler's estimator: (label, variant, revision on Pig Latin, on the moving
# shapes; None: not run)
_ESTIMATOR = (
    (
        "`mixture`, `bound`, 0.001, K = 1",
        "acvi-mixture-bound-0.001",
        _MIXTURE_REVISION,
        _MIXTURE_REVISION,
        _MIXTURE_REVISION,
    ),
    (
        "`mixture`, `bound`, 0.001, K = 1, a sampled context at test time",
        "acvi-mixture-bound-0.001-sample",
        "eac6093",
        None,
        None,
    ),
    ("`mixture`, `bound`, 0.001, K = 4", "acvi-mixture-bound-0.001-k4", "b50e9d2", "5b21ed9", None),
    (
        "`mixture`, `mc`, 1, K = 1",
        "acvi-mixture-mc",
        _MIXTURE_REVISION,
        _MIXTURE_REVISION,
        _MIXTURE_REVISION,
    ),
    ("`mixture`, `mc`, 1, K = 4", "acvi-mixture-mc-k4", "1bd433d", "5b21ed9-dirty", None),
    (
        "`mixture`, `bound`, 0.001, K = 1, the expected context fed",
        "acvi-mixture-bound-0.001-mean",
        "030caab",
        "afe812b",
        None,
    ),
    (
        "`mixture`, `bound`, 1, K = 1, the expected context fed",
        "acvi-mixture-bound-mean",
        "96f4ebb",
        None,
        None,
    ),
    (
        "`mixture`, `mc`, 1, K = 1, the expected context fed",
        "acvi-mixture-mc-mean",
        "96f4ebb",
        None,
        None,
    ),
    (
        "`mixture`, `bound`, 0.001, the expected context fed, top 4 summed",
        "acvi-mixture-bound-0.001-mean-top4",
        "fbcb9aa",
        "afe812b",
        "3bfe824",
    ),
    (
        "`mixture`, `bound`, 1, the expected context fed, top 4 summed",
        "acvi-mixture-bound-mean-top4",
        _ELBO_REVISION,
        _ELBO_REVISION,
        _ELBO_REVISION,
    ),
    (
        "the same, the KL's weight warmed up from 0 over the first half",
        "acvi-mixture-bound-mean-top4-warmup",
        _ELBO_REVISION,
        _ELBO_REVISION,
        None,
    ),
)


def mixture_estimator(records: Dict[str, dict]) -> str:
    """The mixture sampler on Pig Latin, the moving shapes and the Debian sample with one
    and with four samples per example, decoding with a sampled context, and with the
    expected context fed to the next step (``--acvi_feed=mean``)."""
    rows = []
    for label, variant, *revisions in _ESTIMATOR:
        cells = [label]
        for corpus, revision, digits in zip((PIG_LATIN, SHAPES, DEBIAN), revisions, (3, 3, 2)):
            pick = Pick(corpus, variant, revision) if revision else None
            cells.append(_metric_and_nll(records, pick, digits))
        rows.append(cells)
    return _table(
        [
            "variant",
            "Pig Latin dev (400), BLEU",
            "moving shapes val (400), CIDEr-D",
            "Debian sample test (400), ROUGE-L F1 x100",
        ],
        rows,
    )


# the README's rows: the paper's columns and ours, the picks of soft attention, the
# default, the literal objective, the ELBO of the paper's model with the draw fed back
# and with the lower-variance estimator (None: not run), and the verdict
_PAPER_ROWS = (
    (
        "summarization | CNN/DM test, ROUGE-L, with coverage (Table 1) | 36.38 / 39.05",
        "Debian descriptions sample test, ROUGE-L F1 x100",
        (Pick(DEBIAN, "sa", "4b5dfc4", "1-8"), Pick(DEBIAN, "acvi-bound-0.001", "4b5dfc4", "1-8")),
        Pick(DEBIAN, "acvi-mc", "dc81116"),
        Pick(DEBIAN, "acvi-mixture-mc", _MIXTURE_REVISION),
        Pick(DEBIAN, "acvi-mixture-bound-mean-top4", _ELBO_REVISION),
        "ties",
    ),
    (
        "summarization | (as above) | ",
        "whole Debian corpus (54,535 pairs), 1,000 steps, test ROUGE-L F1 x100",
        (Pick(DEBIAN_FULL, "sa", "66b5e6a"), Pick(DEBIAN_FULL, "acvi-bound-0.001", "66b5e6a")),
        Pick(DEBIAN_FULL, "acvi-mc", "abf7c05"),
        Pick(DEBIAN_FULL, "acvi-mixture-mc", _LARGER_MIXTURE_REVISION),
        Pick(DEBIAN_FULL, "acvi-mixture-bound-mean-top4", _ELBO_REVISION),
        "ties",
    ),
    (
        "captioning | MSVD test, CIDEr (Table 3) | 0.421 / 0.4375",
        "moving shapes validation, CIDEr-D",
        (Pick(SHAPES, "sa", "4b5dfc4", "1-8"), Pick(SHAPES, "acvi-bound-0.001", "4b5dfc4", "1-8")),
        Pick(SHAPES, "acvi-mc", "dc81116"),
        Pick(SHAPES, "acvi-mixture-mc", _MIXTURE_REVISION),
        Pick(SHAPES, "acvi-mixture-bound-mean-top4", _ELBO_REVISION),
        "ties",
    ),
    (
        "translation | IWSLT'15 En->Vi test, BLEU (arXiv Table 4) | 25.18 / 26.16",
        "Pig Latin dev, BLEU",
        (
            Pick(PIG_LATIN, "sa", "8de5d81", "1-8"),
            Pick(PIG_LATIN, "acvi-bound-0.001", "8de5d81", "1-8"),
        ),
        Pick(PIG_LATIN, "acvi-mc", "dc81116"),
        Pick(PIG_LATIN, "acvi-mixture-mc", _MIXTURE_REVISION),
        Pick(PIG_LATIN, "acvi-mixture-bound-mean-top4", _ELBO_REVISION),
        "ties",
    ),
    (
        "translation | (as above) | ",
        "En-De Debian descriptions sample dev, 1,000 steps, BLEU",
        (Pick(ENDE, "sa", "66b5e6a"), Pick(ENDE, "acvi-bound-0.001", "66b5e6a")),
        Pick(ENDE, "acvi-mc", "5eca919"),
        Pick(ENDE, "acvi-mixture-mc", _LARGER_MIXTURE_REVISION),
        Pick(ENDE, "acvi-mixture-bound-mean-top4", _ELBO_REVISION),
        "**helps**",
    ),
    (
        "translation | (as above) | ",
        "whole En-De Debian corpus (26,410 pairs) dev, 2,000 steps, BLEU",
        (Pick(ENDE_FULL, "sa", "239fac4"), Pick(ENDE_FULL, "acvi-bound-0.001", "66b5e6a")),
        Pick(ENDE_FULL, "acvi-mc", "239fac4"),
        Pick(ENDE_FULL, "acvi-mixture-mc", _LARGER_MIXTURE_REVISION),
        Pick(ENDE_FULL, "acvi-mixture-bound-mean-top4", _ELBO_REVISION),
        "ties",
    ),
)


# the mixture sampler on the larger corpora: (label, corpus, {variant of
# ``_MIXTURE_VARIANTS`` run there: the revision of its runs})
_MIXTURE_LARGER = (
    (
        "whole Debian test (1,000), ROUGE-L F1 x100",
        DEBIAN_FULL,
        {
            **dict.fromkeys(_MIXTURE_VARIANTS, _LARGER_MIXTURE_REVISION),
            "acvi-mixture-bound-mean-top4": _ELBO_REVISION,
        },
    ),
    (
        "En-De sample dev (1,000), BLEU",
        ENDE,
        {
            "acvi-mixture-mc": _LARGER_MIXTURE_REVISION,
            "acvi-mixture-bound-mean-top4": _ELBO_REVISION,
        },
    ),
    (
        "whole En-De dev (2,000), BLEU",
        ENDE_FULL,
        {
            "acvi-mixture-mc": _LARGER_MIXTURE_REVISION,
            **dict.fromkeys(_MIXTURE_VARIANTS[1:], _ENDE_FULL_MIXTURE_REVISION),
            "acvi-mixture-bound-mean-top4": _ELBO_REVISION,
        },
    ),
)


def mixture_larger(records: Dict[str, dict]) -> str:
    """The mixture sampler on the larger corpora beside the README's soft attention,
    default and literal objective there (3 seeds each); an empty cell was not run."""
    baselines = {row[2][0].corpus: row[2] + (row[3],) for row in _PAPER_ROWS}
    rows = []
    for label, corpus, run in _MIXTURE_LARGER:
        cells = [label] + [_metric_and_nll(records, pick, 2) for pick in baselines[corpus]]
        for variant in _MIXTURE_VARIANTS + ("acvi-mixture-bound-mean-top4",):
            pick = Pick(corpus, variant, run[variant]) if variant in run else None
            cells.append(_metric_and_nll(records, pick, 2))
        rows.append(cells)
    header = ["corpus (steps), metric", "`sa`", "default", "literal: eq. 25, `mc`, 1"]
    header += ["`mixture`, `mc`, 1", "`mixture`, `bound`, 1"]
    header += ["`mixture`, `mc`, 0.001", "`mixture`, `bound`, 0.001"]
    header += ["`mixture`, `bound`, 1, the expected context fed, top 4 summed"]
    return _table(header, rows)


# the runs that keep their training KL: (corpus label, corpus, metric digits, variants)
_ELBO_RUNS = (
    (
        "Pig Latin (400), dev BLEU",
        PIG_LATIN,
        (
            "acvi-mixture-mc",
            "acvi-mixture-bound-mean-top4",
            "acvi-mixture-bound-mean-top4-warmup",
            "acvi-mixture-bound-0.001-mean-top4",
        ),
    ),
    (
        "moving shapes (400), val CIDEr-D",
        SHAPES,
        (
            "acvi-mixture-mc",
            "acvi-mixture-bound-mean-top4",
            "acvi-mixture-bound-mean-top4-warmup",
        ),
    ),
    ("Debian sample (400), test ROUGE-L F1 x100", DEBIAN, ("acvi-mixture-bound-mean-top4",)),
    ("whole Debian (1,000), test ROUGE-L F1 x100", DEBIAN_FULL, ("acvi-mixture-bound-mean-top4",)),
    ("En-De sample (1,000), dev BLEU", ENDE, ("acvi-mixture-bound-mean-top4",)),
    ("whole En-De (2,000), dev BLEU", ENDE_FULL, ("acvi-mixture-bound-mean-top4",)),
)
_ELBO_LABELS = {
    "acvi-mixture-mc": "`mixture`, `mc`, 1",
    "acvi-mixture-bound-mean-top4": "`mixture`, `bound`, 1, mean fed, top 4",
    "acvi-mixture-bound-mean-top4-warmup": "the same, warmed up",
    "acvi-mixture-bound-0.001-mean-top4": "`mixture`, `bound`, 0.001, mean fed, top 4",
}


def elbo_terms(records: Dict[str, dict]) -> str:
    """What training computed per target token at the end of the runs that keep it: the
    context's KL, the gold tokens' loss and their sum (the negative ELBO at weight 1)."""
    rows = []
    for label, corpus, variants in _ELBO_RUNS:
        for variant in variants:
            record = Pick(corpus, variant, _ELBO_REVISION).find(records)
            rows.append(
                [
                    label,
                    _ELBO_LABELS[variant],
                    _metric(record, corpus),
                    _stat(record, "kl_per_token", 4),
                    _stat(record, "train_nll_per_token", 3),
                    _stat(record, ("train_nll_per_token", "kl_per_token"), 3),
                ]
            )
    header = ["corpus (steps), metric", "variant", "metric", "KL / token"]
    header += ["NLL / token", "NLL + KL / token"]
    return _table(header, rows)


def paper_comparison(records: Dict[str, dict]) -> str:
    """The README's table: the paper's numbers beside soft attention, the default and the
    literal objective here."""
    header = ["task", "paper: data, metric", "paper: SA / ACVI", "here: data, metric"]
    header += ["here: SA", "here: ACVI default", "here: paper's literal (`mc`, weight 1)"]
    header += ["here: ELBO of the paper's model (`mixture`, `mc`, weight 1)"]
    header += ["here: the same ELBO, lower-variance estimator (`bound`, mean fed, top 4)"]
    rows = []
    for paper, data, (sa, default), literal, elbo, estimator, verdict in _PAPER_ROWS:
        picks = (sa, default, literal, elbo, estimator)
        cells = [_metric(pick.find(records), pick.corpus) if pick else "" for pick in picks]
        rows.append(paper.split(" | ") + [data] + cells + [verdict])
    rows.append(
        ["domain transfer", "DUC2004, ROUGE-L (journal Table 4)", "22.69 / 28.14"]
        + ["not run: needs a CNN/DM model and NIST's DUC2004", "", "", "", "", "", ""]
    )
    return _table(header + ["ACVI against SA here"], rows)


# bfloat16's accuracy cost: (label, corpus, metric decimals, revision of the float32
# runs, of the bfloat16 runs)
_PRECISION = (
    ("Debian descriptions, test ROUGE-L F1", DEBIAN, 3, "66b5e6a", "ab7c823"),
    ("Pig Latin, dev BLEU", PIG_LATIN, 1, "66b5e6a", "7bc3012-dirty"),
    ("moving shapes, validation CIDEr-D", SHAPES, 2, "66b5e6a", "ab7c823"),
)


def bfloat16_accuracy(records: Dict[str, dict]) -> str:
    """Soft attention and the default trained in float32 and in bfloat16: the metrics."""
    rows = []
    for label, corpus, digits, float32, bfloat16 in _PRECISION:
        cells = [label]
        for variant in ("sa", "acvi-bound-0.001"):
            pair = (Pick(corpus, variant, float32), Pick(corpus, variant + "-bfloat16", bfloat16))
            means = [_rounded(pick.find(records), "metric", digits, 1)[0] for pick in pair]
            cells.append("%s / %s" % tuple(means))
        rows.append(cells)
    header = ["corpus, metric", "SA float32 / bfloat16", "ACVI default float32 / bfloat16"]
    return _table(header, rows)


# name in the docs' markers -> the function that builds the table from the records
TABLES: Dict[str, Callable[[Dict[str, dict]], str]] = {
    "paper-comparison": paper_comparison,
    "acvi-study-shipped": study_shipped,
    "acvi-default-recheck": default_recheck,
    "acvi-eight-seeds": eight_seeds,
    "acvi-free-bits": free_bits,
    "acvi-larger-corpora": larger_corpora,
    "acvi-mixture": mixture_study,
    "acvi-mixture-larger": mixture_larger,
    "acvi-mixture-estimator": mixture_estimator,
    "acvi-elbo-terms": elbo_terms,
    "bfloat16-accuracy": bfloat16_accuracy,
}


def render(text: str, records: Dict[str, dict], path: str) -> str:
    """``text`` with each table block rebuilt from ``records``.

    Raises:
      RecordError: a block names no table of ``TABLES``.
    """

    def block(match):
        name = match.group(1)
        if name not in TABLES:
            raise RecordError(
                "%s: no table named %r (choose from %s)" % (path, name, ", ".join(TABLES))
            )
        return "<!-- table: %s -->\n%s\n<!-- /table -->" % (name, TABLES[name](records))

    return _BLOCK.sub(block, text)


def stale(root: str = ROOT, records: Optional[Dict[str, dict]] = None) -> Dict[str, str]:
    """The docs whose tables differ from the records: path -> the text they should have."""
    records = load_records() if records is None else records
    changed = {}
    for doc in DOCS:
        path = os.path.join(root, doc)
        with open(path, encoding="utf-8") as f:
            text = f.read()
        new = render(text, records, doc)
        if new != text:
            changed[path] = new
    return changed


def define_flags(fv: flags.FlagValues) -> None:
    """Defines this script's flags on ``fv``.

    Args:
      fv: where the flags go.
    """
    flags.DEFINE_boolean(
        "check",
        False,
        "Rewrite nothing; list the docs whose tables differ from the records (exit 1).",
        flag_values=fv,
    )


def run(config: config_lib.Config) -> int:
    """Rewrites the docs' table blocks from the records, or with ``--check`` lists the
    docs whose blocks differ.

    Args:
      config: the parsed flags (``define_flags``).

    Returns:
      The exit status: 1 when ``--check`` found a doc to rewrite.
    """
    changed = stale()
    for path, text in changed.items():
        if config.check:
            print("%s: its tables differ from bench/results/compare_contexts" % path)
        else:
            files.atomic_write_text(path, text)
            print("rewrote the tables of %s" % path)
    return int(bool(changed) and config.check)


if __name__ == "__main__":
    config_lib.run_command(define_flags, run, exit_status=lambda status: status)
