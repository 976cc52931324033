"""The corpus builders' tokenisers: ``--tokenizer=tftext`` against ``--tokenizer=treebank``
in the summarization builder and in the translation builder with BPE, on the same raw
pairs, interleaved in one process.

Each timed call is a whole build into a temporary folder: reading, tokenising (``tftext``
in one graph call per 1,000 strings), splitting and writing, and for translation
learning and applying the joint BPE; a third row times the translation builder's reading
and tokenising alone (``translation.make_pairs``). The pairs are the shipped samples made
raw again: their tokens joined back (``"do n't ."`` -> ``"don't."``) and each sentence
capitalised. Summarization: the Debian descriptions sample's articles and abstracts as
JSON lines, pair ``i`` from record ``i`` modulo its 4,800 with ``"Package i: "`` in
front, so that every article is distinct. Translation: the En-De sample's first pairs
(train, then dev and test) as a TSV.
``tftext``'s first call in a process imports tensorflow-text and traces the graph; it is
timed once apart and is not in the rounds (``report.time_interleaved`` runs one untimed
round). The table gives the median CPU and wall seconds per build and the per-round
ratios tftext / treebank (median and range).

Usage: python bench/builders.py [--pairs=5000] [--bpe_merges=8000] [--repeats=3]
"""

import glob
import json
import os
import re
import statistics
import sys
import tempfile
import time

from absl import app, flags, logging

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
from acvi_tf import config as config_lib
from acvi_tf.formats import bin_files, see_vocab
from acvi_tf.text import tokenizers
from data_prep import summarization, translation

import _report as report

SAMPLES = os.path.join(report.ROOT, "data_prep", "samples")
TOKENIZERS = ("treebank", "tftext")
BUILDS = {
    "summarization": "summarization",
    "translation with BPE": "translation",
    "translation: reading and tokenising only": "pairs",
}

_GLUED_LEFT = re.compile(r" ([.,;:!?)\]%]|n't|'s|'re|'ve|'ll|'d|'m|'')(?= |$)")
_GLUED_RIGHT = re.compile(r"(^| )([(\[$]|``) ")
_SENTENCE_START = re.compile(r"(^|[.!?] )([a-z])")


def raw(tokens: str) -> str:
    """Tokenised text made raw again: punctuation and clitics joined to their word,
    PTB quotes as ``"``, sentences capitalised."""
    text = _GLUED_RIGHT.sub(r"\1\2", _GLUED_LEFT.sub(r"\1", tokens))
    text = text.replace("``", '"').replace("''", '"')
    return _SENTENCE_START.sub(lambda m: m.group(1) + m.group(2).upper(), text)


def summarization_pairs(count: int) -> list:
    """``count`` raw (article, abstract) pairs from the Debian descriptions sample."""
    records = [
        record
        for path in sorted(glob.glob(os.path.join(SAMPLES, "debian_descriptions", "chunked", "*")))
        for record in bin_files.read_bin_file(path)
    ]
    marks = "%s |%s" % (see_vocab.SENTENCE_START, see_vocab.SENTENCE_END)
    pairs = []
    for i in range(count):
        article, abstract = records[i % len(records)]
        pairs.append(
            ("Package %d: %s" % (i, raw(article)), raw(re.sub(marks, "", abstract).strip()))
        )
    return pairs


def translation_pairs(count: int) -> list:
    """The first ``count`` raw (en, de) pairs of the En-De sample (train, dev, test)."""
    sides = []
    for lang in ("en", "de"):
        lines = []
        for split in ("train", "dev", "test"):
            with open(
                os.path.join(SAMPLES, "debian_en_de", "%s.%s" % (split, lang)), encoding="utf-8"
            ) as f:
                lines += [raw(line.rstrip("\n")) for line in f]
        sides.append(lines)
    pairs = list(zip(*sides))
    if len(pairs) < count:
        raise app.UsageError("--pairs=%d: the En-De sample has %d pairs" % (count, len(pairs)))
    return pairs[:count]


def define_flags(fv: flags.FlagValues) -> None:
    """Defines this benchmark's flags on ``fv``.

    Args:
      fv: where the flags go.
    """
    flags.DEFINE_integer("pairs", 5000, "Pairs per build.", lower_bound=1, flag_values=fv)
    flags.DEFINE_integer(
        "bpe_merges", 8000, "The translation build's BPE merges.", lower_bound=1, flag_values=fv
    )
    flags.DEFINE_integer(
        "repeats", 3, "Timed rounds (one build of each tokenizer per round).", flag_values=fv
    )


def _builds(folder: str, pairs: int, bpe_merges: int) -> dict:
    """``(builder, tokenizer) -> a build of ``pairs`` pairs into folder``."""
    jsonl = os.path.join(folder, "summarization.jsonl")
    with open(jsonl, "w", encoding="utf-8") as f:
        for article, abstract in summarization_pairs(pairs):
            f.write(json.dumps(dict(article=article, abstract=abstract)) + "\n")
    parallel = os.path.join(folder, "translation.tsv")
    with open(parallel, "w", encoding="utf-8") as f:
        f.write("en\tde\n")
        f.writelines("%s\t%s\n" % pair for pair in translation_pairs(pairs))
    builds = {}
    for tokenizer in TOKENIZERS:
        argv = ["x", "--input=%s" % jsonl, "--tokenizer=" + tokenizer]
        argv.append("--out_dir=%s" % os.path.join(folder, "summarization-" + tokenizer))
        config = config_lib.parse(summarization.define_flags, argv)
        builds["summarization", tokenizer] = lambda config=config: summarization.build(config)
        argv = ["x", "--src=en", "--tgt=de", "--input=%s" % parallel, "--tokenizer=" + tokenizer]
        argv += ["--bpe_merges=%d" % bpe_merges]
        argv.append("--out_dir=%s" % os.path.join(folder, "translation-" + tokenizer))
        config = config_lib.parse(translation.define_flags, argv)
        builds["translation", tokenizer] = lambda config=config: translation.build(config)
        builds["pairs", tokenizer] = lambda config=config: translation.make_pairs(
            translation.read_sources(config),
            tokenizers.batch_tokenizer(config.tokenizer, config.lowercase),
            0,
            translation.Stats(),
        )
    return builds


def _first_call_seconds() -> float:
    """Seconds of tftext's first call in this process: the import and the trace."""
    start = time.perf_counter()
    from acvi_tf.text import graph_tokenizer

    graph_tokenizer.tokenize_texts(["Warm up."])
    return time.perf_counter() - start


def _row(name, wall, cpu):
    treebank, tftext = TOKENIZERS
    return [
        name,
        "%.2f / %.2f" % (statistics.median(cpu[treebank]), statistics.median(wall[treebank])),
        "%.2f / %.2f" % (statistics.median(cpu[tftext]), statistics.median(wall[tftext])),
        report.ratio_cell(cpu[tftext], cpu[treebank]),
        report.ratio_cell(wall[tftext], wall[treebank]),
    ]


def run(config: config_lib.Config) -> None:
    """Times the builds and writes the results table.

    Args:
      config: the parsed flags (``define_flags``).
    """
    logging.set_verbosity(logging.WARNING)  # not the builds' progress lines
    first_call = _first_call_seconds()
    rows, data = [], {}
    with tempfile.TemporaryDirectory(prefix="bench-builders-") as folder:
        builds = _builds(folder, config.pairs, config.bpe_merges)
        for name, builder in BUILDS.items():
            runs = {tokenizer: builds[builder, tokenizer] for tokenizer in TOKENIZERS}
            wall, cpu = report.time_interleaved(runs, config.repeats)
            rows.append(_row(name, wall, cpu))
            data[builder] = dict(wall_s=wall, cpu_s=cpu)
    report.emit(
        "The builders' tokenisers: tftext in batches against Treebank",
        [
            "build (%d pairs)" % config.pairs,
            "treebank: CPU s / wall s",
            "tftext: CPU s / wall s",
            "tftext / treebank, CPU",
            "tftext / treebank, wall",
        ],
        rows,
        notes=[
            "Builds from reading to written files, medians of %d interleaved rounds; the "
            "ratios are per round (median and range). tftext's first call in the process "
            "(importing tensorflow-text and tracing the graph) took %.1f s, once, before "
            "the rounds." % (config.repeats, first_call)
        ],
        config=("%d pairs" % config.pairs, "bpe %d" % config.bpe_merges),
        data=data,
    )


if __name__ == "__main__":
    config_lib.run_command(define_flags, run)
