"""Clean stops (``acvi_tf.process.stops``): each host's training, run as a user runs it on a
shipped sample, gets SIGTERM (the captioner SIGINT) once it has logged training steps;
it saves the step it is at, says so in one line, exits with 143 (130) and no traceback,
and a rerun resumes from that checkpoint. A second signal during that save stops at once
and leaves the newest readable checkpoint whole; a single-pass decode stopped halfway
keeps its finished articles, and a stopped eval job the best model it saved."""

import os
import re
import shutil
import signal
import subprocess
import sys
import threading

import pytest
import tensorflow as tf

from acvi_tf import config as config_lib
from acvi_tf import errors, progress
from acvi_tf.process import stops
from acvi_tf.training import checkpoints, trainer
from nmt import run_nmt
from pointer_generator import decode as decode_lib
from pointer_generator import run_summarization
from video_caption import extraction, run_captioning
from video_caption import frames as frames_lib

from conftest import python_m, write_parallel_slices

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
SAMPLES = os.path.join(ROOT, "data_prep", "samples")
PG_DATA = os.path.join(SAMPLES, "debian_descriptions")
VC_DATA = os.path.join(SAMPLES, "moving_shapes")
STOP_LINE = re.compile(
    r"Stopped by (SIG\w+) at step (\d+); saved (\S+); rerun the same command to resume$"
)
# what a run logs of its progress: a checkpoint saved, NMT's statistics line
PROGRESS = re.compile(r"Saved \S+-(\d+)$|\] step (\d+) lr ")


def _pg(out):
    return run_summarization, [
        "--mode=train",
        "--data_path=" + os.path.join(PG_DATA, "chunked", "train_000.bin"),
        "--vocab_path=" + os.path.join(PG_DATA, "vocab"),
        "--vocab_size=2000",
        "--log_root=" + out,
        "--exp_name=run",
        "--hidden_dim=16",
        "--emb_dim=8",
        "--batch_size=8",
        "--max_enc_steps=30",
        "--max_dec_steps=8",
        "--max_steps=5000",
        "--checkpoint_steps=3",
    ]


def _nmt(out, corpus):
    return run_nmt, [
        "--src=en",
        "--tgt=de",
        "--vocab_prefix=%s" % os.path.join(corpus, "vocab"),
        "--train_prefix=%s" % os.path.join(corpus, "train"),
        "--dev_prefix=%s" % os.path.join(corpus, "dev"),
        "--out_dir=" + out,
        "--num_units=8",
        "--batch_size=8",
        "--num_train_steps=5000",
        "--steps_per_stats=1",
        "--steps_per_external_eval=5000",
    ]


def _vc(out):
    return run_captioning, [
        "--mode=train",
        "--data_dir=" + VC_DATA,
        "--features=" + os.path.join(VC_DATA, "features.h5"),
        "--out_dir=" + out,
        "--encoder_units=4",
        "--decoder_units=4",
        "--emb_dim=4",
        "--attention_units=4",
        "--batch_size=4",
        "--max_steps=5000",
        "--checkpoint_steps=3",
        "--valid_every=5000",
    ]


def _nmt_corpus(root):
    """200 training and 10 dev pairs of the En-De sample, with its vocabularies."""
    sample = os.path.join(SAMPLES, "debian_en_de")
    write_parallel_slices(sample, root, dict(train=200, dev=10), ("en", "de"))
    for lang in ("en", "de"):
        shutil.copy(os.path.join(sample, "vocab." + lang), root)
    return root


class _Run:
    """A training command that gets ``signum`` once its log shows a training step."""

    def __init__(self, module, argv, signum):
        self.module, self.argv, self.signum = module, argv, signum
        self.process = subprocess.Popen(
            python_m(module.__name__, *argv, eager=True),  # the stop, not the steps
            cwd=ROOT,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.PIPE,
            text=True,
        )
        self.lines = []
        self.reader = threading.Thread(target=self._read, daemon=True)
        self.reader.start()

    def _read(self):
        for line in self.process.stderr:
            self.lines.append(line.rstrip("\n"))
            if self.signum and PROGRESS.search(line):
                self.process.send_signal(self.signum)
                self.signum = None

    def wait(self):
        self.process.wait(timeout=300)
        self.reader.join()
        return self.process.returncode


@pytest.fixture(scope="module")
def stopped_runs(tmp_path_factory):
    """The three hosts' training runs, side by side, each stopped by its signal."""
    tmp = tmp_path_factory.mktemp("signals")
    corpus = _nmt_corpus(str(tmp / "en_de"))
    runs = {
        "summarizer": (_Run(*_pg(str(tmp / "pg")), signal.SIGTERM), tmp / "pg" / "run" / "train"),
        "nmt": (_Run(*_nmt(str(tmp / "nmt"), corpus), signal.SIGTERM), tmp / "nmt"),
        "captioner": (_Run(*_vc(str(tmp / "vc")), signal.SIGINT), tmp / "vc" / "train"),
    }
    return {host: (run, run.wait(), str(folder)) for host, (run, folder) in runs.items()}


@pytest.mark.slow
@pytest.mark.parametrize("host, status", [("summarizer", 143), ("nmt", 143), ("captioner", 130)])
def test_a_signal_saves_the_step_exits_with_its_status_and_a_rerun_resumes(
    stopped_runs, host, status, absl_caplog
):
    run, returncode, folder = stopped_runs[host]
    log = "\n".join(run.lines)
    assert returncode == status, log
    assert "Traceback" not in log
    stop_lines = [line for line in run.lines if "Stopped" in line]
    assert len(stop_lines) == 1, log
    stop = STOP_LINE.search(stop_lines[0])
    assert stop, stop_lines[0]
    name, step, path = stop.group(1), int(stop.group(2)), stop.group(3)
    assert name == signal.Signals(status - 128).name
    logged = [int(m.group(1) or m.group(2)) for m in map(PROGRESS.search, run.lines) if m]
    assert logged and step >= max(logged)
    assert tf.train.latest_checkpoint(folder) == path
    saves = [line.split("Saved ")[1] for line in run.lines if "Saved " in line]
    assert len(saves) == len(set(saves))  # the stop saves a step not saved yet, or nothing
    assert checkpoints.checkpoint_step(path) == step

    steps_flag = "--num_train_steps=%d" if host == "nmt" else "--max_steps=%d"
    argv = [a for a in run.argv if not a.startswith(steps_flag.split("=")[0])]
    run.module.run(config_lib.parse(run.module.define_flags, ["rerun", *argv, steps_flag % step]))
    assert "Restored %s (step %d)" % (path, step) in absl_caplog.messages


def test_a_stop_at_once_is_one_line_and_its_status(absl_caplog):
    previous = signal.getsignal(signal.SIGTERM)
    with pytest.raises(stops.Stopped) as stopped:
        with stops.AtOnce("; a hint"):
            signal.raise_signal(signal.SIGTERM)  # runs the handler before it returns
    assert stopped.value.code == 143
    assert absl_caplog.messages == ["Stopped by SIGTERM; a hint"]
    assert signal.getsignal(signal.SIGTERM) is previous


def test_a_stop_at_check_comes_at_the_loops_next_check_in_one_line(absl_caplog):
    done = []
    with pytest.raises(stops.Stopped) as stopped:
        with stops.AtCheck("; a hint"):
            for item in range(3):
                stops.check()
                if item == 0:
                    signal.raise_signal(signal.SIGTERM)  # recorded, the item goes on
                done.append(item)
    assert done == [0] and stopped.value.code == 143
    with pytest.raises(stops.Stopped):  # after the last check: when the block ends
        with stops.AtCheck("; a hint"):
            signal.raise_signal(signal.SIGTERM)
            done.append("last")
    assert done == [0, "last"]
    assert absl_caplog.messages == ["Stopped by SIGTERM; a hint"] * 2


class _Exited(BaseException):
    """What ``stops.exit_now`` raises in these tests instead of ending the process."""


def _count_calls(function):
    """How many profiler events ``function()`` gives."""
    events = []
    sys.setprofile(lambda *args: events.append(None))
    try:
        function()
    finally:
        sys.setprofile(None)
    return len(events)


def _signal_at_event(number, signum):
    """Sends ``signum`` to this process at the ``number``-th profiler event from now."""
    events = [0]

    def profile(*args):
        events[0] += 1
        if events[0] == number:
            sys.setprofile(None)
            os.kill(os.getpid(), signum)

    sys.setprofile(profile)


def _tiny_trainer(folder):
    step = tf.Variable(0, dtype=tf.int64)
    weight = tf.Variable(tf.zeros([64, 64]))
    checkpointer = checkpoints.Checkpointer(
        folder, step, max_to_keep=2, model=tf.train.Checkpoint(weight=weight)
    )
    checkpointer.restore_latest()
    return trainer.Trainer(checkpointer, 10, checkpoint_every=2, tokens_key=None), weight


def _steps_then_sigterm(weight, at_step):
    def train_step(batch, use_gumbel, step):
        del batch, use_gumbel
        weight.assign_add(tf.ones_like(weight))
        if int(step) + 1 == at_step:
            os.kill(os.getpid(), signal.SIGTERM)
        return dict(loss=tf.constant(1.0))

    return train_step


@pytest.mark.parametrize("fraction", [0.0, 0.2, 0.4, 0.6, 0.8, 0.95])
def test_a_second_signal_during_the_stop_save_exits_at_once_leaving_a_whole_checkpoint(
    tmp_path, monkeypatch, absl_caplog, fraction
):
    def exit_now(signum):
        raise _Exited(stops.status(signum))

    monkeypatch.setattr(stops, "exit_now", exit_now)
    folder = str(tmp_path / "train")
    rehearsal, _ = _tiny_trainer(folder)
    rehearsal.checkpointer.manager.save(checkpoint_number=0)  # traces the save
    events = _count_calls(lambda: rehearsal.checkpointer.manager.save(checkpoint_number=1))
    shutil.rmtree(folder)

    loop, weight = _tiny_trainer(folder)
    save = loop.checkpointer.manager.save

    def second_signal_in_the_stop_save(checkpoint_number):
        if checkpoint_number == 3:  # the stop's save: steps 2 and 4 are the schedule's
            _signal_at_event(max(1, int(fraction * events)), signal.SIGINT)
        return save(checkpoint_number=checkpoint_number)

    monkeypatch.setattr(loop.checkpointer.manager, "save", second_signal_in_the_stop_save)
    with pytest.raises(_Exited) as exited:
        with loop:
            loop.train([{}] * 10, _steps_then_sigterm(weight, at_step=3))
    assert exited.value.args == (130,)
    assert "Stopped at once by a second SIGINT" in absl_caplog.text
    resumed, weight = _tiny_trainer(folder)
    with resumed:
        assert resumed.step in (2, 3)
        assert float(weight[0, 0]) == resumed.step


def test_a_stopped_trainer_hands_its_batches_to_the_stop_untorn(tmp_path):
    """The batches' iterator goes with the stop (``Stopped.kept``): a ``tf.data``
    iterator's teardown while the stop unwinds can wait seconds on its threads."""
    loop, weight = _tiny_trainer(str(tmp_path / "train"))
    batches = iter([{}] * 10)
    with pytest.raises(stops.Stopped) as stopped:
        with loop:
            loop.train(batches, _steps_then_sigterm(weight, at_step=3))
    assert stopped.value.code == 143 and stopped.value.kept == [batches]
    assert next(batches) == {}  # where the stop left it


def test_a_stopped_command_ends_its_process_once_the_stop_has_unwound(monkeypatch, capsys):
    """``config.run_command`` ends the process after a stop with its status, the standard
    streams flushed, once every ``finally`` of the command has run: not by ``SystemExit``,
    which would tear the interpreter down (seconds, for TensorFlow's runtime)."""
    order = []

    def exit_now(signum):
        order.append("exit %d" % stops.status(signum))
        raise _Exited()

    def run(config):
        del config
        try:
            print("written")
            raise stops.Stopped(signal.SIGTERM)
        finally:
            order.append("finally")

    monkeypatch.setattr(stops, "exit_now", exit_now)
    monkeypatch.setattr(sys, "argv", ["command"])
    with pytest.raises(_Exited):
        config_lib.run_command(lambda flag_values: None, run)
    assert order == ["finally", "exit 143"]
    assert capsys.readouterr().out == "written\n"


def test_a_multi_worker_trainer_leaves_the_signals_to_the_system(tmp_path, monkeypatch):
    with tf.distribute.MirroredStrategy(["/cpu:0", "/cpu:1"]).scope():
        assert trainer.trains_alone()  # one process, two replicas
    previous = [signal.getsignal(s) for s in stops.SIGNALS]
    monkeypatch.setattr(trainer, "trains_alone", lambda: False)
    loop, _ = _tiny_trainer(str(tmp_path / "train"))
    with loop:
        assert [signal.getsignal(s) for s in stops.SIGNALS] == [signal.SIG_DFL] * 2
    assert [signal.getsignal(s) for s in stops.SIGNALS] == previous


def _stopped_summarizer_command(run, *flags):
    """Runs the summarizer in process on ``run``'s folder with ``flags``, which a SIGTERM
    must stop with status 143; returns the folder's flags."""
    argv = [a for a in run.argv if a.split("=")[0] in ("--log_root", "--exp_name")]
    with pytest.raises(stops.Stopped) as stopped:
        run_summarization.run(
            config_lib.parse(run_summarization.define_flags, ["command", *argv, *flags])
        )
    assert stopped.value.code == 143
    return argv


@pytest.mark.slow
def test_a_stopped_single_pass_decode_keeps_its_finished_articles(
    stopped_runs, monkeypatch, absl_caplog
):
    run = stopped_runs["summarizer"][0]
    write_pair = decode_lib.write_pair
    written = []

    def write_then_stop(decode_dir, index, *texts):
        write_pair(decode_dir, index, *texts)
        written.append(index)
        if len(written) == 3:
            os.kill(os.getpid(), signal.SIGTERM)

    monkeypatch.setattr(decode_lib, "write_pair", write_then_stop)
    argv = _stopped_summarizer_command(
        run,
        "--mode=decode",
        "--single_pass",
        "--data_path=" + os.path.join(PG_DATA, "chunked", "test_000.bin"),
        "--beam_size=2",
        "--decode_batch_size=2",
    )
    assert "Stopped by SIGTERM; rerun the same command to resume" in absl_caplog.messages
    (decode_dir,) = [
        os.path.join(root, d)
        for root, dirs, _ in os.walk(
            os.path.dirname(dict(a.split("=") for a in argv)["--log_root"])
        )
        for d in dirs
        if d.startswith("decode_")
    ]
    names = os.listdir(decode_dir)
    assert "manifest.json" in names and "metrics.json" not in names
    assert not [n for n in names if n.startswith(".partial-")]
    assert all(decode_lib.has_pair(decode_dir, i) for i in written)


@pytest.mark.slow
def test_a_stopped_eval_job_keeps_the_best_model_it_scored(stopped_runs, monkeypatch, absl_caplog):
    run, _, train_dir = stopped_runs["summarizer"]

    def stop_while_waiting(seconds):  # for the trainer's next checkpoint
        signal.raise_signal(signal.SIGTERM)

    monkeypatch.setattr(checkpoints.time, "sleep", stop_while_waiting)
    _stopped_summarizer_command(
        run,
        "--mode=eval",
        "--data_path=" + os.path.join(PG_DATA, "chunked", "val_000.bin"),
        "--eval_max_batches=1",
        "--max_steps=5000",
    )
    assert absl_caplog.messages[-1] == "Stopped by SIGTERM; rerun the same command to resume"
    best_dir = os.path.join(os.path.dirname(train_dir), "best")
    best = tf.train.latest_checkpoint(best_dir)
    assert checkpoints.checkpoint_step(best) == checkpoints.checkpoint_step(
        tf.train.latest_checkpoint(train_dir)
    )
    assert os.path.exists(os.path.join(best_dir, checkpoints.BEST_RECORD))


class _Swallowing:
    """Sends SIGTERM from ``__del__``, where Python prints the exception the handler
    raises and goes on, as it does in a fork hook while a subprocess starts."""

    def __del__(self):
        signal.raise_signal(signal.SIGTERM)


def _lose_a_stop():
    _Swallowing()  # deleted at once


@pytest.mark.filterwarnings("ignore::pytest.PytestUnraisableExceptionWarning")
def test_a_stop_raised_where_python_ignores_it_is_raised_again(tmp_path, monkeypatch):
    def exit_now(signum):  # a second signal: the stop was not raised again
        raise _Exited(signum)

    monkeypatch.setattr(stops, "exit_now", exit_now)
    with stops.AtOnce():
        _lose_a_stop()  # the command goes on
        with pytest.raises(stops.Stopped) as stopped:  # until its next item
            progress.Progress(3, "done items")(1)
    assert stopped.value.code == 143

    # the feature extractor, whose every clip starts a process, stops before the next one
    for name in ("a", "b", "c"):
        (tmp_path / (name + ".mp4")).write_bytes(b"x")
    read = []

    def read_frames(path, max_frames):
        read.append(path)
        _lose_a_stop()
        raise frames_lib.VideoError("not a video")

    monkeypatch.setattr(frames_lib, "read_frames", read_frames)
    with stops.AtOnce(), pytest.raises(stops.Stopped):
        extraction.extract_features(str(tmp_path), str(tmp_path / "out"), extractor=object())
    assert len(read) == 1

    # a command that returns after it lost its stop ends with the stop's status
    monkeypatch.setattr(sys, "argv", ["command"])
    with pytest.raises(SystemExit) as exited:
        errors.run(lambda argv: _lose_a_stop())
    assert exited.value.code == 143
