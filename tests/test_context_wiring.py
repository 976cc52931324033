"""ACVI's sampled context reaches exactly the places where the hosts used soft attention's.

The paper replaces the soft-attention (SA) context ``sum_i a_t,i h_i`` with a sample
``c_t = sum_i a_t,i h_i + sqrt(sum_i a_t,i^2 sigma_i^2) eps_t`` everywhere a host read it:

* summarizer: the next step's input projection (input feeding), ``p_gen`` and the output
  projection; the copy distribution and coverage keep the attention ``a_t``;
* NMT: the attention vector ``W_c [s_t; c_t]``, read by the output layer and fed to the
  next step's input;
* captioner: the output layer (eq. 4) and the next step's decoder input.

Two kinds of tests:

* with the noise forced to zero, a training-mode ACVI model computes exactly what an SA
  model with the same weights computes (outputs and the loss's NLL part);
* with noise on, the noise ``eps_t`` each step draws is recorded, the sample is rebuilt
  by hand from the paper's formula, and every quantity that should read it is recomputed
  from it with the model's own layers and compared with the host's output.
"""

import hosts
import numpy as np
import pytest
import tensorflow as tf

from acvi_tf.contexts import acvi as acvi_lib
from pointer_generator import losses as pg_losses

# The hand computations repeat the hosts' float32 products: agreement to rounding.
RTOL, ATOL = 1e-5, 1e-5


@pytest.fixture
def zero_noise(monkeypatch):
    """Makes every ACVI draw return zero noise, so the sample is the mean."""
    monkeypatch.setattr(acvi_lib.ACVIContext, "normal", lambda self, shape, seed: tf.zeros(shape))


@pytest.fixture
def recorded_noise(monkeypatch):
    """Records the noise ``eps`` of every ACVI draw, in order; returns the list."""
    draws = []
    normal = acvi_lib.ACVIContext.normal

    def recording(self, shape, seed):
        eps = normal(self, shape, seed)
        draws.append(eps)
        return eps

    monkeypatch.setattr(acvi_lib.ACVIContext, "normal", recording)
    return draws


def _acvi(seed):
    """An ACVI layer with collapsed noise and its own seeded generator."""
    return acvi_lib.ACVIContext(noise="collapsed", seed=seed, name="context")


def _copy_shared_weights(source, target):
    """Gives ``target`` the weights of ``source``; ``target``'s variance network stays.

    Both models are of one class, so after dropping the variance network their weights
    come in the same order; shapes and variable names check the pairing.
    """
    shared = [v for v in target.weights if "variance_network" not in v.name]
    assert len(shared) == len(source.weights)
    for src, dst in zip(source.weights, shared):
        assert src.shape == dst.shape
        assert src.name.split("/")[-1] == dst.name.split("/")[-1]
        dst.assign(src)


def _hand_sample(attn, prepared, eps):
    """``(sample, mean)`` [B, T, D] from ``a_t`` [B, T, N] and the recorded eps [B, T, D].

    The paper's collapsed sample ``sum_i a_i h_i + sqrt(sum_i a_i^2 sigma_i^2) eps`` with
    ``h`` and ``sigma^2`` from ``prepared``.
    """
    attn = tf.cast(attn, tf.float32)
    mean = tf.matmul(attn, prepared.memory)
    std = tf.sqrt(tf.matmul(tf.square(attn), prepared.own.variance))
    return mean + std * eps, mean


def _step_noise(draws, steps):
    """The per-step collapsed noise of a teacher-forced loop, stacked: [B, T, D]."""
    assert len(draws) == steps  # one draw per decoder step
    assert all(eps.shape[1] == 1 for eps in draws)
    return tf.concat(draws, axis=1)


def _assert_noise_matters(sample, mean):
    """The sample is far from the mean, so reading one for the other shows."""
    assert np.max(np.abs(sample.numpy() - mean.numpy())) > 0.1


# ----------------------------------------------------------------------------------------
# 1. Zero noise: ACVI in training is soft attention.


@pytest.mark.usefixtures("zero_noise")
@pytest.mark.parametrize("host", hosts.HOSTS)
def test_noiseless_acvi_training_equals_soft_attention(host):
    """With eps = 0 every output and the NLL equal those of SA with the same weights."""
    build, make_batch, outputs = hosts.HOST_SETUPS[host]
    batch = make_batch()
    sa = build(None, seed=11)
    acvi = build(_acvi(seed=12), seed=13)
    sa(batch)  # builds the weights
    acvi(batch)
    _copy_shared_weights(sa, acvi)
    expected, got = outputs(sa, batch), outputs(acvi, batch)
    assert set(expected) == set(got)
    for name in expected:
        np.testing.assert_allclose(got[name], expected[name], rtol=1e-6, atol=1e-6, err_msg=name)


# ----------------------------------------------------------------------------------------
# 2. Noise on: the sample reaches each place the paper puts it.


@pytest.fixture
def pg_run(recorded_noise):
    """A training-mode ACVI summarizer run with its outputs and the hand-built sample."""
    batch = hosts.pg_batch()
    model = hosts.pg_model(_acvi(seed=21), seed=22)
    out = model(batch, training=True, coverage_on=True)
    eps = _step_noise(recorded_noise, hosts.PG_T)
    sample, mean = _hand_sample(out["attn"], out["prepared"], eps)
    _assert_noise_matters(sample, mean)
    return model, batch, out, sample


def test_summarizer_carries_the_sample_as_its_context(pg_run):
    """The per-step context the host returns (and feeds on) is the paper's sample."""
    _, _, out, sample = pg_run
    np.testing.assert_allclose(out["context"], sample, rtol=RTOL, atol=ATOL)


def test_summarizer_p_gen_reads_the_sample(pg_run):
    """``p_gen = sigmoid(w [c*_t; c_t; h_t; x_t] + b)`` with ``c*_t`` the sample."""
    model, _, out, sample = pg_run
    features = tf.concat([sample, out["c"], out["h"], out["x"]], axis=-1)
    expected = features @ model.p_gen_layer.kernel + model.p_gen_layer.bias
    np.testing.assert_allclose(out["p_gen_logit"], expected[..., 0], rtol=RTOL, atol=ATOL)


def test_summarizer_input_feeding_reads_the_previous_sample(pg_run):
    """``x_t = W_x [emb(y_t); c*_{t-1}] + b_x``, ``c*_{t-1}`` the sample (0 at t = 0)."""
    model, batch, out, sample = pg_run
    previous = tf.concat([tf.zeros_like(sample[:, :1]), sample[:, :-1]], axis=1)
    inputs = tf.concat([model.embedding(batch["dec_batch"]), previous], axis=-1)
    projection = model.input_projection
    expected = inputs @ projection.kernel + projection.bias
    np.testing.assert_allclose(out["x"], expected, rtol=RTOL, atol=ATOL)


def test_summarizer_output_projection_reads_the_sample(pg_run):
    """``P_vocab`` logits ``V' (W_o [h_t; c*_t] + b_o) + b'`` with ``c*_t`` the sample."""
    model, _, out, sample = pg_run
    hidden = (
        tf.concat([out["h"], sample], axis=-1) @ model.output_projection.kernel
        + model.output_projection.bias
    )
    expected = hidden @ model.vocab_projection.kernel + model.vocab_projection.bias
    np.testing.assert_allclose(out["vocab_logits"], expected, rtol=RTOL, atol=ATOL)


def test_summarizer_copy_and_coverage_use_the_attention(pg_run):
    """The copy distribution and coverage are the scorer's ``a_t``, not the sample's."""
    model, batch, out, _ = pg_run
    memory, _ = model.encode(batch["enc_batch"], batch["enc_padding_mask"])
    keys = model.scorer.prepare(memory)
    attn = out["attn"]
    coverage = tf.cumsum(attn, axis=1, exclusive=True)  # coverage before each step
    for t in range(hosts.PG_T):
        query = tf.concat([out["c"][:, t], out["h"][:, t]], axis=-1)
        expected = model.scorer(query, keys, batch["enc_padding_mask"], coverage=coverage[:, t])
        np.testing.assert_allclose(attn[:, t], expected, rtol=RTOL, atol=1e-6)
    np.testing.assert_allclose(
        out["coverage_terms"],
        tf.reduce_sum(tf.minimum(attn, coverage), axis=-1),
        rtol=RTOL,
        atol=1e-6,
    )
    # The training loss copies with a_t: its NLL is that of the final distribution.
    final = pg_losses.final_distribution(
        tf.nn.softmax(out["vocab_logits"]),
        attn,
        tf.sigmoid(out["p_gen_logit"]),
        batch["enc_batch_extend_vocab"],
        1,
    ).numpy()
    gold = np.take_along_axis(final, batch["target_batch"][..., None], -1)[..., 0]
    mask = batch["dec_padding_mask"]
    nll = np.mean((-np.log(gold) * mask).sum(1) / mask.sum(1))
    np.testing.assert_allclose(pg_losses.compute_losses(out, batch)["loss"], nll, rtol=1e-5)


def _nmt_reference(model, batch, eps):
    """Logits [B, T, V] of a decoder wired as the paper says, from the recorded noise.

    Luong's attention vector ``W_c [s_t; c_t]`` uses the sample ``c_t``; it is the
    output layer's input and is fed to the next step.
    """
    constants, state = model.start(batch)
    prepared = constants["prepared"]
    embedded = model.tgt_embedding(batch["tgt_in"])
    cells, fed = state["cells"], state["attention"]
    logits = []
    for t in range(embedded.shape[1]):
        x = tf.concat([embedded[:, t], fed], axis=-1)
        new_cells = []
        for cell, cell_state in zip(model.cells, cells):
            x, cell_state = cell(x, cell_state)
            new_cells.append(cell_state)
        cells = new_cells
        attn = model.scorer(x, constants["keys"], constants["mask"])
        sample, _ = _hand_sample(attn[:, None], prepared, eps[:, t : t + 1])
        fed = tf.concat([x, sample[:, 0]], axis=-1) @ model.attention_layer.kernel
        logits.append(fed @ model.output_projection.kernel)
    return tf.stack(logits, axis=1)


def _run_against_reference(model, batch, noise, steps, reference):
    """A training-mode run's outputs, and the logits of ``reference`` from its noise.

    Args:
      model, batch: the host model and its batch.
      noise: the ``recorded_noise`` list.
      steps: decoder steps of the batch.
      reference: ``(model, batch, eps) -> logits``, the host wired as the paper says.
    """
    out = model(batch, training=True)
    eps = _step_noise(noise, steps)
    expected = reference(model, batch, eps)
    sample, mean = _hand_sample(out["attn"], model.start(batch)[0]["prepared"], eps)
    _assert_noise_matters(sample, mean)
    return out, expected


@pytest.fixture
def nmt_run(recorded_noise):
    """A training-mode ACVI NMT run's logits and those of the hand-wired reference."""
    batch = hosts.nmt_batch()
    return _run_against_reference(
        hosts.nmt_model(_acvi(seed=31), seed=32),
        batch,
        recorded_noise,
        batch["tgt_in"].shape[1],
        _nmt_reference,
    )


def test_nmt_attention_vector_reads_the_sample(nmt_run):
    """Step 0's logits come from ``W_c [s_0; c_0]`` with ``c_0`` the sample."""
    out, expected = nmt_run
    np.testing.assert_allclose(out["logits"][:, 0], expected[:, 0], rtol=RTOL, atol=ATOL)


def test_nmt_input_feeding_carries_the_sample_attention_vector(nmt_run):
    """Later steps read the previous step's sample-based attention vector."""
    out, expected = nmt_run
    np.testing.assert_allclose(out["logits"], expected, rtol=RTOL, atol=ATOL)


def _vc_reference(model, batch, eps):
    """Logits [B, T, V] of a captioner wired as the paper says, from the recorded noise.

    The decoder LSTM reads ``[E y_{t-1}; c_{t-1}]`` and eq. (4) reads ``[s_t; c_t]``, with
    ``c`` the sample.
    """
    constants, state = model.start(batch)
    prepared = constants["prepared"]
    embedded = model.embedding(batch["caption_in"])
    h, c, previous = state["h"], state["c"], state["context"]
    logits = []
    for t in range(embedded.shape[1]):
        s, (h, c) = model.cell(tf.concat([embedded[:, t], previous], axis=-1), [h, c])
        attn = model.scorer(s, constants["keys"], constants["mask"])
        previous = _hand_sample(attn[:, None], prepared, eps[:, t : t + 1])[0][:, 0]
        hidden = tf.tanh(
            tf.concat([s, previous], axis=-1) @ model.output_hidden.kernel
            + model.output_hidden.bias
        )
        logits.append(hidden @ model.vocab_projection.kernel + model.vocab_projection.bias)
    return tf.stack(logits, axis=1)


@pytest.fixture
def vc_run(recorded_noise):
    """A training-mode ACVI captioner run's logits and those of the hand-wired reference."""
    batch = hosts.vc_batch()
    return _run_against_reference(
        hosts.vc_model(_acvi(seed=41), seed=42),
        batch,
        recorded_noise,
        batch["caption_in"].shape[1],
        _vc_reference,
    )


def test_captioner_output_layer_reads_the_sample(vc_run):
    """Step 0's eq. (4) logits read ``[s_0; c_0]`` with ``c_0`` the sample."""
    out, expected = vc_run
    np.testing.assert_allclose(out["logits"][:, 0], expected[:, 0], rtol=RTOL, atol=ATOL)


def test_captioner_decoder_input_reads_the_previous_sample(vc_run):
    """Later steps' LSTM inputs carry the previous step's sample."""
    out, expected = vc_run
    np.testing.assert_allclose(out["logits"], expected, rtol=RTOL, atol=ATOL)
