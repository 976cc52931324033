"""Gradients of a decoder loop's contractions with loop-invariant tensors, formed once.

At every step t of a teacher-forced decoder loop a context layer contracts the step's
weights w_t [B, N] with tensors X [B, N, D] that stay fixed for the whole loop: the
encoder states (``c_t = sum_i w_t,i h_i``) and, for ACVI, the variances
(``sum_i w_t,i^2 sigma_i^2``). Backpropagation through ``tf.while_loop`` forms the gradient
of such an X as an outer product ``w_t (x) g_t`` at every step, ``g_t`` [B, D] being the
gradient of the step's contraction, and adds it to a [B, N, D] accumulator: T outer
products and T additions of a [B, N, D] tensor, a memory-bound pass over X per step.

``DeferredContractions`` gets the same gradient as one batched product after the loop,
``dX = W^T G`` with ``W`` [B, T, N] the stacked weights and ``G`` [B, T, D] the stacked
``g_t``. Each step contracts with ``stop_gradient(X)`` and adds a zero probe ``z_t``
[B, D], read from a [T, B, D] loop input; the loop's backward pass stacks the probes'
gradients, which are exactly the ``g_t``, and the probe tensor's custom gradient turns
them into ``dX`` with the weights bound after the loop. Values are unchanged; the
gradients agree with the in-loop ones to float32 rounding.

``acvi_tf.training.teacher_forcing.teacher_forced`` runs the hosts' training loops with
it: it calls the context layer's ``defer_contractions`` before the loop, gives every step
``at_step``'s memory and calls ``bind`` with the stacked attention after it.
"""

from typing import Callable, Dict, Optional, Sequence

import tensorflow as tf

from acvi_tf.contexts.memory import PreparedMemory


class DeferredContractions:
    """The loop inputs, per-step memory and deferred gradients of one decoder loop.

    Args:
      prepared: the context layer's ``PreparedMemory`` for this source batch.
      steps: number of decoder steps T (scalar int tensor).
      sources: the names (``PreparedMemory.field``, e.g. ``"memory"``) of the tensors
        whose contraction to defer; each is a [B, N, D] float32 tensor.
      weights_fn: ``attn [B, T, N] -> dict`` giving, for every name in ``sources``, the
        stacked weights [B, T, N] the steps contracted that source with.
      extra_inputs: dict, name -> [T, B, ...] tensor the layer reads at each step (e.g.
        noise drawn before the loop so that ``weights_fn`` can reproduce the weights).
    """

    def __init__(
        self,
        prepared: PreparedMemory,
        steps: tf.Tensor,
        sources: Sequence[str] = (),
        weights_fn: Optional[Callable[[tf.Tensor], Dict[str, tf.Tensor]]] = None,
        extra_inputs: Optional[Dict[str, tf.Tensor]] = None,
    ) -> None:
        self._prepared = prepared
        self._weights_fn = weights_fn
        self._weights = None
        self.inputs = dict(extra_inputs or {})
        for name in sources:
            self.inputs[name] = self._probe(name, prepared.field(name), steps)

    def _probe(self, name, source, steps):
        """Zeros [T, B, D] whose gradient dz sends ``W^T dz`` to ``source``."""

        @tf.custom_gradient
        def probe(source):
            def grad(dz):
                if self._weights is None:
                    raise ValueError(
                        "DeferredContractions: gradient requested before bind(); call "
                        "bind(stacked_attention) after the decoder loop"
                    )
                return tf.matmul(self._weights[name], tf.transpose(dz, [1, 0, 2]), transpose_a=True)

            shape = tf.shape(source)
            return tf.zeros(tf.stack([steps, shape[0], shape[2]]), source.dtype), grad

        return probe(source)

    def at_step(self, step_inputs: Dict[str, tf.Tensor]) -> PreparedMemory:
        """The ``PreparedMemory`` for one step, given that step's slice of ``inputs``."""
        return self._prepared._replace(step_inputs=step_inputs)

    def bind(self, attention: tf.Tensor) -> None:
        """Gives the probes' gradients the loop's stacked attention ``a_t`` [B, T, N]."""
        if self._weights_fn is None:
            self._weights = {}
        else:
            self._weights = {
                name: tf.stop_gradient(weights)
                for name, weights in self._weights_fn(attention).items()
            }
