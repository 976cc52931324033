"""Exports a trained translator as a TensorFlow SavedModel that translates raw strings.

``python -m nmt.export --out_dir=runs/mine --export_dir=served/1`` writes a SavedModel
whose graph holds the whole path of ``nmt.translate``: the corpus's ``tftext``
tokenisation (``acvi_tf.text.graph_tokenizer``), its BPE segmentation when it has one
(``acvi_tf.text.graph_bpe``, equal to subword-nmt's), the source vocabulary lookup, the run's
greedy, sampled or GNMT beam search with its best weights (``--infer_mode``,
``--beam_width``, ``--length_penalty_weight``, ``--sampling_temperature`` and ``--seed``
change it; a sampling export draws with one seed, so a batch gives the same samples at
every call), and the target words joined by spaces (``@@`` markers removed). Its
signatures:

- ``serving_default``: ``sentences`` [B] string -> ``translations`` [B] string,
  ``scores`` [B] float32 (the search's score). An empty sentence gives "".
- ``tokenize``: ``texts`` [B] string -> ``tokens`` [B] string, the source tokens the
  model reads (BPE segments on a BPE corpus), joined by spaces.

Loading needs TensorFlow and tensorflow-text only (``import tensorflow_text`` first).
``--pretokenized`` (for a Treebank or PTB corpus) exports a model that takes sentences
tokenised as the corpus was; BPE is still applied in the graph. The search runs without
XLA.
"""

from typing import Callable, Dict, Optional, Tuple

import tensorflow as tf
from absl import flags

from acvi_tf import config as config_lib
from acvi_tf.config import Config
from acvi_tf.formats import nmt_text
from acvi_tf.inference import export as export_lib
from acvi_tf.text import graph_bpe
from nmt import experiment, translate
from nmt import translator as translator_lib

_SENTENCES = tf.TensorSpec([None], tf.string)


def define_flags(fv: flags.FlagValues = flags.FLAGS) -> None:
    """Defines the command's flags on ``fv``."""
    translate.define_run_flags(fv)
    export_lib.define_flags(fv)


class ServedTranslator(tf.Module):
    """Raw sentences in, translations out, every step a TensorFlow op.

    Args:
      translator: an ``nmt.translator.Translator`` with the run's vocabularies.
      tokenize: ``texts [B] -> tokens [B, (n)]`` (``acvi_tf.inference.export.graph_tokenizer_for``).
      bpe_codes: the path of the corpus's subword-nmt codes, or None without BPE.
    """

    def __init__(
        self,
        translator: translator_lib.Translator,
        tokenize: Callable[[tf.Tensor], tf.RaggedTensor],
        bpe_codes: Optional[str] = None,
    ) -> None:
        super().__init__(name="translator")
        self._variables = list(translator.model.variables)  # saved with the graph
        self._search = translator.search
        self._tokenize = tokenize
        self._bpe_ranks = graph_bpe.read_ranks(bpe_codes) if bpe_codes else None
        self._src_ids = export_lib.vocabulary_table(translator.vocabs.src.words(), nmt_text.UNK_ID)
        self._tgt_words = tf.constant(translator.vocabs.tgt.words())

    def _source_tokens(self, texts):
        tokens = self._tokenize(texts)
        if self._bpe_ranks is None:
            return tokens
        return graph_bpe.segment(tokens, self._bpe_ranks)

    @tf.function(input_signature=[_SENTENCES])
    def translate(self, sentences: tf.Tensor) -> Dict[str, tf.Tensor]:
        """``sentences`` [B] -> ``translations`` [B], ``scores`` [B]."""
        tokens = self._source_tokens(sentences)
        src_len = tf.cast(tokens.row_lengths(), tf.int32)
        ids = tf.ragged.map_flat_values(self._src_ids.lookup, tokens)
        # padded with </s> to the longest source, one column at least (data.infer_dataset)
        width = tf.maximum(tf.reduce_max(tf.concat([src_len, [0]], 0)), 1)
        src = ids.to_tensor(nmt_text.EOS_ID, shape=tf.stack([tf.shape(sentences)[0], width]))
        out = self._search(dict(src=src, src_len=src_len))
        translations = export_lib.join_words(tf.gather(self._tgt_words, out["ids"]), out["lengths"])
        if self._bpe_ranks is not None:
            translations = tf.strings.regex_replace(translations, "@@( |$)", "")
        empty = tf.equal(src_len, 0)
        return dict(
            translations=tf.where(empty, "", translations),
            scores=tf.where(empty, 0.0, out["scores"]),
        )

    @tf.function(input_signature=[_SENTENCES])
    def tokenize(self, texts: tf.Tensor) -> Dict[str, tf.Tensor]:
        """``texts`` [B] -> ``tokens`` [B], each text's source tokens joined by spaces."""
        tokens = self._source_tokens(texts)
        return dict(tokens=tf.strings.reduce_join(tokens, axis=1, separator=" "))


def _served(config: Config, pretokenized: bool) -> Tuple[ServedTranslator, Dict[str, Callable]]:
    """The served translator of the run ``config`` describes, and its signatures."""
    record, settings, codes = translate.corpus_record(config)
    tokenize = export_lib.graph_tokenizer_for(record, settings, pretokenized)
    translator = experiment.load_decoder(config, config.ckpt)
    module = ServedTranslator(translator, tokenize, codes)
    return module, {"serving_default": module.translate, "tokenize": module.tokenize}


def run(config: Config) -> ServedTranslator:
    """Exports the run in ``--out_dir`` to ``--export_dir``."""
    given = translate.given_settings(config)
    return export_lib.export_run(
        config,
        lambda: translate.run_config(config.out_dir, given).replace(ckpt=config.ckpt),
        lambda model_config: _served(model_config, config.pretokenized),
        "translator",
    )


if __name__ == "__main__":
    config_lib.run_command(define_flags, run)
