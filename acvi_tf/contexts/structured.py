"""Structured attention (Kim, Denton, Hoang and Rush, ICLR 2017): the ACVI paper's eq. (20).

The "segmentation attention" of harvardnlp/struct-attn: each source position i has a
binary selection variable ``z_i``, and the ``z`` of one decoder step form a first-order
linear-chain CRF over the source:

* unary potentials ``theta_i(1) = e_t,i`` (the host's attention energy, e.g. the Luong
  score ``h_t^T W x_i``) and ``theta_i(0) = 0``;
* a learned 2x2 transition matrix ``A(z_{i-1}, z_i)`` shared by all positions, starting
  at zeros; the start edge scores ``z_1`` with the mean of ``A``'s column for ``z_1``
  and the end edge scores ``z_L`` with the mean of ``A``'s row for ``z_L`` (the
  original's lattice ends), ``L`` the source length;
* node marginals ``p_i = p(z_i = 1 | x, h_t)`` by a log-space forward-backward pass
  (autodiff differentiates it, where the original hand-writes a second pass);
* the marginals do not sum to 1; the original L1-normalises them and scales by
  ``lambda`` (2 by default): ``c_t = lambda sum_i (p_i / sum_j p_j) x_i``.

The host gets ``p_i / sum_j p_j`` as its attention distribution (for heat maps, the
pointer-generator's copy distribution and coverage) and ``c_t`` from ``draw``. Padded
positions have ``p_i = 0`` and do not enter the chain. There is no KL term; the
original's L2 penalty ``lambda2 ||A||^2`` (0.005) is the layer's ``regularization``.
"""

from typing import Any, Dict, Optional, Union

import tensorflow as tf
from absl import flags

from acvi_tf.contexts import context as context_lib
from acvi_tf.contexts.memory import PreparedMemory

DEFAULT_LAMBDA = 2.0  # struct-attn's -lambda
DEFAULT_PENALTY = 0.005  # struct-attn's -lambda2


def crf_marginals(unary: tf.Tensor, transitions: tf.Tensor, mask: tf.Tensor) -> tf.Tensor:
    """Node marginals ``p(z_i = 1)`` of the 2-state chain, by forward-backward in log space.

    Args:
      unary: [..., N] potentials ``theta_i(1)`` (``theta_i(0) = 0``).
      transitions: [2, 2] ``A(z_{i-1}, z_i)``.
      mask: [..., N], 1 for real positions; padding must be at the end.

    Returns:
      float32 [..., N]: the marginals, 0 at padded positions.
    """
    unary = tf.cast(unary, tf.float32)
    mask = tf.cast(mask, tf.float32)
    transitions = tf.cast(transitions, tf.float32)
    start = tf.reduce_mean(transitions, axis=0)  # [2]: mean over the previous state
    end = tf.reduce_mean(transitions, axis=1)  # [2]: mean over the next state
    # [N, ..., 2] node potentials and masks, position-major for the scans
    nodes = tf.stack([tf.zeros_like(unary), unary], axis=-1)
    rank = len(unary.shape)
    perm = [rank - 1] + list(range(rank - 1))
    nodes_t = tf.transpose(nodes, perm + [rank])
    real_t = tf.transpose(mask, perm)[..., tf.newaxis] > 0.0

    def forward(alpha, inputs):
        node, real = inputs
        # alpha'(z) = logsumexp_z' alpha(z') + A(z', z), then the node; padding: identity
        step = tf.reduce_logsumexp(alpha[..., :, tf.newaxis] + transitions, axis=-2) + node
        return tf.where(real, step, alpha)

    first = start + nodes_t[0]
    alphas = tf.scan(forward, (nodes_t[1:], real_t[1:]), initializer=first)
    alphas = tf.concat([first[tf.newaxis], alphas], axis=0)  # [N, ..., 2]

    def backward(beta, inputs):
        node, real = inputs  # of position i; returns beta of position i - 1
        step = tf.reduce_logsumexp(transitions + (node + beta)[..., tf.newaxis, :], axis=-1)
        return tf.where(real, step, beta)

    last = tf.broadcast_to(end, tf.shape(first))
    betas = tf.scan(backward, (nodes_t[1:], real_t[1:]), initializer=last, reverse=True)
    betas = tf.concat([betas, last[tf.newaxis]], axis=0)  # [N, ..., 2]
    log_z = tf.reduce_logsumexp(alphas[-1] + end, axis=-1)  # [...]
    selected = alphas[..., 1] + betas[..., 1] - log_z  # [N, ...]
    inverse = list(range(1, rank)) + [0]
    return tf.exp(tf.transpose(selected, inverse)) * mask


class StructuredAttentionContext(context_lib.ContextLayer):
    """The context of structured attention: CRF marginals, L1-normalised and scaled.

    Args:
      scale: ``lambda``, the sum of the context's weights (struct-attn: 2).
      penalty: ``lambda2``, the weight of the L2 penalty on the transitions.
    """

    def __init__(
        self, scale: float = DEFAULT_LAMBDA, penalty: float = DEFAULT_PENALTY, **kwargs: Any
    ) -> None:
        super().__init__(**kwargs)
        self.scale = scale
        self.penalty = penalty

    def build(self, input_shape: tf.TensorShape) -> None:
        self.transitions = self.add_weight(
            name="transitions", shape=[2, 2], initializer="zeros", dtype=tf.float32
        )
        super().build(input_shape)

    def prepare(self, memory: tf.Tensor, memory_mask: Optional[tf.Tensor] = None) -> PreparedMemory:
        """As ``ContextLayer.prepare``; builds the transition matrix on first use."""
        if not self.built:
            self.build(memory.shape)
        return super().prepare(memory, memory_mask)

    def normalizer(self, scores: tf.Tensor, mask: tf.Tensor) -> tf.Tensor:
        """The attention distribution ``p_i / sum_j p_j`` from energies [..., N]."""
        if not self.built:
            self.build(scores.shape)
        marginals = crf_marginals(scores, self.transitions, mask)
        return tf.math.divide_no_nan(marginals, tf.reduce_sum(marginals, axis=-1, keepdims=True))

    def draw_steps(
        self,
        probs: tf.Tensor,
        prepared: PreparedMemory,
        training: bool,
        use_gumbel: Optional[Union[bool, tf.Tensor]],
        seed: Optional[tf.Tensor],
    ) -> tf.Tensor:
        """``lambda sum_i a_t,i x_i`` [B, T, D] for the normalised marginals [B, T, N]."""
        del training, use_gumbel, seed
        return self.scale * context_lib.contract(probs, prepared, "memory")

    def regularization(self) -> tf.Tensor:
        """``lambda2 sum A^2``, struct-attn's penalty on the CRF parameters."""
        return self.penalty * tf.reduce_sum(tf.square(self.transitions))

    def kl_steps(self, context: tf.Tensor, probs: tf.Tensor, prepared: PreparedMemory) -> tf.Tensor:
        """Zero KL [B, T]: the CRF is not a latent variable of the objective."""
        del context, prepared
        return tf.zeros(tf.shape(probs)[:2])

    def report_labels(self) -> Dict[str, str]:
        """Says why the report shows no posterior: the CRF adds no KL term."""
        return {
            "note": "Structured attention: the context is an expectation under the CRF's "
            "marginals (the attention shown), with no latent KL, so no KL per step or "
            "posterior scale."
        }

    def get_config(self) -> dict:
        config = super().get_config()
        config.update(scale=self.scale, penalty=self.penalty)
        return config


def define_flags(fv: flags.FlagValues) -> None:
    """Defines ``--structured_lambda`` and ``--structured_penalty`` on ``fv``."""
    flags.DEFINE_float(
        "structured_lambda",
        2.0,
        "--context=structured: the context is lambda * sum_i p_i / sum_j p_j * h_i "
        "(struct-attn's -lambda, 2).",
        lower_bound=0.0,
        flag_values=fv,
    )
    flags.DEFINE_float(
        "structured_penalty",
        0.005,
        "--context=structured: weight of the L2 penalty on the CRF transition matrix "
        "(struct-attn's -lambda2).",
        lower_bound=0.0,
        flag_values=fv,
    )


def options(config: Any) -> Dict[str, Any]:
    """The layer's arguments from a command's ``acvi_tf.config.Config``."""
    return dict(scale=config.structured_lambda, penalty=config.structured_penalty)
