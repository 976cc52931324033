"""A run's ``checkpoint`` index in every state, in every host's naming: the checkpointer
sees the folder through its checkpoint files when the index cannot be used, rewrites it,
and never writes over a trained checkpoint; and a checkpoint of another entry point or
shape is refused in one line, by the library and by each command."""

import hashlib
import os
import pathlib
import tempfile

import hosts
import numpy as np
import pytest
import tensorflow as tf
from hypothesis import given, settings
from hypothesis import strategies as st

from acvi_tf import checkpoints
from acvi_tf.compat import keras

# The checkpoint names of the summarizer, NMT and the captioner.
NAMES = ("model.ckpt", "translate.ckpt", "ckpt")
STEPS = (4, 6, 8)


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


# Each state of the index (or of the newest checkpoint it names), with the step the
# checkpointer resumes from and the problem its one warning names.
STATES = {
    "missing": (lambda d, name: os.remove(d / "checkpoint"), 8, "is missing"),
    "empty": (lambda d, name: (d / "checkpoint").write_bytes(b""), 8, "is empty"),
    "random bytes": (
        lambda d, name: (d / "checkpoint").write_bytes(bytes(range(200, 256)) * 3),
        8,
        "is not text",
    ),
    "other text": (
        lambda d, name: (d / "checkpoint").write_text("model_checkpoint_path: x y\n"),
        8,
        "is not a checkpoint index",
    ),
    "a deleted checkpoint": (
        lambda d, name: [os.remove(p) for p in d.glob(name + "-8.*")],
        6,
        "names %s-8, which is missing",
    ),
    "the newest only": (
        lambda d, name: (d / "checkpoint").write_text('model_checkpoint_path: "%s-8"\n' % name),
        8,
        "does not list %s-8 as tf.train.CheckpointManager reads it",
    ),
    "a truncated index file": (
        lambda d, name: _truncate(d / ("%s-8.index" % name)),
        6,
        "names %s-8, which cannot be read",
    ),
    "a truncated data file": (
        lambda d, name: _truncate(d / ("%s-8.data-00000-of-00001" % name)),
        6,
        "names %s-8, which cannot be read",
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
    # a reader does not read the data files through, the trainer does
    seen = 8 if state == "a truncated data file" else step
    assert checkpoints.latest_checkpoint(str(directory)).endswith("%s-%d" % (name, seen))
    absl_caplog.set_level("WARNING")
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
    assert (problem % name if "%" in problem else problem) in warnings[0]
    state = tf.train.get_checkpoint_state(str(directory))
    listed = [os.path.basename(p) for p in state.all_model_checkpoint_paths]
    assert listed == ["%s-%d" % (name, s) for s in STEPS if s <= step]
    absl_caplog.clear()  # the rewritten index is used as it is
    assert _checkpointer(directory, name).restore_latest().endswith("%s-%d" % (name, step))
    assert not [r for r in absl_caplog.records if r.levelname == "WARNING"]


def test_readers_see_the_same_checkpoint_and_leave_the_index_alone(tmp_path):
    directory = tmp_path / "train"
    _trained(directory, "ckpt")
    (directory / "checkpoint").write_bytes(b"\xff\xfe")
    assert checkpoints.latest_checkpoint(str(directory)).endswith("ckpt-8")
    assert (directory / "checkpoint").read_bytes() == b"\xff\xfe"
    restored = []
    for path in checkpoints.newest_checkpoints(str(directory), restored.append, poll_secs=0):
        assert path.endswith("ckpt-8") and restored == [path]
        break
    assert checkpoints.latest_checkpoint(str(tmp_path / "absent")) is None


def test_an_unusable_index_without_checkpoints_is_a_new_run(tmp_path, absl_caplog):
    directory = tmp_path / "train"
    directory.mkdir()
    (directory / "checkpoint").write_bytes(b"\x00garbage")
    absl_caplog.set_level("WARNING")
    saver = _checkpointer(directory, "ckpt")
    assert saver.restore_latest() is None
    assert "Removed %s: it is not a checkpoint index" % (directory / "checkpoint") in (
        absl_caplog.text
    )
    saver.step.assign(1)
    assert saver.save().endswith("ckpt-1")


def test_a_folder_of_unreadable_checkpoints_is_still_one_error(tmp_path):
    directory = tmp_path / "train"
    _trained(directory, "ckpt")
    os.remove(directory / "checkpoint")
    for step in STEPS:
        _truncate(directory / ("ckpt-%d.index" % step))
    before = _hashes(directory)
    with pytest.raises(checkpoints.CheckpointError, match=r"ckpt-8, ckpt-6, ckpt-4\)"):
        _checkpointer(directory, "ckpt").restore_latest()
    assert _hashes(directory) == before


# the index as a kill, an editor or a copy may leave it: bytes, and near-format text
INDEX = st.one_of(
    st.binary(max_size=120),
    st.lists(
        st.sampled_from(
            [
                'model_checkpoint_path: "ckpt-8"',
                'model_checkpoint_path: "ckpt-6"',
                'model_checkpoint_path: "ckpt-3"',
                'all_model_checkpoint_paths: "ckpt-4"',
                'all_model_checkpoint_paths: "ckpt-9"',
                "all_model_checkpoint_timestamps: 1e9",
                "last_preserved_timestamp: 2e9",
                'model_checkpoint_path: "',
                "model_checkpoint_path: ckpt-8",
                "",
                "}",
            ]
        ),
        max_size=5,
    ).map(lambda lines: "\n".join(lines).encode()),
)


@settings(max_examples=30, deadline=None)
@given(content=INDEX)
def test_any_index_resumes_from_a_trained_checkpoint_and_writes_over_none(content):
    """Fuzz: whatever the index holds, a resume restores one of the trained checkpoints
    (the one the index names when it can be read, else the newest), intact, and a save
    of the next step writes a new checkpoint beside them."""
    with tempfile.TemporaryDirectory() as root:
        directory = pathlib.Path(root)
        _trained(directory, "ckpt")
        (directory / "checkpoint").write_bytes(content)
        before = _hashes(directory)
        resumed = _checkpointer(directory, "ckpt")
        step = int(resumed.step) if resumed.restore_latest() else None
        assert step in STEPS
        np.testing.assert_array_equal(
            resumed.checkpoint.model.layers[0].embeddings.numpy(), np.full([7, 2], float(step))
        )
        assert _hashes(directory) == before
        resumed.step.assign(step + 1)
        resumed.save()
        kept = {k: v for k, v in _hashes(directory).items() if k in before}
        assert kept == {k: v for k, v in before.items() if k in kept}


def _host_model(host):
    build, batch, outputs = hosts.HOST_SETUPS[host]
    model = build(None, 0)
    outputs(model, batch())
    return model


@pytest.fixture(scope="module")
def host_checkpoints(tmp_path_factory):
    """A checkpoint of each host's tiny model, in a folder of its own, by host."""
    root = tmp_path_factory.mktemp("hosts")
    found = {}
    for host, name in zip(hosts.HOSTS, NAMES):
        saver = _checkpointer(root / host, name, _host_model(host))
        saver.step.assign(3)
        found[host] = saver.save()
    return found


@pytest.mark.parametrize("host", hosts.HOSTS)
def test_another_hosts_checkpoint_is_one_error_naming_a_variable_and_its_shape(
    host_checkpoints, host
):
    model = _host_model(host)
    for other, path in host_checkpoints.items():
        if other == host:
            checkpoints.restore_model(tf.train.Checkpoint(model=model), path)
            continue
        with pytest.raises(checkpoints.CheckpointMismatchError) as error:
            checkpoints.restore_model(tf.train.Checkpoint(model=model), path)
        message = str(error.value)
        assert message.startswith(
            "%s holds another model than this %s.%s"
            % (path, type(model).__module__, type(model).__name__)
        )
        assert "such as model/" in message and "with shape (" in message
        assert "or a checkpoint of a run of this entry point" in message


@pytest.mark.parametrize("indexed", [True, False], ids=["with its index", "without"])
def test_a_folder_of_another_hosts_checkpoints_is_never_trained_over(
    host_checkpoints, tmp_path, indexed
):
    source = pathlib.Path(host_checkpoints["nmt"]).parent
    directory = tmp_path / "train"
    directory.mkdir()
    for name in os.listdir(source):
        if name != "checkpoint" or indexed:
            (directory / name).write_bytes((source / name).read_bytes())
    before = sorted(os.listdir(directory)), _hashes(directory)
    saver = _checkpointer(directory, "model.ckpt", _host_model("summarizer"))
    match = (
        r"translate.ckpt-3 holds another model than this pointer_generator.*a folder of its own"
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
