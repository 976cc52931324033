"""Translations of new text with a trained run.

``python -m nmt.translate --out_dir=models/en_it --input=new.en`` reads one sentence per
line (``--input``, a file or ``-`` for standard input), tokenises each the way the run's
corpus was built (its ``corpus.json``, written by ``data_prep.translation``; Treebank and
lowercase without one), segments it with the corpus's BPE codes when the run trained on
``bpe/`` (``--subword_option=bpe``), translates ``--infer_batch_size`` sentences per
batched search with the run's best dev-BLEU model (else its newest checkpoint, or
``--ckpt``) and writes one translation per line (``--output``, default standard
output), the ``@@`` markers removed. The model and the search are the ones the run's
``hparams.json`` records; ``--beam_width`` and ``--infer_batch_size`` may be given here.
``nmt.run_nmt --inference_input_file`` stays tensorflow/nmt's command over already
tokenised text.

Usage::

  python -m nmt.translate --out_dir=models/en_it --input=new.en --output=new.it
  cat new.en | python -m nmt.translate --out_dir=models/en_it
"""

import os

import tensorflow as tf
from absl import app, flags, logging

from acvi_tf import builders, checkpoints, errors, files, text
from acvi_tf import config as config_lib
from acvi_tf import flags as acvi_flags
from acvi_tf import progress as progress_lib
from acvi_tf.formats import bpe, nmt_text
from nmt import data, run_nmt
from nmt import translator as translator_lib

CORPUS_RECORD = "corpus.json"
# What to do about a corpus record that cannot be read.
CORPUS_FIX = "rebuild the corpus with data_prep.translation, or restore the file"


class InputError(errors.UserError, ValueError):
    """The sentences cannot be read; the message names the line and the fix."""


def define_run_flags(fv=flags.FLAGS):
    """Defines the flags that name a trained run and its search settings on ``fv``
    (shared with ``nmt.export``)."""
    flags.DEFINE_string("out_dir", None, "The run's --out_dir.", flag_values=fv)
    flags.DEFINE_string(
        "ckpt", None, "Checkpoint (default: best_bleu/'s, else the newest).", flag_values=fv
    )
    flags.DEFINE_integer(
        "beam_width", None, "Beam width. Default: the run's.", lower_bound=0, flag_values=fv
    )
    flags.DEFINE_integer(
        "infer_batch_size",
        None,
        "Sentences per search. Default: the run's.",
        lower_bound=1,
        flag_values=fv,
    )
    flags.mark_flag_as_required("out_dir", flag_values=fv)


def define_flags(fv=flags.FLAGS):
    """Defines the command's flags on ``fv``."""
    define_run_flags(fv)
    flags.DEFINE_string(
        "input", "-", "Sentences, one per line; - is standard input.", flag_values=fv
    )
    flags.DEFINE_string(
        "output", "-", "Translations, one per line; - is standard output.", flag_values=fv
    )


def run_config(out_dir, given):
    """The run's settings as its ``hparams.json`` records them, with ``given`` on top."""
    return acvi_flags.recorded_config(
        run_nmt.define_flags,
        out_dir,
        "--out_dir",
        "nmt.run_nmt",
        run_nmt.MODEL_FLAGS,
        run_nmt.COMMAND_FLAGS,
        **given,
        out_dir=out_dir,
    )


def corpus_record(config):
    """The corpus record's path, its settings (``tokenizer``, ``lowercase``; Treebank and
    lowercase without one) and the BPE codes' path (None without BPE)."""
    folder = os.path.dirname(os.path.abspath(config.vocab_prefix))
    codes = None
    if config.subword_option == "bpe":  # the vocabulary is in the corpus's bpe/ folder
        codes = os.path.join(folder, "codes")
        folder = os.path.dirname(folder)
    settings = dict(tokenizer="treebank", lowercase=True)
    record = os.path.join(folder, CORPUS_RECORD)
    if os.path.exists(record):
        settings.update(files.read_json(record, CORPUS_FIX))
    else:
        logging.warning("%s is missing; tokenising with Treebank, lowercased", record)
    return record, settings, codes


def preprocessor(config):
    """``raw line -> the model's source line``: the corpus's tokenizer, then its BPE."""
    _, settings, codes = corpus_record(config)
    segment = bpe.segmenter(codes) if codes else None
    tokenize = text.tokenizer(settings["tokenizer"], settings["lowercase"])
    return lambda line: segment(tokenize(line)) if segment else tokenize(line)


def load_translator(config):
    """The run's model with its best weights (or ``--ckpt``'s) as a ``Translator``, and
    the source and target vocabularies.

    Raises:
      acvi_tf.flags.DecodeSettingError: a beam search of no width.
    """
    run_nmt.check_search(config)
    vocabs = []
    for suffix in (config.src, config.tgt):
        _, path = nmt_text.check_vocab("%s.%s" % (config.vocab_prefix, suffix), config.out_dir)
        vocabs.append(data.Vocab(path))
    src_vocab, tgt_vocab = vocabs
    model = run_nmt.build(config, src_vocab, tgt_vocab)
    path = checkpoints.checkpoint_to_use(
        config.ckpt, os.path.join(config.out_dir, "best_bleu"), config.out_dir
    )
    if path is None:
        raise app.UsageError("no checkpoint in %s; train first or give --ckpt" % config.out_dir)
    checkpoints.restore_model(
        tf.train.Checkpoint(model=model),
        path,
        check=lambda p: run_nmt._check_vocabulary(config, p, src_vocab, tgt_vocab),
    )
    logging.info("Restored the model from %s", path)
    run_nmt.log_search(config)
    searcher = translator_lib.Translator(
        model,
        tgt_vocab,
        config.infer_mode,
        config.beam_width,
        config.length_penalty_weight,
        config.jit_compile,
    )
    return searcher, src_vocab, tgt_vocab


def translate(sentences, config):
    """Translations of raw ``sentences`` with the run ``config`` describes, in order."""
    searcher, src_vocab, _ = load_translator(config)
    prepare = preprocessor(config)
    sources = [prepare(s) if s.strip() else "" for s in sentences]
    progress = progress_lib.Progress(len(sources), "translated sentences")
    hypotheses = searcher.translate(sources, src_vocab, config.infer_batch_size, progress)
    if config.subword_option == "bpe":
        hypotheses = [bpe.remove_bpe(h) for h in hypotheses]
    return [h if s else "" for h, s in zip(hypotheses, sources)]


def run(config):
    """Translates ``--input`` into ``--output``; returns the translations."""
    given = dict(beam_width=config.beam_width, infer_batch_size=config.infer_batch_size)
    model_config = run_config(config.out_dir, given).replace(ckpt=config.ckpt)
    builders.configure_runtime(model_config)
    sentences = files.read_input_lines(config.input, InputError)
    translations = translate(sentences, model_config)
    files.write_output_lines(config.output, translations, sentences, "translations")
    return translations


if __name__ == "__main__":
    config_lib.run_command(define_flags, run)
