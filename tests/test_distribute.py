"""tf.distribute (acvi_tf.training.distribute, training_lib.make_train_step): one step of a
MirroredStrategy over two logical CPU devices, and over one, equals one single-device
step on the same global batch, for a toy model and for every host; ACVI's replicas draw
their own noise, reproducibly; the ``Devices:`` line and ``--cpu_devices``, also as
docs/distributed.md runs it."""

import glob
import os

import doc_commands
import numpy as np
import pytest
import tensorflow as tf

from acvi_tf import builders
from acvi_tf import config as config_lib
from acvi_tf import flags as acvi_flags
from acvi_tf.compat import keras
from acvi_tf.contexts import acvi as acvi_lib
from acvi_tf.contexts import registry
from acvi_tf.training import distribute
from acvi_tf.training import step as training_lib
from nmt import model as nmt_lib
from nmt import run_nmt
from pointer_generator import model as pg_lib
from video_caption import data as vc_data
from video_caption import model as vc_lib

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


@pytest.fixture(scope="module")
def mirrored():
    strategy = distribute.make_strategy("mirrored", num_gpus=0)
    assert strategy.num_replicas_in_sync == 2  # the two logical CPUs of conftest
    return strategy


@pytest.fixture(scope="module")
def one_replica():
    """A MirroredStrategy over the first CPU device: the strategy of a one-GPU machine,
    from distribute's cache of one strategy per device set."""
    strategy = distribute.cached_strategy((tf.config.list_logical_devices("CPU")[0].name,))
    assert strategy.num_replicas_in_sync == 1
    return strategy


def _weights(model):
    return [v.numpy() for v in model.trainable_variables]


def _assert_same(single, replicated, rtol=1e-5, atol=1e-6):
    assert len(single) == len(replicated)
    for i, (a, b) in enumerate(zip(single, replicated)):
        np.testing.assert_allclose(b, a, rtol=rtol, atol=atol, err_msg="variable %d" % i)


# ----------------------------------------------------------------------------------------
# A toy model


def _toy_step(strategy, batch, max_grad_norm, steps=1, jit_compile=False):
    """Trains a small regression model ``steps`` steps; returns weights and results."""
    with strategy.scope():
        keras.utils.set_random_seed(1)
        model = keras.Sequential([keras.layers.Dense(4, activation="tanh"), keras.layers.Dense(1)])
        model.build([None, 3])
        optimizer = keras.optimizers.Adam(0.1)
        optimizer.build(model.trainable_variables)

        def loss_fn(batch):
            error = tf.square(tf.cast(model(batch["x"])[:, 0], tf.float32) - batch["y"])
            return tf.reduce_mean(error), dict(loss=tf.reduce_mean(error), count=tf.size(error))

        signature = [dict(x=tf.TensorSpec([None, 3]), y=tf.TensorSpec([None]))]
        step = training_lib.make_step_from_loss(
            loss_fn,
            model.trainable_variables,
            optimizer,
            signature,
            max_grad_norm,
            jit_compile,
            sum_keys=("count",),
        )
        results = {}
        for _ in range(steps):  # in the scope, as the trainer runs it
            results = step(batch)
    return _weights(model), {k: float(v) for k, v in results.items()}, optimizer


@pytest.mark.parametrize("size", [6, 5])  # 5: replicas of 3 and 2 examples
@pytest.mark.parametrize("max_grad_norm", [0.0, 0.5])
def test_a_replicated_step_is_the_single_device_step(mirrored, size, max_grad_norm):
    rng = np.random.default_rng(0)
    batch = dict(
        x=tf.constant(rng.normal(size=(size, 3)), tf.float32),
        y=tf.constant(rng.normal(size=size), tf.float32),
    )
    single, single_results, _ = _toy_step(tf.distribute.get_strategy(), batch, max_grad_norm, 3)
    replicated, results, optimizer = _toy_step(mirrored, batch, max_grad_norm, 3)
    _assert_same(single, replicated)
    assert results["count"] == size  # counts add up over the replicas
    for name in ("loss", "grad_norm"):  # means are of the global batch
        np.testing.assert_allclose(results[name], single_results[name], rtol=1e-5)
    assert int(optimizer.iterations.numpy()) == 3


def test_a_one_replica_step_is_the_single_device_step(one_replica):
    rng = np.random.default_rng(0)
    batch = dict(
        x=tf.constant(rng.normal(size=(5, 3)), tf.float32),
        y=tf.constant(rng.normal(size=5), tf.float32),
    )
    single, single_results, _ = _toy_step(tf.distribute.get_strategy(), batch, 0.5, 2)
    replicated, results, optimizer = _toy_step(one_replica, batch, 0.5, 2)
    _assert_same(single, replicated)
    assert results == pytest.approx(single_results, rel=1e-5)
    assert int(optimizer.iterations.numpy()) == 2


@pytest.mark.parametrize("precision", ["float32", "mixed_float16"])
def test_xla_and_mixed_precision_work_under_the_strategy(mirrored, precision):
    keras.mixed_precision.set_global_policy(precision)
    rng = np.random.default_rng(0)
    batch = dict(
        x=tf.constant(rng.normal(size=(6, 3)), tf.float32),
        y=tf.constant(rng.normal(size=6), tf.float32),
    )
    single, _, _ = _toy_step(tf.distribute.get_strategy(), batch, 0.5, 2, jit_compile=True)
    replicated, results, _ = _toy_step(mirrored, batch, 0.5, 2, jit_compile=True)
    tolerance = 1e-5 if precision == "float32" else 2e-3
    _assert_same(single, replicated, rtol=tolerance, atol=tolerance)
    assert np.isfinite(results["loss"])


def test_a_non_finite_global_batch_updates_nothing(mirrored):
    batch = dict(x=tf.constant([[1.0, 2, 3], [np.nan, 0, 0]]), y=tf.constant([1.0, 2]))
    before, _, _ = _toy_step(mirrored, batch, 0.0, steps=0)
    after, results, optimizer = _toy_step(mirrored, batch, 0.0)
    assert not np.isfinite(results["loss"])
    _assert_same(before, after, rtol=0, atol=0)
    assert int(optimizer.iterations.numpy()) == 0


def test_a_batch_smaller_than_the_replicas_is_refused(mirrored):
    batch = dict(x=tf.ones([1, 3]), y=tf.ones([1]))
    with pytest.raises(tf.errors.InvalidArgumentError, match="fewer examples than"):
        _toy_step(mirrored, batch, 0.0)


def test_replica_rows_are_balanced_and_cover_the_batch():
    class Context:
        num_replicas_in_sync = 3

        def __init__(self, replica):
            self.replica_id_in_sync_group = replica

    batch = dict(ids=tf.range(7), scalar=tf.constant(9))
    parts = [distribute.replica_rows(batch, Context(r)) for r in range(3)]
    assert [p["ids"].numpy().tolist() for p in parts] == [[0, 1], [2, 3], [4, 5, 6]]
    assert all(int(p["scalar"]) == 9 for p in parts)


# ----------------------------------------------------------------------------------------
# The hosts


def _pg_batch(rng):
    mask = np.array([[1] * 5, [1, 1, 1, 0, 0], [1] * 4 + [0], [1, 1, 0, 0, 0]], np.float32)
    enc = np.where(mask > 0, rng.integers(4, 10, size=(4, 5)), 1).astype(np.int32)
    return dict(
        enc_batch=enc,
        enc_lens=mask.sum(1).astype(np.int32),
        enc_padding_mask=mask,
        enc_batch_extend_vocab=enc,
        max_art_oovs=np.int32(0),
        dec_batch=rng.integers(2, 10, size=(4, 4)).astype(np.int32),
        target_batch=rng.integers(4, 10, size=(4, 4)).astype(np.int32),
        dec_padding_mask=np.array([[1, 1, 1, 1], [1, 1, 1, 0], [1, 1, 0, 0], [1] * 4], np.float32),
    )


def _summarizer(layer):
    model = pg_lib.PointerGenerator(10, hidden_dim=6, emb_dim=4, context_layer=layer)
    return model, lambda optimizer: training_lib.make_train_step(
        model, optimizer, max_grad_norm=0.5, coverage_on=True
    )


def _nmt_batch(rng):
    src_len = np.array([5, 3, 4, 2], np.int32)
    src = np.where(np.arange(5)[None] < src_len[:, None], rng.integers(3, 11, (4, 5)), 2)
    return dict(
        src=src.astype(np.int32),
        src_len=src_len,
        tgt_in=rng.integers(3, 9, (4, 4)).astype(np.int32),
        tgt_out=rng.integers(3, 9, (4, 4)).astype(np.int32),
        tgt_len=np.array([4, 3, 2, 4], np.int32),
    )


def _nmt(layer):
    model = nmt_lib.NMTModel(11, 9, 6, dropout=0.0, init_weight=0.5, context_layer=layer)
    return model, lambda optimizer: training_lib.make_train_step(
        model, optimizer, max_grad_norm=5.0
    )


def _vc_batch(rng):
    frames = [4, 2, 3, 4]
    features = [rng.normal(size=[4, 6]).astype(np.float32) for _ in frames]
    return vc_data.make_batch(features, frames, [[5, 6, 7], [8, 9], [5], [6, 7, 8, 9]])


def _captioner(layer):
    model = vc_lib.Captioner(
        11, 4, 5, 3, 3, output_units=6, dropout=0.0, context_layer=layer, weight_decay=0.01
    )
    return model, lambda optimizer: training_lib.make_train_step(model, optimizer)


HOSTS = dict(
    summarizer=(_summarizer, _pg_batch),
    nmt=(_nmt, _nmt_batch),
    captioner=(_captioner, _vc_batch),
)


def _host_steps(strategy, host, mode, steps=1):
    """``steps`` training steps of a host model's ``training_lib.make_train_step``; the
    weights after."""
    build, make_batch = HOSTS[host]
    batch = {k: tf.constant(v) for k, v in make_batch(np.random.default_rng(3)).items()}
    with strategy.scope():
        keras.utils.set_random_seed(5)
        model, make_step = build(registry.make_context_layer(mode, seed=7))
        model(batch)
        # plain SGD: the update is the gradient itself (Adam's would blow a float32
        # rounding of a gradient near zero up to a step of the learning rate)
        optimizer = keras.optimizers.SGD(0.5)
        optimizer.build(model.trainable_variables)
        step = make_step(optimizer)
        for i in range(steps):  # in the scope, as the trainer runs it
            step(batch, tf.constant(False), tf.constant(i, tf.int64))
    return _weights(model)


_SINGLE_DEVICE = {}


def _single_device_steps(host, mode):
    """``_host_steps`` on one device, once per host and mode in this process (under
    ``zero_noise``, as every caller runs it): the reference the strategies' steps are
    compared with, traced as they are, so that both run the same kernels (the test
    process runs an eager op as TensorFlow's own kernel, a traced one as oneDNN's)."""
    if (host, mode) not in _SINGLE_DEVICE:
        _SINGLE_DEVICE[host, mode] = _host_steps(tf.distribute.get_strategy(), host, mode)
    return _SINGLE_DEVICE[host, mode]


@pytest.fixture
def zero_noise(monkeypatch):
    """ACVI's noise is zero, so that one device and two draw the same sample; sigma still
    trains through the KL."""
    monkeypatch.setattr(acvi_lib.ACVIContext, "normal", lambda self, shape, seed: tf.zeros(shape))


# The hosts run ACVI here, not soft attention too: under zero noise ACVI's step is soft
# attention's (test_context_wiring.py) plus the variance network and the KL, whose
# variables join the all-reduce, and no context mechanism has code of its own for a
# strategy. Soft attention trains under strategies in test_multi_worker.py and in the
# documented CPU try below.
@pytest.mark.usefixtures("zero_noise")
@pytest.mark.parametrize("host", sorted(HOSTS))
def test_each_host_trains_the_same_on_two_replicas_and_on_one_device(mirrored, host):
    replicated = _host_steps(mirrored, host, "acvi")
    _assert_same(_single_device_steps(host, "acvi"), replicated, rtol=1e-5, atol=1e-6)


@pytest.mark.usefixtures("zero_noise")
@pytest.mark.parametrize("host", sorted(HOSTS))
def test_each_host_trains_the_same_on_one_replica_and_on_one_device(one_replica, host):
    replicated = _host_steps(one_replica, host, "acvi")
    _assert_same(_single_device_steps(host, "acvi"), replicated, rtol=1e-5, atol=1e-6)


def test_acvi_replicas_draw_their_own_noise_reproducibly(mirrored):
    """Each replica's generator gives other noise than its neighbour's, and the same
    again from the same seed."""

    def draws():
        with mirrored.scope():
            layer = acvi_lib.ACVIContext(seed=11)
        return mirrored.experimental_local_results(
            mirrored.run(tf.function(lambda: layer.normal([3], None)))
        )

    first, again = draws(), draws()
    assert not np.allclose(first[0], first[1])
    for a, b in zip(first, again):
        np.testing.assert_array_equal(a, b)


def test_make_strategy_refuses_what_it_cannot_build(monkeypatch):
    with pytest.raises(distribute.DistributionError, match="not one of default"):
        distribute.make_strategy("parameter_server")
    with pytest.raises(distribute.DistributionError, match="--num_gpus=1 or fewer|sees 0"):
        distribute.make_strategy("mirrored", num_gpus=2)
    monkeypatch.delenv("TF_CONFIG", raising=False)
    with pytest.raises(distribute.DistributionError, match="needs TF_CONFIG"):
        distribute.make_strategy("multi_worker")
    monkeypatch.setenv("TF_CONFIG", '{"cluster": {"worker": ["a:1"]}, "task": {"index": 3}}')
    with pytest.raises(distribute.DistributionError, match="not a worker's configuration"):
        distribute.make_strategy("multi_worker")
    assert distribute.is_chief(tf.distribute.get_strategy())
    assert distribute.worker_scratch_dir("/runs/train", tf.distribute.get_strategy()) == (
        "/runs/train"
    )


# ----------------------------------------------------------------------------------------
# The devices a command uses, and --cpu_devices


def _shared(*argv):
    return config_lib.parse(acvi_flags.define_flags, ["x"] + list(argv))


def _devices_lines(caplog):
    return [r.getMessage() for r in caplog.records if r.getMessage().startswith("Devices: ")]


@pytest.mark.parametrize(
    "argv,trains,line",
    [
        ((), False, "Devices: 1 CPU (no GPU visible)"),
        (("--distribution_strategy=mirrored",), False, "Devices: 1 CPU (no GPU visible)"),
        ((), True, "Devices: 1 CPU (no GPU visible; default strategy, 1 replica)"),
        (
            ("--distribution_strategy=mirrored", "--cpu_devices=2"),
            True,
            "Devices: 2 logical CPU devices (no GPU visible; MirroredStrategy, 2 replicas)",
        ),
    ],
)
def test_a_command_logs_its_devices_once_and_the_strategy_only_where_it_trains(
    absl_caplog, argv, trains, line
):
    strategy = builders.configure_runtime(_shared(*argv), trains=trains)
    assert _devices_lines(absl_caplog) == [line]
    assert strategy.num_replicas_in_sync == (2 if "--cpu_devices=2" in argv else 1)


def test_the_devices_line_counts_the_gpus_it_leaves_unused(monkeypatch, mirrored, one_replica):
    gpus = [tf.config.LogicalDevice("/device:GPU:%d" % i, "GPU") for i in range(2)]
    listed = tf.config.list_logical_devices
    monkeypatch.setattr(
        tf.config,
        "list_logical_devices",
        lambda kind=None: gpus if kind == "GPU" else listed(kind),
    )
    assert distribute.describe_devices() == "1 GPU (of 2 visible)"
    assert distribute.describe_devices(one_replica) == (
        "1 CPU (2 GPU(s) visible, not used; MirroredStrategy, 1 replica)"
    )
    assert distribute.describe_devices(mirrored) == (
        "2 logical CPU devices (2 GPU(s) visible, not used; MirroredStrategy, 2 replicas)"
    )


def test_cpu_devices_is_refused_where_it_cannot_apply(monkeypatch):
    with pytest.raises(distribute.DistributionError, match="add --distribution_strategy=mirr"):
        builders.configure_runtime(_shared("--cpu_devices=2"), trains=True)
    # more devices than cores: refused before the runtime is touched
    monkeypatch.setattr(builders.os, "cpu_count", lambda: 4)
    with pytest.raises(distribute.DistributionError, match="than this machine's 4 CPU cores"):
        builders.configure_runtime(
            _shared("--distribution_strategy=mirrored", "--cpu_devices=5"), trains=True
        )
    # first, whatever the strategy: adding the strategy would only reach this refusal
    with pytest.raises(distribute.DistributionError, match="than this machine's 4 CPU cores"):
        builders.configure_runtime(_shared("--cpu_devices=1000"), trains=True)
    # this process's runtime runs with conftest's two CPU devices (listing them starts it)
    assert len(tf.config.list_logical_devices("CPU")) == 2
    with pytest.raises(distribute.DistributionError, match="already runs with 2 CPU device"):
        builders.configure_runtime(
            _shared("--distribution_strategy=mirrored", "--cpu_devices=3"), trains=True
        )
    listed = tf.config.list_physical_devices
    monkeypatch.setattr(
        tf.config,
        "list_physical_devices",
        lambda kind=None: ["a GPU"] if kind == "GPU" else listed(kind),
    )
    mirrored = ("--distribution_strategy=mirrored", "--cpu_devices=2")
    with pytest.raises(distribute.DistributionError, match="on 1 GPU.*add --num_gpus=0"):
        builders.configure_runtime(_shared(*mirrored), trains=True)
    strategy = builders.configure_runtime(_shared(*mirrored, "--num_gpus=0"), trains=True)
    assert strategy.num_replicas_in_sync == 2
    # a global batch of fewer examples than replicas, before anything is traced
    one_row = config_lib.parse(
        run_nmt.define_flags, ["x", *mirrored, "--num_gpus=0", "--batch_size=1"]
    )
    with pytest.raises(distribute.DistributionError, match="--batch_size=1 is the global batch"):
        builders.configure_runtime(one_row, trains=True)
    # a command that does not train leaves the flag alone
    builders.configure_runtime(_shared("--cpu_devices=3"))


def test_the_documented_cpu_try_trains_mirrored_on_two_cpu_devices(tmp_path, absl_caplog):
    """docs/distributed.md's command that passes ``--cpu_devices``, as the page gives it,
    in a fresh folder with the shipped samples where its paths expect them. This process
    started its runtime with two logical CPU devices (conftest.py), the number the command
    asks for, so it runs here."""
    (command,) = [c for c in doc_commands.all_commands() if "--cpu_devices=" in c.text]
    os.symlink(os.path.join(ROOT, "data_prep"), tmp_path / "data_prep")
    doc_commands.run_in_process(command.text, str(tmp_path))
    assert absl_caplog.text.count("Devices: ") == 1
    assert (
        "Devices: 2 logical CPU devices (no GPU visible; MirroredStrategy, 2 replicas)"
        in absl_caplog.text
    )
    log_root = tmp_path / command.flag("log_root")
    assert glob.glob(str(log_root / "*" / "train" / "model.ckpt-*.index"))
