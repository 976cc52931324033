"""Training survives SIGKILL: the summarizer, run as a user runs it on the Debian sample
through a two-phase curriculum and a coverage phase with a checkpoint every step, is
killed four times (right at the phase boundary, right as coverage starts, in the middle of
a checkpoint write in the coverage phase and at a random moment) and restarted with the
same command. Every time the latest checkpoint is readable and the restart resumes from
it, in the right phase with that phase's truncation lengths; the run ends at the last
step with the optimizer state carried across every kill, coverage on and ``w_c``
trained in the coverage phase."""

import os
import random
import re
import subprocess
import threading
import time

import numpy as np
import pytest
import tensorflow as tf

from acvi_tf.training import checkpoints

from conftest import python_m

pytestmark = pytest.mark.slow  # scheduled first (conftest.py)

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
DATA = os.path.join(ROOT, "data_prep", "samples", "debian_descriptions")
TOTAL = 22  # phases 0-8 and 8-16, then 6 coverage steps
PHASE_LINE = re.compile(
    r"Training phase steps (\d+)-(\d+): max_enc_steps=(\d+), "
    r"max_dec_steps=(\d+).* \(from step (\d+)\)"
)
LENGTHS = {0: (20, 6), 8: (30, 8), 16: (30, 8)}  # phase start -> truncation lengths


class _Run:
    """One launch of the training command; its log is collected by a thread."""

    def __init__(self, log_root):
        args = python_m(
            "pointer_generator.run_summarization",
            "--mode=train",
            "--data_path=" + os.path.join(DATA, "chunked", "train_000.bin"),
            "--vocab_path=" + os.path.join(DATA, "vocab"),
            "--vocab_size=2000",
            "--log_root=" + log_root,
            "--exp_name=kill",
            "--hidden_dim=16",
            "--emb_dim=8",
            "--batch_size=8",
            "--optimizer=adam",
            "--context=acvi",
            "--phases=0-8:20:6,8-16:30:8",
            "--coverage_steps=6",
            "--checkpoint_steps=1",
            "--seed=3",
            eager=True,  # the steps the kills fall between; they run traced in the suite
        )
        self.process = subprocess.Popen(
            args, cwd=ROOT, stderr=subprocess.PIPE, stdout=subprocess.DEVNULL, text=True
        )
        self.lines = []
        self.reader = threading.Thread(target=self._read, daemon=True)
        self.reader.start()

    def _read(self):
        for line in self.process.stderr:
            self.lines.append(line)

    def wait_for(self, condition, timeout=180.0, interval=0.02):
        """Polls ``condition()`` every ``interval`` s; False if the run ended first."""
        deadline = time.time() + timeout
        while time.time() < deadline:
            if condition():
                return True
            if self.process.poll() is not None:
                return condition()
            time.sleep(interval)
        raise AssertionError("timed out; log tail:\n" + "".join(self.lines[-20:]))

    def logged(self, text):
        return any(text in line for line in self.lines)

    def kill(self):
        self.process.kill()  # SIGKILL
        self.process.wait()
        self.reader.join()


def _checkpoint_state(train_dir):
    """``(path, step, optimizer iterations)`` of the latest checkpoint, every tensor read."""
    path = tf.train.latest_checkpoint(train_dir)
    if path is None:
        return None, 0, 0
    reader = tf.train.load_checkpoint(path)
    for key in reader.get_variable_to_shape_map():
        reader.get_tensor(key)  # raises if any file of the checkpoint is damaged
    return (
        path,
        int(reader.get_tensor("step/.ATTRIBUTES/VARIABLE_VALUE")),
        int(reader.get_tensor("optimizer/_iterations/.ATTRIBUTES/VARIABLE_VALUE")),
    )


def test_sigkill_at_bad_moments_then_resume_with_the_same_command(tmp_path):
    train_dir = str(tmp_path / "kill" / "train")
    rng = random.Random(0)

    def writing():  # a checkpoint is being written: its temporary folder exists
        return os.path.isdir(train_dir) and any("_temp" in name for name in os.listdir(train_dir))

    def step_at_least(step):  # reads only the small `checkpoint` index file
        def reached():
            path = tf.train.latest_checkpoint(train_dir) if os.path.isdir(train_dir) else None
            return path is not None and int(path.rsplit("-", 1)[1]) >= step

        return reached

    kills = [
        lambda run: run.wait_for(lambda: run.logged("from step 8")),
        lambda run: run.wait_for(lambda: run.logged("Coverage phase starts")),
        # a write takes ~10 ms
        lambda run: run.wait_for(step_at_least(17)) and run.wait_for(writing, interval=0.001),
        lambda run: (
            run.wait_for(lambda: run.logged("Restored"))
            and time.sleep(rng.uniform(0.0, 3.0)) is None
        ),
    ]
    launches = []  # (checkpoint state before the launch, its log)
    number = 0
    while number < len(kills):
        before = _checkpoint_state(train_dir)
        run = _Run(str(tmp_path))
        assert kills[number](run), "the run ended before kill %d:\n%s" % (
            number,
            "".join(run.lines),
        )
        run.kill()
        launches.append((before, run.lines))
        after = _checkpoint_state(train_dir)
        assert after[1] >= before[1]  # readable, and never behind the previous one
        if number == 1:  # coverage had not started: one optimizer since step 0
            assert after[1] == after[2] == 16
        if number == 2 and not writing():  # the write finished first: try again
            assert len(launches) < 5, "no kill landed inside a checkpoint write"
            continue
        number += 1
    before = _checkpoint_state(train_dir)
    final = _Run(str(tmp_path))
    final.process.wait(timeout=300)
    final.reader.join()
    assert final.process.returncode == 0, "".join(final.lines[-30:])
    launches.append((before, final.lines))
    path, step, iterations = _checkpoint_state(train_dir)
    assert path.endswith("model.ckpt-%d" % TOTAL) and step == TOTAL
    assert iterations == TOTAL - 16  # the coverage phase's optimizer, carried across kills
    reader = tf.train.load_checkpoint(path)
    assert reader.get_tensor("coverage_started/.ATTRIBUTES/VARIABLE_VALUE")
    w_c = "model/scorer/coverage_projection/kernel/.ATTRIBUTES/VARIABLE_VALUE"
    # w_c trains in the coverage phase: the oldest checkpoint kept (which of them the kills
    # and the rotation left depends on timing) holds another one
    kept = tf.train.get_checkpoint_state(train_dir).all_model_checkpoint_paths
    earlier = [p for p in kept if p != path]
    assert earlier and checkpoints.checkpoint_step(earlier[0]) > 16, kept
    assert not np.allclose(
        tf.train.load_checkpoint(earlier[0]).get_tensor(w_c), reader.get_tensor(w_c)
    )
    assert os.path.exists(os.path.join(train_dir, "vocab_metadata.tsv"))
    assert any(name.startswith("events") for name in os.listdir(train_dir))
    for (path, step, _), lines in launches:
        if path:  # resumed from the checkpoint the kill left
            assert any("Restored %s (step %d)" % (path, step) in line for line in lines), (
                path,
                "".join(lines[-20:]),
            )
        first = next((PHASE_LINE.search(line) for line in lines if PHASE_LINE.search(line)), None)
        if first:  # and in the phase that step belongs to, with its lengths
            start, end, enc, dec, resumed_at = map(int, first.groups())
            assert start <= resumed_at < end and resumed_at == step, first.group(0)
            assert LENGTHS[start] == (enc, dec), first.group(0)
