"""``--seed`` and ``--deterministic``: two runs of 20 training steps of each model in two
processes, on the shipped demo corpora, give bit-identical per-step losses and
bit-identical final weights (a nondeterministic kernel shows from the first step on; the
run's start, the trace and the final validation are most of the time). The first runs as
a user runs it, in a fresh interpreter; the second in the test process, after whatever
the process ran before (its import of TensorFlow saved), with op determinism switched
off again after it."""

import contextlib
import importlib
import os
import subprocess
import sys

import numpy as np
import pytest
import tensorflow as tf
from tensorflow.python.framework import config as tf_config

from acvi_tf import config as config_lib

from conftest import write_parallel_slices

# scheduled first (conftest.py); its runs in this process rewritten by Grappler as are the
# runs of a process of their own, which it compares them with
pytestmark = [pytest.mark.slow, pytest.mark.optimized]

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
SAMPLES = os.path.join(ROOT, "data_prep", "samples")
STEPS = 20


def _summarization(out):
    data = os.path.join(SAMPLES, "debian_descriptions")
    args = [
        "pointer_generator.run_summarization",
        "--mode=train",
        "--data_path=" + os.path.join(data, "chunked", "train_000.bin"),
        "--vocab_path=" + os.path.join(data, "vocab"),
        "--vocab_size=2000",
        "--log_root=" + os.path.dirname(out),
        "--exp_name=" + os.path.basename(out),
        "--hidden_dim=16",
        "--emb_dim=8",
        "--batch_size=8",
        "--max_enc_steps=30",
        "--max_dec_steps=8",
        "--optimizer=adam",
        "--max_steps=%d" % STEPS,
        "--summary_steps=1",
        "--checkpoint_steps=%d" % STEPS,
    ]
    return args, os.path.join(out, "train"), "total_loss", os.path.join(out, "train")


def _translation(out):
    data = os.path.join(SAMPLES, "pig_latin")
    root = os.path.dirname(out)  # slices: 20 steps need no more, the final eval is cheap
    write_parallel_slices(data, root, dict(train=640, dev=8), ("src", "tgt"))
    args = [
        "nmt.run_nmt",
        "--src=src",
        "--tgt=tgt",
        "--vocab_prefix=" + os.path.join(data, "vocab"),
        "--train_prefix=" + os.path.join(root, "train"),
        "--dev_prefix=" + os.path.join(root, "dev"),
        "--out_dir=" + out,
        "--num_units=16",
        "--batch_size=32",
        "--optimizer=adam",
        "--learning_rate=0.01",
        "--num_train_steps=%d" % STEPS,
        "--steps_per_stats=1",
        "--steps_per_external_eval=%d" % STEPS,
    ]
    return args, os.path.join(out, "train_log"), "train_loss", out


def _captioning(out):
    data = os.path.join(SAMPLES, "moving_shapes")
    args = [
        "video_caption.run_captioning",
        "--mode=train",
        "--data_dir=" + data,
        "--features=" + os.path.join(data, "features.h5"),
        "--out_dir=" + out,
        "--num_frames=8",
        "--encoder_units=16",
        "--decoder_units=16",
        "--emb_dim=8",
        "--attention_units=8",
        "--batch_size=16",
        "--max_steps=%d" % STEPS,
        "--summary_steps=1",
        "--valid_every=%d" % STEPS,
        "--metrics=Bleu_4",
        "--best_metric=Bleu_4",
        "--beam_size=1",
        "--max_decode_len=4",
    ]
    return args, os.path.join(out, "train_log"), "loss", os.path.join(out, "train")


def _losses(log_dir, tag):
    values = {}
    for name in os.listdir(log_dir):
        if name.startswith("events"):
            for event in tf.compat.v1.train.summary_iterator(os.path.join(log_dir, name)):
                for value in event.summary.value:
                    if value.tag == tag:
                        values[event.step] = tf.make_ndarray(value.tensor).tobytes()
    return values


def _weights(checkpoint):
    reader = tf.train.load_checkpoint(checkpoint)
    return {
        key: reader.get_tensor(key).tobytes()
        for key in reader.get_variable_to_shape_map()
        if "/.ATTRIBUTES/" in key
    }


@contextlib.contextmanager
def _op_determinism_restored():
    """Op determinism as it was before the block (``--deterministic`` turns it on for the
    rest of a process)."""
    enabled = tf_config.is_op_determinism_enabled()
    try:
        yield
    finally:
        if not enabled:
            tf_config.disable_op_determinism()


@pytest.mark.parametrize("task", [_summarization, _translation, _captioning])
def test_two_seeded_deterministic_runs_are_bit_identical(task, tmp_path):
    flags = ["--seed=11", "--deterministic", "--context=acvi"]
    runs = []
    for name in ("first", "second"):
        args, log_dir, tag, checkpoint_dir = task(str(tmp_path / name))
        if name == "first":
            done = subprocess.run(
                [sys.executable, "-m"] + args + flags,
                cwd=ROOT,
                capture_output=True,
                text=True,
                check=False,
            )
            assert done.returncode == 0, done.stderr[-3000:]
        else:
            module = importlib.import_module(args[0])
            with _op_determinism_restored():
                module.run(config_lib.parse(module.define_flags, args + flags))
        runs.append((_losses(log_dir, tag), _weights(tf.train.latest_checkpoint(checkpoint_dir))))
    (losses, weights), (losses2, weights2) = runs
    assert sorted(losses) == list(range(1, STEPS + 1))
    assert losses == losses2
    assert weights.keys() == weights2.keys() and len(weights) > 10
    different = [key for key in weights if weights[key] != weights2[key]]
    assert not different, different
    assert np.frombuffer(losses[1], np.float32)[0] != np.frombuffer(losses[STEPS], np.float32)[0]
