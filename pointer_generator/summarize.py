"""Summaries of new text with a trained run.

``python -m pointer_generator.summarize --log_root=logs --exp_name=mine --input=new.txt``
reads one document per line (``--input``, a file or ``-`` for standard input), tokenises
each the way the run's corpus was built (its ``corpus.json`` next to the vocabulary,
written by ``data_prep.summarization``; Treebank and lowercase without one), decodes
``--decode_batch_size`` documents per batched beam search with the run's best model (the
eval job's ``bestmodel`` in ``best/``, else the newest training checkpoint, or
``--ckpt``) and writes one summary per line (``--output``, default standard output): the
decoded tokens joined by spaces, as ``--mode=decode`` writes them (there one sentence per
line). An empty line gives an empty summary. The model is the one the run's
``hparams.json`` records; the decode flags default to the run's (``--min_dec_steps`` to
one derived from the maximum) and may be given here.

Usage::

  python -m pointer_generator.summarize --log_root=logs --exp_name=mine \\
      --input=articles.txt --output=summaries.txt [--beam_size=4 --max_dec_steps=120]
  cat articles.txt | python -m pointer_generator.summarize --log_root=logs --exp_name=mine
"""

import os
from typing import Any, Callable, Dict, List, Tuple

from absl import flags

from acvi_tf import builders, files
from acvi_tf import config as config_lib
from acvi_tf import flags as acvi_flags
from acvi_tf import progress as progress_lib
from acvi_tf.config import Config
from acvi_tf.formats import see_vocab
from acvi_tf.inference import commands
from acvi_tf.runner import runner
from acvi_tf.text import tokenizers
from acvi_tf.training import checkpoints
from pointer_generator import batcher as batcher_lib
from pointer_generator import decode as decode_lib
from pointer_generator import experiment, task

CORPUS_RECORD = "corpus.json"
# What to do about a corpus record that cannot be read.
CORPUS_FIX = "rebuild the corpus with data_prep.summarization, or restore the file"
# the flags of this command that replace the run's recorded ones when given
GIVEN_FLAGS = (
    "beam_size",
    "min_dec_steps",
    "max_dec_steps",
    "max_enc_steps",
    "decode_batch_size",
    "allow_data_change",
)


def define_run_flags(fv: flags.FlagValues = flags.FLAGS) -> None:
    """Defines the flags that name a trained run and its decoding settings on ``fv``
    (shared with ``pointer_generator.export``)."""
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


def define_flags(fv: flags.FlagValues = flags.FLAGS) -> None:
    """Defines the command's flags on ``fv``."""
    define_run_flags(fv)
    commands.define_io_flags(fv, "Documents", "Summaries")


def run_config(log_root: str, exp_name: str, given: Dict[str, Any]) -> Config:
    """The run's settings as its ``hparams.json`` records them, with ``given`` on top,
    and the decode's lengths (``experiment.decode_config``).

    Raises:
      app.UsageError: the run has no ``hparams.json``.
      acvi_tf.flags.DecodeSettingError: a given minimum exceeds the maximum.
    """
    config = runner.recorded_config(
        task.TASK,
        os.path.join(log_root, exp_name),
        **given,
        log_root=log_root,  # where the run is now
        exp_name=exp_name,
    )
    return experiment.decode_config(config)


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


def run(config: Config) -> List[str]:
    """Summarises ``--input`` into ``--output``; returns the summaries."""
    given = {name: config[name] for name in GIVEN_FLAGS}
    model_config = run_config(config.log_root, config.exp_name, given)
    builders.configure_runtime(model_config)
    summarizer = experiment.load_decoder(model_config, config.ckpt)
    tokenize = corpus_tokenizer(model_config.vocab_path)
    return commands.map_lines(
        config.input,
        config.output,
        lambda documents: summarize(documents, summarizer, tokenize, model_config),
        "summaries",
        files.run_files(
            os.path.join(config.log_root, config.exp_name),
            model_config.vocab_path,
            corpus_record_path(model_config.vocab_path),
            *acvi_flags.trained_on(os.path.join(config.log_root, config.exp_name)),
        ),
    )


if __name__ == "__main__":
    config_lib.run_command(define_flags, run)
