"""Latent alignment and variational attention (Deng, Kim, Chiu, Guo and Rush, NeurIPS 2018).

The pieces of harvardnlp/var-attn's categorical variational attention, host-independent:

* the alignment ``z_t`` in ``{1..N}`` has prior ``p(z_t) = a_t`` (the host's soft
  attention) and output model ``p(y_t | x, z_t = i) = softmax(W_gen tanh(W_out [h_t;
  x_i]))``: the host's output layer applied to one encoder state instead of the soft
  context;
* the variational posterior ``q(z_t | x, y)`` comes from an ``InferenceNetwork``: a
  bidirectional LSTM over the source states and one over the whole target (so ``q``
  sees ``y_t`` and the future), bilinear scores ``(W g_t)^T f_i``, masked softmax;
* per target step the ELBO is ``E_q[log p(y_t | x_z)] - KL(q_t || a_t)`` with the exact
  categorical KL; ``enumerated_elbo`` takes the expectation exactly (``-mode enum``:
  the output layer at every source position); ``reinforce_surrogate`` uses one sample
  ``z ~ q_t`` (``-mode sample``) with the soft-attention prediction as the control
  variate: ``r = log p(y | x_z) - log p(y | soft context)``;
* at test time the prior is used: ``p(y_t) = sum_i a_t,i p(y_t | x_i)``.
"""
import tensorflow as tf

from acvi_tf import attention as attention_lib

_TINY = 1e-30


def categorical_kl(q, prior, mask=None):
    """``KL(q || prior)`` over the last axis [..., N] -> [...] (0 log 0 = 0).

    Args:
      q, prior: probabilities; ``prior`` must be > 0 wherever ``q`` is.
      mask: optional [..., N]; masked positions contribute nothing.
    """
    q = tf.cast(q, tf.float32)
    terms = q * (tf.math.log(q + _TINY) - tf.math.log(tf.cast(prior, tf.float32) + _TINY))
    if mask is not None:
        terms *= tf.cast(mask, tf.float32)
    return tf.reduce_sum(terms, axis=-1)


def enumerated_elbo(log_likelihoods, q, prior, mask=None):
    """The exact per-step ELBO ``sum_i q_i log p(y | x_i) - KL(q || prior)``.

    Args:
      log_likelihoods: [..., N] ``log p(y_t | x_i)`` of the gold word at every position.
      q, prior: [..., N] posterior and prior over the alignment.
      mask: optional [..., N] source mask.

    Returns:
      [...] float32.
    """
    q = tf.cast(q, tf.float32)
    log_likelihoods = tf.cast(log_likelihoods, tf.float32)
    if mask is not None:  # q is 0 there; keep 0 * -inf out of the sum
        log_likelihoods = tf.where(tf.cast(mask, tf.bool), log_likelihoods, 0.0)
    expected = tf.reduce_sum(q * log_likelihoods, axis=-1)
    return expected - categorical_kl(q, prior, mask)


def marginal_log_likelihood(log_likelihoods, prior, mask=None):
    """``log sum_i prior_i p(y | x_i)`` (test time, and the exact objective) [..., N] -> [...]."""
    terms = tf.math.log(tf.cast(prior, tf.float32) + _TINY) + tf.cast(log_likelihoods,
                                                                       tf.float32)
    if mask is not None:
        terms += (1.0 - tf.cast(mask, tf.float32)) * -1e9
    return tf.reduce_logsumexp(terms, axis=-1)


def sample_alignment(q, generator=None, seed=None):
    """One alignment ``z ~ q`` per row: ``(one_hot [..., N], log q(z) [...])``.

    Args:
      q: [..., N] probabilities.
      generator: a ``tf.random.Generator`` (or give a stateless ``seed`` [2]).
    """
    q = tf.cast(q, tf.float32)
    shape = tf.shape(q)
    logits = tf.reshape(tf.math.log(q + _TINY), [-1, shape[-1]])
    if seed is not None:
        index = tf.random.stateless_categorical(logits, 1, seed)[:, 0]
    else:
        generator = generator or tf.random.get_global_generator()
        uniform = generator.uniform(tf.shape(logits), minval=_TINY, maxval=1.0)
        index = tf.argmax(logits - tf.math.log(-tf.math.log(uniform)), axis=-1)  # Gumbel-max
    one_hot = tf.reshape(tf.one_hot(index, shape[-1]), shape)
    return one_hot, tf.reduce_sum(one_hot * tf.math.log(q + _TINY), axis=-1)


def reinforce_surrogate(log_p_sample, log_p_soft, log_q_sample, kl):
    """The loss of ``-mode sample``: value ``-(log p(y | x_z) - KL)``, REINFORCE gradient.

    Its gradient is that of ``-log p(y | x_z) + KL - r log q(z)`` with the reward ``r =
    log p(y | x_z) - log p(y | soft context)`` held constant: the score-function estimator
    of ``-ELBO`` with the soft-attention prediction as the baseline. The extra term is
    zero in value (``stop_gradient`` of itself subtracted), so the loss reads as ``-ELBO``.

    Args:
      log_p_sample: [...] ``log p(y_t | x_z)`` at the sampled alignment.
      log_p_soft: [...] ``log p(y_t | sum_i a_i x_i)`` (only its value is used).
      log_q_sample: [...] ``log q(z)`` of the sample.
      kl: [...] ``KL(q_t || a_t)``.
    """
    reward = tf.stop_gradient(log_p_sample - log_p_soft)
    score = reward * (log_q_sample - tf.stop_gradient(log_q_sample))
    return -log_p_sample + kl - score


class InferenceNetwork(tf.keras.layers.Layer):
    """``q(z_t | x, y)``: BiLSTMs over source states and target embeddings, bilinear scores.

    Args:
      units: LSTM size per direction (var-attn: 512, i.e. 1024 per encoder).
    """

    def __init__(self, units, **kwargs):
        super().__init__(**kwargs)
        self.units = units
        self.source_rnn = tf.keras.layers.Bidirectional(
            tf.keras.layers.LSTM(units, return_sequences=True), name="source_rnn")
        self.target_rnn = tf.keras.layers.Bidirectional(
            tf.keras.layers.LSTM(units, return_sequences=True), name="target_rnn")
        self.bilinear = tf.keras.layers.Dense(2 * units, use_bias=False, name="W")

    def call(self, memory, memory_mask, target, target_mask, training=False):
        """Posterior ``q`` [B, T, N] from memory [B, N, D] and target embeddings [B, T, E]."""
        memory_mask = tf.cast(memory_mask, tf.bool)
        f = self.source_rnn(memory, mask=memory_mask, training=training)
        g = self.target_rnn(target, mask=tf.cast(target_mask, tf.bool), training=training)
        scores = tf.einsum("btd,bnd->btn", self.bilinear(g), f)
        return attention_lib.masked_softmax(scores, memory_mask[:, tf.newaxis])

    def get_config(self):
        config = super().get_config()
        config["units"] = self.units
        return config
