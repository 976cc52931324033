"""NMT as a library: its run's vocabularies, model, checkpoint checks and translator,
built from a ``Config`` (``run_nmt``'s flags, or a run's record of them).

The translator's Task (``nmt.task``) and its jobs build the run from these; the Runner
restores it (``acvi_tf.runner.restoring``) in the folders the Task names.
"""

import functools
import os
from typing import Any, Callable, Dict, List, Optional, Tuple

import tensorflow as tf
from absl import logging

from acvi_tf import builders
from acvi_tf import flags as acvi_flags
from acvi_tf.compat import keras
from acvi_tf.config import Config
from acvi_tf.formats import bpe, nmt_text, vocabulary
from acvi_tf.models import transformer
from acvi_tf.runner import inference
from acvi_tf.runner.task import Task
from nmt import data
from nmt import model as model_lib
from nmt import translator as translator_lib

# The search settings an inference logs.
SEARCH_FLAGS = (
    "infer_mode",
    "beam_width",
    "length_penalty_weight",
    "sampling_temperature",
    "seed",
    "infer_batch_size",
)
# Of those, the flags that only sampling reads (logged with --infer_mode=sample only).
SAMPLING_FLAGS = ("sampling_temperature", "seed")


# The corpus record the builder writes beside its vocabularies (data_prep.translation).
CORPUS_RECORD = "corpus.json"


def vocab_paths(config: Config) -> List[str]:
    """The source and target vocabulary files ``--vocab_prefix`` names."""
    return ["%s.%s" % (config.vocab_prefix, lang) for lang in (config.src, config.tgt)]


def corpus_files(config: Config) -> Tuple[str, Optional[str]]:
    """The paths of the corpus record and of the BPE codes (None without BPE) that the
    run's vocabulary sits beside."""
    folder = os.path.dirname(os.path.abspath(config.vocab_prefix))
    if config.subword_option != "bpe":
        return os.path.join(folder, CORPUS_RECORD), None
    # the vocabulary is in the corpus's bpe/ folder
    return os.path.join(os.path.dirname(folder), CORPUS_RECORD), os.path.join(folder, "codes")


def files_read(config: Config) -> List[str]:
    """What a command that uses the run reads, beside the run's own files, which its
    outputs must not replace: the vocabularies, the corpus record and BPE codes, the
    training files the run's record names and the dev and test files it validates on."""
    scored = [
        "%s.%s" % (prefix, lang)
        for prefix in (config.dev_prefix, config.test_prefix)
        if prefix
        for lang in (config.src, config.tgt)
    ]
    return [
        *vocab_paths(config),
        *filter(None, corpus_files(config)),
        *acvi_flags.trained_on(config.out_dir),
        *scored,
    ]


def load_vocabs(config: Config) -> data.Vocabs:
    """The source and target vocabularies, ``--vocab_prefix`` with ``--src`` and
    ``--tgt`` (``nmt_text.check_vocab``: special tokens first, else a fixed copy in the
    run's folder)."""
    vocabs, what = [], "the vocabulary the run trained with"
    for given in vocab_paths(config):
        acvi_flags.check_recorded_file(
            config, "vocab_prefix", given, what, config.out_dir, nmt_text.NmtDataError
        )
        if not os.path.isfile(given):
            raise nmt_text.NmtDataError(
                "%s: no such file (--vocab_prefix=%s, with --src=%s and --tgt=%s); give the "
                "prefix of the two vocabulary files <prefix>.%s and <prefix>.%s (%s)"
                % (
                    given,
                    config.vocab_prefix,
                    config.src,
                    config.tgt,
                    config.src,
                    config.tgt,
                    nmt_text.BUILD_HINT,
                )
            )
        _, path = nmt_text.check_vocab(given, config.out_dir)
        vocabs.append(data.Vocab(path))
    return data.Vocabs(*vocabs)


def words(config: Config) -> Callable[[str], str]:
    """``translation -> its words``: with ``--subword_option=bpe`` the ``@@`` markers
    removed (tensorflow/nmt's ``format_bpe_text``), else the line as it is. Every file,
    score and page of translations reads them so."""
    return bpe.remove_bpe if config.subword_option == "bpe" else _unchanged


def _unchanged(line: str) -> str:
    return line


def check_search(config: Config) -> None:
    """Refuses a beam search of no width and sampling at no temperature, as
    tensorflow/nmt does.

    Raises:
      acvi_tf.flags.DecodeSettingError: ``--infer_mode=beam_search`` with
        ``--beam_width=0``, or ``--infer_mode=sample`` with ``--sampling_temperature=0``.
    """
    if config.infer_mode == "beam_search" and config.beam_width <= 0:
        raise acvi_flags.DecodeSettingError(
            "--infer_mode=beam_search needs --beam_width > 0, got --beam_width=%d; give "
            "--beam_width=10 (the ACVI paper's) or another width" % config.beam_width
        )
    if config.infer_mode == "sample" and config.sampling_temperature <= 0:
        raise acvi_flags.DecodeSettingError(
            "--infer_mode=sample needs --sampling_temperature > 0, got %g; give "
            "--sampling_temperature=1.0 (the model's own distribution) or another"
            % config.sampling_temperature
        )


def dummy_batch() -> Dict[str, tf.Tensor]:
    """A batch of one one-token pair, to build every variable."""
    return {
        k: tf.ones([1, 1] if spec.shape.rank == 2 else [1], tf.int32)
        for k, spec in data.BATCH_SIGNATURE.items()
    }


def build_model(config: Config, vocabs: data.Vocabs) -> keras.Model:
    """The model the flags describe (``--model_type``), with every variable built."""
    if config.model_type == "transformer":
        model = transformer.TransformerModel(
            vocabs.src.size(),
            vocabs.tgt.size(),
            config.num_units,
            config.num_layers,
            config.num_heads,
            config.dropout,
        )
    else:
        model = model_lib.NMTModel(
            vocabs.src.size(),
            vocabs.tgt.size(),
            config.num_units,
            config.num_encoder_layers or config.num_layers,
            config.num_decoder_layers or config.num_layers,
            config.encoder_type,
            config.attention,
            config.output_attention,
            config.pass_hidden_state,
            config.dropout,
            config.init_weight,
            builders.context_layer(config),
            jit_compile=config.jit_compile,
            seed=config.seed,
            kl_terms=builders.kl_schedule(config),
        )
    model(dummy_batch())
    return model


def vocabularies(config: Config, vocabs: data.Vocabs, codes: bool = True) -> Dict[str, Any]:
    """The run's source and target vocabularies for its record, and with ``codes`` the
    corpus's BPE codes, which split new text into the vocabularies' pieces, where it has
    them (``acvi_flags.check_vocabularies``)."""
    found = {
        side: (
            vocabulary_source(config, lang),
            vocabulary.fingerprint([vocab.id2word(i) for i in range(vocab.size())]),
        )
        for side, lang, vocab in (
            ("source", config.src, vocabs.src),
            ("target", config.tgt, vocabs.tgt),
        )
    }
    path = corpus_files(config)[1]
    if codes and path and os.path.isfile(path):
        with open(path, encoding="utf-8") as f:  # its merges, after subword-nmt's header
            merges = [line for line in f.read().splitlines() if not line.startswith("#version")]
        found["bpe_codes"] = (path, vocabulary.fingerprint(merges, "merges"))
    return found


def vocabulary_source(config: Config, lang: str) -> str:
    """Where a refusal says the ``lang`` vocabulary came from (its flags)."""
    path = "%s.%s" % (config.vocab_prefix, lang)
    return acvi_flags.vocabulary_source(config, ["vocab_prefix"], "--vocab_prefix=" + path, path)


def log_search(config: Config) -> None:
    """Logs the search settings of an inference in one line, each with its source."""
    shown = [
        name for name in SEARCH_FLAGS if config.infer_mode == "sample" or name not in SAMPLING_FLAGS
    ]
    logging.info(
        "Translating with %s; at most twice the longest source of each batch",
        acvi_flags.describe(config, shown),
    )
    if config.infer_mode != "beam_search" and "beam_width" in config.given:
        logging.warning(
            "--beam_width=%d is unused: infer_mode is %s; add --infer_mode=beam_search "
            "for a beam search",
            config.beam_width,
            config.infer_mode,
        )
    if config.infer_mode != "sample" and "sampling_temperature" in config.given:
        logging.warning(
            "--sampling_temperature=%g is unused: infer_mode is %s; add --infer_mode=sample "
            "to sample",
            config.sampling_temperature,
            config.infer_mode,
        )


def build_decoder(
    config: Config, model: keras.Model, vocabs: data.Vocabs
) -> translator_lib.Translator:
    """The search of the run's inference flags over ``model``."""
    return translator_lib.Translator(
        model,
        vocabs,
        config.infer_mode,
        config.beam_width,
        config.length_penalty_weight,
        config.jit_compile,
        config.sampling_temperature,
        config.seed,
    )


def load_decoder(task: Task, config: Config) -> translator_lib.Translator:
    """The run's model with its best weights (or ``--ckpt``'s), restored by the Runner
    (``acvi_tf.runner.inference``), as a ``Translator`` (which holds the run's
    vocabularies): what the inference commands translate with. The BPE codes that
    segment raw text count in the check of the run's vocabularies.

    Args:
      task: the translator's Task, which names the run's folders.
      config: the run's settings.

    Raises:
      acvi_tf.flags.DecodeSettingError: a beam search of no width.
      acvi_tf.training.checkpoints.CheckpointError: the run holds no checkpoint.
    """
    check_search(config)
    vocabs = load_vocabs(config)

    def decoder(model, path, step):
        del path, step
        log_search(config)
        return build_decoder(config, model, vocabs)

    build = functools.partial(build_model, config, vocabs)
    return inference.drive(
        task, config, inference.InferenceRun(vocabs, build, decoder, preprocessing=True)
    )
