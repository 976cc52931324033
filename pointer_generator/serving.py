"""The summarizer's commands on a trained run: new text tokenised as the run's corpus
was and decoded with the run's best model (``pointer_generator.summarize``), and the same
path in TensorFlow ops as a SavedModel (``pointer_generator.export``). The summarizer's
Task (``pointer_generator.task``) hands them to the Runner.
"""

import os
from typing import Any, Callable, Dict, List, Tuple

import tensorflow as tf
from absl import flags

from acvi_tf import flags as acvi_flags
from acvi_tf import progress as progress_lib
from acvi_tf.config import Config
from acvi_tf.formats import see_vocab
from acvi_tf.inference import export as export_lib
from acvi_tf.runner.task import Task
from acvi_tf.text import tokenizers
from acvi_tf.training import checkpoints
from pointer_generator import batcher as batcher_lib
from pointer_generator import decode as decode_lib
from pointer_generator import experiment

CORPUS_RECORD = "corpus.json"
# What to do about a corpus record that cannot be read.
CORPUS_FIX = "rebuild the corpus with data_prep.summarization, or restore the file"
# the flags of a command on the run that replace the run's recorded ones when given
GIVEN_FLAGS = (
    "beam_size",
    "min_dec_steps",
    "max_dec_steps",
    "max_enc_steps",
    "decode_batch_size",
    "allow_data_change",
)
_DOCUMENTS = tf.TensorSpec([None], tf.string)


def define_run_flags(fv: flags.FlagValues = flags.FLAGS) -> None:
    """Defines the flags that name a trained run and its decoding settings on ``fv``."""
    flags.DEFINE_string("log_root", None, "The run's --log_root.", flag_values=fv)
    flags.DEFINE_string("exp_name", None, "The run's --exp_name.", flag_values=fv)
    flags.DEFINE_string(
        "ckpt",
        None,
        "Checkpoint: %s (default: best/'s best model, else train/'s newest)."
        % checkpoints.CKPT_HELP,
        flag_values=fv,
    )
    for name, help_text, lower_bound in (
        ("beam_size", "Beam width. Default: the run's.", 1),
        (
            "min_dec_steps",
            "Shortest summary, in tokens. Default: See's 35, at most 35% of max_dec_steps.",
            0,
        ),
        ("max_dec_steps", "Longest summary, in tokens. Default: the run's.", 1),
        ("max_enc_steps", "Document truncation length, in tokens. Default: the run's.", 1),
        ("decode_batch_size", "Documents per batched beam search. Default: the run's.", 1),
    ):
        flags.DEFINE_integer(name, None, help_text, lower_bound=lower_bound, flag_values=fv)
    acvi_flags.define_allow_data_change(fv)
    flags.mark_flags_as_required(["log_root", "exp_name"], flag_values=fv)


def corpus_record_path(vocab_path: str) -> str:
    """The path of the corpus record next to the vocabulary."""
    return os.path.join(os.path.dirname(os.path.abspath(vocab_path)), CORPUS_RECORD)


def corpus_record(vocab_path: str) -> Tuple[str, Dict[str, Any]]:
    """The path of the corpus record next to the vocabulary, and its settings
    (``tokenizer``, ``lowercase``; Treebank and lowercase without one)."""
    record = corpus_record_path(vocab_path)
    return record, tokenizers.corpus_settings(record, CORPUS_FIX)


def corpus_tokenizer(vocab_path: str) -> Callable[[str], str]:
    """The tokenizer of the corpus the vocabulary belongs to (its ``corpus.json``)."""
    _, settings = corpus_record(vocab_path)
    return tokenizers.tokenizer(settings["tokenizer"], settings["lowercase"])


def summarize(
    documents: List[str],
    summarizer: decode_lib.Summarizer,
    tokenize: Callable[[str], str],
    config: Config,
) -> List[str]:
    """Summaries of tokenised ``documents`` (raw strings), in order."""
    pad_id = summarizer.vocab.word2id(see_vocab.PAD_TOKEN)
    tokens = [tokenize(document) if document.strip() else "" for document in documents]
    summaries = [""] * len(tokens)
    todo = [i for i, t in enumerate(tokens) if t]
    progress = progress_lib.Progress(len(todo), "summarised documents")
    for first in range(0, len(todo), config.decode_batch_size):
        rows = todo[first : first + config.decode_batch_size]
        examples = [
            batcher_lib.Example(
                tokens[i],
                [],
                summarizer.vocab,
                config.max_enc_steps,
                config.max_dec_steps,
                config.pointer_gen,
            )
            for i in rows
        ]
        batch = batcher_lib.make_batch(examples, pad_id, config.max_dec_steps)
        for i, result in zip(rows, summarizer.decode(batch)):
            summaries[i] = " ".join(result["words"])
        progress(first + len(rows))
    return summaries


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


def given_settings(config: Config) -> Dict[str, Any]:
    """The settings a command on the run gives (``GIVEN_FLAGS``; None: the run's)."""
    return {name: config[name] for name in GIVEN_FLAGS}


def files_read(config: Config) -> List[str]:
    """What a command on the run reads beside the run's folder: the vocabulary, the
    corpus record and the training files the run's record names."""
    return [
        config.vocab_path,
        corpus_record_path(config.vocab_path),
        *acvi_flags.trained_on(experiment.run_dir(config)),
    ]


def raw_text(task: Task, config: Config) -> Callable[[List[str]], List[str]]:
    """Documents -> summaries with the run ``config`` describes (its best model, or
    ``--ckpt``'s), in the folders of ``task`` (the summarizer's)."""
    summarizer = experiment.load_decoder(task, config)
    tokenize = corpus_tokenizer(config.vocab_path)
    return lambda documents: summarize(documents, summarizer, tokenize, config)


def served_module(
    task: Task, config: Config, pretokenized: bool
) -> Tuple[tf.Module, Dict[str, Callable]]:
    """The served summarizer of the run ``config`` describes, in the folders of ``task``
    (the summarizer's), and its signatures."""
    tokenize = export_lib.graph_tokenizer_for(*corpus_record(config.vocab_path), pretokenized)
    summarizer = experiment.load_decoder(task, config)
    module = ServedSummarizer(summarizer, config.max_enc_steps, config.pointer_gen, tokenize)
    return module, {
        "serving_default": module.summarize,
        "summarize_with_attention": module.summarize_with_attention,
        "tokenize": module.tokenize,
    }
