"""A run's ``checkpoint`` index in every state, in every host's naming: the checkpointer
sees the folder through its checkpoint files when the index cannot be used, rewrites it,
and never writes over a trained checkpoint; and a checkpoint of another entry point or
shape is refused in one line, by the library and by each command."""

import hashlib
import json
import os
import pathlib
import re
import shutil
import tempfile

import hosts
import numpy as np
import pytest
import tensorflow as tf
from hypothesis import given, settings
from hypothesis import strategies as st

from acvi_tf import config as config_lib
from acvi_tf import flags as acvi_flags
from acvi_tf.compat import keras
from acvi_tf.training import checkpoints
from nmt import run_nmt
from pointer_generator import experiment, jobs, run_summarization, summarize
from pointer_generator import task as pg_task
from pointer_generator import vocab as vocab_lib
from video_caption import run_captioning

SAMPLES = os.path.join(os.path.dirname(os.path.dirname(__file__)), "data_prep", "samples")
# The checkpoint names of the summarizer, NMT and the captioner.
NAMES = ("model.ckpt", "translate.ckpt", "ckpt")
STEPS = (8, 9, 10)  # as text, 10 sorts first: the step in a name is a number


def _model():
    model = keras.Sequential([keras.layers.Embedding(7, 2, name="embedding")])
    model.build([None, 3])
    return model


def _checkpointer(directory, name, model=None):
    return checkpoints.Checkpointer(
        str(directory),
        tf.Variable(0, dtype=tf.int64),
        checkpoint_name=name,
        model=model or _model(),
    )


def _trained(directory, name):
    """Checkpoints at STEPS in ``directory``, each with embeddings filled with its step."""
    saver = _checkpointer(directory, name)
    for step in STEPS:
        saver.step.assign(step)
        saver.checkpoint.model.layers[0].embeddings.assign(tf.fill([7, 2], float(step)))
        saver.save()


def _hashes(directory):
    """SHA-256 of each checkpoint file in ``directory`` (not the index), by name."""
    return {
        name: hashlib.sha256((directory / name).read_bytes()).hexdigest()
        for name in sorted(os.listdir(directory))
        if ".index" in name or ".data-" in name
    }


def _truncate(path):
    with open(path, "r+b") as f:
        f.truncate(os.path.getsize(path) // 2)


def _index_before_newest(directory, name):
    """The index as it is when a save is cut short after the checkpoint's files, before
    the index names it: it names the one before and was written before it."""
    _older_index(directory, name)
    newest = os.path.getmtime(directory / ("%s-10.index" % name))
    os.utime(directory / "checkpoint", (newest - 1, newest - 1))


def _older_index(directory, name):
    """An index in TensorFlow's form that names the checkpoints at steps 8 and 9."""
    checkpoints.write_index(
        str(directory), [str(directory / ("%s-%d" % (name, s))) for s in (8, 9)]
    )


def _older_index_without_times(directory, name):
    """An index by hand: the checkpoint at step 9 as the newest, and no time."""
    (directory / "checkpoint").write_text(
        'model_checkpoint_path: "%s-9"\nall_model_checkpoint_paths: "%s-9"\n' % (name, name)
    )


# Each state of the index (or of the newest checkpoint it names), with the step the
# checkpointer resumes from and the problem its one warning names.
STATES = {
    "missing": (lambda d, name: os.remove(d / "checkpoint"), 10, "is missing"),
    "empty": (lambda d, name: (d / "checkpoint").write_bytes(b""), 10, "is empty"),
    "random bytes": (
        lambda d, name: (d / "checkpoint").write_bytes(bytes(range(200, 256)) * 3),
        10,
        "is not text",
    ),
    "other text": (
        lambda d, name: (d / "checkpoint").write_text("model_checkpoint_path: x y\n"),
        10,
        "is not a checkpoint index",
    ),
    "a deleted checkpoint": (
        lambda d, name: [os.remove(p) for p in d.glob(name + "-10.*")],
        9,
        "names %s-10, which is missing",
    ),
    "the newest only": (
        lambda d, name: (d / "checkpoint").write_text('model_checkpoint_path: "%s-10"\n' % name),
        10,
        "does not list %s-10 last among its checkpoints",
    ),
    "a save cut short before the index named it": (
        lambda d, name: _index_before_newest(d, name),
        10,
        "names %s-9, but %s-10 was saved after it (a save cut short before the index",
    ),
    "a truncated index file": (
        lambda d, name: _truncate(d / ("%s-10.index" % name)),
        9,
        "names %s-10, which cannot be read",
    ),
    "a truncated data file": (
        lambda d, name: _truncate(d / ("%s-10.data-00000-of-00001" % name)),
        9,
        "names %s-10, which cannot be read",
    ),
}


@pytest.mark.parametrize("state", sorted(STATES))
@pytest.mark.parametrize("name", NAMES)
def test_a_resume_rebuilds_an_unusable_index_and_keeps_every_checkpoint(
    tmp_path, name, state, absl_caplog
):
    directory = tmp_path / "train"
    _trained(directory, name)
    damage, step, problem = STATES[state]
    damage(directory, name)
    before = _hashes(directory)
    # a reader does not read the data files through, the trainer does; a reader says
    # which checkpoint it skips (a deleted one it cannot see)
    absl_caplog.set_level("WARNING")
    # a reader takes the newest checkpoint the index names, as TensorFlow does
    seen = 10 if state == "a truncated data file" else step
    seen = 9 if state == "a save cut short before the index named it" else seen
    assert checkpoints.latest_checkpoint(str(directory)).endswith("%s-%d" % (name, seen))
    warnings = [r.getMessage() for r in absl_caplog.records if r.levelname == "WARNING"]
    skipped = "%s cannot be read" % (directory / ("%s-10" % name))
    # and which newer one it does not use, for an index that names an older one
    newer = "though %s-10 is newer" % name
    warned = state == "a truncated index file"
    assert [skipped in w or newer in w for w in warnings] == [True] * warned
    absl_caplog.clear()
    resumed = _checkpointer(directory, name)
    assert resumed.restore_latest().endswith("%s-%d" % (name, step))
    assert int(resumed.step) == step
    np.testing.assert_array_equal(
        resumed.checkpoint.model.layers[0].embeddings.numpy(), np.full([7, 2], float(step))
    )
    resumed.save()  # the rerun's last step is the restored one: nothing is written
    assert _hashes(directory) == before
    warnings = [r.getMessage() for r in absl_caplog.records if r.levelname == "WARNING"]
    assert len(warnings) == 1
    assert str(directory / "checkpoint") in warnings[0]
    assert problem.replace("%s", name) in warnings[0]
    state = tf.train.get_checkpoint_state(str(directory))
    listed = [os.path.basename(p) for p in state.all_model_checkpoint_paths]
    assert listed == ["%s-%d" % (name, s) for s in STEPS if s <= step]
    absl_caplog.clear()  # the rewritten index is used as it is
    assert _checkpointer(directory, name).restore_latest().endswith("%s-%d" % (name, step))
    assert not [r for r in absl_caplog.records if r.levelname == "WARNING"]


@pytest.mark.parametrize("older_index", [_older_index, _older_index_without_times])
@pytest.mark.parametrize("name", NAMES)
def test_an_index_naming_an_older_checkpoint_is_the_user_s_choice(
    tmp_path, name, older_index, absl_caplog
):
    """An index that names an older checkpoint than the folder holds, in TensorFlow's
    own form or by hand without times (a restored backup, a hand edit): a resume from it
    would write over the newer ones and its first saves delete the oldest, so the
    trainer refuses and says how to take either; a reader uses it, as TensorFlow's
    readers do, and says so. A newer checkpoint that cannot be read is no choice."""
    directory = tmp_path / "train"
    _trained(directory, name)
    older_index(directory, name)
    edited = os.path.getmtime(directory / ("%s-10.index" % name)) + 1  # after the saves
    os.utime(directory / "checkpoint", (edited, edited))
    before = _hashes(directory), (directory / "checkpoint").read_bytes()
    absl_caplog.set_level("WARNING")
    assert checkpoints.latest_checkpoint(str(directory)).endswith("%s-9" % name)
    [warning] = [r.getMessage() for r in absl_caplog.records if r.levelname == "WARNING"]
    assert "names %s-9 as the newest checkpoint, though %s-10 is newer" % (name, name) in warning
    # a reader's log line says why it is the one
    path, why = checkpoints.inference_checkpoint(str(directory))
    assert path.endswith("%s-9" % name) and why == "the checkpoint the index names"
    # and so does an inference command's, for want of a best model
    absl_caplog.clear()
    assert checkpoints.checkpoint_to_use(None, str(tmp_path / "best"), str(directory)) == path
    assert "so this uses the checkpoint the index names of the training, %s;" % path in (
        absl_caplog.text
    )
    with pytest.raises(checkpoints.CheckpointError) as refused:
        _checkpointer(directory, name).restore_latest()
    assert str(refused.value) == (
        "%s names %s-9 as the newest checkpoint, though %s-10 is newer: a resume from it "
        "would write over it. Remove %s-10 to resume from %s-9, or remove %s to resume from "
        "%s-10" % (directory / "checkpoint", name, name, name, name, directory / "checkpoint", name)
    )
    assert (_hashes(directory), (directory / "checkpoint").read_bytes()) == before
    # the newer checkpoint cut short: the index's is the only one to resume from
    cut = shutil.copytree(directory, tmp_path / "cut")
    _truncate(cut / ("%s-10.data-00000-of-00001" % name))
    absl_caplog.clear()
    assert checkpoints.latest_checkpoint(str(cut)).endswith("%s-9" % name)
    assert not [r for r in absl_caplog.records if "newer" in r.getMessage()]
    assert _checkpointer(cut, name).restore_latest().endswith("%s-9" % name)
    os.remove(directory / "checkpoint")  # the second way out: the newest
    assert _checkpointer(directory, name).restore_latest().endswith("%s-10" % name)
    assert checkpoints.inference_checkpoint(str(directory))[1] == "the newest checkpoint"


def test_readers_see_the_same_checkpoint_and_leave_the_index_alone(tmp_path):
    directory = tmp_path / "train"
    _trained(directory, "ckpt")
    (directory / "checkpoint").write_bytes(b"\xff\xfe")
    assert checkpoints.latest_checkpoint(str(directory)).endswith("ckpt-10")
    assert (directory / "checkpoint").read_bytes() == b"\xff\xfe"
    restored = []
    for path in checkpoints.newest_checkpoints(str(directory), restored.append, poll_secs=0):
        assert path.endswith("ckpt-10") and restored == [path]
        break
    assert checkpoints.latest_checkpoint(str(tmp_path / "absent")) is None


class _Looked(Exception):
    pass


@pytest.mark.parametrize("training", [False, True])
def test_a_wait_without_a_trainer_says_so_now_and_then(
    tmp_path, monkeypatch, absl_caplog, training
):
    looks = []

    def sleep(seconds):
        looks.append(seconds)
        if len(looks) == 121:
            raise _Looked()

    monkeypatch.setattr(checkpoints.time, "sleep", sleep)
    with pytest.raises(_Looked):
        for _ in checkpoints.newest_checkpoints(str(tmp_path), None, trained=lambda: training):
            pass
    warnings = [r.getMessage() for r in absl_caplog.records if r.levelname == "WARNING"]
    said = (
        "No trainer is writing %s: a new checkpoint comes only once the training command runs"
        % tmp_path
    )
    # at the first look and after every 60 more, until a trainer writes the folder
    assert [w.startswith(said) for w in warnings] == ([] if training else [True] * 3)
    assert absl_caplog.messages.count("Waiting for a new checkpoint in %s" % tmp_path) == 1


def test_an_unusable_index_without_checkpoints_is_a_new_run(tmp_path, absl_caplog):
    directory = tmp_path / "train"
    directory.mkdir()
    (directory / "checkpoint").write_bytes(b"\xff garbage")
    absl_caplog.set_level("WARNING")
    saver = _checkpointer(directory, "ckpt")
    assert saver.restore_latest() is None
    assert "Removed %s: it is not text" % (directory / "checkpoint") in absl_caplog.text
    saver.step.assign(1)
    assert saver.save().endswith("ckpt-1")


def test_a_folder_of_unreadable_checkpoints_is_still_one_error(tmp_path):
    directory = tmp_path / "train"
    _trained(directory, "ckpt")
    os.remove(directory / "checkpoint")
    for step in STEPS:
        _truncate(directory / ("ckpt-%d.index" % step))
    before = _hashes(directory)
    with pytest.raises(checkpoints.CheckpointError, match=r"ckpt-10, ckpt-9, ckpt-8\)"):
        _checkpointer(directory, "ckpt").restore_latest()
    assert _hashes(directory) == before


# the index as a kill, an editor or a copy may leave it: bytes, and near-format text
INDEX = st.one_of(
    st.binary(max_size=120),
    st.lists(
        st.sampled_from(
            [
                'model_checkpoint_path: "ckpt-10"',
                'model_checkpoint_path: "ckpt-9"',
                'model_checkpoint_path: "ckpt-3"',
                'all_model_checkpoint_paths: "ckpt-8"',
                'all_model_checkpoint_paths: "ckpt-7"',
                "all_model_checkpoint_timestamps: 1e9",
                "last_preserved_timestamp: 2e9",
                'model_checkpoint_path: "',
                "model_checkpoint_path: ckpt-10",
                "",
                "}",
            ]
        ),
        max_size=5,
    ).map(lambda lines: "\n".join(lines).encode()),
)


@settings(max_examples=15, deadline=None)
@given(content=INDEX)
def test_any_index_resumes_from_a_trained_checkpoint_and_writes_over_none(content):
    """Fuzz: whatever the index holds, a resume restores one of the trained checkpoints
    (the one the index names when it can be read, else the newest), intact, and a save
    of the next step writes a new checkpoint beside them; or, for an index written after
    them that names an older one, it refuses and writes nothing."""
    with tempfile.TemporaryDirectory() as root:
        directory = pathlib.Path(root)
        _trained(directory, "ckpt")
        (directory / "checkpoint").write_bytes(content)
        before = _hashes(directory)
        resumed = _checkpointer(directory, "ckpt")
        try:
            restored = resumed.restore_latest()
        except checkpoints.CheckpointError as refused:
            assert "as the newest checkpoint, though " in str(refused)
            assert _hashes(directory) == before
            return
        step = int(resumed.step) if restored else None
        assert step in STEPS
        np.testing.assert_array_equal(
            resumed.checkpoint.model.layers[0].embeddings.numpy(), np.full([7, 2], float(step))
        )
        assert _hashes(directory) == before
        resumed.step.assign(step + 1)
        resumed.save()
        kept = {k: v for k, v in _hashes(directory).items() if k in before}
        assert kept == {k: v for k, v in before.items() if k in kept}


@pytest.fixture(scope="module")
def host_checkpoints(tmp_path_factory):
    """Each host's tiny model, and a checkpoint of it in a folder of its own, by host."""
    root = tmp_path_factory.mktemp("hosts")
    models, paths = {}, {}
    for host, name in zip(hosts.HOSTS, NAMES):
        build, batch, outputs = hosts.HOST_SETUPS[host]
        models[host] = build(None, 0)
        outputs(models[host], batch())
        saver = _checkpointer(root / host, name, models[host])
        saver.step.assign(3)
        paths[host] = saver.save()
    return models, paths


def test_another_hosts_checkpoint_is_one_error_naming_a_variable_and_its_shape(
    host_checkpoints,
):
    models, paths = host_checkpoints
    for host, model in models.items():
        kind = "%s.%s" % (type(model).__module__, type(model).__name__)
        for other, path in paths.items():
            if other == host:
                checkpoints.restore_model(tf.train.Checkpoint(model=model), path)
                continue
            with pytest.raises(
                checkpoints.CheckpointMismatchError,
                match=r"^%s holds another model than this %s: \d+ of the model's \d+ variables "
                r"are not in it, such as model/\S+ with shape \([\d, ]*\)(, and it holds "
                r"model/\S+ with shape \([\d, ]*\) instead)?: the run was trained with other "
                r"model flags, another model type or another entry point; .*or a checkpoint of "
                r"a run of this entry point$" % (re.escape(path), re.escape(kind)),
            ):
                checkpoints.restore_model(tf.train.Checkpoint(model=model), path)


@pytest.mark.parametrize("indexed", [True, False], ids=["with its index", "without"])
def test_a_folder_of_another_hosts_checkpoints_is_never_trained_over(
    host_checkpoints, tmp_path, indexed
):
    source = pathlib.Path(host_checkpoints[1]["nmt"]).parent
    directory = tmp_path / "train"
    directory.mkdir()
    for name in os.listdir(source):
        if name != "checkpoint" or indexed:
            (directory / name).write_bytes((source / name).read_bytes())
    before = sorted(os.listdir(directory)), _hashes(directory)
    saver = _checkpointer(directory, "model.ckpt", host_checkpoints[0]["summarizer"])
    match = (
        r"translate.ckpt-3 holds another model than this pointer_generator.*; resume it with "
        r"the entry point and the flags it was trained with \(its hparams.json, where the "
        r"folder has one, records them\), or give this run a folder of its own$"
        if indexed
        else r"train holds translate.ckpt-3 and no checkpoint named model.ckpt-<step>"
    )
    with pytest.raises(checkpoints.CheckpointMismatchError, match=match):
        saver.restore_latest()
    assert (sorted(os.listdir(directory)), _hashes(directory)) == before


def test_a_checkpoint_of_other_shapes_names_the_variable_and_both_shapes(tmp_path):
    saver = _checkpointer(tmp_path, "ckpt")
    saver.save()
    wider = keras.Sequential([keras.layers.Embedding(7, 5, name="embedding")])
    wider.build([None, 3])
    with pytest.raises(
        checkpoints.CheckpointMismatchError,
        match=r"ckpt-0 holds model/layer_with_weights-0/embeddings with shape \(7, 2\), this "
        r"model's has shape \(7, 5\): the run was trained with other model flags; give the flags",
    ):
        checkpoints.restore_model(tf.train.Checkpoint(model=wider), saver.latest)


# ----------------------------------------------------------------------------------------
# The commands, on runs built without training


def _summarizer_flags(root, *argv):
    corpus = os.path.join(SAMPLES, "debian_descriptions")
    settings = [
        "--data_path=%s" % os.path.join(corpus, "chunked", "train_*"),
        "--vocab_path=%s" % os.path.join(corpus, "vocab"),
        "--log_root=%s" % root,
        "--exp_name=exp",
        "--hidden_dim=4",
        "--emb_dim=4",
        "--vocab_size=50",
        "--batch_size=2",
        "--max_steps=8",
        "--checkpoint_secs=3600",
    ]
    return config_lib.parse(run_summarization.define_flags, ["x", *settings, *argv])


@pytest.fixture(scope="module")
def summarizer_run(tmp_path_factory):
    """A summarizer run at its last step: its record, and model.ckpt-4, -6 and -8 with
    other embeddings each (as the train command writes them, without its training)."""
    root = tmp_path_factory.mktemp("summarizer")
    config = _summarizer_flags(root)
    acvi_flags.write_flag_record(str(root / "exp"), config)
    vocab = vocab_lib.Vocab(config.vocab_path, config.vocab_size, True)
    model = experiment.build_model(config, vocab)
    optimizer = jobs.build_optimizer(config)
    optimizer.build(model.trainable_variables)
    train_dir = str(root / "exp" / "train")
    saver = jobs.build_checkpointer(pg_task.TASK, config, train_dir, model, optimizer, vocab)
    for step in (4, 6, 8):
        saver.step.assign(step)
        model.embedding.embeddings.assign_add(tf.ones_like(model.embedding.embeddings))
        saver.save()
    return root


def _copy(run, tmp_path):
    shutil.copytree(run, tmp_path / "run")
    return tmp_path / "run"


def test_a_rerun_of_the_summarizer_without_its_index_resumes_and_overwrites_nothing(
    summarizer_run, tmp_path, absl_caplog
):
    root = _copy(summarizer_run, tmp_path)
    train = root / "exp" / "train"
    os.remove(train / "checkpoint")  # the checkpoint files copied without their index
    before = _hashes(train)
    run_summarization.run(_summarizer_flags(root))
    assert _hashes(train) == before
    assert (
        "%s is missing; rewrote it from the checkpoint files there (model.ckpt-4, "
        "model.ckpt-6, model.ckpt-8), newest readable: model.ckpt-8" % (train / "checkpoint")
    ) in absl_caplog.text
    assert "Restored %s (step 8)" % (train / "model.ckpt-8") in absl_caplog.text
    (train / "checkpoint").write_bytes(b"\x80" * 10)  # and random bytes, once more
    run_summarization.run(_summarizer_flags(root))
    assert _hashes(train) == before
    assert "%s is not text; rewrote it" % (train / "checkpoint") in absl_caplog.text


def test_eval_and_decode_of_a_checkpoint_other_than_the_record_name_the_shapes(
    summarizer_run, tmp_path
):
    root = _copy(summarizer_run, tmp_path)
    record = root / "exp" / "hparams.json"
    record.write_text(json.dumps(dict(json.loads(record.read_text()), hidden_dim=6)))
    data = "--data_path=%s" % os.path.join(SAMPLES, "debian_descriptions", "chunked", "val_*")
    for mode in ("eval", "decode"):
        argv = ["x", "--mode=" + mode, data, "--log_root=%s" % root, "--exp_name=exp"]
        with pytest.raises(
            checkpoints.CheckpointMismatchError,
            match=r"train/model.ckpt-8 holds model/\S+ with shape \(\d+, 4\), this model's has "
            r"shape \(\d+, 6\): the run was trained with other model flags",
        ):
            run_summarization.run(config_lib.parse(run_summarization.define_flags, argv))


def _nmt_train(root):
    en_de = os.path.join(SAMPLES, "debian_en_de")
    argv = ["--src=en", "--tgt=de", "--vocab_prefix=%s" % os.path.join(en_de, "vocab")]
    argv += ["--train_prefix=%s" % os.path.join(en_de, "train"), "--num_units=4"]
    argv += ["--dev_prefix=%s" % os.path.join(en_de, "dev"), "--out_dir=%s" % root]
    run_nmt.run(config_lib.parse(run_nmt.define_flags, ["x", *argv]))


def _captioner_argv(root, *argv):
    shapes = os.path.join(SAMPLES, "moving_shapes")
    return config_lib.parse(
        run_captioning.define_flags,
        [
            "x",
            "--data_dir=%s" % shapes,
            "--features=%s" % os.path.join(shapes, "features.h5"),
            "--out_dir=%s" % root,
            "--encoder_units=4",
            "--decoder_units=4",
            *argv,
        ],
    )


# Each train command, the folder it keeps its checkpoints in under the run's, and the
# host whose checkpoints the test puts there.
TRAIN_COMMANDS = {
    "summarizer": (lambda root: run_summarization.run(_summarizer_flags(root)), "exp/train", "nmt"),
    "nmt": (_nmt_train, ".", "captioner"),
    "captioner": (lambda root: run_captioning.run(_captioner_argv(root)), "train", "summarizer"),
}


@pytest.mark.parametrize(
    "host, index",
    [(host, b"\xff\xfe") for host in TRAIN_COMMANDS] + [("summarizer", None)],
    ids=["%s, garbage index" % host for host in TRAIN_COMMANDS] + ["summarizer, its index"],
)
def test_the_train_command_refuses_a_folder_of_another_hosts_checkpoints(
    host_checkpoints, tmp_path, host, index
):
    train_command, folder, other = TRAIN_COMMANDS[host]
    source = pathlib.Path(host_checkpoints[1][other])
    train = tmp_path / folder
    shutil.copytree(source.parent, train, dirs_exist_ok=True)
    if index is not None:
        (train / "checkpoint").write_bytes(index)
    before = sorted(os.listdir(train)), _hashes(train)
    records = sorted(tmp_path.rglob("hparams.json"))
    with pytest.raises(checkpoints.CheckpointMismatchError, match=re.escape(source.name)):
        train_command(tmp_path)
    # the folder as it was: no record written either
    assert (sorted(os.listdir(train)), _hashes(train)) == before
    assert sorted(tmp_path.rglob("hparams.json")) == records


def test_inference_commands_refuse_another_hosts_checkpoint(
    host_checkpoints, summarizer_run, tmp_path
):
    paths = host_checkpoints[1]
    another = r"holds another model than this %s: \d+ of the model's \d+ variables are not in it"
    en_de = os.path.join(SAMPLES, "debian_en_de")
    nmt_argv = ["--src=en", "--tgt=de", "--vocab_prefix=%s" % os.path.join(en_de, "vocab")]
    nmt_argv += ["--out_dir=%s" % (tmp_path / "nmt"), "--num_units=4"]
    nmt_argv += ["--inference_input_file=%s" % os.path.join(en_de, "dev.en")]
    nmt_argv += ["--ckpt=%s" % paths["summarizer"]]
    with pytest.raises(checkpoints.CheckpointMismatchError, match=another % "nmt.model.NMTModel"):
        run_nmt.run(config_lib.parse(run_nmt.define_flags, ["x", *nmt_argv]))
    raw = tmp_path / "raw.txt"
    raw.write_text("an article\n")
    argv = ["x", "--log_root=%s" % summarizer_run, "--exp_name=exp", "--input=%s" % raw]
    argv += ["--output=%s" % (tmp_path / "out.txt"), "--ckpt=%s" % paths["nmt"]]
    with pytest.raises(
        checkpoints.CheckpointMismatchError,
        match=another % "pointer_generator.model.PointerGenerator",
    ):
        summarize.run(config_lib.parse(summarize.define_flags, argv))
    argv = ["--mode=decode", "--ckpt=%s" % paths["summarizer"]]
    with pytest.raises(
        checkpoints.CheckpointMismatchError, match=another % "video_caption.model.Captioner"
    ):
        run_captioning.run(_captioner_argv(tmp_path / "vc", *argv))


def test_the_train_command_refuses_an_older_checkpoint_s_index_before_it_writes(tmp_path):
    train = tmp_path / "exp" / "train"
    _trained(train, "model.ckpt")
    _older_index(train, "model.ckpt")
    edited = os.path.getmtime(train / "model.ckpt-10.index") + 1  # after the saves
    os.utime(train / "checkpoint", (edited, edited))
    before = sorted(os.listdir(train)), _hashes(train), (train / "checkpoint").read_bytes()
    with pytest.raises(checkpoints.CheckpointError, match="names model.ckpt-9 as the newest"):
        TRAIN_COMMANDS["summarizer"][0](tmp_path)
    after = sorted(os.listdir(train)), _hashes(train), (train / "checkpoint").read_bytes()
    assert after == before and not list(tmp_path.rglob("hparams.json"))
