"""The encoders' sequence LSTM, in a form XLA can compile when asked.

Keras's ``LSTM`` layer picks its kernel (cuDNN or the plain loop) at run time; XLA cannot
compile cuDNN's op, and on CPU it treats the layer's inputs and weights as compile-time
constants, so a ``jit_compile`` training step recompiles after every update of the weights
(and for every new batch). The same ``LSTMCell`` in a generic ``RNN`` layer compiles once
per shape. Both compute the same function with the same variables (the layer's ``cell``
holds ``kernel``, ``recurrent_kernel`` and ``bias`` either way, so checkpoints are
interchangeable).
"""
import tensorflow as tf

# LSTM-layer arguments that belong to the cell.
_CELL_ARGS = ("activation", "recurrent_activation", "use_bias", "kernel_initializer",
              "recurrent_initializer", "bias_initializer", "unit_forget_bias",
              "kernel_regularizer", "recurrent_regularizer", "bias_regularizer",
              "dropout", "recurrent_dropout")


def sequence_lstm(units, xla=False, return_state=True, **kwargs):
    """An LSTM over a sequence: its outputs (masked steps zeroed), then ``h`` and ``c``.

    Args:
      units: state size.
      xla: build the XLA-compilable form (``RNN(LSTMCell)``) instead of ``LSTM``.
      return_state: return the final ``h`` and ``c`` after the outputs.
      **kwargs: ``tf.keras.layers.LSTM`` arguments (initialisers, ``dropout``, ``name``,
        ``go_backwards`` ...).

    Returns:
      A Keras layer with ``return_sequences=True``.
    """
    if not xla:
        return tf.keras.layers.LSTM(units, return_sequences=True, return_state=return_state,
                                    **kwargs)
    cell = tf.keras.layers.LSTMCell(
        units, name="lstm_cell", **{k: kwargs.pop(k) for k in _CELL_ARGS if k in kwargs})
    kwargs.setdefault("name", "lstm")
    return tf.keras.layers.RNN(cell, return_sequences=True, return_state=return_state,
                               zero_output_for_mask=True, **kwargs)
