"""The paper's comparison on data you can run: every context mechanism, same steps, 3 seeds.

For each ``--contexts`` mechanism and each ``--seeds`` seed, trains a small model for
``--steps`` steps on a shipped demo corpus through the real entry point (a subprocess, as
a user runs it), then reads the validation loss (per-token NLL) and the task metric:

* ``--task=captioning``: ``video_caption.run_captioning`` on the moving-shapes clips;
  validation NLL from ``--mode=eval`` and validation CIDEr-D (beam 3);
* ``--task=translation``: ``nmt.run_nmt`` on the Pig Latin words; dev NLL and BLEU
  (greedy) at the last step.

Every mechanism shares the model, data and schedule; only ``--context`` and its own
options change (ACVI: the closed-form KL bound with weight 0.01, which learns where
weight 1 collapses the encoder states, see README; VED: ``--kl_weight=0.1``, the
original's gamma). The table (mean and standard deviation over the seeds) is printed and
appended to BENCHMARKS.md.

Usage::

  python bench/compare_contexts.py [--task=captioning|translation] [--steps=400] \\
      [--contexts=sa,acvi,structured,ved] [--seeds=1,2,3]
"""
import json
import math
import os
import re
import subprocess
import sys
import tempfile

from absl import app
from absl import flags
import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import _report  # noqa: E402  pylint: disable=wrong-import-position

SAMPLES = os.path.join(_report.ROOT, "data_prep", "samples")
CONTEXT_FLAGS = {"sa": [], "structured": [],
                 "acvi": ["--acvi_kl=bound", "--kl_weight=0.01"],
                 "ved": ["--kl_weight=0.1"]}


def _run(args, log_path):
    """Runs ``python -m ...`` from the project root; its output goes to ``log_path``."""
    with open(log_path, "a", encoding="utf-8") as log:
        done = subprocess.run([sys.executable, "-m"] + args, cwd=_report.ROOT, stdout=log,
                              stderr=subprocess.STDOUT, check=False)
    if done.returncode:
        raise RuntimeError("%s failed (exit %d); see %s" % (args[0], done.returncode,
                                                            log_path))
    with open(log_path, encoding="utf-8") as log:
        return log.read()


def captioning(context, seed, steps, out_dir):
    """``(validation NLL per token, validation CIDEr-D)`` of one captioning run."""
    sample = os.path.join(SAMPLES, "moving_shapes")
    common = ["--data_dir=" + sample, "--features=" + os.path.join(sample, "features.h5"),
              "--out_dir=" + out_dir, "--context=" + context, "--seed=%d" % seed,
              "--num_frames=8", "--feature_norm=standardize", "--encoder_units=48",
              "--decoder_units=64", "--emb_dim=32", "--attention_units=32",
              "--dropout=0.2", "--learning_rate=0.005", "--batch_size=32",
              "--beam_size=3", "--max_decode_len=12", "--metrics=CIDEr",
              "--best_metric=CIDEr"] + CONTEXT_FLAGS[context]
    log = out_dir + ".log"
    _run(["video_caption.run_captioning", "--mode=train", "--max_steps=%d" % steps,
          "--valid_every=%d" % steps, "--checkpoint_steps=%d" % steps] + common, log)
    # the last checkpoint, not the best one: every mechanism gets exactly --steps steps
    ckpt = os.path.join(out_dir, "train", "ckpt-%d" % steps)
    _run(["video_caption.run_captioning", "--mode=eval", "--eval_splits=val",
          "--ckpt=" + ckpt] + common, log)
    with open(os.path.join(out_dir, "eval_metrics.json"), encoding="utf-8") as f:
        val = json.load(f)["val"]
    return math.log(val["perplexity"]), val["CIDEr"]


def translation(context, seed, steps, out_dir):
    """``(dev NLL per token, dev BLEU)`` of one Pig Latin run."""
    sample = os.path.join(SAMPLES, "pig_latin")
    log = out_dir + ".log"
    output = _run(["nmt.run_nmt", "--src=src", "--tgt=tgt",
                   "--vocab_prefix=" + os.path.join(sample, "vocab"),
                   "--train_prefix=" + os.path.join(sample, "train"),
                   "--dev_prefix=" + os.path.join(sample, "dev"), "--out_dir=" + out_dir,
                   "--num_units=64", "--encoder_type=bi", "--dropout=0.0",
                   "--optimizer=adam", "--learning_rate=0.01", "--batch_size=64",
                   "--num_train_steps=%d" % steps, "--steps_per_stats=100",
                   "--steps_per_external_eval=%d" % steps, "--context=" + context,
                   "--seed=%d" % seed] + CONTEXT_FLAGS[context], log)
    ppl, bleu = re.findall(r"dev: ppl ([0-9.]+), bleu ([0-9.]+)", output)[-1]
    return math.log(float(ppl)), float(bleu)


TASKS = {"captioning": (captioning, "CIDEr-D"), "translation": (translation, "BLEU")}


def main(argv):
    del argv
    fv = flags.FLAGS
    run_task, metric = TASKS[fv.task]
    root = fv.out_dir or tempfile.mkdtemp(prefix="compare_contexts_")
    os.makedirs(root, exist_ok=True)
    rows = []
    for context in fv.contexts:
        losses, scores = [], []
        for seed in fv.seeds:
            loss, score = run_task(context, int(seed), fv.steps,
                                   os.path.join(root, "%s_seed%s" % (context, seed)))
            print("%s seed %s: validation NLL %.4f, %s %.4f" % (context, seed, loss, metric,
                                                              score), flush=True)
            losses.append(loss)
            scores.append(score)
        rows.append([context, "%.4f +- %.4f" % (np.mean(losses), np.std(losses)),
                     "%.4f +- %.4f" % (np.mean(scores), np.std(scores))])
    _report.emit("Context mechanisms compared: %s, %d steps, seeds %s" % (
        fv.task, fv.steps, ",".join(fv.seeds)),
        ["context", "validation NLL / token", "validation " + metric], rows,
        notes=["Mean +- standard deviation over the seeds; runs in %s." % root])


if __name__ == "__main__":
    flags.DEFINE_enum("task", "captioning", list(TASKS), "Which host and demo corpus.")
    flags.DEFINE_integer("steps", 400, "Training steps of every run.", lower_bound=1)
    flags.DEFINE_list("contexts", ["sa", "acvi", "structured", "ved"], "Mechanisms.")
    flags.DEFINE_list("seeds", ["1", "2", "3"], "Seeds.")
    flags.DEFINE_string("out_dir", None, "Where the runs go (default: a temporary folder).")
    app.run(main)
