"""The translator's commands on a trained run: new text tokenised (and BPE segmented)
as the run's corpus was and translated with the run's best model (``nmt.translate``),
and the same path in TensorFlow ops as a SavedModel (``nmt.export``). The translator's
Task (``nmt.task``) hands them to the Runner.
"""

from typing import Any, Callable, Dict, List, Optional, Tuple

import tensorflow as tf
from absl import flags

from acvi_tf import progress as progress_lib
from acvi_tf.config import Config
from acvi_tf.formats import bpe, nmt_text
from acvi_tf.inference import commands
from acvi_tf.inference import export as export_lib
from acvi_tf.runner.task import Task
from acvi_tf.text import graph_bpe, tokenizers
from nmt import experiment
from nmt import translator as translator_lib

# What to do about a corpus record that cannot be read.
CORPUS_FIX = "rebuild the corpus with data_prep.translation, or restore the file"
_SENTENCES = tf.TensorSpec([None], tf.string)


def define_run_flags(fv: flags.FlagValues = flags.FLAGS) -> None:
    """Defines the flags that name a trained run and its search settings on ``fv``."""
    commands.define_run_flags(fv, "best/", "beam_width", 0, "infer_batch_size", "Sentences")
    flags.DEFINE_enum(
        "infer_mode",
        None,
        ["greedy", "sample", "beam_search"],
        "Search (sample with --sampling_temperature, beam_search with --beam_width). "
        "Default: the run's.",
        flag_values=fv,
    )
    flags.DEFINE_float(
        "sampling_temperature",
        None,
        "Softmax temperature of infer_mode=sample (> 0). Default: the run's.",
        lower_bound=0.0,
        flag_values=fv,
    )
    flags.DEFINE_integer(
        "seed", None, "Seed of infer_mode=sample's draws. Default: the run's.", flag_values=fv
    )
    flags.DEFINE_float(
        "length_penalty_weight",
        None,
        "GNMT length penalty alpha of a beam search. Default: the run's.",
        lower_bound=0.0,
        flag_values=fv,
    )


def given_settings(config: Config) -> Dict[str, Any]:
    """The flags a command gives that replace the run's recorded ones: the search flags
    (``experiment.SEARCH_FLAGS``; None: the run's) and ``--allow_data_change``."""
    given = {name: getattr(config, name) for name in experiment.SEARCH_FLAGS}
    return dict(given, allow_data_change=config.allow_data_change)


def corpus_record(config: Config) -> Tuple[str, Dict[str, Any], Optional[str]]:
    """The corpus record's path, its settings (``tokenizer``, ``lowercase``; Treebank and
    lowercase without one) and the BPE codes' path (None without BPE)."""
    record, codes = experiment.corpus_files(config)
    return record, tokenizers.corpus_settings(record, CORPUS_FIX), codes


def preprocessor(config: Config) -> Callable[[str], str]:
    """``raw line -> the model's source line``: the corpus's tokenizer, then its BPE."""
    _, settings, codes = corpus_record(config)
    segment = bpe.segmenter(codes) if codes else None
    tokenize = tokenizers.tokenizer(settings["tokenizer"], settings["lowercase"])
    return lambda line: segment(tokenize(line)) if segment else tokenize(line)


def raw_text(task: Task, config: Config) -> Callable[[List[str]], List[str]]:
    """Raw sentences -> translations with the run ``config`` describes (its best
    model, or ``--ckpt``'s), in the folders of ``task`` (the translator's)."""
    searcher = experiment.load_decoder(task, config)
    prepare = preprocessor(config)
    words = experiment.words(config)
    return lambda sentences: translate(sentences, searcher, prepare, words, config)


def translate(
    sentences: List[str],
    searcher: translator_lib.Translator,
    prepare: Callable[[str], str],
    words: Callable[[str], str],
    config: Config,
) -> List[str]:
    """Translations of raw ``sentences``, in order.

    Args:
      sentences: the raw sentences.
      searcher: the restored run's search.
      prepare: a raw sentence -> the model's source line (``preprocessor``).
      words: a hypothesis -> its words (``experiment.words``: BPE marks removed).
      config: the run's settings (``--infer_batch_size``).
    """
    sources = [prepare(s) if s.strip() else "" for s in sentences]
    progress = progress_lib.Progress(len(sources), "translated sentences")
    hypotheses = searcher.translate(sources, config.infer_batch_size, progress)
    return [words(h) if s else "" for h, s in zip(hypotheses, sources)]


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


def served_module(
    task: Task, config: Config, pretokenized: bool
) -> Tuple[tf.Module, Dict[str, Callable]]:
    """The served translator of the run ``config`` describes, in the folders of ``task``
    (the translator's), and its signatures."""
    record, settings, codes = corpus_record(config)
    tokenize = export_lib.graph_tokenizer_for(record, settings, pretokenized)
    translator = experiment.load_decoder(task, config)
    module = ServedTranslator(translator, tokenize, codes)
    return module, {"serving_default": module.translate, "tokenize": module.tokenize}
