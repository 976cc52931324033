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

``VariationalAttentionContext`` puts these into the hosts' context contract: inside the
decoder loop it is soft attention (input feeding reads the soft context, so the decoder
state stays deterministic, as in var-attn); its ``token_losses``, which every host calls
after the loop with its output layer as a function of the context, run the inference
network and ``alignment_losses``, and its ``output_distribution`` mixes over the
alignment at decode time.
"""

from typing import Any, Callable, Dict, Optional, Tuple, Union

import tensorflow as tf
from absl import flags

from acvi_tf.compat import keras
from acvi_tf.contexts import attention as attention_lib
from acvi_tf.contexts import context as context_lib
from acvi_tf.contexts.memory import PreparedMemory
from acvi_tf.layers import recurrent

VARIATIONAL_MODES = ("sample", "enum")
VARIATIONAL_DECODES = ("marginal", "soft")
# The flags that decide the layer's variables.
MODEL_FLAGS = ("variational_inference_units",)

_TINY = 1e-30


def categorical_kl(q: tf.Tensor, prior: tf.Tensor, mask: Optional[tf.Tensor] = None) -> tf.Tensor:
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


def enumerated_elbo(
    log_likelihoods: tf.Tensor, q: tf.Tensor, prior: tf.Tensor, mask: Optional[tf.Tensor] = None
) -> tf.Tensor:
    """The exact per-step ELBO ``sum_i q_i log p(y | x_i) - KL(q || prior)``.

    Args:
      log_likelihoods: [..., N] ``log p(y_t | x_i)`` of the gold word at every position.
      q, prior: [..., N] posterior and prior over the alignment.
      mask: optional [..., N] source mask.

    Returns:
      [...] float32.
    """
    return expected_log_likelihood(log_likelihoods, q, mask) - categorical_kl(q, prior, mask)


def expected_log_likelihood(
    log_likelihoods: tf.Tensor, q: tf.Tensor, mask: Optional[tf.Tensor] = None
) -> tf.Tensor:
    """``sum_i q_i log p(y | x_i)`` [..., N] -> [...] (masked positions count 0)."""
    q = tf.cast(q, tf.float32)
    log_likelihoods = tf.cast(log_likelihoods, tf.float32)
    if mask is not None:  # q is 0 there; keep 0 * -inf out of the sum
        log_likelihoods = tf.where(tf.cast(mask, tf.bool), log_likelihoods, 0.0)
    return tf.reduce_sum(q * log_likelihoods, axis=-1)


def marginal_log_likelihood(
    log_likelihoods: tf.Tensor, prior: tf.Tensor, mask: Optional[tf.Tensor] = None
) -> tf.Tensor:
    """``log sum_i prior_i p(y | x_i)`` (test time, and the exact objective) [..., N] -> [...]."""
    terms = tf.math.log(tf.cast(prior, tf.float32) + _TINY) + tf.cast(log_likelihoods, tf.float32)
    if mask is not None:
        terms += (1.0 - tf.cast(mask, tf.float32)) * -1e9
    return tf.reduce_logsumexp(terms, axis=-1)


def sample_alignment(
    q: tf.Tensor,
    generator: Optional[tf.random.Generator] = None,
    seed: Optional[tf.Tensor] = None,
) -> Tuple[tf.Tensor, tf.Tensor]:
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


def reinforce_surrogate(
    log_p_sample: tf.Tensor, log_p_soft: tf.Tensor, log_q_sample: tf.Tensor, kl: tf.Tensor
) -> tf.Tensor:
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


class InferenceNetwork(keras.layers.Layer):
    """``q(z_t | x, y)``: BiLSTMs over source states and target embeddings, bilinear scores.

    Args:
      units: LSTM size per direction (var-attn: 512, i.e. 1024 per encoder).
      jit_compile: build the LSTMs in the form XLA compiles (``acvi_tf.layers.recurrent``).
    """

    def __init__(self, units: int, jit_compile: bool = False, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.units = units
        self.jit_compile = jit_compile
        self.source_rnn = keras.layers.Bidirectional(
            recurrent.sequence_lstm(units, jit_compile, return_state=False), name="source_rnn"
        )
        self.target_rnn = keras.layers.Bidirectional(
            recurrent.sequence_lstm(units, jit_compile, return_state=False), name="target_rnn"
        )
        self.bilinear = keras.layers.Dense(2 * units, use_bias=False, name="W")

    def call(
        self,
        memory: tf.Tensor,
        memory_mask: tf.Tensor,
        target: tf.Tensor,
        target_mask: tf.Tensor,
        training: bool = False,
    ) -> tf.Tensor:
        """Posterior ``q`` [B, T, N] from memory [B, N, D] and target embeddings [B, T, E]."""
        memory_mask = tf.cast(memory_mask, tf.bool)
        f = self.source_rnn(memory, mask=memory_mask, training=training)
        g = self.target_rnn(target, mask=tf.cast(target_mask, tf.bool), training=training)
        scores = tf.einsum("btd,bnd->btn", self.bilinear(g), f)
        return attention_lib.masked_softmax(scores, memory_mask[:, tf.newaxis])

    def get_config(self) -> dict:
        config = super().get_config()
        config.update(units=self.units, jit_compile=self.jit_compile)
        return config


def at_every_position(
    log_likelihood: Callable[[tf.Tensor], tf.Tensor],
    memory: tf.Tensor,
    steps: Union[tf.Tensor, int],
) -> tf.Tensor:
    """``log p(y_t | x_i)`` [B, T, N]: ``log_likelihood`` evaluated at each source state.

    Args:
      log_likelihood: callable, context [B, T, D] -> [B, T].
      memory: [B, N, D] encoder states.
      steps: T.
    """
    shape = tf.stack([tf.shape(memory)[0], steps, tf.shape(memory)[-1]])
    per_position = tf.map_fn(
        lambda x_i: log_likelihood(tf.broadcast_to(x_i[:, tf.newaxis], shape)),
        tf.transpose(memory, [1, 0, 2]),
        fn_output_signature=tf.float32,
    )  # [N, B, T]
    return tf.transpose(per_position, [1, 2, 0])


class VariationalAttentionContext(context_lib.SoftAttentionContext):
    """``--context=variational``: Deng et al.'s categorical alignment in a host.

    The decoder loop sees soft attention (``draw`` is the soft context, the in-loop KL is
    zero). After the loop ``token_losses`` runs ``posterior`` on the teacher-forced
    target and ``alignment_losses`` with the host's output layer, which replace the
    cross-entropy and KL.

    Args:
      mode: ``"sample"`` (REINFORCE, one alignment per step, the soft prediction as
        baseline) or ``"enum"`` (the exact ELBO: the output layer at all N positions).
      inference_units: LSTM size per direction of the inference network (var-attn 512).
      decode: ``"marginal"`` (var-attn: ``sum_i a_i p(y | x_i)``, N x V per step) or
        ``"soft"`` (the output layer at the soft context, a cheaper approximation).
      kl_weight: weight of ``KL(q || a)`` in the host's loss (var-attn: 1).
      seed: seed of the layer's random generator (None: nondeterministic).
      jit_compile: build the inference network in the form XLA compiles.
    """

    def __init__(
        self,
        mode: str = "sample",
        inference_units: int = 512,
        decode: str = "marginal",
        kl_weight: float = 1.0,
        seed: Optional[int] = None,
        jit_compile: bool = False,
        **kwargs: Any,
    ) -> None:
        super().__init__(**kwargs)
        attention_lib.check_choice("variational_mode", mode, VARIATIONAL_MODES)
        attention_lib.check_choice("variational_decode", decode, VARIATIONAL_DECODES)
        self.mode = mode
        self.inference_units = int(inference_units)
        self.decode = decode
        self.kl_weight = float(kl_weight)
        self.seed = seed
        self.jit_compile = jit_compile
        self.generator = context_lib.random_generator(seed)
        self.inference_network = InferenceNetwork(
            inference_units, jit_compile, dtype=tf.float32, name="inference_network"
        )

    def posterior(
        self,
        prepared: PreparedMemory,
        target: tf.Tensor,
        target_mask: tf.Tensor,
        training: bool = False,
    ) -> tf.Tensor:
        """``q(z_t | x, y)`` [B, T, N] from the embedded gold targets [B, T, E]."""
        return self.inference_network(
            prepared.memory,
            prepared.mask,
            tf.cast(target, tf.float32),
            target_mask,
            training=training,
        )

    def alignment_losses(
        self,
        log_likelihood: Callable[[tf.Tensor], tf.Tensor],
        soft_log_likelihood: tf.Tensor,
        attn: tf.Tensor,
        q: tf.Tensor,
        prepared: PreparedMemory,
        training: bool = False,
    ) -> Tuple[tf.Tensor, tf.Tensor]:
        """Per-step ``(token_nll, kl)`` [B, T] replacing the host's cross-entropy and KL.

        Training: ``token_nll`` is ``-E_q log p(y_t | x_z)`` (``enum``) or the REINFORCE
        surrogate of one sample (``sample``; its value is ``-log p(y_t | x_z)``), and
        ``kl`` is ``KL(q_t || a_t)``; their sum is ``-ELBO``. Otherwise ``token_nll`` is
        the exact ``-log sum_i a_t,i p(y_t | x_i)`` (var-attn's perplexity).

        Args:
          log_likelihood: callable, context [B, T, D] -> ``log p(y_t | context)`` [B, T]
            of the gold words (the host's output layer with its states bound).
          soft_log_likelihood: [B, T], the same at the soft context (the baseline).
          attn: [B, T, N] the prior ``a_t``.
          q: [B, T, N] from ``posterior``.
          prepared: this batch's ``PreparedMemory``.
          training: the ELBO (True) or the exact marginal (False).
        """
        memory, mask = prepared.memory, prepared.mask[:, tf.newaxis]
        attn = tf.cast(attn, tf.float32)
        kl = categorical_kl(q, attn, mask)
        steps = tf.shape(attn)[1]
        if not training:
            every = at_every_position(log_likelihood, memory, steps)
            return -marginal_log_likelihood(every, attn, mask), kl
        if self.mode == "enum":
            every = at_every_position(log_likelihood, memory, steps)
            return -expected_log_likelihood(every, q, mask), kl
        one_hot, log_q = sample_alignment(q, self.generator)
        log_p = log_likelihood(context_lib.expected_context(one_hot, memory))
        surrogate = reinforce_surrogate(log_p, soft_log_likelihood, log_q, kl)
        return surrogate - kl, kl

    def token_losses(
        self,
        gold: context_lib.GoldTarget,
        attention_probs: tf.Tensor,
        kl: tf.Tensor,
        prepared: PreparedMemory,
        training: bool = False,
    ) -> Tuple[tf.Tensor, tf.Tensor]:
        """``alignment_losses`` with the posterior of the gold target (``kl`` is the
        loop's zero KL, replaced by ``KL(q_t || a_t)``)."""
        del kl
        q = self.posterior(prepared, gold.embedded(), gold.mask, training)
        return self.alignment_losses(
            gold.log_likelihood,
            gold.soft_log_likelihood,
            attention_probs,
            q,
            prepared,
            training,
        )

    def output_distribution(
        self,
        logits: tf.Tensor,
        logits_at: Callable[[tf.Tensor], tf.Tensor],
        attention_probs: tf.Tensor,
        prepared: PreparedMemory,
        log: bool = True,
    ) -> tf.Tensor:
        """The output distribution of one decoding step, float32 [R, V].

        ``decode="soft"``: the log-softmax of ``logits`` (the output layer at the soft
        context); ``"marginal"``: ``sum_i a_t,i p(y_t | x_i)`` from ``logits_at`` at
        every encoder state. Arguments as ``ContextLayer.output_distribution``.
        """
        if self.decode == "soft":
            log_probs = tf.nn.log_softmax(tf.cast(logits, tf.float32))
        else:
            every = tf.nn.log_softmax(
                tf.cast(logits_at(tf.cast(prepared.memory, logits.dtype)), tf.float32)
            )  # [R, N, V]
            log_prior = tf.math.log(tf.cast(attention_probs, tf.float32) + _TINY)
            log_prior += (1.0 - prepared.mask) * -1e9
            log_probs = tf.reduce_logsumexp(log_prior[..., tf.newaxis] + every, axis=1)
        return log_probs if log else tf.exp(log_probs)

    def report_labels(self) -> Dict[str, str]:
        """Says why the report shows no KL: the posterior needs the gold target."""
        return {
            "note": "Variational attention: the posterior q(z_t | x, y) reads the gold "
            "target, so a decode has no KL of its output; the attention shown is the "
            "alignment's prior a_t."
        }

    def get_config(self) -> dict:
        config = super().get_config()
        config.update(
            mode=self.mode,
            inference_units=self.inference_units,
            decode=self.decode,
            kl_weight=self.kl_weight,
            seed=self.seed,
            jit_compile=self.jit_compile,
        )
        return config


def define_flags(fv: flags.FlagValues) -> None:
    """Defines ``--variational_mode``, ``--variational_inference_units`` and
    ``--variational_decode`` on ``fv``."""
    flags.DEFINE_enum(
        "variational_mode",
        "sample",
        list(VARIATIONAL_MODES),
        "--context=variational: 'sample' one alignment per step with REINFORCE and the "
        "soft-attention prediction as baseline (var-attn -mode sample), 'enum' the exact "
        "ELBO over every source position (-mode enum; N output layers per step).",
        flag_values=fv,
    )
    flags.DEFINE_integer(
        "variational_inference_units",
        512,
        "--context=variational: LSTM size per direction of the inference network (var-attn: 512).",
        lower_bound=1,
        flag_values=fv,
    )
    flags.DEFINE_enum(
        "variational_decode",
        "marginal",
        list(VARIATIONAL_DECODES),
        "--context=variational at decode time: 'marginal' sum_i a_i p(y | x_i) (var-attn; "
        "N x V per step) or 'soft' p(y | sum_i a_i x_i), cheaper.",
        flag_values=fv,
    )


def options(config: Any) -> Dict[str, Any]:
    """The layer's arguments from a command's ``acvi_tf.config.Config``."""
    return dict(
        mode=config.variational_mode,
        inference_units=config.variational_inference_units,
        decode=config.variational_decode,
        jit_compile=config.jit_compile,
        **context_lib.sampling_options(config),
    )
