"""Deferred loop gradients: the same values and gradients as accumulating them in the loop."""
import numpy as np
import pytest
import tensorflow as tf

from acvi_tf import context, decoding, loop_gradients, structured, ved

B, N, D, T = 3, 6, 4, 5
LENGTHS = [6, 4, 1]


def _toy_loop(layer, memory, mask, kernel, inputs, deferred_fn, training, use_gumbel):
    """A decoder loop whose attention depends on the previous context (input feeding).

    Returns the loss and its gradients with respect to the memory and ``kernel``.
    """
    with tf.GradientTape() as tape:
        tape.watch([memory, kernel])
        prepared = layer.prepare(memory, mask)
        deferred = deferred_fn(prepared)

        def step(t, prev, step_inputs):
            query = tf.tanh(tf.matmul(prev, kernel) + inputs[:, t])
            scores = tf.einsum("bnd,bd->bn", memory, query)
            attn = tf.nn.softmax(tf.where(mask, scores, -1e9))
            ctx = layer.draw(attn, deferred.at_step(step_inputs), training=training,
                             use_gumbel=use_gumbel)
            return ctx, dict(context=ctx, attn=attn)

        _, out = decoding.unroll(step, tf.constant(T), tf.zeros([B, D]),
                                 dict(context=tf.float32, attn=tf.float32),
                                 inputs=deferred.inputs)
        deferred.bind(out["attn"])
        weights = tf.reshape(tf.range(T * D, dtype=tf.float32) / (T * D), [1, T, D])
        loss = (tf.reduce_sum(tf.sin(out["context"] * 3.0) * weights)
                + tf.reduce_sum(layer.kl_divergence(out["context"], out["attn"], prepared)))
    return [loss] + tape.gradient(loss, [memory, kernel])


def _in_loop(layer, training, use_gumbel):
    """The same loop with nothing deferred; Gumbel noise drawn as the deferred loop does."""

    def deferred_fn(prepared):
        real = layer.defer_contractions(prepared, tf.constant(T), training, use_gumbel)
        noise = {name: value for name, value in real.inputs.items()
                 if name not in ("memory", "variance")}
        return loop_gradients.DeferredContractions(prepared, tf.constant(T),
                                                   extra_inputs=noise)
    return deferred_fn


def _deferred(layer, training, use_gumbel):
    return lambda prepared: layer.defer_contractions(prepared, tf.constant(T), training,
                                                     use_gumbel)


LAYERS = {
    "sa": lambda: context.SoftAttentionContext(),
    "acvi": lambda: context.ACVIContext(seed=3),
    "acvi per_component": lambda: context.ACVIContext(noise="per_component", seed=3),
    "acvi bound": lambda: context.ACVIContext(kl="bound", seed=3),
    "acvi decode sample": lambda: context.ACVIContext(decode="sample", seed=3),
    "structured": lambda: structured.StructuredAttentionContext(),
    "ved": lambda: ved.VEDContext(seed=3),
}


ACVI_LAYERS = [name for name in LAYERS if name.startswith("acvi")]
# (layer, training, use_gumbel, traced): every layer eagerly in training and evaluation,
# ACVI's Gumbel switch as a tensor either way, and three cases under tf.function.
CASES = ([(name, training, None, False) for name in LAYERS for training in (True, False)]
         + [(name, True, on, False) for name in ACVI_LAYERS for on in (False, True)]
         + [("sa", True, None, True), ("acvi", True, False, True), ("acvi", True, True, True)])


@pytest.mark.parametrize("name,training,use_gumbel,graph", CASES)
def test_deferred_gradients_equal_in_loop_gradients(name, training, use_gumbel, graph):
    rng = np.random.default_rng(0)
    memory = tf.constant(rng.normal(size=(B, N, D)), tf.float32)
    mask = tf.constant(np.arange(N)[None] < np.array(LENGTHS)[:, None])
    kernel = tf.constant(rng.normal(size=(D, D)), tf.float32)
    inputs = tf.constant(rng.normal(size=(B, T, D)), tf.float32)
    # A tensor switch, as hosts pass it: the deferred loop cannot see its value.
    switch = None if use_gumbel is None else tf.constant(use_gumbel)
    results = []
    for make_deferred in (_in_loop, _deferred):
        layer = LAYERS[name]()
        run = _toy_loop
        if graph:
            run = tf.function(_toy_loop, autograph=False)
        tf.keras.utils.set_random_seed(1)  # the same initial weights in both runs
        results.append(run(layer, memory, mask, kernel, inputs,
                           make_deferred(layer, training, switch), training, switch))
    (loss0, dmem0, dker0), (loss1, dmem1, dker1) = results
    np.testing.assert_allclose(loss1, loss0, rtol=1e-6)
    assert np.abs(dmem0.numpy()).max() > 0
    np.testing.assert_allclose(dmem1, dmem0, rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(dker1, dker0, rtol=1e-5, atol=1e-6)


def test_a_gradient_before_bind_is_a_clear_error():
    memory = tf.ones([B, N, D])
    layer = context.SoftAttentionContext()
    with tf.GradientTape() as tape:
        tape.watch(memory)
        deferred = layer.defer_contractions(layer.prepare(memory), tf.constant(T))
        probe = deferred.inputs["memory"]
    with pytest.raises(ValueError, match="bind"):
        tape.gradient(probe, memory)


@pytest.mark.parametrize("name,training,deferred", [
    ("sa", False, ["memory"]), ("structured", True, ["memory"]), ("ved", True, ["memory"]),
    ("acvi", True, ["memory", "variance"]), ("acvi", False, ["memory"]),
    ("acvi per_component", True, ["memory"]), ("acvi decode sample", False,
                                               ["memory", "variance"])])
def test_which_contractions_are_deferred(name, training, deferred):
    layer = LAYERS[name]()
    prepared = layer.prepare(tf.ones([B, N, D]))
    inputs = layer.defer_contractions(prepared, tf.constant(T), training).inputs
    assert sorted(inputs) == sorted(deferred)
    for name in deferred:
        assert inputs[name].shape == (T, B, D) and not np.any(inputs[name].numpy())
