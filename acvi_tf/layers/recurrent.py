"""The encoders' sequence LSTM, with its input projection outside the recurrent loop.

Keras's ``LSTM`` layer computes ``x_t W + h_{t-1} U + b`` inside its loop on CPU: T small
matmuls forward, and in the backward loop T more for ``dx_t`` plus T outer products added
into ``dW``. Only ``h_{t-1} U`` depends on the previous step, so ``ProjectedLSTM`` forms
``X W + b`` for the whole sequence in one matmul before the loop (and its gradients in two
after it) and keeps only the recurrent product inside. The loop itself is Keras's
``backend.rnn``, which XLA also compiles once per shape (Keras's ``LSTM`` picks its kernel
at run time, and XLA on CPU treats that kernel's weights as compile-time constants, so a
``jit_compile`` step would recompile after every update).

On a machine with a GPU, and unless XLA is asked for, ``sequence_lstm`` keeps Keras's
``LSTM`` so that cuDNN's fused kernel runs. Every form holds the same ``LSTMCell``
(``cell.kernel``, ``cell.recurrent_kernel``, ``cell.bias``), so checkpoints move between
them.
"""

from typing import List, Optional, Sequence, Union

import tensorflow as tf

from acvi_tf.compat import keras

# LSTM-layer arguments that belong to the cell.
_CELL_ARGS = (
    "activation",
    "recurrent_activation",
    "use_bias",
    "kernel_initializer",
    "recurrent_initializer",
    "bias_initializer",
    "unit_forget_bias",
    "kernel_regularizer",
    "recurrent_regularizer",
    "bias_regularizer",
    "dropout",
    "recurrent_dropout",
)


class ProjectedLSTM(keras.layers.RNN):
    """``RNN(LSTMCell)`` whose input projection runs once over the whole sequence.

    Computes what ``keras.layers.LSTM`` computes: gate order i, f, c, o; masked steps
    carry the state and output zeros; ``go_backwards``; input dropout drawn independently
    at every step, as Keras's ``LSTM`` layer (and tensorflow/nmt's ``DropoutWrapper``)
    draws it.

    Args:
      cell: a ``keras.layers.LSTMCell`` without recurrent dropout.
      **kwargs: ``keras.layers.RNN`` arguments; ``stateful``, ``unroll`` and
        ``time_major`` are not supported.

    Raises:
      ValueError: for another cell, recurrent dropout, or an unsupported RNN argument.
    """

    def __init__(self, cell: keras.layers.LSTMCell, **kwargs) -> None:
        if not isinstance(cell, keras.layers.LSTMCell):
            raise ValueError("ProjectedLSTM needs a keras.layers.LSTMCell, got %r" % cell)
        if cell.recurrent_dropout:
            raise ValueError(
                "ProjectedLSTM has no recurrent dropout; use "
                "keras.layers.LSTM for recurrent_dropout=%s" % cell.recurrent_dropout
            )
        for name in ("stateful", "unroll", "time_major"):
            if kwargs.get(name):
                raise ValueError("ProjectedLSTM does not support %s=True" % name)
        kwargs["zero_output_for_mask"] = True
        super().__init__(cell, **kwargs)

    def call(
        self,
        inputs: tf.Tensor,
        mask: Optional[tf.Tensor] = None,
        training: Optional[bool] = None,
        initial_state: Optional[Sequence[tf.Tensor]] = None,
    ) -> Union[tf.Tensor, List[tf.Tensor]]:
        """Runs the LSTM over ``inputs`` [B, T, E]; Keras's ``RNN`` outputs."""
        cell = self.cell
        units = cell.units
        if initial_state is None:
            initial_state = cell.get_initial_state(
                batch_size=tf.shape(inputs)[0], dtype=inputs.dtype
            )
        if 0.0 < cell.dropout < 1.0:
            cell.reset_dropout_mask()  # a new mask per step, as Keras's LSTM draws it
            inputs = inputs * cell.get_dropout_mask_for_cell(inputs, training, count=1)
        bound = {}  # the states h_{t-1} [B, T, H], stacked after the loop
        projected = _with_recurrent_kernel_gradient(
            _input_projection(inputs, cell), cell.recurrent_kernel, bound
        )
        recurrent_product = _matmul_without_kernel_gradient(cell.recurrent_kernel)
        if mask is not None:
            mask = tf.nest.flatten(mask)[0]

        def step(x_projected, states):
            h_prev, c_prev = states
            z_i, z_f, z_c, z_o = tf.split(x_projected + recurrent_product(h_prev), 4, axis=-1)
            c = cell.recurrent_activation(z_f) * c_prev + cell.recurrent_activation(
                z_i
            ) * cell.activation(z_c)
            h = cell.recurrent_activation(z_o) * cell.activation(c)
            return tf.concat([h, h_prev], axis=-1), [h, c]

        last_output, outputs, states = keras.backend.rnn(
            step,
            projected,
            list(initial_state),
            go_backwards=self.go_backwards,
            mask=mask,
            input_length=inputs.shape[1],
            zero_output_for_mask=True,
        )
        h_prev = tf.stop_gradient(outputs[..., units:])
        bound["h_prev"] = tf.reverse(h_prev, [1]) if self.go_backwards else h_prev
        output = outputs[..., :units] if self.return_sequences else last_output[..., :units]
        return [output] + list(states) if self.return_state else output


def _input_projection(inputs, cell):
    """``x_t W + b`` for every step at once: [B, T, 4H].

    One [B*T, E] x [E, 4H] product: a batched product broadcasting ``W`` over B forms
    ``W``'s gradient as B matrices and sums them (2.3x slower at the captioner's size).
    """
    rows = tf.matmul(tf.reshape(inputs, [-1, cell.kernel.shape[0]]), cell.kernel)
    if cell.use_bias:
        rows = tf.nn.bias_add(rows, cell.bias)
    return tf.reshape(rows, tf.concat([tf.shape(inputs)[:2], [-1]], axis=0))


def _with_recurrent_kernel_gradient(projected, recurrent_kernel, bound):
    """``projected`` unchanged; its gradient ``dz`` also gives ``dU = sum_t h_{t-1}^T dz_t``.

    ``dz_t``, the gradient of step t's gate pre-activations, is the gradient of
    ``projected[:, t]``, so ``U``'s gradient is one product with the states ``h_{t-1}``
    that ``call`` puts into ``bound["h_prev"]`` (time in ``projected``'s order) after the
    loop, instead of T outer products added up inside the backward loop (masked steps have
    ``dz_t = 0``).
    """

    @tf.custom_gradient
    def identity(projected, recurrent_kernel):
        def grad(dz):
            return dz, tf.einsum("bth,btg->hg", bound["h_prev"], dz)

        return tf.identity(projected), grad

    return identity(projected, recurrent_kernel)


def _matmul_without_kernel_gradient(kernel):
    """``h -> h U`` whose gradient ``dz U^T`` multiplies by ``U^T`` formed once.

    TensorFlow's CPU kernel is 2-4x slower for ``dz`` [B, 4H] times a transposed [H, 4H]
    matrix than for the same product with the transpose stored (BENCHMARKS.md, the
    encoder reading), and the backward loop forms this product at every step. ``U`` gets
    no gradient here (``_with_recurrent_kernel_gradient`` gives it).
    """
    kernel = tf.stop_gradient(kernel)
    kernel_t = tf.transpose(kernel)

    @tf.custom_gradient
    def product(h):
        return tf.matmul(h, kernel), lambda dz: tf.matmul(dz, kernel_t)

    return product


def sequence_lstm(
    units: int, xla: bool = False, return_state: bool = True, **kwargs
) -> keras.layers.Layer:
    """An LSTM over a sequence: its outputs (masked steps zeroed), then ``h`` and ``c``.

    Args:
      units: state size.
      xla: a form XLA compiles, also on a GPU (``ProjectedLSTM``; without a GPU it is the
        form used anyway).
      return_state: return the final ``h`` and ``c`` after the outputs.
      **kwargs: ``keras.layers.LSTM`` arguments (initialisers, ``dropout``, ``name``,
        ``go_backwards`` ...).

    Returns:
      A Keras layer with ``return_sequences=True``: Keras's ``LSTM`` (cuDNN) when a GPU is
      visible and ``xla`` is False, ``ProjectedLSTM`` otherwise.
    """
    if not xla and tf.config.list_physical_devices("GPU"):
        return keras.layers.LSTM(units, return_sequences=True, return_state=return_state, **kwargs)
    cell = keras.layers.LSTMCell(
        units, name="lstm_cell", **{k: kwargs.pop(k) for k in _CELL_ARGS if k in kwargs}
    )
    kwargs.setdefault("name", "lstm")
    return ProjectedLSTM(cell, return_sequences=True, return_state=return_state, **kwargs)
