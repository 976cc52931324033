"""The summarizer as a library: its run's folders, model, checkpoint checks and decoder,
built from a ``Config`` (``run_summarization``'s flags, or a run's record of them).

The summarizer's Task (``pointer_generator.task``) and its jobs build the run from these;
the Runner restores it (``acvi_tf.runner.restoring``) in the folders the Task names.
"""

import functools
import os
from typing import Any, Dict, List, Optional

import tensorflow as tf
from absl import app, logging

from acvi_tf import builders
from acvi_tf import flags as acvi_flags
from acvi_tf.compat import keras
from acvi_tf.config import Config
from acvi_tf.formats import vocabulary
from acvi_tf.runner import inference
from acvi_tf.runner.task import Task
from pointer_generator import curriculum
from pointer_generator import decode as decode_lib
from pointer_generator import model as model_lib
from pointer_generator import transformer as transformer_lib
from pointer_generator import vocab as vocab_lib

# What the model reads of a batch: the batcher's tensors but the strings.
MODEL_SIGNATURE = model_lib.PointerGenerator.batch_signature
# See et al.'s default shortest summary, at their default longest of 100: a decode that
# is not given --min_dec_steps uses 35, or 35% of a shorter maximum.
SEE_MIN_DEC_STEPS = 35


def run_dir(config: Config) -> str:
    """The run's folder, ``log_root/exp_name``."""
    return os.path.join(config.log_root, config.exp_name)


def train_dir(config: Config) -> str:
    """The folder of the run's training checkpoints and TensorBoard logs."""
    return os.path.join(run_dir(config), "train")


def eval_dir(config: Config) -> str:
    """The folder of the eval job's TensorBoard logs and lock."""
    return os.path.join(run_dir(config), "eval")


def phases(config: Config) -> List[curriculum.Phase]:
    """The run's curriculum: ``--phases``, else one phase of the flags' lengths.

    Raises:
      app.UsageError: ``--phases`` cannot be parsed.
    """
    if config.phases:
        try:
            return curriculum.parse_phases(config.phases, config.coverage_steps)
        except curriculum.PhaseError as e:
            raise app.UsageError(str(e)) from e
    end = config.max_steps or 2**62
    return [curriculum.Phase(0, end, config.max_enc_steps, config.max_dec_steps, config.coverage)]


def derived_min_dec_steps(max_dec_steps: int) -> int:
    """See et al.'s 35 where the maximum allows it (100 and up), else 35% of it, rounded
    down: never above the maximum."""
    return min(SEE_MIN_DEC_STEPS, SEE_MIN_DEC_STEPS * max_dec_steps // 100)


def min_dec_steps(config: Config, max_dec_steps: int, where: str) -> int:
    """The shortest summary of a decode whose longest is ``max_dec_steps``: the given
    ``--min_dec_steps``, else ``derived_min_dec_steps``.

    Args:
      config: the command's ``Config``.
      max_dec_steps: the decode's longest summary.
      where: where that maximum comes from, for the message.

    Raises:
      acvi_tf.flags.DecodeSettingError: the given minimum exceeds the maximum.
    """
    if "min_dec_steps" not in config.given:
        return derived_min_dec_steps(max_dec_steps)
    if config.min_dec_steps > max_dec_steps:
        raise acvi_flags.DecodeSettingError(
            "--min_dec_steps=%d exceeds max_dec_steps=%d (%s), so every summary would run "
            "to the maximum; give --min_dec_steps=%d or less, or leave it out to derive it"
            % (config.min_dec_steps, max_dec_steps, where, max_dec_steps)
        )
    return config.min_dec_steps


def decode_config(config: Config) -> Config:
    """``config`` with the lengths a decode of the run uses, logged in one line: the
    given ``--max_enc_steps`` and ``--max_dec_steps``, else the run's final phase's (its
    record's without ``--phases``), and ``min_dec_steps``.

    Raises:
      acvi_tf.flags.DecodeSettingError: a given minimum exceeds the maximum.
    """
    final = phases(config)[-1]
    lengths = {
        name: config[name] if name in config.given else getattr(final, name)
        for name in ("max_enc_steps", "max_dec_steps")
    }
    derived = {
        name: "the run's final phase"
        for name in lengths
        if config.phases and name not in config.given
    }
    where = "given" if "max_dec_steps" in config.given else "the run's"
    config = config.replace(**lengths)
    config = config.replace(min_dec_steps=min_dec_steps(config, config.max_dec_steps, where))
    derived["min_dec_steps"] = "See's %d, at most %d%% of max_dec_steps" % (
        SEE_MIN_DEC_STEPS,
        SEE_MIN_DEC_STEPS,
    )
    names = ("max_enc_steps", "max_dec_steps", "min_dec_steps", "beam_size")
    logging.info("Decoding with %s", acvi_flags.describe(config, names, derived))
    return config


def check_beam(config: Config, vocab: vocab_lib.Vocab) -> None:
    """Refuses a ``--beam_size`` whose 2K candidates per hypothesis outnumber the words
    of the vocabulary.

    Raises:
      acvi_tf.flags.DecodeSettingError: naming the beam, the vocabulary and the fix.
    """
    if 2 * config.beam_size > vocab.size():
        raise acvi_flags.DecodeSettingError(
            "--beam_size=%d proposes %d candidates per hypothesis, more than the %d words "
            "of the vocabulary (%s); use --beam_size=%d or less"
            % (
                config.beam_size,
                2 * config.beam_size,
                vocab.size(),
                config.vocab_path,
                vocab.size() // 2,
            )
        )


def build_model(config: Config, vocab: vocab_lib.Vocab) -> keras.Model:
    """The model the flags describe (``--model_type``), with every variable built, so
    its checkpoints always hold the same set."""
    if config.model_type == "transformer":
        model = transformer_lib.TransformerSummarizer(
            vocab.size(),
            config.transformer_units,
            config.transformer_layers,
            config.transformer_heads,
            config.transformer_dropout,
            max_len=config.max_dec_steps + 1,  # the decode-time prefix buffer
            pointer_gen=config.pointer_gen,
        )
    else:
        model = model_lib.PointerGenerator(
            vocab.size(),
            config.hidden_dim,
            config.emb_dim,
            config.pointer_gen,
            context_layer=builders.context_layer(config),
            rand_unif_init_mag=config.rand_unif_init_mag,
            trunc_norm_init_std=config.trunc_norm_init_std,
            attention_masking=config.attention_masking,
            jit_compile=config.jit_compile,
            cov_loss_wt=config.cov_loss_wt,
            kl_terms=builders.kl_schedule(config),
        )
    dummy = {
        name: tf.ones(
            [1, 1] if spec.shape.rank == 2 else [1] if spec.shape.rank == 1 else [], spec.dtype
        )
        for name, spec in MODEL_SIGNATURE.items()
    }
    model(dummy, coverage_on=True)
    return model


def load_vocab(config: Config, size_given: bool = False) -> vocab_lib.Vocab:
    """The run's vocabulary (``--vocab_path``, ``--vocab_size``); a file that the run's
    record names and that is gone is refused naming the record.

    Args:
      config: the command's flags.
      size_given: ``--vocab_size`` comes from the command line (a size larger than the
        file is then refused rather than taken as the whole file).
    """
    path, what = config.vocab_path, "the vocabulary the run trained with"
    acvi_flags.check_recorded_file(
        config, "vocab_path", path, what, run_dir(config), vocab_lib.VocabError
    )
    return vocab_lib.Vocab(path, config.vocab_size, size_given)


def vocabularies(config: Config, vocab: vocab_lib.Vocab) -> Dict[str, Any]:
    """The run's vocabulary for its record (``acvi_flags.check_vocabularies``)."""
    given = vocabulary_source(config)
    return {
        "vocab_path": (
            given,
            vocabulary.fingerprint([vocab.id2word(i) for i in range(vocab.size())]),
        )
    }


def vocabulary_source(config: Config) -> str:
    """Where a refusal says the vocabulary came from (its flags)."""
    given = "--vocab_path=%s --vocab_size=%d" % (config.vocab_path, config.vocab_size)
    return acvi_flags.vocabulary_source(
        config, ["vocab_path", "vocab_size"], given, config.vocab_path
    )


def coverage_at(config: Config, step: Optional[int]) -> bool:
    """Whether the model decodes with coverage at ``step``: ``--coverage``, else the
    curriculum's phase of the step (None: the first phase)."""
    return config.coverage or curriculum.phase_at(phases(config), step or 0).coverage


def build_decoder(
    config: Config,
    model: keras.Model,
    vocab: vocab_lib.Vocab,
    *,
    coverage_on: bool = False,
    record_attention: bool = True,
    max_dec_steps: Optional[int] = None,
    min_dec_steps: Optional[int] = None,
) -> decode_lib.Summarizer:
    """The batched beam search of the run's decode flags over ``model``.

    Args:
      config: the run's ``Config`` (a decode's: ``decode_config``).
      model: the built (and restored) model.
      vocab: the run's vocabulary.
      coverage_on: whether the model decodes with coverage (``coverage_at``).
      record_attention: whether each result holds its attention distributions.
      max_dec_steps: the longest summary (default: ``--max_dec_steps``).
      min_dec_steps: the shortest summary (default: ``--min_dec_steps``).
    """
    return decode_lib.Summarizer(
        model,
        vocab,
        config.beam_size,
        config.max_dec_steps if max_dec_steps is None else max_dec_steps,
        config.min_dec_steps if min_dec_steps is None else min_dec_steps,
        coverage_on,
        config.initial_state_attention,
        config.length_normalization,
        config.gnmt_alpha,
        config.jit_compile,
        record_attention=record_attention,
    )


def load_decoder(task: Task, config: Config) -> decode_lib.Summarizer:
    """The run's model with its best weights (or ``--ckpt``'s), restored by the Runner
    (``acvi_tf.runner.inference``), as a batched beam search without attention records
    (which holds the run's vocabulary): what the inference commands decode with.

    Args:
      task: the summarizer's Task, which names the run's folders.
      config: the run's settings.

    Raises:
      acvi_tf.flags.DecodeSettingError: the beam is too wide for the vocabulary.
      acvi_tf.training.checkpoints.CheckpointError: the run holds no checkpoint.
    """
    vocab = load_vocab(config)
    check_beam(config, vocab)

    def decoder(model, path, step):
        del path
        return build_decoder(
            config, model, vocab, coverage_on=coverage_at(config, step), record_attention=False
        )

    build = functools.partial(build_model, config, vocab)
    return inference.drive(task, config, inference.InferenceRun(vocab, build, decoder))
