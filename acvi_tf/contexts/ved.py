"""The variational encoder-decoder with variational attention (Bahuleyan et al., COLING 2018).

Facts from HareeshBahuleyan/tf-var-attention (``ved_varAttn``), rewritten for this
project's context-layer contract:

* Sentence latent: ``q(z | x) = N(mu, diag sigma^2)`` with ``mu`` and ``log sigma`` each a
  dense layer of the encoder summary (the final states of both directions), sampled by
  reparameterisation; prior ``N(0, I)``; closed-form ``KL_z``. The host appends ``z`` to
  the decoder input at every step. Size: 128 for summarization and 100 for captioning in
  the ACVI paper (``latent_dim``).
* Variational attention: the soft-attention context ``c_t = sum_i a_t,i h_i`` becomes the
  mean of ``q(a_t) = N(c_t, diag sigma_t^2)`` with ``log sigma_t = W2 tanh(W1 c_t + b1) +
  b2`` (both of the context's size); in training ``a~_t = c_t + tau eps sigma_t`` replaces
  ``c_t``; decoding uses ``c_t``. Prior ``N(h_bar, I)`` with ``h_bar`` the mean encoder
  state over real positions (``prior="hmean"``, the original's ``use_hmean``) or
  ``N(0, I)`` (``prior="zero"``):
  ``KL_t = -1/2 sum_d (1 + 2 log sigma_t - (c_t - h_bar)^2 - sigma_t^2)``.
* The per-step attention KL is summed over every valid decoder step, as the paper's
  equation says (the original's TF1 graph keeps only the last step's KL).
* KL annealing scales both KL terms; it is ``kl_schedule``'s, as for every KL
  (``--kl_annealing=tanh`` is the original's schedule).
"""

from typing import Any, Dict, Optional, Tuple, Union

import tensorflow as tf
from absl import flags

from acvi_tf.compat import keras
from acvi_tf.contexts import attention as attention_lib
from acvi_tf.contexts import context as context_lib
from acvi_tf.contexts.memory import PreparedMemory

PRIORS = ("hmean", "zero")
# The flags that decide the layer's variables.
MODEL_FLAGS = ("ved_latent_dim",)
# log sigma is clipped to this range (sigma in [4.5e-5, 2.2e4]), as ACVI clips log sigma^2
LOG_SIGMA_MIN, LOG_SIGMA_MAX = -10.0, 10.0


def gaussian_kl(
    mean: tf.Tensor, log_sigma: tf.Tensor, prior_mean: Optional[tf.Tensor] = None
) -> tf.Tensor:
    """``KL[N(mean, diag sigma^2) || N(prior_mean, I)]`` summed over the last axis."""
    offset = mean if prior_mean is None else mean - prior_mean
    return -0.5 * tf.reduce_sum(
        1.0 + 2.0 * log_sigma - tf.square(offset) - tf.exp(2.0 * log_sigma), axis=-1
    )


class VEDContext(context_lib.ContextLayer):
    """Variational attention plus the sentence latent of the VED.

    Args:
      latent_dim: size of the sentence latent ``z``.
      prior: ``"hmean"`` or ``"zero"``: the mean of the attention prior.
      temperature: ``tau``, the scale of the attention noise (original: 1).
      kl_weight: the weight of the attention KL in the host's loss (the original's
        ``gamma``: 0.1); ``KL_z`` has weight 1.
      seed: seed of the layer's random generator (None: nondeterministic).
    """

    def __init__(
        self,
        latent_dim: int = 100,
        prior: str = "hmean",
        temperature: float = 1.0,
        kl_weight: float = 0.1,
        seed: Optional[int] = None,
        **kwargs: Any,
    ) -> None:
        super().__init__(**kwargs)
        attention_lib.check_choice("prior", prior, PRIORS)
        self.latent_dim = int(latent_dim)
        self.prior = prior
        self.temperature = float(temperature)
        self.kl_weight = float(kl_weight)
        self.seed = seed
        self.generator = context_lib.random_generator(seed)
        self.latent_mean = keras.layers.Dense(latent_dim, name="z_mean", dtype=tf.float32)
        self.latent_log_sigma = keras.layers.Dense(latent_dim, name="z_log_sigma", dtype=tf.float32)
        self.sigma_hidden = None
        self.sigma_out = None

    def prepare(self, memory: tf.Tensor, memory_mask: Optional[tf.Tensor] = None) -> PreparedMemory:
        """Caches the memory and, as ``own``, the prior mean ``h_bar`` [B, D] (the masked
        mean of the states; None with the zero prior)."""
        base = super().prepare(memory, memory_mask)
        if self.sigma_hidden is None:
            size = memory.shape[-1]
            self.sigma_hidden = keras.layers.Dense(
                size, activation="tanh", name="sigma_hidden", dtype=tf.float32
            )
            self.sigma_out = keras.layers.Dense(size, name="sigma_out", dtype=tf.float32)
        if self.prior == "zero":
            return base
        total = tf.reduce_sum(base.memory * base.mask[..., tf.newaxis], axis=1)
        count = tf.maximum(tf.reduce_sum(base.mask, axis=1, keepdims=True), 1.0)
        return base._replace(own=total / count)

    def sentence_latent(
        self, summary: tf.Tensor, training: bool = False
    ) -> Tuple[tf.Tensor, tf.Tensor]:
        """``(z [B, latent_dim], KL_z [B])`` from the encoder summary [B, S]."""
        summary = tf.cast(summary, tf.float32)
        mean = self.latent_mean(summary)
        log_sigma = tf.clip_by_value(self.latent_log_sigma(summary), LOG_SIGMA_MIN, LOG_SIGMA_MAX)
        z = mean
        if training:
            z = mean + tf.exp(log_sigma) * self.generator.normal(tf.shape(mean))
        return tf.cast(z, self.compute_dtype), gaussian_kl(mean, log_sigma)

    def log_sigma(self, mean_context: tf.Tensor) -> tf.Tensor:
        """The posterior's log standard deviation at the mean context [..., D], clipped
        to ``[LOG_SIGMA_MIN, LOG_SIGMA_MAX]``."""
        return tf.clip_by_value(
            self.sigma_out(self.sigma_hidden(mean_context)), LOG_SIGMA_MIN, LOG_SIGMA_MAX
        )

    def draw_steps(
        self,
        probs: tf.Tensor,
        prepared: PreparedMemory,
        training: bool,
        use_gumbel: Optional[Union[bool, tf.Tensor]],
        seed: Optional[tf.Tensor],
    ) -> tf.Tensor:
        """``c_t + tau eps sigma_t`` in training, ``c_t`` otherwise: [B, T, D]."""
        del use_gumbel
        mean = context_lib.contract(probs, prepared, "memory")
        if not training:
            return mean
        noise = (
            self.generator.normal(tf.shape(mean))
            if seed is None
            else tf.random.stateless_normal(tf.shape(mean), seed)
        )
        return mean + self.temperature * noise * tf.exp(self.log_sigma(mean))

    def kl_steps(self, context: tf.Tensor, probs: tf.Tensor, prepared: PreparedMemory) -> tf.Tensor:
        """``KL[q(a_t) || N(h_bar, I)]`` [B, T] (the sample itself is not needed)."""
        del context
        mean = context_lib.expected_context(probs, prepared.memory)
        prior_mean = prepared.own
        if prior_mean is not None:
            prior_mean = prior_mean[:, tf.newaxis]
        return gaussian_kl(mean, self.log_sigma(mean), prior_mean)

    def report_posterior(
        self, attention_probs: tf.Tensor, prepared: PreparedMemory
    ) -> Dict[str, tf.Tensor]:
        """The attention KL per step (``kl_steps``) and the scale of ``q(a_t)`` per step,
        ``sqrt(mean_d sigma_t,d^2)``: at decode time ``q(a_t) = N(c_t, sigma_t^2)``
        reads only the decoded steps' soft context. Arguments and returns as
        ``ContextLayer.report_posterior``."""
        probs = tf.cast(attention_probs, tf.float32)
        mean = context_lib.expected_context(probs, prepared.memory)
        variance = tf.exp(2.0 * self.log_sigma(mean))
        return {
            "kl": self.kl_steps(mean, probs, prepared),
            "scale": context_lib.position_scale(variance),
        }

    def report_labels(self) -> Dict[str, str]:
        """Names the attention KL against this layer's prior, and the step scale."""
        prior = "N(h_bar, I), h_bar the mean encoder state" if self.prior == "hmean" else "N(0, I)"
        return {
            "kl": "KL per step: KL(N(c_t, sigma_t^2) || %s) of the variational attention" % prior,
            "scale": "Posterior scale per decoder step: sqrt(mean_d sigma_t,d^2) of "
            "q(a_t) = N(c_t, sigma_t^2)",
            "note": "The sentence latent z is decoded at its mean; its KL is one per "
            "sentence and not shown.",
        }

    def get_config(self) -> dict:
        config = super().get_config()
        config.update(
            latent_dim=self.latent_dim,
            prior=self.prior,
            temperature=self.temperature,
            kl_weight=self.kl_weight,
            seed=self.seed,
        )
        return config


def define_flags(fv: flags.FlagValues) -> None:
    """Defines ``--ved_latent_dim`` and ``--ved_prior`` on ``fv``."""
    flags.DEFINE_integer(
        "ved_latent_dim",
        100,
        "--context=ved: size of the sentence latent (the ACVI "
        "paper: 100 for captioning, 128 for summarization).",
        lower_bound=1,
        flag_values=fv,
    )
    flags.DEFINE_enum(
        "ved_prior",
        "hmean",
        list(PRIORS),
        "--context=ved: attention prior N(mean encoder state, I) (the original) or N(0, I).",
        flag_values=fv,
    )


def options(config: Any) -> Dict[str, Any]:
    """The layer's arguments from a command's ``acvi_tf.config.Config``."""
    return dict(
        latent_dim=config.ved_latent_dim,
        prior=config.ved_prior,
        **context_lib.sampling_options(config),
    )
