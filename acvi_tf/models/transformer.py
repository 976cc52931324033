"""A small Transformer encoder-decoder (Vaswani et al. 2017), the journal version's baseline.

Shared by the NMT host (``--model_type=transformer`` of ``nmt.run_nmt``) and the
summarizer (``pointer_generator.transformer``).

Scaled dot-product multi-head attention (``acvi_tf.contexts.attention.ScaledDotProductScorer``),
causal self-attention in the decoder, sinusoidal positions added to embeddings scaled by
sqrt(d), pre-layer-norm residual blocks with a ReLU feed-forward layer of 4d, dropout on
every sub-layer output. It has the ``NMTModel`` interface (``call``, ``start``, ``step``,
``tgt_embedding``, ``output_projection``), so data, training, decoding and metrics are
shared; its context layer is soft attention's, with every hook off (``--context`` does
not apply), and its KL is zero.
Incremental decoding keeps the embedded target prefix in a fixed buffer of ``max_len``
positions and re-runs the decoder on it (simple and exact; quadratic in the length).
"""

import math
from typing import Dict, Optional, Tuple, Union

import numpy as np
import tensorflow as tf

from acvi_tf.compat import keras
from acvi_tf.contexts import attention as attention_lib
from acvi_tf.contexts import context as context_lib
from acvi_tf.training import objective


def sinusoidal_positions(length: int, depth: int) -> tf.Tensor:
    """[length, depth] sin/cos position encodings (sin on even, cos on odd channels)."""
    positions = np.arange(length)[:, None]
    rates = 1.0 / np.power(10000.0, (2 * (np.arange(depth)[None, :] // 2)) / depth)
    angles = positions * rates
    angles[:, 0::2] = np.sin(angles[:, 0::2])
    angles[:, 1::2] = np.cos(angles[:, 1::2])
    return tf.constant(angles, tf.float32)


class MultiHeadAttention(keras.layers.Layer):
    """Multi-head scaled dot-product attention; returns ``(output, head-mean probs)``."""

    def __init__(self, units: int, num_heads: int, causal: bool = False, **kwargs) -> None:
        super().__init__(**kwargs)
        if units % num_heads:
            raise ValueError("units (%d) must be divisible by num_heads (%d)" % (units, num_heads))
        self.num_heads = num_heads
        self.depth = units // num_heads
        self.query = keras.layers.Dense(units, use_bias=False, name="query")
        self.key = keras.layers.Dense(units, use_bias=False, name="key")
        self.value = keras.layers.Dense(units, use_bias=False, name="value")
        self.out = keras.layers.Dense(units, use_bias=False, name="output")
        self.scorer = attention_lib.ScaledDotProductScorer(causal=causal)

    def _split(self, x):
        batch, length = tf.shape(x)[0], tf.shape(x)[1]
        x = tf.reshape(x, [batch, length, self.num_heads, self.depth])
        return tf.reshape(
            tf.transpose(x, [0, 2, 1, 3]), [batch * self.num_heads, length, self.depth]
        )

    def call(
        self, queries: tf.Tensor, memory: tf.Tensor, memory_mask: tf.Tensor
    ) -> Tuple[tf.Tensor, tf.Tensor]:
        """queries [B, T, d], memory [B, N, d], mask [B, N] -> [B, T, d], [B, T, N]."""
        batch, steps = tf.shape(queries)[0], tf.shape(queries)[1]
        mask = tf.repeat(memory_mask, self.num_heads, axis=0)
        probs = self.scorer(self._split(self.query(queries)), self._split(self.key(memory)), mask)
        heads = tf.matmul(tf.cast(probs, queries.dtype), self._split(self.value(memory)))
        heads = tf.transpose(
            tf.reshape(heads, [batch, self.num_heads, steps, self.depth]), [0, 2, 1, 3]
        )
        output = self.out(tf.reshape(heads, [batch, steps, self.num_heads * self.depth]))
        probs = tf.reshape(probs, [batch, self.num_heads, steps, -1])
        return output, tf.reduce_mean(probs, axis=1)


class _Block(keras.layers.Layer):
    """Pre-norm residual blocks: self-attention, optional cross-attention, feed-forward."""

    def __init__(self, units, num_heads, dropout, causal, cross, **kwargs):
        super().__init__(**kwargs)
        self.self_attention = MultiHeadAttention(units, num_heads, causal=causal)
        self.cross_attention = MultiHeadAttention(units, num_heads) if cross else None
        self.norms = [keras.layers.LayerNormalization() for _ in range(3 if cross else 2)]
        self.ffn = keras.Sequential(
            [keras.layers.Dense(4 * units, activation="relu"), keras.layers.Dense(units)]
        )
        self.drop = keras.layers.Dropout(dropout)

    def call(self, x, self_mask, memory=None, memory_mask=None, training=False):
        y = self.norms[0](x)
        x += self.drop(self.self_attention(y, y, self_mask)[0], training=training)
        probs = None
        if self.cross_attention is not None:
            y, probs = self.cross_attention(self.norms[1](x), memory, memory_mask)
            x += self.drop(y, training=training)
        x += self.drop(self.ffn(self.norms[-1](x)), training=training)
        return x, probs


class TransformerModel(keras.Model):
    """Encoder-decoder Transformer with the ``NMTModel`` interface.

    Args:
      src_vocab_size, tgt_vocab_size: vocabulary sizes.
      num_units: model width d (the ACVI journal's Transformer: 256).
      num_layers: encoder and decoder layers (4).
      num_heads: attention heads (4).
      dropout: dropout rate (0.2).
      max_len: the longest target prefix decoding can build.
    """

    def __init__(
        self,
        src_vocab_size: int,
        tgt_vocab_size: int,
        num_units: int = 256,
        num_layers: int = 4,
        num_heads: int = 4,
        dropout: float = 0.2,
        max_len: int = 256,
        **kwargs,
    ) -> None:
        super().__init__(**kwargs)
        self.num_units = num_units
        self.max_len = max_len
        self.src_embedding = keras.layers.Embedding(src_vocab_size, num_units)
        self.tgt_embedding = keras.layers.Embedding(tgt_vocab_size, num_units)
        self.encoder_blocks = [
            _Block(num_units, num_heads, dropout, False, False) for _ in range(num_layers)
        ]
        self.decoder_blocks = [
            _Block(num_units, num_heads, dropout, True, True) for _ in range(num_layers)
        ]
        self.encoder_norm = keras.layers.LayerNormalization()
        self.decoder_norm = keras.layers.LayerNormalization()
        self.output_projection = keras.layers.Dense(tgt_vocab_size, use_bias=False)
        self.input_dropout = keras.layers.Dropout(dropout)
        self.positions = sinusoidal_positions(max(max_len, 1024), num_units)
        # the training loop's hooks (samples, KL weight, Gumbel, annealing, penalty) are
        # those of soft attention, i.e. all off: the model's own attention makes its context
        self.context_layer = context_lib.SoftAttentionContext(name="context")

    def _embed(self, embedded, training):
        length = tf.shape(embedded)[1]
        x = embedded * math.sqrt(self.num_units) + self.positions[tf.newaxis, :length]
        return self.input_dropout(x, training=training)

    # ``decode_step`` gives log-probabilities (``decoding.DecodingModel``)
    probability_scores = False

    def start(
        self, inputs: Dict[str, tf.Tensor], *, training: bool = False
    ) -> Tuple[Dict[str, tf.Tensor], Dict[str, tf.Tensor]]:
        """Encodes the source (``inputs``: ``src`` [B, S], ``src_len`` [B]); returns the
        constants and the empty decoding state."""
        src = inputs["src"]
        mask = tf.sequence_mask(inputs["src_len"], tf.shape(src)[1])
        x = self._embed(self.src_embedding(src), training)
        for block in self.encoder_blocks:
            x, _ = block(x, mask, training=training)
        batch = tf.shape(src)[0]
        state = dict(
            prefix=tf.zeros([batch, self.max_len, self.num_units]),
            length=tf.zeros([batch], tf.int32),
        )
        return dict(memory=self.encoder_norm(x), mask=mask), state

    def _decode(self, embedded, constants, training):
        x = self._embed(embedded, training)
        self_mask = tf.ones(tf.shape(x)[:2], tf.bool)  # the causal mask is in the scorer
        probs = None
        for block in self.decoder_blocks:
            x, probs = block(
                x, self_mask, constants["memory"], constants["mask"], training=training
            )
        return self.decoder_norm(x), probs

    def step(
        self,
        y_emb: tf.Tensor,
        state: Dict[str, tf.Tensor],
        constants: Dict[str, tf.Tensor],
        training: bool = False,
        use_gumbel: Optional[Union[bool, tf.Tensor]] = None,
    ) -> Tuple[tf.Tensor, Dict[str, tf.Tensor], tf.Tensor, None]:
        """Appends ``y_emb`` [B, d] to the prefix and returns the last position's output."""
        del use_gumbel
        t = state["length"][0]
        at_t = tf.equal(tf.range(self.max_len), t)[tf.newaxis, :, tf.newaxis]
        prefix = tf.where(at_t, y_emb[:, tf.newaxis], state["prefix"])
        outputs, probs = self._decode(prefix[:, : t + 1], constants, training)
        state = dict(prefix=prefix, length=state["length"] + 1)
        return outputs[:, -1], state, probs[:, -1], None

    def log_probs(
        self,
        output: tf.Tensor,
        state: Dict[str, tf.Tensor],
        attn: tf.Tensor,
        context: Optional[tf.Tensor],
        constants: Dict[str, tf.Tensor],
    ) -> tf.Tensor:
        """``log p(y_t)`` [B, V] of a decoding step (``NMTModel.log_probs``'s signature)."""
        del state, attn, context, constants
        return tf.nn.log_softmax(tf.cast(self.output_projection(output), tf.float32))

    def decode_step(
        self, tokens: tf.Tensor, state: Dict[str, tf.Tensor], constants: Dict[str, tf.Tensor]
    ) -> Tuple[tf.Tensor, Dict[str, tf.Tensor], Dict[str, tf.Tensor]]:
        """One search step (``acvi_tf.inference.decoding``'s protocol): the previous tokens [B] ->
        ``(log p(y_t) [B, V], state, {"attn": the last layer's cross-attention})``."""
        output, state, attn, context = self.step(self.tgt_embedding(tokens), state, constants)
        return self.log_probs(output, state, attn, context, constants), state, {"attn": attn}

    def call(
        self,
        batch: Dict[str, tf.Tensor],
        training: bool = False,
        use_gumbel: Optional[Union[bool, tf.Tensor]] = None,
    ) -> Dict[str, tf.Tensor]:
        """Teacher-forced decoding.

        Args:
          batch: ``src``, ``src_len`` and ``tgt_in`` [B, T], and for ``token_nll``
            ``tgt_out`` [B, T].
          training: apply dropout.
          use_gumbel: unused (nothing is sampled).

        Returns:
          ``logits`` [B, T, V], ``attn`` [B, T, S] (the last layer's cross-attention),
          zero ``kl`` [B, T] and, when the batch holds ``tgt_out``, ``token_nll`` [B, T]
          (the cross-entropy of the gold words).
        """
        del use_gumbel
        constants, _ = self.start(batch, training=training)
        outputs, probs = self._decode(self.tgt_embedding(batch["tgt_in"]), constants, training)
        out = dict(
            logits=self.output_projection(outputs),
            attn=probs,
            kl=tf.zeros(tf.shape(batch["tgt_in"]), tf.float32),
        )
        if "tgt_out" in batch:
            out["token_nll"] = -context_lib.gold_log_likelihood(out["logits"], batch["tgt_out"])
        return out

    # what ``training.make_train_step`` reads: the batch it takes (NMT's), and the total
    batch_signature = {
        "src": tf.TensorSpec([None, None], tf.int32),
        "src_len": tf.TensorSpec([None], tf.int32),
        "tgt_in": tf.TensorSpec([None, None], tf.int32),
        "tgt_out": tf.TensorSpec([None, None], tf.int32),
        "tgt_len": tf.TensorSpec([None], tf.int32),
    }
    loss_key = "train_loss"

    def compute_loss(
        self, batch: Dict[str, tf.Tensor], outputs: Dict[str, tf.Tensor], step: tf.Tensor
    ) -> Dict[str, tf.Tensor]:
        """``NMTModel.compute_loss``'s results, from the NLL alone (soft attention's zero
        context terms).

        Args:
          batch: the batch the outputs are of.
          outputs: ``call``'s training outputs.
          step: the global step.

        Returns:
          The total under ``train_loss``, ``nll``, ``predict_count`` and zero KL logs.
        """
        return objective.sequence_objective(
            outputs,
            batch["tgt_out"],
            batch["tgt_len"],
            step,
            self.context_layer,
            total_key=self.loss_key,
            count_key="predict_count",
        )
