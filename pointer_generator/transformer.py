"""The journal version's Transformer summarizer behind the pointer-generator's interface.

``python -m pointer_generator.run_summarization --model_type=transformer`` trains and
decodes ``acvi_tf.models.transformer.TransformerModel`` (the journal's: 4 encoder and 4 decoder
layers of 256 units, 4 heads, dropout 0.2) with the pointer-generator's data, batcher,
training loop, beam search and metrics. It has no copy mechanism: ``p_gen`` is 1, so the
extended-vocabulary ids of article OOVs get probability 0 and the output is the
vocabulary softmax; train it with ``--pointer_gen=False`` (the baseline's token-mean
loss) or leave the flag on (See's per-example mean, same distribution). No coverage and
no context mechanism: ``--context`` does not apply (its KL is 0), and the attention
reported for heat maps is the last decoder layer's cross-attention, averaged over heads.
"""

from typing import Any, Dict, Optional, Tuple

import tensorflow as tf

from acvi_tf.compat import keras
from acvi_tf.models import transformer
from pointer_generator import batcher as batcher_lib
from pointer_generator import losses as losses_lib

# p_gen = sigmoid(_NO_COPY_LOGIT) is 1.0 in float32 while log(1 - p_gen) stays finite
_NO_COPY_LOGIT = 100.0


class TransformerSummarizer(keras.Model):
    """A ``TransformerModel`` with ``PointerGenerator``'s ``call`` and decoding methods.

    Args:
      vocab_size: V, reserved tokens included (articles and summaries share it).
      num_units, num_layers, num_heads, dropout: the Transformer's sizes.
      max_len: longest summary it can decode.
      pointer_gen: ``compute_loss`` normalises as the pointer-generator (True) or as
        the baseline (``losses.compute_losses``).
    """

    def __init__(
        self,
        vocab_size: int,
        num_units: int = 256,
        num_layers: int = 4,
        num_heads: int = 4,
        dropout: float = 0.2,
        max_len: int = 256,
        pointer_gen: bool = True,
        **kwargs: Any,
    ) -> None:
        super().__init__(**kwargs)
        self.pointer_gen = pointer_gen
        self.vocab_size = vocab_size
        self.transformer = transformer.TransformerModel(
            vocab_size,
            vocab_size,
            num_units,
            num_layers,
            num_heads,
            dropout,
            max_len,
            name="transformer",
        )
        self.context_layer = self.transformer.context_layer

    @staticmethod
    def _source(batch):
        return batch["enc_batch"], tf.cast(
            tf.reduce_sum(batch["enc_padding_mask"], axis=1), tf.int32
        )

    def call(
        self,
        batch: Dict[str, tf.Tensor],
        training: bool = False,
        coverage_on: bool = False,
        use_gumbel: Optional[tf.Tensor] = None,
    ) -> Dict[str, tf.Tensor]:
        """Teacher-forced decoding; the dict ``losses.compute_losses`` reads.

        Args:
          batch: ``enc_batch``, ``enc_padding_mask`` and ``dec_batch``, and for
            ``token_nll`` ``target_batch`` and ``enc_batch_extend_vocab``.
          training: apply dropout.
          coverage_on, use_gumbel: unused (no coverage, no context layer).

        Returns:
          ``PointerGenerator.call``'s dict: ``vocab_logits``, ``attn``, a ``p_gen_logit``
          of 1, zero ``kl`` and ``coverage_terms`` and, when the batch holds
          ``target_batch``, ``token_nll`` [B, T] (``losses.gold_log_likelihood``'s,
          under ``pointer_gen``'s distribution).
        """
        del coverage_on, use_gumbel
        src, src_len = self._source(batch)
        out = self.transformer(
            dict(src=src, src_len=src_len, tgt_in=batch["dec_batch"]), training=training
        )
        steps = tf.shape(batch["dec_batch"])
        out = dict(
            vocab_logits=out["logits"],
            attn=tf.cast(out["attn"], tf.float32),
            p_gen_logit=tf.fill(steps, _NO_COPY_LOGIT),
            kl=out["kl"],
            coverage_terms=tf.zeros(steps),
        )
        if "target_batch" in batch:
            out["token_nll"] = -losses_lib.gold_log_likelihood(out, batch, self.pointer_gen)
        return out

    # ``decode_step`` gives probabilities over the extended vocabulary, as
    # ``PointerGenerator.decode_step`` does
    probability_scores = True

    def start(
        self,
        inputs: Dict[str, tf.Tensor],
        *,
        initial_state_attention: bool = True,
        coverage_on: bool = False,
    ) -> Tuple[Any, Any]:
        """Encodes the articles: ``(constants, state)`` for ``decode_step`` (no recurrent
        state to attend from and no coverage, so ``initial_state_attention`` and
        ``coverage_on`` have no use here)."""
        del initial_state_attention, coverage_on
        src, src_len = self._source(inputs)
        constants, state = self.transformer.start(dict(src=src, src_len=src_len))
        oovs = losses_lib.article_oov_slots(inputs, tf.shape(src)[0])
        return dict(constants, article_oovs=oovs), state

    def decode_step(
        self, tokens: tf.Tensor, state: Any, constants: Any
    ) -> Tuple[tf.Tensor, Any, Dict[str, tf.Tensor]]:
        """One step: probabilities over the extended vocabulary (0 for article OOVs)."""
        tokens = tf.where(tokens >= self.vocab_size, 0, tokens)  # [UNK] id is 0
        output, state, attn, _ = self.transformer.step(
            self.transformer.tgt_embedding(tokens), state, constants
        )
        probs = tf.nn.softmax(tf.cast(self.transformer.output_projection(output), tf.float32))
        probs = tf.pad(probs, [[0, 0], [0, tf.shape(constants["article_oovs"])[1]]])
        return (
            probs,
            state,
            dict(attn=tf.cast(attn, tf.float32), p_gen=tf.ones(tf.shape(tokens)[:1])),
        )

    # what ``training.make_train_step`` reads: the batch it takes, and the total loss
    batch_signature = {
        name: spec for name, spec in batcher_lib.BATCH_SIGNATURE.items() if spec.dtype != tf.string
    }
    loss_key = "total_loss"

    def compute_loss(
        self, batch: Dict[str, tf.Tensor], outputs: Dict[str, tf.Tensor], step: tf.Tensor
    ) -> Dict[str, tf.Tensor]:
        """``PointerGenerator.compute_loss``'s results for these outputs (no copying, no
        coverage, soft attention's zero context terms: ``losses.summarizer_losses``).

        Args:
          batch: the batch the outputs are of.
          outputs: ``call``'s training outputs.
          step: the global step.

        Returns:
          The scalars to log, the total under ``total_loss``.
        """
        return losses_lib.summarizer_losses(
            batch, outputs, step, self.pointer_gen, context_layer=self.context_layer
        )
