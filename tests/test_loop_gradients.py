"""Deferred loop gradients: the same values and gradients as accumulating them in the loop."""

import numpy as np
import pytest
import tensorflow as tf

from acvi_tf.compat import keras
from acvi_tf.contexts import acvi as acvi_lib
from acvi_tf.contexts import context, loop_gradients, structured, ved
from acvi_tf.training import teacher_forcing
from nmt import model as nmt_model
from pointer_generator import model as pg_model
from video_caption import data as vc_data
from video_caption import model as vc_model

B, N, D, T = 3, 6, 4, 5
LENGTHS = [6, 4, 1]


def _toy_loop(layer, memory, mask, kernel, inputs, training, use_gumbel):
    """A decoder loop whose attention depends on the previous context (input feeding).

    Returns the loss and its gradients with respect to the memory and ``kernel``.
    """
    with tf.GradientTape() as tape:
        tape.watch([memory, kernel])
        prepared = layer.prepare(memory, mask)

        def step(y_t, prev, prepared_t):
            query = tf.tanh(tf.matmul(prev, kernel) + y_t)
            scores = tf.einsum("bnd,bd->bn", memory, query)
            attn = tf.nn.softmax(tf.where(mask, scores, -1e9))
            ctx = layer.draw(attn, prepared_t, training=training, use_gumbel=use_gumbel)
            return ctx, dict(context=ctx, attn=attn)

        _, out = teacher_forcing.teacher_forced(
            step,
            inputs,
            tf.zeros([B, D]),
            dict(context=tf.float32, attn=tf.float32),
            layer,
            prepared,
            training,
            use_gumbel,
        )
        weights = tf.reshape(tf.range(T * D, dtype=tf.float32) / (T * D), [1, T, D])
        loss = tf.reduce_sum(tf.sin(out["context"] * 3.0) * weights) + tf.reduce_sum(
            layer.kl_divergence(out["context"], out["attn"], prepared)
        )
    return [loss] + tape.gradient(loss, [memory, kernel])


def _nothing_deferred(defer_contractions):
    """``defer_contractions`` keeping its noise inputs but deferring no contraction."""

    def wrapped(prepared, steps, training=False, use_gumbel=None):
        real = defer_contractions(prepared, steps, training, use_gumbel)
        noise = {
            name: value for name, value in real.inputs.items() if name not in ("memory", "variance")
        }
        return loop_gradients.DeferredContractions(prepared, steps, extra_inputs=noise)

    return wrapped


LAYERS = {
    "sa": lambda: context.SoftAttentionContext(),
    "acvi": lambda: acvi_lib.ACVIContext(seed=3),
    "acvi per_component": lambda: acvi_lib.ACVIContext(noise="per_component", seed=3),
    "acvi bound": lambda: acvi_lib.ACVIContext(kl="bound", seed=3),
    "acvi mixture": lambda: acvi_lib.ACVIContext(sampling="mixture", seed=3),
    "acvi decode sample": lambda: acvi_lib.ACVIContext(decode="sample", seed=3),
    "structured": lambda: structured.StructuredAttentionContext(),
    "ved": lambda: ved.VEDContext(seed=3),
}


ACVI_LAYERS = [name for name in LAYERS if name.startswith("acvi")]
# (layer, training, use_gumbel, traced): every layer eagerly in training and evaluation,
# ACVI's Gumbel switch as a tensor either way, and three cases under tf.function.
CASES = (
    [(name, training, None, False) for name in LAYERS for training in (True, False)]
    + [(name, True, on, False) for name in ACVI_LAYERS for on in (False, True)]
    + [("sa", True, None, True), ("acvi", True, False, True), ("acvi", True, True, True)]
)


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
    for defer in (False, True):
        layer = LAYERS[name]()
        if not defer:  # the same loop, Gumbel noise drawn as the deferred loop draws it
            layer.defer_contractions = _nothing_deferred(layer.defer_contractions)
        run = _toy_loop
        if graph:
            run = tf.function(_toy_loop, autograph=False)
        keras.utils.set_random_seed(1)  # the same initial weights in both runs
        results.append(run(layer, memory, mask, kernel, inputs, training, switch))
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


@pytest.mark.parametrize(
    "name,training,deferred",
    [
        ("sa", False, ["memory"]),
        ("structured", True, ["memory"]),
        ("ved", True, ["memory"]),
        ("acvi", True, ["memory", "variance"]),
        ("acvi", False, ["memory"]),
        ("acvi per_component", True, ["memory"]),
        ("acvi decode sample", False, ["memory", "variance"]),
    ],
)
def test_which_contractions_are_deferred(name, training, deferred):
    layer = LAYERS[name]()
    prepared = layer.prepare(tf.ones([B, N, D]))
    inputs = layer.defer_contractions(prepared, tf.constant(T), training).inputs
    assert sorted(inputs) == sorted(deferred)
    for name in deferred:
        assert inputs[name].shape == (T, B, D) and not np.any(inputs[name].numpy())


def _pg_host():
    rng = np.random.default_rng(0)
    enc = rng.integers(4, 12, size=(2, 5)).astype(np.int32)
    batch = dict(
        enc_batch=enc,
        enc_padding_mask=np.array([[1] * 5, [1, 1, 1, 0, 0]], np.float32),
        enc_batch_extend_vocab=enc,
        dec_batch=rng.integers(2, 12, size=(2, 4)),
    )
    return (
        lambda layer: pg_model.PointerGenerator(12, 3, 4, context_layer=layer),
        batch,
        dict(coverage_on=True),
    )


def _nmt_host():
    rng = np.random.default_rng(0)
    batch = dict(
        src=rng.integers(3, 12, (2, 5)).astype(np.int32),
        src_len=np.array([5, 3], np.int32),
        tgt_in=rng.integers(3, 9, (2, 4)).astype(np.int32),
    )
    return lambda layer: nmt_model.NMTModel(12, 9, 4, dropout=0.0, context_layer=layer), batch, {}


def _vc_host():
    rng = np.random.default_rng(0)
    features = [rng.normal(size=[4, 8]).astype(np.float32) for _ in range(2)]
    features[1][2:] = 0.0
    batch = vc_data.make_batch(features, [4, 2], [[5, 6, 7], [8]])
    return (
        lambda layer: vc_model.Captioner(
            vocab_size=11,
            encoder_units=6,
            decoder_units=5,
            embedding_dim=4,
            attention_units=3,
            output_units=7,
            dropout=0.0,
            context_layer=layer,
        ),
        batch,
        {},
    )


@pytest.mark.parametrize("host", [_pg_host, _nmt_host, _vc_host], ids=["pg", "nmt", "vc"])
def test_hosts_give_the_gradients_of_the_loop_without_deferral(host):
    make_model, batch, kwargs = host()
    results = []
    for defer in (False, True):
        keras.utils.set_random_seed(2)
        # eq. 25's layer, put on the Gumbel path by the switch as in a run's Gumbel phase:
        # a host that drops the switch anywhere in its loop falls back to eq. 25 there
        layer = acvi_lib.ACVIContext(seed=2)
        if not defer:
            layer.defer_contractions = _nothing_deferred(layer.defer_contractions)
        model = make_model(layer)
        model(batch, **kwargs)
        # Weights far from their initial scale (See et al.'s are 1e-4), so that the
        # attention is far from uniform and the contexts move the loss.
        rng = np.random.default_rng(1)
        for variable in model.trainable_variables:
            variable.assign(rng.normal(scale=0.5, size=variable.shape))
        with tf.GradientTape() as tape:
            out = model(batch, training=True, use_gumbel=tf.constant(True), **kwargs)
            loss = tf.add_n(
                [
                    tf.reduce_sum(tf.sin(3.0 * out[name]))
                    for name in ("logits", "vocab_logits", "context")
                    if name in out
                ]
            )
        grads = tape.gradient(loss, model.trainable_variables)
        results.append([None if g is None else tf.convert_to_tensor(g).numpy() for g in grads])
    assert [g is None for g in results[0]] == [g is None for g in results[1]]
    assert sum(g is not None for g in results[0]) > 10
    for reference, deferred in zip(*results):
        if reference is not None:
            np.testing.assert_allclose(deferred, reference, rtol=1e-4, atol=1e-6)
