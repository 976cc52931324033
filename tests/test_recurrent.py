"""The encoders' XLA form of the sequence LSTM computes what Keras's LSTM layer does."""
import numpy as np
import tensorflow as tf

from acvi_tf import recurrent


def test_xla_form_matches_the_lstm_layer_with_padding_and_checkpoints(tmp_path):
    rng = np.random.default_rng(3)
    x = tf.constant(rng.normal(size=(3, 6, 4)), tf.float32)
    mask = tf.sequence_mask([6, 4, 1], 6)
    layers = {}
    for xla in (False, True):
        layers[xla] = tf.keras.layers.Bidirectional(recurrent.sequence_lstm(
            5, xla=xla, unit_forget_bias=True, kernel_initializer="glorot_uniform"))
        layers[xla](x, mask=mask)
    layers[True].set_weights(layers[False].get_weights())
    with tf.GradientTape(persistent=True) as tape:
        results = {xla: layer(x, mask=mask) for xla, layer in layers.items()}
        losses = {xla: tf.reduce_sum(tf.square(out[0])) + tf.reduce_sum(out[1])
                  for xla, out in results.items()}
    for plain, compiled in zip(results[False], results[True]):
        np.testing.assert_allclose(compiled, plain, rtol=1e-5, atol=1e-6)
    np.testing.assert_array_equal(results[True][0][2, 1:], 0.0)  # padded steps are zeros
    for plain, compiled in zip(tape.gradient(losses[False], layers[False].weights),
                               tape.gradient(losses[True], layers[True].weights)):
        np.testing.assert_allclose(compiled, plain, rtol=1e-4, atol=1e-6)
    # a checkpoint of one form restores into the other
    path = tf.train.Checkpoint(encoder=layers[False]).save(str(tmp_path / "ckpt"))
    fresh = tf.keras.layers.Bidirectional(recurrent.sequence_lstm(5, xla=True))
    fresh(x, mask=mask)
    tf.train.Checkpoint(encoder=fresh).restore(path).assert_consumed()
    for a, b in zip(fresh.get_weights(), layers[False].get_weights()):
        np.testing.assert_array_equal(a, b)
