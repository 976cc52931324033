"""The contract of a context mechanism, and soft attention (SA), which is that contract
with nothing added.

Every mechanism (ACVI in ``acvi``, the competitors in ``structured``, ``variational`` and
``ved``) is a ``ContextLayer``, so a host model changes its context mechanism by changing
the layer it builds and nothing else:

* ``prepare(memory, memory_mask)`` once per source batch caches what every decoder step
  needs (for ACVI the variances ``sigma^2(h_i)`` and the terms of the mixture density);
* ``call(attention_probs, prepared, training=..., use_gumbel=..., seed=...)`` returns
  ``(context, kl)`` for one decoder step (probs [B, N] -> context [B, D], kl [B]) or for
  many steps at once (probs [B, T, N] -> context [B, T, D], kl [B, T]);
* ``draw`` and ``kl_divergence`` are its two halves, for decoder loops that feed the
  context back and compute the KL of all steps at once after the loop;
* ``sentence_latent`` gives the latent every decoder input carries (width 0 by default),
  ``token_losses`` the per-step loss of the gold sequence after the teacher-forced loop
  and ``output_distribution`` a decoding step's distribution over the vocabulary: a host
  calls all three unconditionally, and a mechanism with a latent there overrides them;
* ``report_posterior`` and ``report_labels`` give what a decode report shows of the
  posterior per decoder step and source position, and name it (nothing by default).

``kl`` is the per-step KL term before ``kl_weight``; masking padded decoder steps and
normalising like the task's NLL is the host's job.
"""

from typing import Any, Callable, Dict, NamedTuple, Optional, Tuple, Union

import tensorflow as tf

from acvi_tf.compat import keras
from acvi_tf.contexts.loop_gradients import DeferredContractions
from acvi_tf.contexts.memory import PreparedMemory


def position_scale(variance: tf.Tensor) -> tf.Tensor:
    """ACVI's scale per source position, ``s_i = sqrt(mean_d sigma_i,d^2)`` (the root mean
    square over dimensions), [..., N] for ``variance`` [..., N, D]: the picture of sigma
    that the decode reports and TensorBoard show. Eq. 25's noise at step t then has the
    root-mean-square scale ``sqrt(sum_i a_t,i^2 s_i^2)``."""
    return tf.sqrt(tf.reduce_mean(variance, axis=-1))


def random_generator(seed: Optional[int]) -> tf.random.Generator:
    """A layer's own ``tf.random.Generator``: seeded, or nondeterministic for None."""
    if seed is None:
        return tf.random.Generator.from_non_deterministic_state()
    return tf.random.Generator.from_seed(seed)


def expected_context(weights: tf.Tensor, memory: tf.Tensor) -> tf.Tensor:
    """``sum_i w_t,i h_i``: [B, T, N] x [B, N, D] -> [B, T, D]."""
    # A batched matmul, not tf.einsum: einsum's gradient for the memory takes a slow path
    # when T = 1 (one decoder step), 3-4x the matmul's on CPU; at 100 steps per training
    # step it was 11% of the summarizer's op time with SA, 18% with ACVI.
    return tf.matmul(weights, memory)


def contract(weights: tf.Tensor, prepared: PreparedMemory, name: str) -> tf.Tensor:
    """``sum_i w_t,i X_i`` for ``X = prepared.field(name)``: [B, T, N] -> [B, T, D].

    Inside a loop that defers this contraction's gradient (``prepared.step_inputs`` holds
    the step's probe for ``name``), the gradient reaches X through the probe after the
    loop (``loop_gradients.DeferredContractions``).
    """
    source = prepared.field(name)
    probes = prepared.step_inputs
    if not probes or name not in probes:
        return expected_context(weights, source)
    return expected_context(weights, tf.stop_gradient(source)) + tf.expand_dims(probes[name], 1)


def tile_for_samples(tensor: tf.Tensor, num_samples: int) -> tf.Tensor:
    """Repeats each batch row ``num_samples`` times in a row: [B, ...] -> [B*K, ...].

    ACVI with K Monte-Carlo samples runs K independent trajectories per example (the
    decoder state depends on c_t through input feeding), so hosts tile the batch.
    """
    if num_samples == 1:
        return tensor
    return tf.repeat(tensor, num_samples, axis=0)


def average_over_samples(tensor: tf.Tensor, num_samples: int) -> tf.Tensor:
    """Inverse of ``tile_for_samples`` for per-example values: [B*K, ...] -> [B, ...]."""
    if num_samples == 1:
        return tensor
    shape = tf.concat([[-1, num_samples], tf.shape(tensor)[1:]], axis=0)
    return tf.reduce_mean(tf.reshape(tensor, shape), axis=1)


class GoldTarget(NamedTuple):
    """The gold target sequence as a host's output layer scores it (``token_losses``).

    Attributes:
      soft_log_likelihood: ``log p(y_t | s_t, c_t)`` [B, T] of the gold words at the
        contexts the decoder loop drew, float32.
      log_likelihood: callable, contexts [B, T, D] -> ``log p(y_t | s_t, context)``
        [B, T] of the gold words (the host's output layer with its states bound).
      embedded: callable, no arguments -> the embedded gold words [B, T, E] (called only
        by a mechanism that reads the target, such as an inference network).
      mask: [B, T], 1/True at real target steps.
      contexts: the contexts the decoder loop drew [B, T, D] (where
        ``soft_log_likelihood`` was evaluated).
    """

    soft_log_likelihood: tf.Tensor
    log_likelihood: Callable[[tf.Tensor], tf.Tensor]
    embedded: Callable[[], tf.Tensor]
    mask: tf.Tensor
    contexts: tf.Tensor


def gold_log_likelihood(logits: tf.Tensor, gold: tf.Tensor) -> tf.Tensor:
    """``log softmax(logits)[gold]`` in float32: [..., V] and [...] ids -> [...]."""
    return -tf.nn.sparse_softmax_cross_entropy_with_logits(
        labels=gold, logits=tf.cast(logits, tf.float32)
    )


def state_context(state: tf.Tensor, context: tf.Tensor) -> tf.Tensor:
    """``[state; context]`` with ``state`` broadcast over the extra axes of ``context``.

    The hosts' output layers read ``[s_t; c_t]``; evaluating them at every source position
    pairs one state [..., H] with many contexts [..., N, D].
    """
    state = tf.cast(state, context.dtype)
    for _ in range(context.shape.rank - state.shape.rank):
        state = state[..., tf.newaxis, :]
    shape = tf.concat([tf.shape(context)[:-1], tf.shape(state)[-1:]], axis=0)
    return tf.concat([tf.broadcast_to(state, shape), context], axis=-1)


class ContextLayer(keras.layers.Layer):
    """The contract of a context mechanism: every method and attribute the library and
    the hosts call, with soft attention's behaviour as the defaults.

    Shared plumbing: one- or many-step inputs, float32 math, compute-dtype output. A
    mechanism overrides what it changes: ``draw_steps`` (the context, by default
    ``sum_i a_t,i h_i``) and ``kl_steps`` (its KL per step, by default zero),
    ``sentence_latent`` (none by default), ``token_losses`` (the cross-entropy of the
    gold words), ``output_distribution`` (the softmax of the output layer) and the rest.

    Attributes:
      num_samples: Monte-Carlo samples per example the hosts tile the batch for.
      kl_weight: the weight of the KL term in the training loss.
      normalizer: None when the attention distribution is the scorer's masked softmax;
        a mechanism with its own distribution over the source sets it to a
        ``(scores, mask) -> weights`` callable, which hosts pass on to their scorer.
    """

    num_samples = 1
    kl_weight = 0.0
    normalizer = None

    @property
    def has_sentence_latent(self) -> bool:
        """Whether ``sentence_latent`` is a mechanism's own (its KL then enters the loss)."""
        return type(self).sentence_latent is not ContextLayer.sentence_latent

    def sentence_latent(
        self, summary: tf.Tensor, training: bool = False
    ) -> Tuple[tf.Tensor, tf.Tensor]:
        """The latent that joins every decoder input, and its KL.

        Args:
          summary: the encoder's summary of the source [B, S].
          training: sample the latent (otherwise its mean).

        Returns:
          ``(z [B, L], KL_z [B])``: here ``L = 0`` and a zero KL, so the decoder input
          is unchanged.
        """
        del training
        batch = tf.shape(summary)[:1]
        return tf.zeros(tf.concat([batch, [0]], 0), self.compute_dtype), tf.zeros(batch)

    def token_losses(
        self,
        gold: GoldTarget,
        attention_probs: tf.Tensor,
        kl: tf.Tensor,
        prepared: PreparedMemory,
        training: bool = False,
    ) -> Tuple[tf.Tensor, tf.Tensor]:
        """The per-step loss of the gold sequence after the teacher-forced loop.

        Args:
          gold: the gold words as the host's output layer scores them.
          attention_probs: ``a_t`` [B, T, N] of the loop.
          kl: the loop's per-step KL [B, T] (``kl_divergence``).
          prepared: this batch's ``PreparedMemory``.
          training: the training objective (otherwise the evaluation one).

        Returns:
          ``(token_nll [B, T], kl [B, T])`` that the host's loss reads: here
          ``-gold.soft_log_likelihood`` and ``kl`` as given.
        """
        del attention_probs, prepared, training
        return -gold.soft_log_likelihood, kl

    def output_distribution(
        self,
        logits: tf.Tensor,
        logits_at: Callable[[tf.Tensor], tf.Tensor],
        attention_probs: tf.Tensor,
        prepared: PreparedMemory,
        log: bool = True,
    ) -> tf.Tensor:
        """A decoding step's distribution over the vocabulary, float32 [R, V].

        Args:
          logits: the output layer's logits at the step's context [R, V].
          logits_at: callable, contexts [R, D] or [R, N, D] -> logits [R, (N,) V] (the
            output layer with the step's state bound, ``state_context``).
          attention_probs: ``a_t`` [R, N].
          prepared: the (beam-tiled) ``PreparedMemory``.
          log: log-probabilities (otherwise probabilities).

        Returns:
          Here the (log-)softmax of ``logits``.
        """
        del logits_at, attention_probs, prepared
        logits = tf.cast(logits, tf.float32)
        return tf.nn.log_softmax(logits) if log else tf.nn.softmax(logits)

    def regularization(self) -> tf.Tensor:
        """A penalty on the layer's own parameters for the training loss (0 by default)."""
        return tf.constant(0.0)

    def statistics(self, prepared: Optional[PreparedMemory]) -> Dict[str, tf.Tensor]:
        """Scalars of the mechanism's state on this source batch, for TensorBoard (none
        by default); every host logs them through ``objective.context_terms``."""
        del prepared
        return {}

    def report_posterior(
        self, attention_probs: tf.Tensor, prepared: PreparedMemory
    ) -> Dict[str, tf.Tensor]:
        """What a decode report shows of the posterior, from a decoded sequence's
        attention (nothing by default: no latent variable).

        Args:
          attention_probs: ``a_t`` of the decoded steps [B, T, N].
          prepared: ``prepare``'s result for the source batch.

        Returns:
          Float32 tensors by name, each where the mechanism defines it at decode time:
          ``sigma`` [B, N], the posterior's scale per source position; ``kl`` [B, T],
          the KL per decoder step; ``scale`` [B, T], the posterior's scale per step.
        """
        del attention_probs, prepared
        return {}

    def report_labels(self) -> Dict[str, str]:
        """What each of ``report_posterior``'s values is, by name, in words for the page;
        ``note``: a line on what the mechanism does not show, and why."""
        return {"note": "No latent variable: no posterior scale or KL per step."}

    def prepare(self, memory: tf.Tensor, memory_mask: Optional[tf.Tensor] = None) -> PreparedMemory:
        """Caches the encoder states and padding mask for this source batch.

        Args:
          memory: encoder states [B, N, D].
          memory_mask: [B, N], 1/True for real tokens; None means no padding.

        Returns:
          A ``PreparedMemory``.
        """
        memory = tf.cast(memory, tf.float32)
        if memory_mask is None:
            memory_mask = tf.ones(tf.shape(memory)[:2], tf.float32)
        return PreparedMemory(memory=memory, mask=tf.cast(memory_mask, tf.float32))

    def gumbel_active(self, step: Union[tf.Tensor, int], total_steps: int) -> tf.Tensor:
        """Whether Gumbel-softmax sampling is on at training ``step`` (0-based)."""
        del step, total_steps
        return tf.constant(False)

    def defer_contractions(
        self,
        prepared: PreparedMemory,
        steps: tf.Tensor,
        training: bool = False,
        use_gumbel: Optional[Union[bool, tf.Tensor]] = None,
    ) -> DeferredContractions:
        """A ``DeferredContractions`` for a teacher-forced loop of ``steps`` steps.

        By default the context is ``sum_i w_t,i h_i`` with the attention as the weights,
        so the contraction with the encoder states is deferred; a layer that draws other
        weights or contracts other tensors says so by overriding this.

        Args:
          prepared: ``prepare``'s result for this source batch.
          steps: the number of decoder steps (scalar int tensor).
          training, use_gumbel: as the loop will pass them to ``draw``.
        """
        del training, use_gumbel
        return DeferredContractions(
            prepared, steps, ["memory"], lambda attention: {"memory": attention}
        )

    def draw_steps(
        self,
        probs: tf.Tensor,
        prepared: PreparedMemory,
        training: bool,
        use_gumbel: Optional[Union[bool, tf.Tensor]],
        seed: Optional[tf.Tensor],
    ) -> tf.Tensor:
        """The context [B, T, D] for probs [B, T, N] (float32; ``draw`` casts it): here
        ``sum_i a_t,i h_i``. ``training``, ``use_gumbel`` and ``seed`` as ``call``'s."""
        del training, use_gumbel, seed
        return contract(probs, prepared, "memory")

    def kl_steps(self, context: tf.Tensor, probs: tf.Tensor, prepared: PreparedMemory) -> tf.Tensor:
        """The KL [B, T] of the contexts [B, T, D] drawn for probs [B, T, N] (float32):
        here zero, no latent variable."""
        del context, prepared
        return tf.zeros(tf.shape(probs)[:2])

    def call(
        self,
        attention_probs: tf.Tensor,
        prepared: PreparedMemory,
        training: Optional[bool] = None,
        use_gumbel: Optional[Union[bool, tf.Tensor]] = None,
        seed: Optional[tf.Tensor] = None,
    ) -> Tuple[tf.Tensor, tf.Tensor]:
        """Returns ``(context, kl)`` for the attention probabilities of one or more steps.

        Equal to ``draw`` followed by ``kl_divergence``. A host whose decoder loop feeds
        ``c_t`` back (input feeding) should call ``draw`` inside the loop and
        ``kl_divergence`` once on all steps after it: the KL never feeds the recurrence,
        and one batched call is much cheaper, forward and backward, than T small ones.

        Args:
          attention_probs: ``a_t``, [B, N] or [B, T, N] (zero at padded positions).
          prepared: the ``PreparedMemory`` from ``prepare`` for this source batch.
          training: sample the context (ACVI); otherwise follow ``decode``.
          use_gumbel: Python or tensor bool, take the Gumbel-softmax path; hosts pass
            ``gumbel_active(step, total_steps)``. None: only if ``sampling="gumbel"``.
          seed: optional stateless seed, int tensor [2]; without it the layer's own
            ``tf.random.Generator`` draws (and its state is checkpointed with the layer).

        Returns:
          context [B, D] or [B, T, D] in the layer's compute dtype, and the per-step KL
          [B] or [B, T] in float32 (zeros for SA).
        """
        context = self.draw(attention_probs, prepared, training, use_gumbel, seed)
        return context, self.kl_divergence(context, attention_probs, prepared)

    def draw(
        self,
        attention_probs: tf.Tensor,
        prepared: PreparedMemory,
        training: Optional[bool] = None,
        use_gumbel: Optional[Union[bool, tf.Tensor]] = None,
        seed: Optional[tf.Tensor] = None,
    ) -> tf.Tensor:
        """The context alone: [B, N] -> [B, D] or [B, T, N] -> [B, T, D] (see ``call``)."""
        one_step = len(attention_probs.shape) == 2
        probs = _with_step_axis(tf.cast(attention_probs, tf.float32), one_step)
        context = self.draw_steps(probs, prepared, bool(training), use_gumbel, seed)
        context = tf.cast(context, self.compute_dtype)
        return context[:, 0] if one_step else context

    def kl_divergence(
        self, context: tf.Tensor, attention_probs: tf.Tensor, prepared: PreparedMemory
    ) -> tf.Tensor:
        """Per-step KL in float32: [B] for one step ([B, D], [B, N]) or [B, T] for many."""
        one_step = len(attention_probs.shape) == 2
        kl = self.kl_steps(
            _with_step_axis(tf.cast(context, tf.float32), one_step),
            _with_step_axis(tf.cast(attention_probs, tf.float32), one_step),
            prepared,
        )
        return kl[:, 0] if one_step else kl


def _with_step_axis(tensor, one_step):
    return tensor[:, tf.newaxis] if one_step else tensor


class SoftAttentionContext(ContextLayer):
    """Soft attention: the deterministic context ``c_t = sum_i a_t,i h_i``, no latent
    variable (the contract's defaults); also the context layer of the Transformers,
    whose own attention makes their context, so that every hook the training loop
    calls is off."""


def sampling_options(config: Any) -> Dict[str, Any]:
    """The shared flags a mechanism that draws reads (its ``Mechanism.options``): ``--seed``
    and ``--kl_weight`` where given (unset: the mechanism's own default).

    Args:
      config: a command's ``acvi_tf.config.Config`` with the shared flags.
    """
    options = dict(seed=config.seed)
    if config.kl_weight is not None:
        options["kl_weight"] = config.kl_weight
    return options
