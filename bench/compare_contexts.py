"""The paper's comparison on data you can run: context mechanisms and ACVI objectives, same
steps, 3 seeds.

For each ``--contexts`` variant and each ``--seeds`` seed, trains a small model for
``--steps`` steps on a shipped demo corpus through the real entry point (a subprocess, as
a user runs it), then reads the validation loss (per-token NLL), the task metric and
what training computed per decoder step at its end (``training_means``: the context's
KL, 0 where the posterior collapsed to the prior, and the gold tokens' loss, whose sum
is the negative ELBO per token where the objective is one):

* ``--task=captioning``: ``video_caption.run_captioning`` on the moving-shapes clips;
  validation NLL from ``--mode=eval`` and validation CIDEr-D (beam 3);
* ``--task=translation``: ``nmt.run_nmt`` on the Pig Latin words; dev NLL and BLEU
  (greedy) at the last step.
* ``--task=summarization``: ``pointer_generator.run_summarization`` on the Debian
  descriptions (no coverage); validation NLL from ``--mode=eval`` (20 batches) and
  ROUGE-L F1 (ROUGE-1.5.5) of a single-pass beam-4 decode of the test split. The
  ``transformer`` row is ``--model_type=transformer`` (the paper's journal baseline; with
  ``--pointer_gen=False``, since it cannot copy, so its NLL is over the fixed vocabulary).

Every variant shares the model, data and schedule; only the flags of ``VARIANTS`` change.
The ACVI variants are the three KL terms at weight 1 (``acvi-mc`` is the paper's words
taken literally), each with and without a linear KL warm-up over the first half of the
steps; ``bound`` and ``exact`` at weight 0.01, ``bound`` at 0.001; the sampled context
with no KL term (``acvi-noise-only``, which separates the noise's effect from the KL's);
``bound`` at weight 1 with free bits (Kingma et al., 2016) of 1 and 8 nats per decoder
step (``acvi-bound-freebits-1``, ``-8``: KL below the floor costs nothing);
Gumbel-softmax sampling for the whole run with ``mc`` (``acvi-gumbel-mc``); sampling from
the mixture posterior itself with ``mc`` and ``bound`` at weights 1 and 0.001
(``acvi-mixture-*``; at weight 1 a lower bound on ``log p(y)``, docs/acvi.md), the same
at weights 1 and 0.001 with the loop fed the expected context (``-mean``:
``--acvi_feed=mean``), the last also with the 4 largest-weight components scored exactly
(``-top4``: ``--acvi_enumerate_top=4``; at weight 1 also with a warm-up, ``-warmup``),
``mc``
at weight 1 and ``bound`` at 0.001 with 4 samples per example (``-k4``), and ``bound`` at
0.001 decoding with a sampled context (``-sample``); and soft attention and the default
ACVI (``acvi-bound-0.001``) trained with ``--mixed_precision=bfloat16`` (``-bfloat16``), the
accuracy cost of that precision. Each run's numbers go to
``<out_dir>/<variant>_seed<seed>.json`` first, so an interrupted study resumes where it
stopped. Each variant's runs are then kept as a record in
``bench/results/compare_contexts/`` (``bench/tables.py``): the runs' revision, TensorFlow
version, seeds, flags and per-seed numbers. A record is never rewritten; a rerun adds
one, and the docs' tables name the records they quote. The table printed and kept in
``bench/results/`` (one file per task, corpus and step count, from which BENCHMARKS.md is
generated) shows each variant's latest record: mean and standard deviation over the
seeds, with the revision and the TensorFlow version.

Runs made elsewhere (``<dir>/<variant>_seed<seed>.json``) become records by running this
script on their folder with the same ``--task``, corpus, ``--steps``, ``--contexts`` and
``--seeds``: every run is read back, none is trained. Run files that do not name their
revision take ``--revision``.

Usage::

  python bench/compare_contexts.py [--task=captioning|translation|summarization] \\
      [--steps=400] [--contexts=sa,acvi-exact,...] [--seeds=1,2,3] [--out_dir=DIR] \\
      [--summarization_data=FINISHED_FILES] [--translation_data=DIR,SRC,TGT] \\
      [--revision=REV]
"""

import datetime
import glob
import importlib.metadata
import json
import math
import os
import re
import subprocess
import sys
import tempfile
from typing import Dict, List, Optional, Tuple

import numpy as np
from absl import app, flags

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import tables

from acvi_tf import config as config_lib
from acvi_tf import files

import _report

SAMPLES = os.path.join(_report.ROOT, "data_prep", "samples")
_WARMUP = ["--kl_annealing=linear"]
_WEIGHT_1 = ["--context=acvi", "--kl_weight=1"]
_MIXTURE = ["--context=acvi", "--acvi_sampling=mixture"]
VARIANTS = {
    "sa": ["--context=sa"],
    "acvi-mc": _WEIGHT_1 + ["--acvi_kl=mc"],
    "acvi-mc-warmup": _WEIGHT_1 + ["--acvi_kl=mc"] + _WARMUP,
    "acvi-bound": _WEIGHT_1 + ["--acvi_kl=bound"],
    "acvi-bound-warmup": _WEIGHT_1 + ["--acvi_kl=bound"] + _WARMUP,
    "acvi-exact": _WEIGHT_1 + ["--acvi_kl=exact"],
    "acvi-exact-warmup": _WEIGHT_1 + ["--acvi_kl=exact"] + _WARMUP,
    "acvi-bound-0.01": ["--context=acvi", "--acvi_kl=bound", "--kl_weight=0.01"],
    "acvi-exact-0.01": ["--context=acvi", "--acvi_kl=exact", "--kl_weight=0.01"],
    "acvi-bound-0.001": ["--context=acvi", "--acvi_kl=bound", "--kl_weight=0.001"],
    "acvi-noise-only": ["--context=acvi", "--kl_weight=0"],
    "acvi-bound-freebits-1": _WEIGHT_1
    + ["--acvi_kl=bound", "--kl_free_bits=1", "--kl_free_bits_form=example"],
    "acvi-bound-freebits-8": _WEIGHT_1
    + ["--acvi_kl=bound", "--kl_free_bits=8", "--kl_free_bits_form=example"],
    "acvi-gumbel-mc": _WEIGHT_1 + ["--acvi_sampling=gumbel", "--acvi_kl=mc"],
    # sampling from the mixture q itself: at weight 1 a lower bound on log p(y)
    "acvi-mixture-mc": _WEIGHT_1 + ["--acvi_sampling=mixture", "--acvi_kl=mc"],
    "acvi-mixture-bound": _WEIGHT_1 + ["--acvi_sampling=mixture", "--acvi_kl=bound"],
    "acvi-mixture-mc-0.001": _MIXTURE + ["--acvi_kl=mc", "--kl_weight=0.001"],
    "acvi-mixture-bound-0.001": _MIXTURE + ["--acvi_kl=bound", "--kl_weight=0.001"],
    # with 4 samples per example (each sample's baseline: the other three)
    "acvi-mixture-mc-k4": _WEIGHT_1
    + ["--acvi_sampling=mixture", "--acvi_kl=mc", "--acvi_num_samples=4"],
    "acvi-mixture-bound-0.001-k4": _MIXTURE
    + ["--acvi_kl=bound", "--kl_weight=0.001", "--acvi_num_samples=4"],
    # the draw reaching only its step's output layer, the loop fed the expected context
    # (--acvi_feed=mean): at weight 1 a lower bound on log p(y) of that model
    "acvi-mixture-mc-mean": _WEIGHT_1
    + ["--acvi_sampling=mixture", "--acvi_kl=mc", "--acvi_feed=mean"],
    "acvi-mixture-bound-mean": _WEIGHT_1
    + ["--acvi_sampling=mixture", "--acvi_kl=bound", "--acvi_feed=mean"],
    "acvi-mixture-bound-0.001-mean": _MIXTURE
    + ["--acvi_kl=bound", "--kl_weight=0.001", "--acvi_feed=mean"],
    # and the 4 largest-weight components of each step scored exactly (sum and sample)
    "acvi-mixture-bound-mean-top4": _WEIGHT_1
    + ["--acvi_sampling=mixture", "--acvi_kl=bound", "--acvi_feed=mean"]
    + ["--acvi_enumerate_top=4"],
    # the same with the KL weight warmed up from 0 over the first half: a bound from then on
    "acvi-mixture-bound-mean-top4-warmup": _WEIGHT_1
    + ["--acvi_sampling=mixture", "--acvi_kl=bound", "--acvi_feed=mean"]
    + ["--acvi_enumerate_top=4"]
    + _WARMUP,
    "acvi-mixture-bound-0.001-mean-top4": _MIXTURE
    + ["--acvi_kl=bound", "--kl_weight=0.001", "--acvi_feed=mean", "--acvi_enumerate_top=4"],
    # the same, decoding (and scoring) with a sampled context instead of the mean
    "acvi-mixture-bound-0.001-sample": _MIXTURE
    + ["--acvi_kl=bound", "--kl_weight=0.001", "--acvi_decode=sample"],
    # the precision: soft attention and the default ACVI in bfloat16 (float32 above)
    "sa-bfloat16": ["--context=sa", "--mixed_precision=bfloat16"],
    "acvi-bound-0.001-bfloat16": [
        "--context=acvi",
        "--acvi_kl=bound",
        "--kl_weight=0.001",
        "--mixed_precision=bfloat16",
    ],
    "structured": ["--context=structured"],
    "ved": ["--context=ved"],
    "variational": [
        "--context=variational",
        "--variational_mode=sample",
        "--variational_inference_units=64",
    ],
}


def _variant_flags(variant, steps):
    """The variant's flags; a warm-up ramps over the first half of the run."""
    return VARIANTS.get(variant, []) + ["--kl_anneal_steps=%d" % max(steps // 2, 1)]


def _run(args, log_path):
    """Runs ``python -m ...`` from the project root; its output goes to ``log_path``."""
    with open(log_path, "a", encoding="utf-8") as log:
        done = subprocess.run(
            [sys.executable, "-m"] + args,
            cwd=_report.ROOT,
            stdout=log,
            stderr=subprocess.STDOUT,
            check=False,
        )
    if done.returncode:
        raise RuntimeError("%s failed (exit %d); see %s" % (args[0], done.returncode, log_path))
    with open(log_path, encoding="utf-8") as log:
        return log.read()


def training_means(events: str, steps: int) -> Dict[str, float]:
    """What training computed per real decoder step at the end of a run: the hosts'
    ``kl_per_token`` (the context's KL in nats, before weight and floor: how much the
    context still carries, 0 where the posterior has collapsed to the prior and for a
    mechanism without a KL) and ``nll_per_token`` (the gold tokens' loss, the sampled
    context's where there is one), each averaged over the values the run's TensorBoard
    folder ``events`` holds from its last quarter (``step >= 3/4 steps``).

    Returns:
      ``kl_per_token`` and ``train_nll_per_token``; at weight 1 with a sampler whose
      objective is a bound their sum is the negative ELBO per token.

    Raises:
      RuntimeError: the folder holds no such value (a run of an older revision).
    """
    import tensorflow as tf  # only here: the rest of the study runs commands

    values = {"kl_per_token": [], "nll_per_token": []}
    for path in glob.glob(os.path.join(events, "events.out.tfevents.*")):
        for record in tf.data.TFRecordDataset(path):
            event = tf.compat.v1.Event.FromString(record.numpy())
            for value in event.summary.value:
                if value.tag in values and 4 * event.step >= 3 * steps:
                    values[value.tag].append(float(tf.make_ndarray(value.tensor)))
    missing = sorted(tag for tag, found in values.items() if not found)
    if missing:
        raise RuntimeError("%s: no %s from the last quarter of the run" % (events, missing))
    return dict(
        kl_per_token=float(np.mean(values["kl_per_token"])),
        train_nll_per_token=float(np.mean(values["nll_per_token"])),
    )


def captioning_flags(out_dir: str, seed: int) -> List[str]:
    """The study's captioner on the shipped moving shapes: data, sizes, search, metric."""
    sample = os.path.join(SAMPLES, "moving_shapes")
    return [
        "--data_dir=" + sample,
        "--features=" + os.path.join(sample, "features.h5"),
        "--out_dir=" + out_dir,
        "--seed=%d" % seed,
        "--num_frames=8",
        "--feature_norm=standardize",
        "--encoder_units=48",
        "--decoder_units=64",
        "--emb_dim=32",
        "--attention_units=32",
        "--dropout=0.2",
        "--learning_rate=0.005",
        "--batch_size=32",
        "--beam_size=3",
        "--max_decode_len=12",
        "--metrics=CIDEr",
        "--best_metric=CIDEr",
    ]


def captioning(
    context: str, seed: int, steps: int, out_dir: str, data: Optional[str] = None
) -> Tuple[float, float, Dict[str, float]]:
    """One captioning run on the shipped Moving Shapes sample.

    Args:
      context: the variant (a key of ``VARIANTS``).
      seed: the run's ``--seed``.
      steps: training steps.
      out_dir: the run's folder (its log: ``out_dir.log``).
      data: another corpus; the captioner has none (None).

    Returns:
      ``(validation NLL per token, validation CIDEr-D, training_means)``.
    """
    del data  # the shipped sample only
    common = captioning_flags(out_dir, seed) + _variant_flags(context, steps)
    log = out_dir + ".log"
    _run(
        [
            "video_caption.run_captioning",
            "--mode=train",
            "--max_steps=%d" % steps,
            "--valid_every=%d" % steps,
            "--checkpoint_steps=%d" % steps,
        ]
        + common,
        log,
    )
    # the last checkpoint, not the best one: every mechanism gets exactly --steps steps
    ckpt = os.path.join(out_dir, "train", "ckpt-%d" % steps)
    _run(
        ["video_caption.run_captioning", "--mode=eval", "--eval_splits=val", "--ckpt=" + ckpt]
        + common,
        log,
    )
    with open(os.path.join(out_dir, "eval_metrics.json"), encoding="utf-8") as f:
        val = json.load(f)["val"]
    means = training_means(os.path.join(out_dir, "train_log"), steps)
    return math.log(val["perplexity"]), val["CIDEr"], means


def translation_flags(out_dir: str, seed: int, steps: int, data: Optional[str] = None) -> List[str]:
    """The study's translator: data (``--translation_data``'s ``DIR,SRC,TGT``, else the
    shipped Pig Latin), sizes, schedule, one validation at the end."""
    sample, src, tgt = (
        data.split(",") if data else (os.path.join(SAMPLES, "pig_latin"), "src", "tgt")
    )
    return [
        "--src=" + src,
        "--tgt=" + tgt,
        "--vocab_prefix=" + os.path.join(sample, "vocab"),
        "--train_prefix=" + os.path.join(sample, "train"),
        "--dev_prefix=" + os.path.join(sample, "dev"),
        "--out_dir=" + out_dir,
        "--num_units=64",
        "--encoder_type=bi",
        "--dropout=0.0",
        "--optimizer=adam",
        "--learning_rate=0.01",
        "--batch_size=64",
        "--num_train_steps=%d" % steps,
        "--steps_per_stats=100",
        "--steps_per_external_eval=%d" % steps,
        "--seed=%d" % seed,
    ]


def translation(
    context: str, seed: int, steps: int, out_dir: str, data: Optional[str] = None
) -> Tuple[float, float, Dict[str, float]]:
    """One translation run on Pig Latin (or ``--translation_data``).

    Args:
      context: the variant (a key of ``VARIANTS``).
      seed: the run's ``--seed``.
      steps: training steps.
      out_dir: the run's folder (its log: ``out_dir.log``).
      data: ``--translation_data`` (``DIR,SRC,TGT``); None: the shipped Pig Latin.

    Returns:
      ``(dev NLL per token, dev BLEU, training_means)``.
    """
    log = out_dir + ".log"
    common = translation_flags(out_dir, seed, steps, data)
    output = _run(["nmt.run_nmt"] + common + _variant_flags(context, steps), log)
    bleu, nll = re.findall(r"dev: ppl [0-9.]+, bleu ([0-9.]+), nll ([0-9.]+)", output)[-1]
    return float(nll), float(bleu), training_means(os.path.join(out_dir, "train_log"), steps)


def summarization_flags(sample: str, out_dir: str, seed: int, steps: int) -> List[str]:
    """The study's summarizer on the corpus in ``sample`` (its ``vocab``): sizes and
    schedule, the run in ``out_dir`` (``log_root`` and ``exp_name``)."""
    return [
        "--vocab_path=" + os.path.join(sample, "vocab"),
        "--vocab_size=10000",
        "--log_root=" + os.path.dirname(out_dir),
        "--exp_name=" + os.path.basename(out_dir),
        "--hidden_dim=64",
        "--emb_dim=32",
        "--batch_size=16",
        "--max_enc_steps=80",
        "--max_dec_steps=20",
        "--optimizer=adam",
        "--max_steps=%d" % steps,
        "--seed=%d" % seed,
    ]


def summarization(
    context: str, seed: int, steps: int, out_dir: str, data: Optional[str] = None
) -> Tuple[float, float, Dict[str, float]]:
    """One summarization run on the Debian descriptions (or ``--summarization_data``).

    Args:
      context: the variant (a key of ``VARIANTS``, or ``transformer``).
      seed: the run's ``--seed``.
      steps: training steps.
      out_dir: the run's folder (its log: ``out_dir.log``).
      data: ``--summarization_data``; None: the shipped sample.

    Returns:
      ``(validation NLL per token, test ROUGE-L F1, training_means)``.
    """
    sample = data or os.path.join(SAMPLES, "debian_descriptions")
    chunks = os.path.join(sample, "chunked")
    if context == "transformer":
        model = [
            "--model_type=transformer",
            "--transformer_units=64",
            "--transformer_layers=2",
            "--transformer_heads=4",
            "--transformer_dropout=0.1",
            "--context=sa",
            "--pointer_gen=False",
        ]
    else:
        model = _variant_flags(context, steps)
    common = summarization_flags(sample, out_dir, seed, steps) + model
    log = out_dir + ".log"
    module = "pointer_generator.run_summarization"
    _run([module, "--mode=train", "--data_path=" + os.path.join(chunks, "train_*")] + common, log)
    output = _run(
        [
            module,
            "--mode=eval",
            "--eval_max_batches=20",
            "--data_path=" + os.path.join(chunks, "val_*"),
        ]
        + common,
        log,
    )
    losses = [float(x) for x in re.findall(r"eval step \d+: loss ([0-9.]+)", output)]
    _run(
        [
            module,
            "--mode=decode",
            "--single_pass",
            "--beam_size=4",
            "--min_dec_steps=3",
            "--decode_batch_size=50",
            "--data_path=" + os.path.join(chunks, "test_*"),
        ]
        + common,
        log,
    )
    [metrics] = glob.glob(os.path.join(out_dir, "decode_*", "metrics.json"))
    with open(metrics, encoding="utf-8") as f:
        scores = json.load(f)
    if scores["rouge_tool"] != "ROUGE-1.5.5":
        # rouge-score's numbers differ from the reference tool's: never mix them in a table
        raise RuntimeError(
            "%s was scored with %s, not ROUGE-1.5.5 (Perl's XML::Parser is missing: run "
            "make sysdeps); delete %s and run again" % (metrics, scores["rouge_tool"], out_dir)
        )
    means = training_means(os.path.join(out_dir, "train"), steps)
    return float(np.mean(losses)), scores["rouge_l_f_score"], means


DATE = "%Y-%m-%d %H:%M UTC"
NOTE = (
    "Mean +- standard deviation over the seeds of each variant's latest record in "
    "bench/results/compare_contexts/ (a rerun adds a record; the docs' tables name the "
    "records they quote). Each row names the revision and the TensorFlow version of its "
    "runs: another TensorFlow draws other initial weights, so compare rows of one version."
)

TASKS = {
    "captioning": (captioning, "validation CIDEr-D"),
    "translation": (translation, "dev BLEU"),
    "summarization": (summarization, "test ROUGE-L F1"),
}


def _one_run(run_task, variant, seed, steps, root, data, stamp):
    """One run's numbers (``nll``, ``metric``, ``training_means``, ``revision``,
    ``tensorflow``, ``date``),
    read back from its JSON file when it has one; ``stamp`` holds the last three for a
    new run, and the revision and TensorFlow version for a file written before runs kept
    them (written into it, with the file's date)."""
    name = os.path.join(root, "%s_seed%s" % (variant, seed))
    path = name + ".json"
    if os.path.exists(path):
        with open(path, encoding="utf-8") as f:
            run = json.load(f)
        if not set(stamp) <= set(run):
            # a run made by an earlier compare_contexts, dated by its file: it keeps the
            # stamp from now on
            made = datetime.datetime.fromtimestamp(os.path.getmtime(path), datetime.timezone.utc)
            run = {**stamp, "date": made.strftime(DATE), **run}
            files.atomic_write_text(path, json.dumps(run) + "\n")
        return run
    nll, metric, means = run_task(variant, int(seed), steps, name, data)
    run = dict(
        variant=variant,
        seed=int(seed),
        steps=steps,
        flags=_variant_flags(variant, steps),
        nll=nll,
        metric=metric,
        **means,
        **stamp,
    )
    files.atomic_write_text(path, json.dumps(run) + "\n")
    return run


# what a record keeps of each run (runs made before the KL was recorded have none)
RUN_NUMBERS = ("nll", "metric", "kl_per_token", "train_nll_per_token")


def _records(key, variant, runs, steps):
    """Keeps a variant's runs (seed -> run) as records, one per revision and TensorFlow
    version of the runs; returns the latest one's id."""
    groups = {}
    for seed, run in runs.items():
        groups.setdefault((run["revision"], run["tensorflow"]), {})[int(seed)] = run
    latest = None
    for (revision, stack), group in sorted(
        groups.items(), key=lambda g: max(r["date"] for r in g[1].values())
    ):
        record = dict(
            task=key[0],
            corpus=key[1],
            steps=steps,
            variant=variant,
            revision=revision,
            tensorflow=stack,
            seeds=sorted(group),
            date=max(run["date"] for run in group.values()),
            flags=group[min(group)]["flags"],
            runs=[
                {
                    "seed": seed,
                    **{k: group[seed][k] for k in RUN_NUMBERS if k in group[seed]},
                }
                for seed in sorted(group)
            ],
        )
        latest = tables.write_record(record)
    return latest


def define_flags(fv: flags.FlagValues) -> None:
    """Defines this benchmark's flags on ``fv``.

    Args:
      fv: where the flags go.
    """
    flags.DEFINE_enum(
        "task", "captioning", list(TASKS), "Which host and demo corpus.", flag_values=fv
    )
    flags.DEFINE_integer(
        "steps", 400, "Training steps of every run.", lower_bound=1, flag_values=fv
    )
    flags.DEFINE_list(
        "contexts",
        list(VARIANTS),
        "Variants (VARIANTS); with --task=summarization also 'transformer'.",
        flag_values=fv,
    )
    flags.DEFINE_list("seeds", ["1", "2", "3"], "Seeds.", flag_values=fv)
    flags.DEFINE_string(
        "out_dir", None, "Where the runs go (default: a temporary folder).", flag_values=fv
    )
    flags.DEFINE_string(
        "translation_data",
        None,
        "--task=translation: 'DIR,SRC,TGT', a "
        "folder with {vocab,train,dev}.{SRC,TGT}, e.g. data_prep/samples/"
        "debian_en_de,en,de (default: the shipped Pig Latin words).",
        flag_values=fv,
    )
    flags.DEFINE_string(
        "summarization_data",
        None,
        "--task=summarization: a finished_files "
        "folder with chunked/ and vocab, e.g. the whole Debian corpus from "
        "data_prep.debian_descriptions (default: the shipped sample).",
        flag_values=fv,
    )
    flags.DEFINE_string(
        "revision",
        None,
        "The revision that ran the runs read back from --out_dir whose files name none "
        "(runs made by an earlier compare_contexts); default: this checkout's.",
        flag_values=fv,
    )


def run(config: config_lib.Config) -> None:
    """Trains and scores every variant with every seed (runs kept from before are read
    back) and writes the results table.

    Args:
      config: the parsed flags (``define_flags``).
    """
    run_task, metric = TASKS[config.task]
    known = set(VARIANTS) | ({"transformer"} if config.task == "summarization" else set())
    unknown = sorted(set(config.contexts) - known)
    if unknown:
        raise app.UsageError(
            "--contexts: unknown for --task=%s: %s (choose from %s)"
            % (config.task, ", ".join(unknown), ", ".join(sorted(known)))
        )
    root = config.out_dir or tempfile.mkdtemp(prefix="compare_contexts_")
    os.makedirs(root, exist_ok=True)
    data = config.translation_data if config.task == "translation" else config.summarization_data
    corpus = os.path.basename(os.path.normpath(data.split(",")[0])) if data else "shipped"
    key = (config.task, corpus, "%dsteps" % config.steps)
    previous = _report.load(key) or {}
    # variant -> the id of its latest record
    latest = previous.get("data", {})
    # the runs' TensorFlow: another version draws other initial weights
    stamp = dict(
        revision=config.revision or _report.git_revision(),
        tensorflow=importlib.metadata.version("tensorflow"),
        date=datetime.datetime.now(datetime.timezone.utc).strftime(DATE),
    )
    for variant in config.contexts:
        runs = {}
        for seed in config.seeds:
            runs[seed] = _one_run(run_task, variant, seed, config.steps, root, data, stamp)
            print(
                "%s seed %s: validation NLL %.4f, %s %.4f, training KL per token %s"
                % (
                    variant,
                    seed,
                    runs[seed]["nll"],
                    metric,
                    runs[seed]["metric"],
                    runs[seed].get("kl_per_token", "not recorded"),
                ),
                flush=True,
            )
        latest[variant] = _records(key, variant, runs, config.steps)
    # VARIANTS' order; a variant since dropped from VARIANTS keeps its row, last
    order = list(VARIANTS) + ["transformer"]
    latest = {
        variant: latest[variant]
        for variant in sorted(latest, key=lambda v: order.index(v) if v in order else len(order))
    }
    _report.emit(
        "Context mechanisms compared: %s on the %s corpus, %d steps"
        % (config.task, corpus, config.steps),
        ["variant", "validation NLL / token", metric, "training KL / token"]
        + ["seeds", "revision", "TensorFlow"],
        tables.benchmark_rows(latest),
        notes=[NOTE]
        # what the earlier runs noted about the corpus (how it was built) stays
        + previous.get("notes", [])[1:],
        config=key,
        data=latest,
    )


if __name__ == "__main__":
    config_lib.run_command(define_flags, run)
