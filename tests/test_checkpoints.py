"""The shared checkpointer: one save per step, fallback past an unreadable checkpoint, a
best model whose score survives a restart, and the vocabulary check."""

import json
import os
import pathlib
import re
import tempfile

import numpy as np
import pytest
import tensorflow as tf
from absl import logging
from hypothesis import given, settings
from hypothesis import strategies as st

from acvi_tf.compat import keras
from acvi_tf.training import checkpoints


def _model(rows=7):
    model = keras.Sequential([keras.layers.Embedding(rows, 2, name="embedding")])
    model.build([None, 3])
    return model


def _checkpointer(tmp_path, model, **kwargs):
    return checkpoints.Checkpointer(
        str(tmp_path / "train"),
        tf.Variable(0, dtype=tf.int64),
        best_dir=str(tmp_path / "best"),
        model=model,
        **kwargs,
    )


def _index(path):
    return path + ".index"


def test_a_step_is_saved_once_and_never_rewritten(tmp_path):
    saver = _checkpointer(tmp_path, _model())
    saver.step.assign(5)
    first = saver.save()
    before = os.stat(_index(first))
    os.utime(_index(first), ns=(1, 1))
    assert saver.save() == first  # the same step again: nothing written
    assert os.stat(_index(first)).st_mtime_ns == 1 and before.st_size > 0
    saver.step.assign(6)
    assert saver.save().endswith("ckpt-6")
    assert [os.path.basename(p) for p in saver.manager.checkpoints] == ["ckpt-5", "ckpt-6"]


def _two_checkpoints(root):
    """A checkpointer in ``root`` that saved steps 1 and 2, each with its embeddings
    filled with the step number."""
    model = _model()
    saver = _checkpointer(root, model)
    for step in (1, 2):
        saver.step.assign(step)
        model.layers[0].embeddings.assign(tf.fill([7, 2], float(step)))
        saver.save()
    return saver


def test_a_resume_falls_back_past_an_unreadable_checkpoint(tmp_path):
    saver = _two_checkpoints(tmp_path)
    open(_index(saver.latest), "wb").close()  # a kill while the index was written
    resumed = _checkpointer(tmp_path, _model())
    restored = resumed.restore_latest()
    assert restored.endswith("ckpt-1") and int(resumed.step) == 1
    model = resumed.checkpoint.model
    assert float(tf.reduce_max(model.layers[0].embeddings)) == 1.0
    resumed.step.assign(2)
    assert resumed.save().endswith("ckpt-2")  # the bad one is replaced, not kept
    assert _checkpointer(tmp_path, _model()).restore_latest().endswith("ckpt-2")


def test_no_readable_checkpoint_is_one_error_naming_the_folder(tmp_path):
    saver = _checkpointer(tmp_path, _model())
    saver.save()
    open(_index(saver.latest), "wb").close()
    with pytest.raises(checkpoints.CheckpointError, match=r"no checkpoint in .*train can be read"):
        _checkpointer(tmp_path, _model()).restore_latest()
    assert _checkpointer(tmp_path / "new", _model()).restore_latest() is None


def test_a_vocabulary_mismatch_is_not_a_reason_to_fall_back(tmp_path):
    saver = _checkpointer(tmp_path, _model())
    for step in (1, 2):
        saver.step.assign(step)
        saver.save()

    def check(path):
        checkpoints.check_vocabulary(
            path, {"model/layer_with_weights-0/embeddings": (9, "--vocab_size=9")}
        )

    with pytest.raises(checkpoints.CheckpointMismatchError, match="ckpt-2 was trained"):
        _checkpointer(tmp_path, _model(9), check=check).restore_latest()


def test_the_best_score_survives_a_restart(tmp_path):
    saver = _checkpointer(tmp_path, _model())
    saver.step.assign(10)
    assert saver.save_best(8.2, metric="BLEU")
    restarted = _checkpointer(tmp_path, _model())
    assert restarted.best_value == 8.2 and restarted.stale == 0
    restarted.step.assign(20)
    assert not restarted.save_best(7.5)  # worse: the best model stays
    assert tf.train.latest_checkpoint(str(tmp_path / "best")).endswith("ckpt-10")
    again = _checkpointer(tmp_path, _model())
    assert again.stale == 1 and again.best["metric"] == "BLEU" and again.last_validated == 20
    again.step.assign(30)
    assert again.save_best(9.0)
    with open(tmp_path / "best" / checkpoints.BEST_RECORD) as f:
        assert json.load(f) == {"value": 9.0, "step": 30, "stale": 0, "last_validated": 30}
    assert tf.train.latest_checkpoint(str(tmp_path / "best")).endswith("ckpt-30")


def test_a_loss_is_better_when_lower(tmp_path):
    saver = _checkpointer(tmp_path, _model())
    assert saver.save_best(3.0, higher_is_better=False)
    assert not saver.save_best(3.5, higher_is_better=False)
    assert saver.save_best(2.5, higher_is_better=False) and saver.best_value == 2.5


def test_a_tie_goes_to_the_lower_tie_loss(tmp_path):
    saver = _checkpointer(tmp_path, _model())
    saver.step.assign(100)
    assert saver.save_best(0.0, tie_key="dev_nll", dev_nll=5.0)
    saver.step.assign(200)
    assert not saver.save_best(0.0, tie_key="dev_nll", dev_nll=5.5)  # higher: stays
    saver.step.assign(300)
    assert saver.save_best(0.0, tie_key="dev_nll", dev_nll=4.0)
    restarted = _checkpointer(tmp_path, _model())
    assert restarted.best == {
        "dev_nll": 4.0,
        "value": 0.0,
        "step": 300,
        "stale": 0,
        "last_validated": 300,
    }
    restarted.step.assign(400)
    assert not restarted.save_best(0.0, dev_nll=1.0)  # no tie key: the earlier stays
    assert tf.train.latest_checkpoint(str(tmp_path / "best")).endswith("ckpt-300")


def test_a_checkpoint_of_another_vocabulary_size_is_named(tmp_path):
    path = tf.train.Checkpoint(model=_model()).write(str(tmp_path / "ckpt"))
    key = "model/layer_with_weights-0/embeddings"
    checkpoints.check_vocabulary(path, {key: (7, "--vocab_size=7"), "model/absent": (3, "x")})
    with pytest.raises(
        checkpoints.CheckpointMismatchError,
        match=r"ckpt was trained with 7 rows .*--vocab_size=9 gives 9",
    ):
        checkpoints.check_vocabulary(path, {key: (9, "--vocab_size=9")})


def test_the_fallback_is_logged(tmp_path, absl_caplog):
    caplog = absl_caplog
    saver = _checkpointer(tmp_path, _model())
    for step in (1, 2):
        saver.step.assign(step)
        saver.save()
    open(_index(saver.latest), "wb").close()
    with caplog.at_level("WARNING"):
        _checkpointer(tmp_path, _model()).restore_latest()
    # the index names ckpt-2, which cannot be read: the one warning names both
    warnings = [r.getMessage() for r in caplog.records if r.levelname == "WARNING"]
    assert len(warnings) == 1 and "ckpt-2" in warnings[0] and "readable: ckpt-1" in warnings[0]


def test_a_resume_keeps_the_runs_learning_rate_and_the_optimizer_state(tmp_path, absl_caplog):
    caplog = absl_caplog
    model = _model()
    first = keras.optimizers.Adam(0.01)
    first.build(model.trainable_variables)
    saver = _checkpointer(tmp_path, model, optimizer=first)
    first.iterations.assign(9)
    saver.step.assign(9)
    saver.save()
    lowered = keras.optimizers.Adam(0.001)  # the resumed run asks for a lower --lr
    lowered.build(model.trainable_variables)
    caplog.set_level(logging.INFO)
    _checkpointer(tmp_path, model, optimizer=lowered).restore_latest()
    assert float(lowered.learning_rate) == pytest.approx(0.001)
    assert int(lowered.iterations) == 9  # the rest of the state is the checkpoint's
    assert "Learning rate 0.001 (this run's) replaces the checkpoint's 0.01" in caplog.text
    schedule = keras.optimizers.schedules.ExponentialDecay(1.0, 10, 0.5)
    scheduled = keras.optimizers.SGD(schedule)
    scheduled.build(model.trainable_variables)
    _checkpointer(tmp_path, model, optimizer=scheduled).restore_latest()  # left as it is
    assert scheduled.get_config()["learning_rate"]["config"] == schedule.get_config()


def test_a_checkpoint_of_another_model_shape_is_named_not_skipped(tmp_path):
    saver = _checkpointer(tmp_path, _model(rows=7))
    saver.save()
    with pytest.raises(
        checkpoints.CheckpointMismatchError,
        match=r"ckpt-0 holds model/layer_with_weights-0/embeddings with shape \(7, 2\), this "
        r"model's has shape \(9, 2\): the run was trained with other model flags",
    ):
        _checkpointer(tmp_path, _model(rows=9)).restore_latest()


@settings(max_examples=40, deadline=None)
@given(
    kind=st.sampled_from(["index", "data"]),
    damage=st.sampled_from(["truncate", "flip"]),
    where=st.floats(0.0, 1.0, exclude_max=True),
)
def test_a_damaged_newest_checkpoint_restores_the_one_before(kind, damage, where):
    """Fuzz: any truncation or flipped byte of the newest checkpoint's files gives either
    that checkpoint, intact, or the one before, never an error or a half-read model."""
    with tempfile.TemporaryDirectory() as root:
        root = pathlib.Path(root)
        saver = _two_checkpoints(root)
        path = _index(saver.latest) if kind == "index" else saver.latest + ".data-00000-of-00001"
        with open(path, "rb") as f:
            content = bytearray(f.read())
        at = int(where * len(content))
        if damage == "truncate":
            content = content[:at]
        else:
            content[at] ^= 0xFF
        with open(path, "wb") as f:
            f.write(bytes(content))
        resumed = _checkpointer(root, _model())
        restored = resumed.restore_latest()
        step = int(resumed.step)
        assert restored.endswith("ckpt-%d" % step) and step in (1, 2)
        np.testing.assert_array_equal(
            resumed.checkpoint.model.layers[0].embeddings.numpy(), np.full([7, 2], float(step))
        )


def test_inference_takes_the_given_then_the_best_then_a_training_checkpoint_with_a_warning(
    tmp_path, absl_caplog
):
    best, train = str(tmp_path / "best"), str(tmp_path / "train")
    assert checkpoints.checkpoint_to_use(None, best, train) is None
    checkpointer = _checkpointer(tmp_path, _model())
    checkpointer.step.assign(3)
    trained = checkpointer.save()
    absl_caplog.clear()
    assert checkpoints.checkpoint_to_use(None, best, train) == trained
    assert [r.levelname for r in absl_caplog.records] == ["WARNING"]
    assert (
        "holds no best model (none is validated yet, or the folder was removed), so this uses "
        "the newest checkpoint of the training, %s;" % trained
    ) in absl_caplog.text
    checkpointer.save_best(1.0, higher_is_better=True)
    absl_caplog.clear()
    chosen = checkpoints.checkpoint_to_use(None, best, train)
    assert os.path.dirname(chosen) == best and not absl_caplog.records
    assert checkpoints.checkpoint_to_use("given", best, train) == "given"
    # a best model whose checkpoint is gone is not "no validation recorded"
    for name in os.listdir(best):
        if name != checkpoints.BEST_RECORD:
            os.remove(os.path.join(best, name))
    assert checkpoints.checkpoint_to_use(None, best, train) == trained
    assert "best.json records a best model, but its checkpoint is missing" in absl_caplog.text


def test_a_run_trained_before_keeps_its_best_model_in_the_hosts_former_folder(tmp_path):
    run = str(tmp_path)
    assert checkpoints.best_dir(run, "eval") == str(tmp_path / "best")
    (tmp_path / "eval").mkdir()  # the summarizer's eval job's TensorBoard logs only
    (tmp_path / "eval" / "events.out.tfevents.1").write_text("")
    assert checkpoints.best_dir(run, "eval") == str(tmp_path / "best")
    model = _model()
    model.layers[0].embeddings.assign(tf.fill([7, 2], 4.0))
    former = checkpoints.Checkpointer(
        str(tmp_path / "train"),
        tf.Variable(12, dtype=tf.int64),
        best_dir=str(tmp_path / "eval"),
        model=model,
    )
    former.save_best(1.0)
    assert checkpoints.best_dir(run, "eval") == str(tmp_path / "eval")
    restored = _model()
    path, step = checkpoints.restore_for_inference(
        restored, str(tmp_path / "train"), checkpoints.best_dir(run, "eval")
    )
    assert (os.path.dirname(path), step) == (str(tmp_path / "eval"), 12)
    np.testing.assert_array_equal(restored.layers[0].embeddings.numpy(), np.full([7, 2], 4.0))
    (tmp_path / "best").mkdir()  # a best/ folder wins once there is one
    assert checkpoints.best_dir(run, "eval") == str(tmp_path / "best")


def test_an_inference_restore_checks_the_vocabulary_and_names_the_folders_it_looked_in(
    tmp_path, absl_caplog
):
    train, best = str(tmp_path / "train"), str(tmp_path / "best")
    with pytest.raises(
        checkpoints.CheckpointError,
        match="^no checkpoint in %s or %s; train first$" % (best, train),
    ):
        checkpoints.restore_for_inference(_model(), train, best, to_train="train first")
    saver = _checkpointer(tmp_path, _model())
    saver.step.assign(3)
    trained = saver.save()
    table = "model/layer_with_weights-0/embeddings"
    check = checkpoints.vocabulary_check({table: (9, "--vocab_size=9")})
    with pytest.raises(checkpoints.CheckpointMismatchError, match="--vocab_size=9 gives 9"):
        checkpoints.restore_for_inference(_model(9), train, check=check)
    absl_caplog.clear()
    assert checkpoints.restore_for_inference(_model(), train) == (trained, 3)
    assert "Restored %s (step 3): the newest checkpoint" % trained in absl_caplog.messages


def test_an_inference_restore_falls_back_from_a_damaged_newest_checkpoint(tmp_path, absl_caplog):
    """A damaged data file (a write cut short): the newest readable checkpoint instead,
    with a warning naming both; a checkpoint the user named is one error line."""
    train = str(tmp_path / "train")
    model = _model()
    saver = _checkpointer(tmp_path, model)
    for step in (2, 5):
        model.layers[0].embeddings.assign(tf.fill([7, 2], float(step)))
        saver.step.assign(step)
        saver.save()
    newest, older = [str(tmp_path / "train" / ("ckpt-%d" % s)) for s in (5, 2)]
    data = newest + ".data-00000-of-00001"
    with open(data, "r+b") as f:
        f.truncate(10)
    restored = _model()
    assert checkpoints.restore_for_inference(restored, train, newest=True) == (older, 2)
    np.testing.assert_array_equal(restored.layers[0].embeddings.numpy(), np.full([7, 2], 2.0))
    assert any(
        m.startswith("Cannot read checkpoint %s (" % newest)
        and m.endswith("falling back to %s" % older)
        for m in absl_caplog.messages
    )
    assert "Restored %s (step 2): the newest readable checkpoint" % older in absl_caplog.messages
    with pytest.raises(
        checkpoints.CheckpointError,
        match=r"^%s cannot be read \(.*\); give --ckpt a checkpoint that can, or retrain$"
        % re.escape(newest),
    ):
        checkpoints.restore_for_inference(_model(), train, given=newest)
    # a damaged best model falls back the same way, to the newest readable training one
    saver.save_best(1.0)
    best = str(tmp_path / "best")
    damaged = checkpoints.latest_checkpoint(best)
    with open(damaged + ".data-00000-of-00001", "r+b") as f:
        f.truncate(10)
    absl_caplog.clear()
    assert checkpoints.restore_for_inference(_model(), train, best) == (older, 2)
    assert any(
        m.startswith("Cannot read checkpoint %s (" % damaged)
        and m.endswith("falling back to %s" % newest)
        for m in absl_caplog.messages
    )


def test_an_inference_restore_says_which_checkpoint_and_why(tmp_path, absl_caplog):
    """The best model by default, the newest with ``newest`` (naming the best model and
    the flag that restores it), ``--ckpt`` over both; each logged with its reason."""
    train, best = str(tmp_path / "train"), str(tmp_path / "best")
    model = _model()
    saver = _checkpointer(tmp_path, model)
    model.layers[0].embeddings.assign(tf.fill([7, 2], 2.0))
    saver.step.assign(2)
    saver.save()
    saver.save_best(1.0)
    best_path = checkpoints.latest_checkpoint(best)
    model.layers[0].embeddings.assign(tf.fill([7, 2], 5.0))
    saver.step.assign(5)
    newest = saver.save()
    cases = [
        (dict(), best_path, 2.0, "Restored %s (step 2): the best model" % best_path),
        (dict(newest=True), newest, 5.0, "Restored %s (step 5): the newest checkpoint" % newest),
        (dict(given=newest), newest, 5.0, "Restored %s (step 5): --ckpt" % newest),
        (
            dict(given=best_path, newest=True),
            best_path,
            2.0,
            "Restored %s (step 2): --ckpt" % best_path,
        ),
        (
            dict(given="best", newest=True),
            best_path,
            2.0,
            "Restored %s (step 2): the best model" % best_path,
        ),
        (dict(given="latest"), newest, 5.0, "Restored %s (step 5): the newest checkpoint" % newest),
    ]
    for kwargs, path, value, line in cases:
        absl_caplog.clear()
        restored = _model()
        assert checkpoints.restore_for_inference(restored, train, best, **kwargs)[0] == path
        np.testing.assert_array_equal(restored.layers[0].embeddings.numpy(), np.full([7, 2], value))
        named = "The run's best model is %s (step 2); --ckpt=%s restores it" % (
            best_path,
            best_path,
        )
        names_best = kwargs in (dict(newest=True), dict(given="latest"))
        assert absl_caplog.messages == [line] + ([named] if names_best else [])
    with pytest.raises(checkpoints.CheckpointError, match="--ckpt=best: .* holds no best model"):
        checkpoints.restore_for_inference(_model(), train, str(tmp_path / "none"), "best")
    # a folder: its newest checkpoint; a path of no checkpoint: one error
    restored = checkpoints.restore_for_inference(_model(), train, best, str(tmp_path / "best"))
    assert restored == (best_path, 2)
    for missing in (newest + "9", newest + ".index", str(tmp_path)):
        # the example is the run's own newest checkpoint, in its host's naming
        with pytest.raises(
            checkpoints.CheckpointError,
            match=r"no checkpoint there \(a checkpoint's path ends before .index, as in %s, or"
            % re.escape(newest),
        ):
            checkpoints.restore_for_inference(_model(), train, best, missing)
