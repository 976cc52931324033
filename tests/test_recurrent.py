"""``ProjectedLSTM`` computes what Keras's ``LSTM`` layer computes, with its gradients."""

import numpy as np
import pytest
import tensorflow as tf

from acvi_tf.compat import keras
from acvi_tf.layers import recurrent

UNITS = 5


def _pair(x, mask, **kwargs):
    """Keras's bidirectional LSTM and ours, built, with the same random weights."""
    keras_lstm = keras.layers.LSTM(UNITS, return_sequences=True, return_state=True, **kwargs)
    layers = (
        keras.layers.Bidirectional(keras_lstm),
        keras.layers.Bidirectional(recurrent.sequence_lstm(UNITS, **kwargs)),
    )
    for layer in layers:
        layer(x, mask=mask)
    rng = np.random.default_rng(5)
    weights = [rng.normal(scale=0.7, size=w.shape) for w in layers[0].get_weights()]
    for layer in layers:
        layer.set_weights(weights)
    return layers


def _loss_and_gradients(layer, x, mask):
    with tf.GradientTape() as tape:
        tape.watch(x)
        outputs = layer(x, mask=mask)
        # every output enters with its own weights, so no gradient hides in a sum
        loss = sum(
            tf.reduce_sum(tf.sin(3.0 * out) * tf.cos(out + i)) for i, out in enumerate(outputs)
        )
    return outputs, tape.gradient(loss, [x] + layer.trainable_weights)


@pytest.mark.parametrize("mode", ["eager", "function", "xla"])
@pytest.mark.parametrize("masking", ["padded", "holes"])
def test_matches_the_keras_lstm_with_gradients(mode, masking):
    rng = np.random.default_rng(3)
    x = tf.constant(rng.normal(size=(3, 7, 4)), tf.float32)
    if masking == "padded":
        mask = tf.sequence_mask([7, 4, 1], 7)
    else:  # masked steps inside the sequence carry the state over them
        mask = (
            tf.constant([[1, 0, 1, 1, 0, 0, 1], [0, 0, 1, 1, 1, 0, 0], [1, 1, 1, 1, 1, 1, 1]]) > 0
        )
    keras_layer, ours = _pair(x, mask, unit_forget_bias=True)
    expected, expected_grads = _loss_and_gradients(keras_layer, x, mask)
    if mode == "eager":
        outputs, grads = _loss_and_gradients(ours, x, mask)
    else:  # traced without static sizes, as the hosts' training steps are
        signature = [tf.TensorSpec([None, None, None]), tf.TensorSpec([None, None], tf.bool)]
        outputs, grads = tf.function(
            lambda x, mask: _loss_and_gradients(ours, x, mask),
            input_signature=signature,
            jit_compile=mode == "xla",
        )(x, mask)
    for got, want in zip(outputs, expected):
        np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-6)
    np.testing.assert_array_equal(outputs[0].numpy()[~mask.numpy()], 0.0)
    for got, want, name in zip(
        grads, expected_grads, ["x"] + [w.name for w in ours.trainable_weights]
    ):
        np.testing.assert_allclose(got, want, rtol=1e-4, atol=1e-5, err_msg=name)


def test_initial_state_and_its_gradient():
    # Against Keras's generic RNN over the same cell: Keras's LSTM layer given an initial
    # state does not zero the outputs of masked steps.
    rng = np.random.default_rng(4)
    x = tf.constant(rng.normal(size=(2, 5, 3)), tf.float32)
    state = [tf.constant(rng.normal(size=(2, UNITS)), tf.float32) for _ in range(2)]
    mask = tf.sequence_mask([5, 3], 5)
    reference = keras.layers.RNN(
        keras.layers.LSTMCell(UNITS),
        return_sequences=True,
        return_state=True,
        zero_output_for_mask=True,
    )
    ours = recurrent.sequence_lstm(UNITS)
    results = []
    for layer in (reference, ours):
        layer(x, mask=mask, initial_state=state)
        if layer is ours:
            ours.set_weights(reference.get_weights())
        with tf.GradientTape() as tape:
            tape.watch(state)
            out, h, c = layer(x, mask=mask, initial_state=state)
            loss = tf.reduce_sum(out * out) + tf.reduce_sum(h * c)
        results.append(tape.gradient(loss, state + layer.trainable_weights))
    for got, want in zip(results[1], results[0]):
        np.testing.assert_allclose(got, want, rtol=1e-4, atol=1e-6)


def test_checkpoints_move_between_keras_lstm_and_projected_lstm(tmp_path):
    x = tf.ones([2, 3, 4])
    keras_layer = keras.layers.Bidirectional(
        keras.layers.LSTM(UNITS, return_sequences=True, return_state=True)
    )
    keras_layer(x)
    path = tf.train.Checkpoint(encoder=keras_layer).save(str(tmp_path / "ckpt"))
    ours = keras.layers.Bidirectional(recurrent.sequence_lstm(UNITS))
    ours(x)
    tf.train.Checkpoint(encoder=ours).restore(path).assert_consumed()
    for a, b in zip(ours.get_weights(), keras_layer.get_weights()):
        np.testing.assert_array_equal(a, b)


def test_input_dropout_is_drawn_at_every_step():
    # No forget gate (bias -30) and no recurrence: h_t depends on x_t's dropout mask only,
    # so equal inputs give equal h_t exactly when the masks are equal.
    layer = recurrent.sequence_lstm(UNITS, dropout=0.5, return_state=False)
    x = tf.ones([4, 6, 8])
    layer(x)
    kernel = np.random.default_rng(0).normal(size=(8, 4 * UNITS))
    bias = np.zeros(4 * UNITS)
    bias[UNITS : 2 * UNITS] = -30.0
    layer.set_weights([kernel, np.zeros((UNITS, 4 * UNITS)), bias])
    keras.utils.set_random_seed(2)
    h = layer(x, training=True).numpy()
    assert not np.allclose(h[:, 1:], h[:, :1])  # different masks at different steps
    assert not np.allclose(h[1:], h[:1])  # and in different sequences
    h = layer(x, training=False).numpy()
    np.testing.assert_allclose(h, np.broadcast_to(h[:1, :1], h.shape), rtol=1e-6)


def test_keras_lstm_where_a_gpu_is_visible(monkeypatch):
    assert isinstance(recurrent.sequence_lstm(UNITS), recurrent.ProjectedLSTM)
    gpu = [tf.config.PhysicalDevice("/physical_device:GPU:0", "GPU")]
    monkeypatch.setattr(
        tf.config, "list_physical_devices", lambda kind=None: gpu if kind == "GPU" else []
    )
    assert type(recurrent.sequence_lstm(UNITS)) is keras.layers.LSTM  # cuDNN
    assert isinstance(recurrent.sequence_lstm(UNITS, xla=True), recurrent.ProjectedLSTM)


def test_unsupported_arguments_are_refused():
    with pytest.raises(ValueError, match="recurrent_dropout"):
        recurrent.sequence_lstm(UNITS, recurrent_dropout=0.1)
    with pytest.raises(ValueError, match="LSTMCell"):
        recurrent.ProjectedLSTM(keras.layers.GRUCell(UNITS))
    with pytest.raises(ValueError, match="stateful"):
        recurrent.ProjectedLSTM(keras.layers.LSTMCell(UNITS), stateful=True)


# Each half precision with its tolerance: float16 keeps 11 significant bits, bfloat16 8.
@pytest.mark.parametrize("half, tolerance", [(tf.float16, 1e-2), (tf.bfloat16, 4e-2)])
def test_mixed_precision_matches_the_keras_lstm(half, tolerance):
    keras.mixed_precision.set_global_policy("mixed_" + half.name)  # conftest restores float32
    rng = np.random.default_rng(6)
    x = tf.constant(rng.normal(size=(3, 6, 4)), tf.float32)
    mask = tf.sequence_mask([6, 3, 5], 6)
    keras_layer, ours = _pair(x, mask)
    expected, expected_grads = _loss_and_gradients(keras_layer, x, mask)
    outputs, grads = tf.function(lambda: _loss_and_gradients(ours, x, mask))()
    assert outputs[0].dtype == half
    for got, want in zip(outputs, expected):
        np.testing.assert_allclose(
            tf.cast(got, tf.float32), tf.cast(want, tf.float32), rtol=tolerance, atol=tolerance
        )
    for got, want, weight in zip(grads[1:], expected_grads[1:], ours.trainable_weights):
        assert got.dtype == weight.dtype == tf.float32
        np.testing.assert_allclose(got, want, rtol=2 * tolerance, atol=2 * tolerance)
