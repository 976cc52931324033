"""The compiled training step and the NaN guard (acvi_tf.training.step)."""

import numpy as np
import pytest
import tensorflow as tf

from acvi_tf.compat import keras
from acvi_tf.training import step as training_lib

from conftest import untraced


def test_non_finite_loss_names_step_and_checkpoint():
    training_lib.check_finite(1.5, 3, None)
    with pytest.raises(training_lib.NonFiniteLossError, match=r"step 7.*model.ckpt-5"):
        training_lib.check_finite(float("nan"), 7, "/x/train/model.ckpt-5")
    # nothing to restart from: the fix is the rerun's
    with pytest.raises(training_lib.NonFiniteLossError) as error:
        training_lib.check_finite(float("inf"), 0, None)
    assert str(error.value) == (
        "Loss is not finite (inf) at step 0, before the run saved a checkpoint. Stopping. "
        "Rerun with a lower learning rate, or with --nan_policy=skip_batch to skip such batches"
    )
    # a run that skips such batches already is not told to
    with pytest.raises(training_lib.NonFiniteLossError) as error:
        training_lib.check_finite(float("nan"), 4, None, skipping=True)
    assert str(error.value).endswith("Stopping. Rerun with a lower learning rate")


def test_apply_if_finite_leaves_weights_and_optimizer_untouched_on_nan():
    weight = tf.Variable([1.0, 2.0])
    optimizer = keras.optimizers.Adam(0.1)
    optimizer.build([weight])

    @tf.function
    def step(scale):
        with tf.GradientTape() as tape:
            loss = scale * tf.reduce_sum(weight**2)
        grads = tape.gradient(loss, [weight])
        return training_lib.apply_if_finite(
            optimizer, zip(grads, [weight]), loss, tf.linalg.global_norm(grads)
        )

    assert not bool(step(tf.constant(np.nan, tf.float32)))
    np.testing.assert_array_equal(weight.numpy(), [1.0, 2.0])
    assert int(optimizer.iterations) == 0
    assert all(np.all(v.numpy() == 0) for v in optimizer.variables[1:])  # Adam moments
    assert bool(step(tf.constant(1.0)))
    assert int(optimizer.iterations) == 1 and np.all(weight.numpy() < [1.0, 2.0])


@pytest.mark.parametrize("jit_compile", [False, True])
def test_a_step_from_a_loss_clips_reports_and_leaves_unused_variables(jit_compile):
    used, unused = tf.Variable([3.0, 4.0]), tf.Variable([7.0])
    optimizer = keras.optimizers.SGD(0.5)
    optimizer.build([used, unused])

    def loss_fn(x):  # gradient 2 * x * used: norm 2 * |x| * 5
        loss = x * tf.reduce_sum(used**2)
        return loss, dict(loss=loss)

    step = training_lib.make_step_from_loss(
        loss_fn,
        [used, unused],
        optimizer,
        [tf.TensorSpec([], tf.float32)],
        max_grad_norm=1.0,
        jit_compile=jit_compile,
        norm_key="norm",
    )
    results = step(tf.constant(2.0))
    np.testing.assert_allclose(results["norm"], 20.0)  # reported before clipping
    np.testing.assert_allclose(results["loss"], 50.0)
    # clipped to norm 1: the gradient [12, 16] / 20, times the learning rate 0.5
    np.testing.assert_allclose(used.numpy(), [3.0 - 0.3, 4.0 - 0.4], rtol=1e-6)
    np.testing.assert_array_equal(unused.numpy(), [7.0])
    step(tf.constant(np.inf, tf.float32))  # not applied
    np.testing.assert_allclose(used.numpy(), [2.7, 3.6], rtol=1e-6)


class _Samples:
    num_samples = 2


class _Toy(keras.Model):
    """A model with what ``make_train_step`` reads: ``compute_loss``, ``loss_key``,
    ``batch_signature`` and a context layer's ``num_samples``."""

    batch_signature = dict(x=tf.TensorSpec([None, 2], tf.float32))
    loss_key = "total"
    context_layer = _Samples()

    def __init__(self):
        super().__init__()
        self.dense = keras.layers.Dense(1, use_bias=False, kernel_initializer="ones")

    def call(self, batch, training=False, use_gumbel=None, scale=1.0):
        assert training and use_gumbel is not None
        return dict(y=self.dense(batch["x"]) * scale)

    def compute_loss(self, batch, outputs, step):
        total = tf.reduce_mean(tf.square(outputs["y"])) + tf.cast(step, tf.float32)
        return dict(total=total, rows=tf.shape(batch["x"])[0])


def test_a_model_step_tiles_the_batch_runs_the_call_options_and_compute_loss():
    model = _Toy()
    model.dense.build([None, 2])
    train_step = training_lib.make_train_step(model, keras.optimizers.SGD(0.1), scale=3.0)
    results = train_step(
        dict(x=tf.constant([[1.0, 0.0], [1.0, 1.0]])), tf.constant(False), tf.constant(5, tf.int64)
    )
    assert int(results["rows"]) == 4  # two samples of each row
    np.testing.assert_allclose(float(results["total"]), (9.0 + 36.0) / 2 + 5.0, rtol=1e-6)
    # d/dw mean((3 x.w)^2) = 18 mean(x (x.w)) = [18 * 1.5, 18 * 1]
    np.testing.assert_allclose(float(results["grad_norm"]), 18 * np.hypot(1.5, 1.0), rtol=1e-6)
    np.testing.assert_allclose(model.dense.kernel.numpy()[:, 0], [1 - 2.7, 1 - 1.8], rtol=1e-5)


def test_nan_policy_skip_counts_and_gives_up_after_a_run_of_skips(tmp_path):
    writer = tf.summary.create_file_writer(str(tmp_path))
    guard = training_lib.NonFiniteGuard("skip_batch", writer, max_consecutive_skips=3)
    assert guard.check(1.0, 0, None)
    assert not guard.check(float("nan"), 1, "ckpt-1", lambda: "batch 7")
    assert guard.check(2.0, 1, "ckpt-1") and guard.skipped == 1
    assert not guard.check(float("inf"), 2, "ckpt-1")
    assert not guard.check(float("nan"), 2, "ckpt-1")
    with pytest.raises(training_lib.NonFiniteLossError, match=r"step 2.*ckpt-1"):
        guard.check(float("nan"), 2, "ckpt-1")  # the third in a row
    writer.flush()
    values = [
        v.tensor.float_val[0] if v.tensor.float_val else tf.make_ndarray(v.tensor).item()
        for f in tmp_path.iterdir()
        for e in tf.compat.v1.train.summary_iterator(str(f))
        for v in e.summary.value
        if v.tag == "train/skipped_batches"
    ]
    assert values == [1.0, 2.0, 3.0]
    with pytest.raises(training_lib.NonFiniteLossError, match="step 4.*skip_batch"):
        training_lib.NonFiniteGuard("stop").check(float("nan"), 4, None)
    # a run of skips before the first checkpoint is not told to skip such batches
    skipping = training_lib.NonFiniteGuard("skip_batch", max_consecutive_skips=1)
    with pytest.raises(training_lib.NonFiniteLossError) as error:
        skipping.check(float("nan"), 0, None)
    assert "skip_batch" not in str(error.value)
    with pytest.raises(ValueError, match="nan_policy"):
        training_lib.NonFiniteGuard("ignore")


def test_a_step_run_eagerly_is_never_traced():
    """Under ``tf.config.run_functions_eagerly`` (the ``eager`` tests, a user's debugging)
    the step runs its loss once per call and builds no graph of it first."""
    variable = tf.Variable([1.0])
    calls = []

    def loss_fn(x):
        calls.append(tf.executing_eagerly())
        loss = x * tf.reduce_sum(variable**2)
        return loss, dict(loss=loss)

    with untraced():
        step = training_lib.make_step_from_loss(
            loss_fn, [variable], keras.optimizers.Adam(0.1), [tf.TensorSpec([], tf.float32)]
        )
        assert calls == []
        step(tf.constant(1.0))
    assert calls == [True]


def test_a_step_is_traced_once_with_the_slots_its_first_update_would_make(tmp_path):
    """The optimizer's slots exist before the step is traced (a first update that
    creates them makes TensorFlow trace the step twice), for the variables with a
    gradient only and in their order, as a first update makes them: checkpoints keep
    their layout. Both wait for the first step."""
    first, unused, last = tf.Variable([1.0]), tf.Variable([2.0]), tf.Variable([3.0, 4.0])

    def loss_fn(x):
        loss = x * (tf.reduce_sum(first) + tf.reduce_sum(last**2))
        return loss, dict(loss=loss)

    slots = []
    for build_first in (False, True):
        optimizer = keras.optimizers.Adam(0.1)
        variables = [first, unused, last]
        if build_first:
            step = training_lib.make_step_from_loss(
                loss_fn, variables, optimizer, [tf.TensorSpec([], tf.float32)]
            )
            # nothing is traced or made before the first step (a command may stop first)
            assert step.function.experimental_get_tracing_count() == 0
            assert len(optimizer.variables) == 1  # the iteration count
            for _ in range(3):
                step(tf.constant(1.0))
            assert step.function.experimental_get_tracing_count() == 1
        else:  # the slots a first update makes
            optimizer.apply_gradients([(tf.ones_like(v), v) for v in (first, last)])
        path = tf.train.Checkpoint(optimizer=optimizer).write(str(tmp_path / str(build_first)))
        slots.append([(name, shape) for name, shape in tf.train.list_variables(path)])
    assert slots[0] == slots[1]
    # m and v of ``first``, then of ``last``, by their index in the optimizer's variables
    assert [shape for name, shape in slots[1] if name.startswith("optimizer/_variables/")] == [
        [1],
        [1],
        [2],
        [2],
    ]
