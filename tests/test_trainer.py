"""acvi_tf.training.trainer.Trainer: the loop every host runs, with a step function that only
counts, so each duty (steps, guard, checkpoints, validation, patience, resume) shows."""

import math
import os

import pytest
import tensorflow as tf

from acvi_tf import files
from acvi_tf.training import checkpoints, trainer
from acvi_tf.training import step as training_lib


def _checkpointer(tmp_path):
    step = tf.Variable(0, dtype=tf.int64)
    weight = tf.Variable(0.0)
    return checkpoints.Checkpointer(
        str(tmp_path / "train"),
        step,
        max_to_keep=100,
        best_dir=str(tmp_path / "best"),
        model=tf.train.Checkpoint(weight=weight),
    ), weight


class _Steps:
    """A step function that adds 1 to a weight and returns loss = the batch's value."""

    def __init__(self, weight):
        self.weight = weight
        self.seen = []

    def __call__(self, batch, use_gumbel, step):
        self.seen.append((int(step), bool(use_gumbel)))
        if math.isfinite(batch["loss"]):
            self.weight.assign_add(1.0)
        return dict(loss=tf.constant(batch["loss"]), tokens=tf.constant(10))


def _saved_steps(tmp_path):
    return sorted(
        int(name[len("ckpt-") : -len(".index")])
        for name in os.listdir(tmp_path / "train")
        if name.endswith(".index")
    )


def test_steps_checkpoints_and_validation_follow_their_schedules(tmp_path):
    checkpointer, weight = _checkpointer(tmp_path)
    scores = iter([1.0, 3.0, 2.0])
    validated = []

    def validate(step):
        validated.append(step)
        return next(scores), dict(bleu=step)

    logged = []
    loop = trainer.Trainer(
        checkpointer,
        7,
        checkpoint_every=2,
        validate=validate,
        validate_every=3,
        metric="BLEU",
        after_step=lambda step, results, batch: logged.append(step),
    )
    steps = _Steps(weight)
    loop.train(({"loss": 0.5} for _ in range(100)), steps)
    assert loop.step == 7 and float(weight) == 7.0 and loop.finished
    assert [s for s, _ in steps.seen] == list(range(7))  # the step each batch was for
    assert validated == [3, 6, 7]  # every 3 steps and at the end
    assert logged == list(range(1, 8))
    assert _saved_steps(tmp_path) == [2, 3, 4, 6, 7]  # by steps, and before validating
    assert checkpointer.best == dict(
        bleu=6, metric="BLEU", value=3.0, step=6, stale=1, last_validated=7
    )


def test_a_curriculum_phase_ends_where_asked_and_the_next_call_goes_on(tmp_path):
    checkpointer, weight = _checkpointer(tmp_path)
    loop = trainer.Trainer(checkpointer, 10)
    steps = _Steps(weight)
    loop.train(({"loss": 0.5} for _ in range(100)), steps, until=4)
    assert loop.step == 4 and not loop.finished
    loop.train(({"loss": 0.5} for _ in range(3)), steps)  # batches run out first
    assert loop.step == 7


def test_a_non_finite_batch_does_not_count_and_stop_names_the_step(tmp_path):
    checkpointer, weight = _checkpointer(tmp_path)
    loop = trainer.Trainer(checkpointer, 10, nan_policy="skip_batch")
    losses = [0.5, float("nan"), 0.5, float("inf"), 0.5]
    loop.train(({"loss": x} for x in losses), _Steps(weight))
    assert loop.step == 3 and loop.guard.skipped == 2
    stopping = trainer.Trainer(checkpointer, 10, describe=lambda batch: "batch %r" % batch)
    with pytest.raises(training_lib.NonFiniteLossError, match="at step 3"):
        stopping.train([{"loss": float("nan")}], _Steps(weight))


def test_patience_stops_training_and_holds_across_a_restart(tmp_path):
    checkpointer, weight = _checkpointer(tmp_path)
    loop = trainer.Trainer(
        checkpointer, 100, validate=lambda step: (1.0, {}), validate_every=2, patience=2
    )
    loop.train(({"loss": 0.5} for _ in range(100)), _Steps(weight))
    assert loop.step == 6 and loop.finished  # best at 2, no better at 4 and 6
    resumed, _ = _checkpointer(tmp_path)
    assert resumed.restore_latest() and int(resumed.step) == 6
    again = trainer.Trainer(resumed, 100, validate=lambda step: (1.0, {}), patience=2)
    assert again.finished
    again.train(({"loss": 0.5} for _ in range(100)), _Steps(weight))
    assert again.step == 6


def test_a_tied_validation_score_goes_to_the_lower_tie_key(tmp_path):
    checkpointer, weight = _checkpointer(tmp_path)
    nll = {2: 3.0, 4: 2.0, 6: 2.5}
    loop = trainer.Trainer(
        checkpointer,
        6,
        validate=lambda step: (0.0, {"dev_nll": nll[step]}),
        validate_every=2,
        tie_key="dev_nll",
    )
    loop.train(({"loss": 0.5} for _ in range(100)), _Steps(weight))
    assert checkpointer.best == dict(
        dev_nll=2.0, metric="score", value=0.0, step=4, stale=1, last_validated=6
    )


def test_gumbel_sampling_is_asked_of_the_context_layer_each_step(tmp_path):
    checkpointer, weight = _checkpointer(tmp_path)

    class LastHalf:
        def gumbel_active(self, step, total_steps):
            return tf.constant(step >= total_steps // 2)

    steps = _Steps(weight)
    trainer.Trainer(checkpointer, 4, context_layer=LastHalf()).train(
        ({"loss": 0.5} for _ in range(10)), steps
    )
    assert [gumbel for _, gumbel in steps.seen] == [False, False, True, True]


def test_scalars_reach_tensorboard_except_the_token_count(tmp_path):
    checkpointer, weight = _checkpointer(tmp_path)
    writer = tf.summary.create_file_writer(str(tmp_path / "log"))
    trainer.Trainer(checkpointer, 4, writer, summary_every=2).train(
        ({"loss": 0.5} for _ in range(10)), _Steps(weight)
    )
    writer.flush()
    tags = []
    for name in os.listdir(tmp_path / "log"):
        for event in tf.compat.v1.train.summary_iterator(str(tmp_path / "log" / name)):
            tags += [(event.step, value.tag) for value in event.summary.value]
    assert sorted(tags) == [(2, "loss"), (4, "loss")]


def test_a_lock_that_cannot_be_made_names_the_folder_it_guards(tmp_path, monkeypatch):
    def refused(path, *args, **kwargs):  # a folder of another user (tests run as root)
        raise PermissionError(13, "Permission denied", path)

    monkeypatch.setattr(files, "open", refused, raising=False)
    with pytest.raises(PermissionError) as raised:
        files.lock_beside(str(tmp_path / "decode_test"), "decode")
    assert raised.value.filename == str(tmp_path / "decode_test")


def test_in_use_says_whether_a_trainer_holds_the_folder(tmp_path):
    checkpointer, _ = _checkpointer(tmp_path)
    assert not trainer.in_use(checkpointer.write_dir)
    with trainer.Trainer(checkpointer, 5):
        assert trainer.in_use(checkpointer.write_dir)
    assert not trainer.in_use(checkpointer.write_dir)


def test_a_second_trainer_of_the_same_folder_is_refused(tmp_path):
    checkpointer, _ = _checkpointer(tmp_path)
    with trainer.Trainer(checkpointer, 5):
        with pytest.raises(
            files.FolderInUseError,
            match=r"being written by another trainer \(pid %d\)" % os.getpid(),
        ):
            with trainer.Trainer(checkpointer, 5):
                pass
    with trainer.Trainer(checkpointer, 5):  # the first one's lock went with it
        pass
