"""The corpus builders' tokenisers: ``--tokenizer=tftext`` against ``--tokenizer=treebank``
in the summarization builder and in the translation builder with BPE, on the same raw
pairs, as whole commands and in one process.

The whole-command rows time what a user runs once: ``python -m data_prep.summarization``
and ``python -m data_prep.translation --bpe_merges=N``, each in a fresh process (this
Python, from the repository root) writing into a fresh folder, its start, its imports and
``tftext``'s first call (importing tensorflow-text and tracing the graph) in its time; its
CPU time is the child's user and system time (``os.wait4``). The in-process rows time the
same builds called in this process, without those one-off costs: each call is a whole
build into a temporary folder (reading, tokenising with ``tftext`` in one graph call per
1,000 strings, splitting and writing, and for translation learning and applying the joint
BPE); a third in-process row times the translation builder's reading and tokenising alone
(``translation.make_pairs``). In this process ``tftext``'s first call is timed once
apart. Both kinds run the tokenizers interleaved (A B, then B A) after one untimed round.

The pairs are the shipped samples made raw again: their tokens joined back
(``"do n't ."`` -> ``"don't."``) and each sentence capitalised. Summarization: the Debian
descriptions sample's articles and abstracts as JSON lines, pair ``i`` from record ``i``
modulo its 4,800 with ``"Package i: "`` in front, so that every article is distinct.
Translation: the En-De sample's first pairs (train, then dev and test) as a TSV.

The table gives the median CPU and wall seconds per build and the per-round ratios tftext
/ treebank (median and range). Its results file is ``builders-<pairs>-pairs-bpe-<merges>-
commands-cpu.json``; the in-process table of earlier runs keeps its own file (without
``commands``).

Usage: python bench/builders.py [--pairs=5000] [--bpe_merges=8000] [--repeats=3]
"""

import glob
import json
import os
import re
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from typing import Dict, List, Sequence, Tuple

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
# row name -> the builder timed as a whole command
COMMANDS = {
    "summarization, whole command": "summarization",
    "translation with BPE, whole command": "translation",
}
# row name -> the build timed in this process
BUILDS = {
    "summarization, in one process": "summarization",
    "translation with BPE, in one process": "translation",
    "translation: reading and tokenising only, in one process": "pairs",
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


def _inputs(folder: str, pairs: int) -> Tuple[str, str]:
    """Writes the raw pairs into ``folder``.

    Args:
      folder: where the inputs go.
      pairs: pairs per input.

    Returns:
      ``(jsonl, tsv)``: the summarization builder's JSON lines and the translation
      builder's TSV.
    """
    jsonl = os.path.join(folder, "summarization.jsonl")
    with open(jsonl, "w", encoding="utf-8") as f:
        for article, abstract in summarization_pairs(pairs):
            f.write(json.dumps(dict(article=article, abstract=abstract)) + "\n")
    parallel = os.path.join(folder, "translation.tsv")
    with open(parallel, "w", encoding="utf-8") as f:
        f.write("en\tde\n")
        f.writelines("%s\t%s\n" % pair for pair in translation_pairs(pairs))
    return jsonl, parallel


def _flags(builder: str, tokenizer: str, inputs: Tuple[str, str], bpe_merges: int) -> List[str]:
    """The flags of one build, but ``--out_dir``: the same for a command and a call.

    Args:
      builder: ``summarization`` or ``translation``.
      tokenizer: one of ``TOKENIZERS``.
      inputs: ``_inputs``' files.
      bpe_merges: the translation build's BPE merges.
    """
    jsonl, parallel = inputs
    if builder == "summarization":
        return ["--input=%s" % jsonl, "--tokenizer=" + tokenizer]
    return [
        "--src=en",
        "--tgt=de",
        "--input=%s" % parallel,
        "--tokenizer=" + tokenizer,
        "--bpe_merges=%d" % bpe_merges,
    ]


def _builds(folder: str, inputs: Tuple[str, str], bpe_merges: int) -> dict:
    """``(builder, tokenizer) -> a build of the inputs into folder``, in this process."""
    builds = {}
    for tokenizer in TOKENIZERS:
        argv = ["x", *_flags("summarization", tokenizer, inputs, bpe_merges)]
        argv.append("--out_dir=%s" % os.path.join(folder, "summarization-" + tokenizer))
        config = config_lib.parse(summarization.define_flags, argv)
        builds["summarization", tokenizer] = lambda config=config: summarization.build(config)
        argv = ["x", *_flags("translation", tokenizer, inputs, bpe_merges)]
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


def run_command(argv: Sequence[str], out_dir: str) -> Tuple[float, float]:
    """Runs one build as a user does: a fresh process from the repository root.

    Args:
      argv: the command, without ``--out_dir``.
      out_dir: its output folder, new; removed afterwards.

    Returns:
      ``(wall, cpu)``: its seconds by the clock and its user and system CPU time.

    Raises:
      RuntimeError: the command failed (its output in the message).
    """
    log = out_dir + ".log"
    start = time.perf_counter()
    with open(log, "w+", encoding="utf-8") as out:
        process = subprocess.Popen(
            [*argv, "--out_dir=%s" % out_dir],
            cwd=report.ROOT,
            stdout=out,
            stderr=subprocess.STDOUT,
        )
        _, status, usage = os.wait4(process.pid, 0)
        wall = time.perf_counter() - start
        process.returncode = os.waitstatus_to_exitcode(status)  # reaped here, not by Popen
        out.seek(0)
        output = out.read()
    os.remove(log)
    shutil.rmtree(out_dir, ignore_errors=True)
    if process.returncode:
        raise RuntimeError("%s: exit status %d\n%s" % (" ".join(argv), process.returncode, output))
    return wall, usage.ru_utime + usage.ru_stime


def time_commands(
    commands: Dict[str, List[str]], folder: str, repeats: int
) -> Tuple[Dict[str, List[float]], Dict[str, List[float]]]:
    """Times each of ``commands`` (name -> argv) as ``report.time_interleaved`` times
    calls: ``repeats`` rounds, the order flipping every round, after one untimed round.

    Args:
      commands: name -> the command, without ``--out_dir``.
      folder: where each run gets its fresh output folder.
      repeats: timed rounds.

    Returns:
      ``(wall, cpu)``: name -> each round's seconds by the clock and in the command's CPU
      time.
    """
    wall = {name: [] for name in commands}
    cpu = {name: [] for name in commands}
    names = list(commands)
    for repeat in range(repeats + 1):
        for name in names if repeat % 2 else names[::-1]:
            out_dir = os.path.join(folder, "command-%s-%d" % (name, repeat))
            seconds, cpu_seconds = run_command(commands[name], out_dir)
            if repeat:
                wall[name].append(seconds)
                cpu[name].append(cpu_seconds)
    return wall, cpu


def _first_call_seconds() -> float:
    """Seconds of tftext's first call in this process: the import and the trace."""
    start = time.perf_counter()
    from acvi_tf.text import graph_tokenizer

    graph_tokenizer.tokenize_texts(["Warm up."])
    return time.perf_counter() - start


def _row(name: str, wall: Dict[str, List[float]], cpu: Dict[str, List[float]]) -> List[str]:
    """A table row: each tokenizer's median CPU / wall seconds, the per-round ratios."""
    treebank, tftext = TOKENIZERS
    return [
        name,
        "%.2f / %.2f" % (statistics.median(cpu[treebank]), statistics.median(wall[treebank])),
        "%.2f / %.2f" % (statistics.median(cpu[tftext]), statistics.median(wall[tftext])),
        report.ratio_cell(cpu[tftext], cpu[treebank]),
        report.ratio_cell(wall[tftext], wall[treebank]),
    ]


def _notes(repeats: int, first_call: float) -> List[str]:
    """The table's notes: how the rounds run, what each kind of row holds."""
    return [
        "Medians of %d rounds, the tokenizers interleaved after one untimed round; the "
        "ratios are per round (median and range)." % repeats,
        "Whole command: the build as a user runs it once, `python -m data_prep.<builder> "
        "... --out_dir=<new folder>` in a fresh process, its CPU time the child's user and "
        "system time: the process start, the imports and tftext's first call (importing "
        "tensorflow-text and tracing the graph) are in it.",
        "In one process: the same builds (from reading to written files) as calls in the "
        "benchmark's process, the tokenising cost without those one-off costs; tftext's "
        "first call in the process took %.1f s, once, before the rounds." % first_call,
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
        inputs = _inputs(folder, config.pairs)
        for name, builder in COMMANDS.items():
            commands = {
                tokenizer: [
                    sys.executable,
                    "-m",
                    "data_prep." + builder,
                    *_flags(builder, tokenizer, inputs, config.bpe_merges),
                ]
                for tokenizer in TOKENIZERS
            }
            wall, cpu = time_commands(commands, folder, config.repeats)
            rows.append(_row(name, wall, cpu))
            data[builder + " command"] = dict(wall_s=wall, cpu_s=cpu)
        builds = _builds(folder, inputs, config.bpe_merges)
        for name, builder in BUILDS.items():
            runs = {tokenizer: builds[builder, tokenizer] for tokenizer in TOKENIZERS}
            wall, cpu = report.time_interleaved(runs, config.repeats)
            rows.append(_row(name, wall, cpu))
            data[builder] = dict(wall_s=wall, cpu_s=cpu)
    report.emit(
        "The builders' tokenisers: tftext in batches against Treebank, whole commands and "
        "in one process",
        [
            "build (%d pairs)" % config.pairs,
            "treebank: CPU s / wall s",
            "tftext: CPU s / wall s",
            "tftext / treebank, CPU",
            "tftext / treebank, wall",
        ],
        rows,
        notes=_notes(config.repeats, first_call),
        config=("%d pairs" % config.pairs, "bpe %d" % config.bpe_merges, "commands"),
        data=data,
    )


if __name__ == "__main__":
    config_lib.run_command(define_flags, run)
