"""MultiWorkerMirroredStrategy for real: two worker processes of NMT on loopback ports
train, checkpoint (the chief only), are killed, resume from the chief's checkpoint, and
end with the weights of a one-device run that stopped and resumed at the same step."""

import json
import os
import re
import signal
import socket
import subprocess
import time

import numpy as np
import pytest
import tensorflow as tf

from acvi_tf import config as config_lib
from nmt import run_nmt

from conftest import python_m, write_parallel_slices

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
CORPUS = os.path.join(ROOT, "data_prep", "samples", "pig_latin")
TOTAL = 30


def _flags(out_dir, steps):
    return [
        "--src=src",
        "--tgt=tgt",
        "--vocab_prefix=%s/vocab" % CORPUS,
        "--train_prefix=%s/train" % CORPUS,
        # 8 dev pairs: each run's closing validation is not what this test is about
        "--dev_prefix=%s/dev" % os.path.join(os.path.dirname(out_dir), "slices"),
        "--out_dir=%s" % out_dir,
        "--num_units=16",
        "--batch_size=32",
        "--num_train_steps=%d" % steps,
        "--steps_per_stats=1",  # a checkpoint every 10 steps
        "--steps_per_external_eval=1000",
        "--optimizer=sgd",
        "--learning_rate=0.1",
        "--context=sa",
        "--dropout=0.0",
        "--seed=3",
    ]


def _free_ports(count):
    sockets = [socket.socket() for _ in range(count)]
    for s in sockets:
        s.bind(("localhost", 0))
    ports = [s.getsockname()[1] for s in sockets]
    for s in sockets:
        s.close()
    return ports


def _start_workers(out_dir, steps, logs):
    """The two workers of one cluster, started together; their log files."""
    workers = ["localhost:%d" % port for port in _free_ports(2)]
    processes = []
    for index in range(2):
        env = dict(
            os.environ,
            TF_CONFIG=json.dumps(
                {"cluster": {"worker": workers}, "task": {"type": "worker", "index": index}}
            ),
        )
        log = open(logs[index], "w", encoding="utf-8")
        processes.append(
            subprocess.Popen(
                python_m(
                    "nmt.run_nmt",
                    *_flags(out_dir, steps),
                    "--distribution_strategy=multi_worker",
                    "--num_gpus=0",
                ),
                cwd=ROOT,
                env=env,
                stdout=log,
                stderr=subprocess.STDOUT,
                start_new_session=True,
            )
        )
    return processes


def _weights(path):
    reader = tf.train.load_checkpoint(path)
    return {
        name: reader.get_tensor(name)
        for name in reader.get_variable_to_shape_map()
        if name.startswith("model/") and "OPTIMIZER_SLOT" not in name
    }


@pytest.mark.slow
def test_two_workers_train_are_killed_resume_and_match_one_device(tmp_path):
    write_parallel_slices(CORPUS, str(tmp_path / "slices"), dict(dev=8), ("src", "tgt"))
    out = tmp_path / "workers"
    logs = [tmp_path / "worker0.log", tmp_path / "worker1.log"]
    # 1. both train until the chief's first checkpoint is there, then both are killed
    processes = _start_workers(out, 1000, logs)
    deadline = time.time() + 240
    while tf.train.latest_checkpoint(str(out)) is None:
        assert time.time() < deadline, open(logs[0]).read()[-3000:]
        assert all(p.poll() is None for p in processes), open(logs[0]).read()[-3000:]
        time.sleep(0.2)
    for p in processes:
        os.killpg(p.pid, signal.SIGKILL)
        p.wait()
    assert json.loads((out / "hparams.json").read_text())["distribution_strategy"] == (
        "multi_worker"
    )

    # 2. both resume from the chief's newest readable checkpoint and finish
    processes = _start_workers(out, TOTAL, logs)
    for p in processes:
        assert p.wait(timeout=300) == 0, open(logs[processes.index(p)]).read()[-3000:]
    resumed = [int(m) for m in re.findall(r"Restored \S+ \(step (\d+)\)", open(logs[1]).read())]
    assert len(resumed) == 1 and 10 <= resumed[0] < TOTAL
    assert tf.train.latest_checkpoint(str(out)).endswith("translate.ckpt-%d" % TOTAL)

    # 3. one device: the same global batches, stopped and resumed at the same step
    reference = tmp_path / "one_device"
    for steps in (resumed[0], TOTAL):
        run_nmt.run(config_lib.parse(run_nmt.define_flags, ["run_nmt", *_flags(reference, steps)]))
    ours = _weights(tf.train.latest_checkpoint(str(out)))
    theirs = _weights(tf.train.latest_checkpoint(str(reference)))
    assert ours.keys() == theirs.keys() and len(ours) > 5
    for name in ours:
        np.testing.assert_allclose(ours[name], theirs[name], rtol=1e-4, atol=1e-5, err_msg=name)
