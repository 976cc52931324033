"""The training entry point end to end on a tiny corpus: NaN stop and skip, eval job,
convert_to_coverage_model, restore_best_model and the Transformer model type (the
curriculum, its resumes and the coverage switch: test_kill_resume.py)."""

import collections
import json
import random
import shutil

import numpy as np
import pytest
import tensorflow as tf
from absl import flags

from acvi_tf import config as config_lib
from acvi_tf import flags as acvi_flags
from acvi_tf.formats import bin_files
from acvi_tf.training import checkpoints
from acvi_tf.training import step as training_lib
from pointer_generator import decode as decode_lib
from pointer_generator import experiment as pg_experiment
from pointer_generator import jobs, run_summarization, task
from pointer_generator import losses as losses_lib

from conftest import untraced


@pytest.fixture(scope="module")
def corpus(tmp_path_factory):
    root = tmp_path_factory.mktemp("corpus")
    rng = random.Random(0)
    words = ["w%d" % i for i in range(30)]
    pairs = []
    for i in range(120):
        article = [rng.choice(words) for _ in range(rng.randint(6, 25))] + ["name%d" % i]
        pairs.append((" ".join(article), "<s> name%d %s </s>" % (i, " ".join(article[:3]))))
    bin_files.write_chunked(str(root), "train", pairs[:100], 50)
    bin_files.write_chunked(str(root), "val", pairs[100:], 50)
    counts = collections.Counter(
        w for a, s in pairs[:100] for w in (a + " " + s).split() if w not in ("<s>", "</s>")
    )
    (root / "vocab").write_text("".join("%s %d\n" % kv for kv in counts.most_common()))
    return root


def _arg(name, value):
    if isinstance(value, bool):
        return "--%s%s" % ("" if value else "no", name)
    return "--%s=%s" % (name, value)


def _run(corpus, log_root, **overrides):
    """Runs the entry point in this process on its own flags; returns its result."""
    settings = dict(
        data_path=str(corpus / "train_*"),
        vocab_path=str(corpus / "vocab"),
        log_root=str(log_root),
        exp_name="exp",
        hidden_dim=8,
        emb_dim=6,
        batch_size=4,
        vocab_size=40,
        optimizer="adam",
        checkpoint_secs=3600,
        context="acvi",
        seed=5,
    )
    settings.update(overrides)
    argv = ["run_summarization"] + [_arg(name, value) for name, value in settings.items()]
    return run_summarization.run(config_lib.parse(run_summarization.define_flags, argv))


def _ckpt_value(path, key):
    return tf.train.load_checkpoint(path).get_tensor(key)


@pytest.fixture(scope="module")
def four_sa_steps(corpus, tmp_path_factory):
    """A log_root after four plain (uncompiled) training steps with soft attention,
    checkpointed at steps 2 and 4; a test that changes it works on a copy."""
    root = tmp_path_factory.mktemp("four_sa_steps")
    _run(corpus, root, max_steps=4, context="sa", checkpoint_steps=2)
    return root


def _copy(run, tmp_path):
    shutil.copytree(run / "exp", tmp_path / "exp")


def test_eval_job_and_restore_best_model(corpus, four_sa_steps, tmp_path, absl_caplog):
    _copy(four_sa_steps, tmp_path)
    record = json.loads((tmp_path / "exp" / "hparams.json").read_text())
    assert (record["context"], record["hidden_dim"], record["max_steps"]) == ("sa", 8, 4)
    assert record["attention_masking"] == "renormalize" and "coverage" in record
    lines = (corpus / "vocab").read_text().splitlines(True)
    reordered = lines[:10] + [lines[11], lines[10]] + lines[12:]
    for vocab, error, message in (
        # another vocabulary file of fewer words than the run's --vocab_size=40
        (lines[:26], checkpoints.CheckpointMismatchError, "--vocab_size=40 gives 30"),
        # the run's words in another order, the same size: the ids would mean other words
        (reordered, acvi_flags.DataChangeError, "another vocabulary"),
    ):
        (tmp_path / "other_vocab").write_text("".join(vocab))
        with pytest.raises(error, match=message):
            _run(
                corpus,
                tmp_path,
                max_steps=4,
                context="sa",
                vocab_path=str(tmp_path / "other_vocab"),
                mode="decode",
                single_pass=True,
                data_path=str(corpus / "val_*"),
            )
    _run(
        corpus,
        tmp_path,
        max_steps=4,
        context="sa",
        mode="eval",
        data_path=str(corpus / "val_*"),
        eval_max_batches=2,
    )
    best_dir = tmp_path / "exp" / "best"
    best = tf.train.latest_checkpoint(str(best_dir))
    assert best.endswith("bestmodel-4")
    # the decode mode restores --ckpt where given (the newest training checkpoint else)
    absl_caplog.clear()
    _run(
        corpus,
        tmp_path,
        context="sa",
        mode="decode",
        single_pass=True,
        data_path=str(corpus / "val_*"),
        ckpt=best,
        beam_size=2,
        max_dec_steps=3,
    )
    assert "Restored %s (step 4): --ckpt" % best in absl_caplog.messages
    # a run trained before kept its best model in eval/, See's folder: still read
    for path in best_dir.iterdir():
        path.rename(tmp_path / "exp" / "eval" / path.name)
    best_dir.rmdir()
    _run(corpus, tmp_path, context="sa", restore_best_model=True)
    restored = tf.train.latest_checkpoint(str(tmp_path / "exp" / "train"))
    assert restored.endswith("model.ckpt-4")
    keys = tf.train.load_checkpoint(restored).get_variable_to_shape_map()
    assert not any(k.startswith("optimizer/_variables") for k in keys)


def _events(folder, tag):
    """``[(step, value)]`` of one tag in a folder's TensorBoard events, in order: a float
    for a scalar, the text for a text summary, the encoded image for an image."""
    found = []
    for path in sorted(tf.io.gfile.glob(str(folder / "events.out.tfevents.*"))):
        for event in tf.compat.v1.train.summary_iterator(path):
            for value in event.summary.value:
                if value.tag == tag:
                    array = tf.make_ndarray(value.tensor)
                    if array.dtype == object:  # text, or an image's [width, height, png]
                        array = array.flat[-1].decode("utf-8", "replace")
                    found.append((event.step, array if isinstance(array, str) else float(array)))
    return found


def test_the_eval_job_scores_each_new_checkpoint_once(
    corpus, four_sa_steps, tmp_path, monkeypatch, absl_caplog
):
    # checkpoints at steps 2 and 4; the eval job first sees only step 2, then a listed
    # step 3 the trainer has already deleted (the newest left is step 2, scored: it waits),
    # then step 4 (the last)
    _copy(four_sa_steps, tmp_path)
    train_dir = tmp_path / "exp" / "train"
    (train_dir / "model.ckpt-2_temp").mkdir()  # an interrupted save of the trainer's
    (tmp_path / "exp" / "best").mkdir()
    (tmp_path / "exp" / "best" / "bestmodel-1_temp").mkdir()  # and one of an eval job
    ckpt = {n: str(train_dir / ("model.ckpt-%d" % n)) for n in (2, 3, 4)}
    later = [[ckpt[2], ckpt[3]], [ckpt[2], ckpt[3], ckpt[4]]]
    waits = []
    unsaved = tmp_path / "unsaved"  # step 4's files, until the trainer "saves" them
    unsaved.mkdir()
    for path in train_dir.glob("model.ckpt-4.*"):
        path.rename(unsaved / path.name)

    def trainer_saves(seconds):
        waits.append(seconds)
        if not later:
            raise AssertionError("the eval job waits after the last step's checkpoint")
        paths = later.pop(0)
        if ckpt[4] in paths:  # the checkpoint's files first, then the index
            for path in unsaved.iterdir():
                path.rename(train_dir / path.name)
        tf.compat.v1.train.update_checkpoint_state(str(train_dir), paths[-1], paths)

    tf.compat.v1.train.update_checkpoint_state(str(train_dir), ckpt[2], [ckpt[2]])
    monkeypatch.setattr(checkpoints.time, "sleep", trainer_saves)
    looks = []
    look = checkpoints.latest_checkpoint

    def counted_look(directory):
        looks.append(directory)
        if len(looks) > 10:
            raise AssertionError("the eval job keeps looking without waiting")
        return look(directory)

    monkeypatch.setattr(checkpoints, "latest_checkpoint", counted_look)
    _run(
        corpus,
        tmp_path,
        max_steps=4,
        context="sa",
        mode="eval",
        data_path=str(corpus / "val_*"),
        eval_max_batches=3,
    )
    assert len(waits) == 2
    assert absl_caplog.messages[-1] == (
        "The eval job ends: step 4 is the last of the run's training (its phases and "
        "--max_steps end at step 4)"
    )
    eval_dir = tmp_path / "exp" / "eval"
    scored = _events(eval_dir, "loss")
    assert [step for step, _ in scored] == [2, 4]
    # beside each score, decoded validation summaries and an attention heat map
    for tag in ("val_summaries", "val_attention"):
        assert [step for step, _ in _events(eval_dir, tag)] == [2, 4], tag
    [(_, summary)] = _events(eval_dir, "val_summaries")[-1:]
    assert "reference: name10" in summary and "decoded: w" in summary
    best_dir = tmp_path / "exp" / "best"
    best = json.loads((best_dir / "best.json").read_text())
    assert best["batches"] == 3
    assert best["value"] == pytest.approx(min(value for _, value in scored), rel=1e-6)
    assert tf.train.latest_checkpoint(str(best_dir)).endswith("bestmodel-%d" % best["step"])
    # the eval job cleans its own folder, never the trainer's
    assert not (best_dir / "bestmodel-1_temp").exists()
    assert (train_dir / "model.ckpt-2_temp").exists()
    _run(corpus, tmp_path, max_steps=4, context="sa")  # a trainer cleans its folder
    assert not (train_dir / "model.ckpt-2_temp").exists()


@pytest.mark.eager
def test_convert_to_coverage_model_then_resume(corpus, four_sa_steps, tmp_path):
    _copy(four_sa_steps, tmp_path)
    train_dir = tmp_path / "exp" / "train"
    _run(corpus, tmp_path, context="sa", coverage=True, convert_to_coverage_model=True)
    converted = tf.train.latest_checkpoint(str(train_dir))
    assert converted.endswith("model.ckpt-4_cov_init")
    # the checkpoint file names checkpoints relative to the folder, so the run can move
    assert str(tmp_path) not in (train_dir / "checkpoint").read_text()
    keys = tf.train.load_checkpoint(converted).get_variable_to_shape_map()
    assert any("coverage_projection" in k for k in keys)
    _run(corpus, tmp_path, context="sa", coverage=True, max_steps=5)
    assert tf.train.latest_checkpoint(str(train_dir)).endswith("model.ckpt-5")
    from absl import app

    # converting again would re-randomise the trained w_c and reset the optimizer
    with pytest.raises(app.UsageError, match="model.ckpt-5 already has coverage"):
        _run(corpus, tmp_path, context="sa", coverage=True, convert_to_coverage_model=True)
    assert tf.train.latest_checkpoint(str(train_dir)).endswith("model.ckpt-5")


@pytest.mark.eager
def test_a_resume_takes_new_steps_and_refuses_a_new_model_size(
    corpus, four_sa_steps, tmp_path, caplog
):
    _copy(four_sa_steps, tmp_path)
    with pytest.raises(acvi_flags.FlagChangeError, match="--hidden_dim=8, this command gives"):
        _run(corpus, tmp_path, context="sa", hidden_dim=16, max_steps=5)
    # the model's flags, the vocabulary and the seed come from the run's record
    argv = ["x", "--data_path=%s" % (corpus / "train_*"), "--log_root=%s" % tmp_path]
    argv += ["--exp_name=exp", "--max_steps=5"]
    with caplog.at_level("INFO"):
        run_summarization.run(config_lib.parse(run_summarization.define_flags, argv))
    assert "--max_steps 4 -> 5" in caplog.text
    assert tf.train.latest_checkpoint(str(tmp_path / "exp" / "train")).endswith("model.ckpt-5")


def test_bad_flags_give_clear_errors(corpus, tmp_path):
    from absl import app

    with pytest.raises(app.UsageError, match="must start at 0"):
        _run(corpus, tmp_path, phases="1-5:5:5")
    with pytest.raises(app.UsageError, match="run --mode=train first"):
        _run(corpus, tmp_path, mode="eval", exp_name="missing")
    with pytest.raises(flags.IllegalFlagValueError, match="single_pass"):
        _run(corpus, tmp_path, single_pass=True)
    with pytest.raises(flags.IllegalFlagValueError, match="set --max_steps or --phases"):
        _run(corpus, tmp_path, acvi_gumbel_fraction=0.1)
    with pytest.raises(flags.IllegalFlagValueError, match="--lr must be a finite number"):
        _run(corpus, tmp_path, lr=float("nan"))
    assert not (tmp_path / "exp").exists()  # a refused training run leaves no folder
    (tmp_path / "exp").mkdir()
    with pytest.raises(acvi_flags.DecodeSettingError, match="--beam_size=21 proposes 42"):
        _run(corpus, tmp_path, mode="decode", beam_size=21, vocab_size=40)


def test_transformer_model_type_trains_evaluates_and_decodes(corpus, tmp_path, monkeypatch):
    settings = dict(
        model_type="transformer",
        transformer_units=8,
        transformer_layers=1,
        transformer_heads=2,
        transformer_dropout=0.0,
        pointer_gen=False,
    )
    _run(corpus, tmp_path, max_steps=3, **settings)
    train_dir = tmp_path / "exp" / "train"
    assert tf.train.latest_checkpoint(str(train_dir)).endswith("model.ckpt-3")
    keys = tf.train.load_checkpoint(str(train_dir / "model.ckpt-3")).get_variable_to_shape_map()
    assert any("transformer" in k for k in keys)
    assert not any("variance" in k or "p_gen" in k for k in keys)
    decode = dict(
        mode="decode",
        single_pass=True,
        data_path=str(corpus / "val_*"),
        beam_size=2,
        max_dec_steps=6,
        min_dec_steps=1,
        max_enc_steps=30,
        decode_batch_size=10,
    )
    _run(corpus, tmp_path, **decode, **settings)
    decoded = list((tmp_path / "exp").glob("decode_val_*/decoded/*_decoded.txt"))
    assert len(decoded) == 20
    assert all(0 < len(p.read_text().split()) <= 6 for p in decoded)
    # the same decode again: refused by the folder's name, before a model is built
    with monkeypatch.context() as patch:
        patch.setattr(pg_experiment, "build_model", lambda *args: pytest.fail("built"))
        with pytest.raises(decode_lib.DecodeFolderError, match="finished decode"):
            _run(corpus, tmp_path, **decode, **settings)
    # interrupted, then resumed with a flag that changes the summaries: refused
    next((tmp_path / "exp").glob("decode_val_*/metrics.json")).unlink()
    with pytest.raises(decode_lib.DecodeFolderError, match=r"in --coverage \(False there, True"):
        _run(corpus, tmp_path, coverage=True, **decode, **settings)


def test_a_decode_manifest_holds_every_flag_but_the_commands_own(corpus, tmp_path):
    """The run's record and the command line give the flags, the command's own (where
    things are, how it runs) stay out; the checkpoint and vocabulary count by content."""
    argv = ["rs", "--coverage", "--vocab_path=%s" % (corpus / "vocab"), "--num_shards=2"]
    config = config_lib.parse(run_summarization.define_flags, argv)
    index = tmp_path / "model.ckpt-7.index"
    index.write_bytes(b"weights")
    settings = jobs.decode_settings(config, str(tmp_path / "model.ckpt-7"), task.COMMAND_FLAGS)
    own = set(task.COMMAND_FLAGS) | set(acvi_flags.COMMAND_FLAGS)
    assert set(settings["flags"]) == set(config.recorded) - own - {"vocab_path"}
    assert {"coverage", "pointer_gen", "hidden_dim", "context", "beam_size"} <= set(
        settings["flags"]
    )
    assert not {"mode", "data_path", "log_root", "num_shards"} & set(settings["flags"])
    assert settings["flags"]["coverage"] is True
    assert settings["checkpoint"] == "model.ckpt-7"
    index.write_bytes(b"weightz")
    again = jobs.decode_settings(config, str(tmp_path / "model.ckpt-7"), task.COMMAND_FLAGS)
    assert again["checkpoint_sha256"] != settings["checkpoint_sha256"]
    assert again["vocab_sha256"] == settings["vocab_sha256"]


def test_non_finite_losses_are_skipped_or_stop_training(corpus, tmp_path, monkeypatch):
    real = losses_lib.compute_losses
    calls, always = tf.Variable(0), tf.Variable(False)

    def poisoned(*args, **kwargs):  # the second batch, or every batch once `always`
        losses = real(*args, **kwargs)
        calls.assign_add(1)
        poison = tf.where(tf.logical_or(tf.equal(calls, 2), always), np.nan, 1.0)
        losses["total_loss"] = losses["total_loss"] * poison
        return losses

    monkeypatch.setattr(losses_lib, "compute_losses", poisoned)
    _run(corpus, tmp_path, max_steps=4, context="sa", nan_policy="skip_batch")
    train_dir = str(tmp_path / "exp" / "train")
    good = tf.train.latest_checkpoint(train_dir)
    assert good.endswith("model.ckpt-4") and int(calls.numpy()) == 5  # one skipped
    reader = tf.train.load_checkpoint(good)
    assert reader.get_tensor("optimizer/_iterations/.ATTRIBUTES/VARIABLE_VALUE") == 4
    assert all(
        np.all(np.isfinite(reader.get_tensor(k)))
        for k, dtype in reader.get_variable_to_dtype_map().items()
        if dtype.is_floating
    )
    always.assign(True)
    # the resumed run's record says skip_batch; the command line's stop wins
    with pytest.raises(training_lib.NonFiniteLossError, match="step 4. Stopping.*ckpt-4"):
        _run(corpus, tmp_path, max_steps=6, context="sa", nan_policy="stop")
    assert int(calls.numpy()) == 6  # stopped at the first non-finite batch
    assert tf.train.latest_checkpoint(train_dir) == good
    tf.train.load_checkpoint(good)  # still readable


def test_jit_compiled_training_matches_the_uncompiled_one(corpus, four_sa_steps, tmp_path):
    # --jit_compile: XLA forward and backward, articles padded to --max_enc_steps (30 here,
    # longer than every article, so nothing is truncated differently): after four steps
    # the weights are those of the plain run, whose batches are padded to their longest.
    _run(corpus, tmp_path, max_steps=4, context="sa", max_enc_steps=30, jit_compile=True)
    plain, compiled = (
        tf.train.latest_checkpoint(str(root / "exp" / "train"))
        for root in (four_sa_steps, tmp_path)
    )
    assert plain.endswith("-4") and compiled.endswith("-4")
    names = [name for name, _ in tf.train.list_variables(plain) if name.startswith("model/")]
    assert len(names) > 10
    for name in names:
        np.testing.assert_allclose(
            _ckpt_value(compiled, name),
            _ckpt_value(plain, name),
            rtol=1e-3,
            atol=2e-5,
            err_msg=name,
        )


def test_a_mirrored_run_trains_through_the_curriculum_and_resumes(corpus, tmp_path):
    """Two replicas (the two logical CPUs of conftest) through a phase change to coverage:
    the checkpoints, the coverage switch and a resume work as on one device."""
    flags = dict(distribution_strategy="mirrored", num_gpus=0, context="acvi")
    _run(corpus, tmp_path, phases="0-2:40:10", coverage_steps=2, **flags)
    train_dir = tmp_path / "exp" / "train"
    latest = tf.train.latest_checkpoint(str(train_dir))
    assert latest.endswith("model.ckpt-4") and bool(
        _ckpt_value(latest, "coverage_started/.ATTRIBUTES/VARIABLE_VALUE")
    )
    with untraced():  # the strategy's traced steps, phase change included, ran above
        _run(corpus, tmp_path, phases="0-2:40:10", coverage_steps=4, **flags)
    assert tf.train.latest_checkpoint(str(train_dir)).endswith("model.ckpt-6")
