"""Exports a trained summarizer as a TensorFlow SavedModel that summarises raw strings.

``python -m pointer_generator.export --log_root=logs --exp_name=mine --export_dir=served/1``
writes a SavedModel whose graph holds the whole path from text to summary: the corpus's
``tftext`` tokenisation (``acvi_tf.text.graph_tokenizer``), truncation to ``--max_enc_steps``,
the vocabulary lookup with each document's own out-of-vocabulary words (the copy
mechanism's extended vocabulary), the batched beam search of ``--mode=decode`` with the
run's best weights, and the summary's words joined by spaces. Its signatures:

- ``serving_default``: ``documents`` [B] string -> ``summaries`` [B] string, ``scores``
  [B] float32 (the beam's normalised log-probability). An empty document gives "".
- ``summarize_with_attention``: the same plus ``tokens`` [B, N] (the document's tokens,
  "" padded), ``attention`` [B, T, N] and ``p_gens`` [B, T] of each summary word (zeros
  for an empty document, which has none).
- ``tokenize``: ``texts`` [B] string -> ``tokens`` [B] string, joined by spaces.

Loading needs TensorFlow and tensorflow-text only::

  import tensorflow as tf
  import tensorflow_text  # registers the tokeniser's ops
  served = tf.saved_model.load("served/1")
  served.signatures["serving_default"](documents=tf.constant(["A text ..."]))

A corpus built with ``--tokenizer=treebank`` or ``ptb`` has no graph form of its
tokeniser: ``--pretokenized`` exports a model that takes text already tokenised as the
corpus was (tokens separated by spaces) instead. The beam search runs without XLA.
"""

from typing import Callable, Dict, Optional, Tuple

import tensorflow as tf
from absl import flags

from acvi_tf import config as config_lib
from acvi_tf.config import Config
from acvi_tf.formats import see_vocab
from acvi_tf.inference import export as export_lib
from pointer_generator import decode as decode_lib
from pointer_generator import experiment, summarize

_DOCUMENTS = tf.TensorSpec([None], tf.string)


def define_flags(fv: flags.FlagValues = flags.FLAGS) -> None:
    """Defines the command's flags on ``fv``."""
    summarize.define_run_flags(fv)
    export_lib.define_flags(fv)


class ServedSummarizer(tf.Module):
    """Raw documents in, summaries out, every step a TensorFlow op.

    Args:
      summarizer: a ``decode.Summarizer``.
      max_enc_steps: document truncation length, in tokens.
      pointer_gen: the model copies (it reads the extended-vocabulary ids).
      tokenize: ``texts [B] -> tokens [B, (n)]`` (``acvi_tf.inference.export.graph_tokenizer_for``).
    """

    def __init__(
        self,
        summarizer: decode_lib.Summarizer,
        max_enc_steps: int,
        pointer_gen: bool,
        tokenize: Callable[[tf.Tensor], tf.RaggedTensor],
    ) -> None:
        super().__init__(name="summarizer")
        vocab = summarizer.vocab
        self._variables = list(summarizer.model.variables)  # saved with the graph
        self._search = summarizer.search
        self._search_with_attention = summarizer.search_with_attention
        self._max_enc_steps = max_enc_steps
        self._pointer_gen = pointer_gen
        self._tokenize = tokenize
        self._size = vocab.size()
        self._pad_id = vocab.word2id(see_vocab.PAD_TOKEN)
        self._unk_id = vocab.word2id(see_vocab.UNKNOWN_TOKEN)
        words = vocab.words()
        self._words = tf.constant(words)
        self._ids = export_lib.vocabulary_table(words, self._unk_id)

    def _extended_ids(self, tokens, ids):
        """Each document's out-of-vocabulary words get ids V, V+1, ... in order of first
        appearance (``vocab.article2ids``): the flat ids with those, and the words."""
        flat_ids = ids.flat_values
        oov = tf.equal(flat_ids, self._unk_id)
        positions = tf.where(oov)
        oov_words = tf.boolean_mask(tokens.flat_values, oov)
        oov_rows = tf.boolean_mask(tokens.value_rowids(), oov)
        keys = tf.strings.join([tf.strings.as_string(oov_rows), oov_words], separator=" ")
        unique, index = tf.unique(keys)
        count = tf.size(unique)
        first = tf.math.unsorted_segment_min(tf.range(tf.size(keys)), index, count)
        unique_rows = tf.gather(oov_rows, first)
        # keys are in row-major order, so each row's words are one run of ``unique``
        row_start = tf.math.unsorted_segment_min(
            tf.range(count), tf.cast(unique_rows, tf.int32), tokens.nrows(tf.int32)
        )
        local = index - tf.gather(row_start, oov_rows)
        extended = tf.tensor_scatter_nd_update(flat_ids, positions, self._size + local)
        oovs = tf.RaggedTensor.from_value_rowids(
            tf.gather(oov_words, first), unique_rows, nrows=tokens.nrows()
        )
        return ids.with_flat_values(extended), oovs

    def batch(
        self, documents: tf.Tensor
    ) -> Tuple[Dict[str, tf.Tensor], tf.RaggedTensor, tf.Tensor, tf.RaggedTensor]:
        """The decode fields of ``batcher.make_batch`` for raw documents.

        Args:
          documents: [B] raw documents.

        Returns:
          ``(batch, tokens, lengths, oovs)``: the decode fields, the documents' tokens
          [B, (n)] (truncated to ``max_enc_steps``), their counts [B] and each
          document's out-of-vocabulary words [B, (m)] (none without ``pointer_gen``).
        """
        tokens = self._tokenize(documents)[:, : self._max_enc_steps]
        lengths = tf.cast(tokens.row_lengths(), tf.int32)
        ids = tf.ragged.map_flat_values(self._ids.lookup, tokens)
        if self._pointer_gen:
            extended, oovs = self._extended_ids(tokens, ids)
        else:
            extended = ids
            oovs = tf.RaggedTensor.from_row_lengths(tf.constant([""])[:0], 0 * lengths)
        # an empty document reads one padding token (its summary is dropped)
        width = tf.maximum(tf.reduce_max(tf.concat([lengths, [0]], 0)), 1)
        shape = tf.stack([tf.shape(documents)[0], width])
        oov_counts = tf.cast(oovs.row_lengths(), tf.int32)
        batch = dict(
            enc_batch=ids.to_tensor(self._pad_id, shape=shape),
            enc_padding_mask=tf.sequence_mask(tf.maximum(lengths, 1), width, tf.float32),
            enc_batch_extend_vocab=extended.to_tensor(self._pad_id, shape=shape),
            max_art_oovs=tf.reduce_max(tf.concat([oov_counts, [0]], 0)),
        )
        return batch, tokens, lengths, oovs

    def _decode(self, documents, search):
        batch, tokens, lengths, oovs = self.batch(documents)
        rows = tf.shape(documents)[0]
        out = search(batch)
        in_vocab = out["ids"] < self._size
        oov_words = oovs.to_tensor("", shape=tf.stack([rows, batch["max_art_oovs"] + 1]))
        words = tf.where(
            in_vocab,
            tf.gather(self._words, tf.minimum(out["ids"], self._size - 1)),
            tf.gather(oov_words, tf.maximum(out["ids"] - self._size, 0), batch_dims=1),
        )
        summaries = export_lib.join_words(words, out["lengths"])
        empty = tf.equal(lengths, 0)
        return (
            tokens,
            dict(
                summaries=tf.where(empty, "", summaries),
                scores=tf.where(empty, 0.0, out["scores"]),
            ),
            out,
        )

    @tf.function(input_signature=[_DOCUMENTS])
    def summarize(self, documents: tf.Tensor) -> Dict[str, tf.Tensor]:
        """``documents`` [B] -> ``summaries`` [B], ``scores`` [B]."""
        _, results, _ = self._decode(documents, self._search)
        return results

    @tf.function(input_signature=[_DOCUMENTS])
    def summarize_with_attention(self, documents: tf.Tensor) -> Dict[str, tf.Tensor]:
        """``summarize`` plus ``tokens`` [B, N], ``attention`` [B, T, N], ``p_gens`` [B, T]."""
        tokens, results, out = self._decode(documents, self._search_with_attention)
        empty = tf.equal(tokens.row_lengths(), 0)  # no summary word: no row either
        results.update(
            tokens=tokens.to_tensor(""),
            attention=tf.where(empty[:, None, None], 0.0, out["attn"]),
            p_gens=tf.where(empty[:, None], 0.0, out["p_gen"]),
        )
        return results

    @tf.function(input_signature=[tf.TensorSpec([None], tf.string)])
    def tokenize(self, texts: tf.Tensor) -> Dict[str, tf.Tensor]:
        """``texts`` [B] -> ``tokens`` [B], each text's tokens joined by spaces."""
        return dict(tokens=tf.strings.reduce_join(self._tokenize(texts), axis=1, separator=" "))


def _served(
    config: Config, ckpt: Optional[str], pretokenized: bool
) -> Tuple[ServedSummarizer, Dict[str, Callable]]:
    """The served summarizer of the run ``config`` describes, and its signatures."""
    tokenize = export_lib.graph_tokenizer_for(
        *summarize.corpus_record(config.vocab_path), pretokenized
    )
    summarizer = experiment.load_decoder(config, ckpt)
    module = ServedSummarizer(summarizer, config.max_enc_steps, config.pointer_gen, tokenize)
    return module, {
        "serving_default": module.summarize,
        "summarize_with_attention": module.summarize_with_attention,
        "tokenize": module.tokenize,
    }


def run(config: Config) -> ServedSummarizer:
    """Exports the run named by ``--log_root``/``--exp_name`` to ``--export_dir``."""
    given = {name: config[name] for name in summarize.GIVEN_FLAGS}
    return export_lib.export_run(
        config,
        lambda: summarize.run_config(config.log_root, config.exp_name, given),
        lambda model_config: _served(model_config, config.ckpt, config.pretokenized),
        "summarizer",
    )


if __name__ == "__main__":
    config_lib.run_command(define_flags, run)
