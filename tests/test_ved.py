"""VED with variational attention: the KLs against NumPy, the sampling moments, the
annealing schedules, and the sentence latent inside the captioner."""

import numpy as np
import pytest
import tensorflow as tf

from acvi_tf.compat import keras
from acvi_tf.contexts import kl_schedule, registry, ved


def _np_kl(mean, log_sigma, prior_mean):
    """KL[N(mean, sigma^2) || N(prior_mean, I)] from the two densities' moments."""
    var = np.exp(2 * log_sigma)
    return 0.5 * np.sum(var + (mean - prior_mean) ** 2 - 1.0 - 2 * log_sigma, axis=-1)


def _layer_and_memory(prior="hmean", seed=3):
    rng = np.random.default_rng(0)
    layer = ved.VEDContext(latent_dim=4, prior=prior, temperature=1.0, seed=seed)
    memory = tf.constant(rng.normal(size=[2, 5, 3]), tf.float32)
    mask = tf.constant([[1, 1, 1, 1, 1], [1, 1, 0, 0, 0]], tf.float32)
    probs = tf.constant(rng.dirichlet(np.ones(5), size=[2, 4]) * mask.numpy()[:, None], tf.float32)
    probs /= tf.reduce_sum(probs, -1, keepdims=True)
    return layer, layer.prepare(memory, mask), probs, memory.numpy(), mask.numpy()


def test_attention_kl_prior_and_decoding_match_numpy():
    layer, prepared, probs, memory, mask = _layer_and_memory()
    h_bar = (memory * mask[..., None]).sum(1) / mask.sum(1, keepdims=True)
    np.testing.assert_allclose(prepared.own.numpy(), h_bar, rtol=1e-5)
    mean = np.einsum("btn,bnd->btd", probs.numpy(), memory)
    context, kl = layer(probs, prepared)  # not training: the mean
    np.testing.assert_allclose(context.numpy(), mean, rtol=1e-5)
    hidden = np.tanh(mean @ layer.sigma_hidden.kernel.numpy() + layer.sigma_hidden.bias.numpy())
    log_sigma = hidden @ layer.sigma_out.kernel.numpy() + layer.sigma_out.bias.numpy()
    np.testing.assert_allclose(kl.numpy(), _np_kl(mean, log_sigma, h_bar[:, None]), rtol=1e-4)
    zero_layer, zero_prepared, _, _, _ = _layer_and_memory(prior="zero")
    assert zero_prepared.own is None
    zero_layer(probs, zero_prepared)  # builds the sigma network
    zero_layer.set_weights(layer.get_weights())
    _, zero_kl = zero_layer(probs, zero_prepared)
    np.testing.assert_allclose(zero_kl.numpy(), _np_kl(mean, log_sigma, 0.0), rtol=1e-4)


def test_training_samples_have_the_posterior_moments():
    layer, prepared, probs, memory, _ = _layer_and_memory()
    tiled = tf.repeat(probs[:1, :1], 20000, axis=0)
    memory0 = tf.repeat(prepared.memory[:1], 20000, axis=0)
    prepared0 = prepared._replace(memory=memory0, mask=tf.ones([20000, 5]))
    samples = layer.draw(tiled, prepared0, training=True).numpy()[:, 0]
    mean = np.einsum("n,nd->d", probs.numpy()[0, 0], memory[0])
    log_sigma = layer.log_sigma(tf.constant(mean[None], tf.float32)).numpy()[0]
    np.testing.assert_allclose(samples.mean(0), mean, atol=4 * np.exp(log_sigma).max() / 141)
    np.testing.assert_allclose(samples.std(0), np.exp(log_sigma), rtol=0.05)


def test_sentence_latent():
    layer = ved.VEDContext(latent_dim=4, seed=1)
    summary = tf.constant(np.random.default_rng(1).normal(size=[3, 6]), tf.float32)
    z, kl_z = layer.sentence_latent(summary)
    mean = layer.latent_mean(summary).numpy()
    log_sigma = layer.latent_log_sigma(summary).numpy()
    np.testing.assert_allclose(z.numpy(), mean, rtol=1e-6)  # decoding uses the mean
    np.testing.assert_allclose(kl_z.numpy(), _np_kl(mean, log_sigma, 0.0), rtol=1e-4)
    z_train, _ = layer.sentence_latent(summary, training=True)
    assert not np.allclose(z_train.numpy(), mean)


def test_captioner_feeds_the_sentence_latent_and_learns_it():
    from video_caption import data
    from video_caption import model as model_lib

    keras.utils.set_random_seed(2)
    layer = registry.make_context_layer("ved", latent_dim=3, kl_weight=0.1, seed=2)
    model = model_lib.Captioner(9, 4, 5, 3, 3, context_layer=layer)
    batch = data.make_batch([np.ones([3, 4], np.float32)] * 2, [3, 2], [[4, 5], [6]])
    with tf.GradientTape() as tape:
        out = model(batch, training=True)
        loss = tf.reduce_sum(out["kl"]) + tf.reduce_sum(out["kl_z"])
    assert model.cell.kernel.shape[0] == 3 + 2 * 4 + 3  # [E y; c; z]
    assert out["kl_z"].shape == (2,) and np.all(out["kl_z"].numpy() > 0.0)
    grads = tape.gradient(loss, layer.latent_mean.trainable_variables)
    assert all(np.abs(g.numpy()).sum() > 0 for g in grads)


def test_summarizer_and_translator_feed_the_sentence_latent():
    from nmt import model as nmt_model
    from pointer_generator import losses as pg_losses
    from pointer_generator import model as pg_model

    keras.utils.set_random_seed(3)

    def layer():
        return registry.make_context_layer("ved", latent_dim=2, kl_weight=0.1, seed=3)

    summarizer = pg_model.PointerGenerator(12, hidden_dim=4, emb_dim=3, context_layer=layer())
    mask = np.array([[1, 1, 1], [1, 1, 0]], np.float32)
    batch = dict(
        enc_batch=np.array([[4, 5, 6], [7, 8, 1]], np.int32),
        enc_padding_mask=mask,
        enc_batch_extend_vocab=np.array([[4, 5, 6], [7, 8, 1]], np.int32),
        dec_batch=np.array([[2, 4], [2, 5]], np.int32),
        target_batch=np.array([[4, 3], [5, 3]], np.int32),
        dec_padding_mask=np.ones([2, 2], np.float32),
    )
    summarizer(batch)
    # PG's small initial weights give mean ~0 and sigma ~1 (KL_z ~ 0): move the mean
    summarizer.context_layer.latent_mean.bias.assign([1.0, 1.0])
    out = summarizer(batch, training=True)
    losses = pg_losses.compute_losses(
        out,
        batch,
        context_layer=summarizer.context_layer,  # VED's weight: 0.1
        kl_terms=kl_schedule.KLSchedule("linear", 1000),
        step=500,
    )
    assert summarizer.input_projection.kernel.shape[0] == 3 + 2 * 4 + 2  # [y; c*; z]
    assert float(losses["kl_z"]) == pytest.approx(1.0, rel=0.05)  # 1/2 |mu|^2
    assert float(losses["kl_factor"]) == 0.5  # logged to TensorBoard
    expected = losses["loss"] + 0.5 * (0.1 * losses["kl"] + losses["kl_z"])
    assert float(losses["total_loss"]) == pytest.approx(float(expected), rel=1e-6)

    translator = nmt_model.NMTModel(7, 8, 4, 2, 1, "bi", context_layer=layer())
    nmt_batch = dict(
        src=tf.constant([[3, 4, 5], [4, 5, 0]]),
        src_len=tf.constant([3, 2]),
        tgt_in=tf.constant([[1, 4], [1, 5]]),
        tgt_out=tf.constant([[4, 2], [5, 2]]),
        tgt_len=tf.constant([2, 2]),
    )
    translator(nmt_batch)
    translator.context_layer.latent_mean.bias.assign([1.0, 1.0])
    out = translator(nmt_batch, training=True)
    assert translator.cells[0].kernel.shape[0] == 4 + 4 + 2  # [y; attention vector; z]
    np.testing.assert_allclose(out["kl_z"].numpy(), [1.0, 1.0], rtol=0.05)
