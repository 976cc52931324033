"""The hosts' teacher-forced decoder loop: one explicit ``tf.while_loop`` over the gold
target's steps, with the context layer's loop gradients deferred
(``acvi_tf.contexts.loop_gradients``). Every host model's ``call`` runs its decoder
through ``teacher_forced``, for training and for teacher-forced evaluation.
"""

from typing import TYPE_CHECKING, Any, Callable, Dict, Optional, Tuple, Union

import tensorflow as tf

if TYPE_CHECKING:
    from acvi_tf.contexts.context import ContextLayer
    from acvi_tf.contexts.memory import PreparedMemory


def time_major(tensor: tf.Tensor) -> tf.Tensor:
    """Swaps the first two axes: [B, T, ...] -> [T, B, ...] (and back)."""
    return tf.transpose(tensor, [1, 0] + list(range(2, tensor.shape.rank)))


def unroll(
    step_fn: Callable[..., Tuple[Any, Dict[str, tf.Tensor]]],
    steps: tf.Tensor,
    state: Any,
    output_dtypes: Dict[str, tf.DType],
    inputs: Any = None,
) -> Tuple[Any, Dict[str, tf.Tensor]]:
    """Runs a teacher-forced decoder loop as one explicit ``tf.while_loop``.

    Written out rather than left to AutoGraph, so that training steps can be traced with
    ``autograph=False``: converting every function a step calls costs about 40% of the
    trace time and buys nothing here.

    Args:
      step_fn: ``(t, state) -> (state, outputs)``, or ``(t, state, step_inputs)`` when
        ``inputs`` is given; ``outputs`` a dict of [B, ...] tensors.
      steps: number of steps (scalar int tensor).
      state: the initial loop state, a nest of tensors whose structure, dtypes and
        shapes every step keeps.
      output_dtypes: dict, name -> dtype of each entry of ``outputs``.
      inputs: optional nest of time-major [T, B, ...] tensors; step t gets the same nest
        of their [B, ...] slices. Read through ``tf.TensorArray``, so the backward loop
        stacks their gradients instead of adding a [T, B, ...] slice gradient into an
        accumulator at every step (which indexing a batch-major tensor with ``[:, t]``
        costs).

    Returns:
      ``(state, outputs)``: the final state and every output stacked batch-major,
      [B, T, ...].
    """
    arrays = {name: tf.TensorArray(dtype, size=steps) for name, dtype in output_dtypes.items()}
    input_arrays = None
    if inputs is not None:
        input_arrays = tf.nest.map_structure(
            lambda value: tf.TensorArray(value.dtype, size=steps).unstack(value), inputs
        )

    def body(t, state, arrays):
        if input_arrays is None:
            state, outputs = step_fn(t, state)
        else:
            state, outputs = step_fn(
                t, state, tf.nest.map_structure(lambda array: array.read(t), input_arrays)
            )
        return t + 1, state, {name: arrays[name].write(t, outputs[name]) for name in arrays}

    # maximum_iterations bounds the gradient's accumulators, which XLA needs.
    _, state, arrays = tf.while_loop(
        lambda t, *_: t < steps, body, (tf.constant(0), state, arrays), maximum_iterations=steps
    )
    outputs = {}
    for name, array in arrays.items():
        outputs[name] = time_major(array.stack())
    return state, outputs


def teacher_forced(
    step_fn: Callable[[tf.Tensor, Any, "PreparedMemory"], Tuple[Any, Dict[str, tf.Tensor]]],
    inputs: tf.Tensor,
    state: Any,
    output_dtypes: Dict[str, tf.DType],
    context_layer: "ContextLayer",
    prepared: "PreparedMemory",
    training: bool = False,
    use_gumbel: Optional[Union[bool, tf.Tensor]] = None,
) -> Tuple[Any, Dict[str, tf.Tensor]]:
    """``unroll`` over the decoder inputs, with the context layer's loop gradients deferred.

    The hosts' training loop: step t gets its input and a ``PreparedMemory`` through which
    ``context_layer.draw`` forms the gradients of its products with the encoder states
    (and ACVI's sigma^2) after the loop (``acvi_tf.contexts.loop_gradients``).

    Args:
      step_fn: ``(y_t, state, prepared_t) -> (state, outputs)``; ``outputs`` a dict of
        [B, ...] tensors holding ``attn``, the attention the step passed to ``draw``
        together with ``prepared_t``.
      inputs: the decoder inputs, [B, T, ...].
      state: the initial loop state (see ``unroll``).
      output_dtypes: dict, name -> dtype of each entry of ``outputs``.
      context_layer: the model's ``ContextLayer``.
      prepared: ``context_layer.prepare``'s result for this source batch.
      training, use_gumbel: as the steps pass them to ``draw``.

    Returns:
      ``(state, outputs)`` as ``unroll``'s.
    """
    steps = tf.shape(inputs)[1]
    deferred = context_layer.defer_contractions(prepared, steps, training, use_gumbel)

    def step(t, state, step_inputs):
        del t
        return step_fn(step_inputs["y"], state, deferred.at_step(step_inputs["context"]))

    state, outputs = unroll(
        step,
        steps,
        state,
        output_dtypes,
        inputs=dict(y=time_major(inputs), context=deferred.inputs),
    )
    deferred.bind(outputs["attn"])
    return state, outputs
