"""Every context mechanism in every host: builds, trains (the loss falls on a fixed
batch), reports its KL where it has one, decodes with beam search through the host's
decoding entry, and survives a save and restore with the same training outputs and the
same beam-search results.

The mechanisms come from ``acvi_tf.contexts.registry``, so a new entry there is tested here in all
three hosts without a line of this file changing; a uniform attention that this file
registers at run time goes through the same checks.
"""

import inspect

import hosts
import numpy as np
import pytest
import tensorflow as tf

from acvi_tf.compat import keras
from acvi_tf.contexts import context, registry
from acvi_tf.inference import decoding
from video_caption import data as vc_data

# Small sizes for the mechanisms' own networks and a seed for those that draw; everything
# else at its default.
OPTIONS = {
    "acvi": dict(seed=3),
    "ved": dict(latent_dim=3, seed=3),
    "variational": dict(inference_units=4, seed=3),
}
# Training steps and Adam's learning rate, by host and mechanism, after which the loss must
# be below 0.8 of its start (0.9 for ACVI's mixture sampler at weight 1): at a learning
# rate of 0.1, the fewest steps whose worst ratio over build seeds 5-14 is at most 0.72
# (0.8 for the mixture), one more for the summarizer's variational attention (0.718 after
# 2). VED falls slowly in the captioner (0.73 after 12 steps at 0.05, 0.718 after 14 at
# 0.1) and keeps 15 steps at 0.02 there.
LEARNING_RATE = 0.1
STEPS = {
    ("summarizer", "sa"): 2,
    ("summarizer", "acvi"): 3,
    ("summarizer", "ved"): 5,
    ("summarizer", "structured"): 2,
    ("summarizer", "variational"): 3,
    ("nmt", "sa"): 4,
    ("nmt", "acvi"): 6,
    ("nmt", "ved"): 11,
    ("nmt", "structured"): 4,
    ("nmt", "variational"): 5,
    ("captioner", "sa"): 3,
    ("captioner", "acvi"): 7,
    ("captioner", "structured"): 3,
    ("captioner", "variational"): 3,
}
SLOW_STEPS = {("captioner", "ved"): 15}  # at 0.02


def _schedule(host, mode):
    """``(steps, learning rate)`` of ``mode`` in ``host`` (bfloat16 ACVI as float32's)."""
    if (host, mode) in STEPS:
        return STEPS[host, mode], LEARNING_RATE
    return SLOW_STEPS.get((host, mode), 15), 0.02


def _loss(model, batch, step=0, training=True):
    """The model's training loss (``compute_loss``), its outputs and what it logs;
    without ``training`` the deterministic loss of the mean context."""
    out = model(batch, training=training)
    logs = model.compute_loss(batch, out, tf.constant(step, tf.int64))
    return logs[model.loss_key], out, logs


def _beam(host, model, batch, beam_size=2, max_steps=4):
    """Beam search of the batch through the shared decoding protocol (``start(inputs)``,
    ``decode_step``, ``probability_scores``, run by ``decoding.decode``; the summarizer's
    batch has one article OOV and decodes with coverage, its start's switch)."""
    assert isinstance(model, decoding.DecodingModel)
    start_stop = {"summarizer": (2, 3), "nmt": (1, 2)}.get(host, (vc_data.BOS_ID, vc_data.EOS_ID))
    summarizer = host == "summarizer"
    settings = decoding.SearchSettings(
        max_steps,
        *start_stop,
        beam_size=beam_size,
        min_steps=1,
        probabilities=model.probability_scores,
    )
    return decoding.decode(
        model,
        decoding.STRATEGIES["see_beam"](settings),
        dict(batch, max_art_oovs=1) if summarizer else batch,
        dict(coverage_on=True) if summarizer else None,
    )


def _has_kl(layer):
    """Whether a new layer's KL can be non-zero: its own per-step KL on random inputs, or
    a ``token_losses`` of its own (which replaces the loop's KL)."""
    if type(layer).token_losses is not context.ContextLayer.token_losses:
        return True
    rng = np.random.default_rng(0)
    probs = tf.nn.softmax(rng.normal(size=(2, 3, 4)).astype(np.float32))
    prepared = layer.prepare(tf.constant(rng.normal(size=(2, 4, 6)), tf.float32))
    context_vector = tf.constant(rng.normal(size=(2, 3, 6)), tf.float32)
    return bool(np.any(layer.kl_divergence(context_vector, probs, prepared).numpy() != 0))


class UniformAttention(context.SoftAttentionContext):
    """A mechanism of this file: attention spread evenly over the real source positions,
    everything else soft attention's contract."""

    def normalizer(self, scores, mask):
        del scores
        return mask / tf.reduce_sum(mask, axis=-1, keepdims=True)


@pytest.mark.parametrize("mode", registry.context_names())
@pytest.mark.parametrize("host", hosts.HOSTS)
def test_every_mechanism_trains_and_restores_in_every_host(host, mode, tmp_path):
    steps, learning_rate = _schedule(host, mode)
    _trains_decodes_and_restores(host, mode, tmp_path, steps, 0.8, learning_rate=learning_rate)


# (host, KL term, what the loop reads, components scored exactly, steps, learning rate):
# worst ratios over build seeds 5-14 of 0.76, 0.76 and 0.72 at 0.1 (the first, second and
# fourth below) and 0.79 at 0.05 (the last: at 0.1 its ratio rises again after 7 steps);
# the other two rise at 0.1 and keep 0.02 (the translator's 0.75 after 25 steps over
# seeds 5-20).
MIXTURES = [
    ("summarizer", "mc", "sample", 0, 5, 0.1),
    ("nmt", "bound", "sample", 0, 8, 0.1),
    ("captioner", "mc", "sample", 0, 15, 0.02),
    ("summarizer", "bound", "mean", 2, 3, 0.1),
    ("nmt", "mc", "mean", 0, 25, 0.02),
    ("captioner", "mc", "mean", 2, 10, 0.05),
]


@pytest.mark.parametrize("host,kl,feed,top,steps,learning_rate", MIXTURES)
def test_acvi_sampling_from_the_mixture_trains_at_weight_one_in_every_host(
    host, kl, feed, top, steps, learning_rate, tmp_path
):
    options = dict(OPTIONS["acvi"], sampling="mixture", kl=kl, kl_weight=1.0, feed=feed)
    options["enumerate_top"] = top
    _trains_decodes_and_restores(host, "acvi", tmp_path, steps, 0.9, options, learning_rate)


def test_a_mechanism_registered_at_run_time_trains_and_decodes_in_every_host(monkeypatch, tmp_path):
    monkeypatch.setitem(
        registry.CONTEXTS,
        "uniform",
        registry.Mechanism(UniformAttention, "uniform"),
    )
    for host in hosts.HOSTS:
        (tmp_path / host).mkdir()
        _trains_decodes_and_restores(host, "uniform", tmp_path / host, 2, 1.0)
        build, make_batch, _ = hosts.HOST_SETUPS[host]
        rows = build(registry.make_context_layer("uniform"), seed=5)(make_batch())["attn"]
        for row in rows.numpy().reshape(-1, rows.shape[-1]):  # even over real positions
            np.testing.assert_allclose(row[row > 0], 1 / np.sum(row > 0), rtol=1e-6)


def _trains_decodes_and_restores(
    host, mode, tmp_path, steps, fall, options=None, learning_rate=LEARNING_RATE
):
    """Trains ``mode`` (built with ``options``, default its ``OPTIONS``) in ``host`` for
    ``steps`` steps of Adam at ``learning_rate``, after which the loss must be below
    ``fall`` times its start, then checks its KL, statistics, checkpoint and decoding."""
    options = options or OPTIONS.get(mode, {})
    build, make_batch, _ = hosts.HOST_SETUPS[host]
    batch = make_batch()
    model = build(registry.make_context_layer(mode, **options), seed=5)
    optimizer = keras.optimizers.Adam(learning_rate)
    model(batch)  # builds the weights
    before = float(_loss(model, batch, training=False)[0])
    for step in range(steps):
        with tf.GradientTape() as tape:
            loss, out, logs = _loss(model, batch, step)
        variables = model.trainable_variables
        grads = tape.gradient(loss, variables)
        assert np.isfinite(float(loss)) and any(g is not None for g in grads)
        optimizer.apply_gradients([(g, v) for g, v in zip(grads, variables) if g is not None])
        if step == 0:
            kl = out["kl"].numpy()
            assert kl.shape == tuple(out["attn"].shape[:2]) and np.all(np.isfinite(kl))
            has_kl = _has_kl(registry.make_context_layer(mode, **options))
            assert (np.abs(kl).max() > 0) == has_kl, kl
            # the context layer's own statistics reach the host's logs (ACVI's sigma)
            statistics = model.context_layer.statistics(out["prepared"])
            assert set(statistics) <= set(logs), (sorted(statistics), sorted(logs))
            sigma = logs.get("sigma/mean_sigma")
            if sigma is not None:
                log_var = float(logs["sigma/mean_log_variance"])
                assert 0 < float(sigma) and np.isfinite(log_var), (sigma, log_var)
    after = float(_loss(model, batch, training=False)[0])
    assert after < fall * before, (before, after)

    path = tf.train.Checkpoint(model=model).write(str(tmp_path / "model"))
    restored = build(registry.make_context_layer(mode, **options), seed=6)
    restored(batch)  # builds the weights, then the checkpoint replaces them
    tf.train.Checkpoint(model=restored).read(path).assert_existing_objects_matched()
    expected, got = model(batch), restored(batch)
    for name in ("logits", "vocab_logits", "attn"):
        if name in expected:
            np.testing.assert_allclose(got[name], expected[name], rtol=1e-6, err_msg=name)

    # decoding (with the mechanism's deterministic decode) gives valid, repeatable
    # results, and the restored model decodes the same
    decoded = _beam(host, model, batch)
    ids, lengths = decoded["ids"].numpy(), decoded["lengths"].numpy()
    vocab = {"summarizer": hosts.PG_V + 1, "nmt": hosts.NMT_TGT_V, "captioner": hosts.VC_VOCAB}
    assert ids.shape == (2, 4) and np.all((ids >= 0) & (ids < vocab[host]))
    assert np.all((lengths >= 1) & (lengths <= 4)) and np.all(np.isfinite(decoded["scores"]))
    for again in (_beam(host, model, batch), _beam(host, restored, batch)):
        np.testing.assert_array_equal(again["ids"], ids)
        np.testing.assert_allclose(again["scores"], decoded["scores"], rtol=1e-5)


def test_every_host_model_has_the_decoding_protocols_signatures():
    for build, _, _ in hosts.HOST_SETUPS.values():
        model = build(None, seed=1)
        assert isinstance(model, decoding.DecodingModel)
        assert list(inspect.signature(model.start).parameters)[0] == "inputs"
        step = list(inspect.signature(model.decode_step).parameters)
        assert step == ["tokens", "state", "constants"], step
        assert isinstance(model.probability_scores, bool)


@pytest.mark.parametrize("host", hosts.HOSTS)
def test_acvi_trains_and_decodes_in_bfloat16_in_every_host(host):
    """``--mixed_precision=bfloat16``: the products run in bfloat16 on float32 weights, the
    KL, the losses and the beam scores stay float32, and the loss falls as in float32."""
    keras.mixed_precision.set_global_policy("mixed_bfloat16")  # conftest restores float32
    build, make_batch, _ = hosts.HOST_SETUPS[host]
    batch = make_batch()
    model = build(registry.make_context_layer("acvi", **OPTIONS["acvi"]), seed=5)
    steps, learning_rate = _schedule(host, "acvi")  # worst ratios: float32's within 0.002
    optimizer = keras.optimizers.Adam(learning_rate)
    model(batch)
    assert all(w.dtype == tf.float32 for w in model.weights)
    before = float(_loss(model, batch, training=False)[0])
    for step in range(steps):
        with tf.GradientTape() as tape:
            loss, out, _ = _loss(model, batch, step)
        grads = tape.gradient(loss, model.trainable_variables)
        optimizer.apply_gradients(
            [(g, v) for g, v in zip(grads, model.trainable_variables) if g is not None]
        )
    logits = out["vocab_logits" if host == "summarizer" else "logits"]
    assert logits.dtype == tf.bfloat16
    assert loss.dtype == out["kl"].dtype == tf.float32
    assert float(_loss(model, batch, training=False)[0]) < 0.8 * before
    decoded = _beam(host, model, batch)
    assert decoded["scores"].dtype == tf.float32 and np.all(np.isfinite(decoded["scores"]))
