"""The summarizer's Task (``acvi_tf.runner.task``): See et al.'s flags, the run's layout
(``log_root/exp_name``, checkpoints in ``train/``), its jobs (``pointer_generator.jobs``)
and its commands on a trained run (``pointer_generator.serving``).
"""

import os
import re
from typing import Dict, Optional, Tuple

import tensorflow as tf
from absl import app, flags

from acvi_tf import flags as acvi_flags
from acvi_tf.compat import keras
from acvi_tf.config import Config
from acvi_tf.formats import bin_files
from acvi_tf.inference import report as report_lib
from acvi_tf.process import stops
from acvi_tf.runner import runner
from acvi_tf.runner.task import Task, TrainingInputs
from acvi_tf.training import checkpoints
from pointer_generator import experiment, jobs, serving
from pointer_generator import vocab as vocab_lib


def define_flags(fv: flags.FlagValues = flags.FLAGS) -> None:
    """Defines the training command's flags (and the shared ones when missing) on ``fv``."""
    if "context" not in fv:
        acvi_flags.define_flags(fv)
    fv.set_default("attention_masking", "renormalize")  # See et al.'s order
    _define_run_flags(fv)
    _define_model_flags(fv)
    _define_transformer_flags(fv)
    _define_training_flags(fv)
    _define_eval_and_summary_flags(fv)
    _define_decode_flags(fv)
    flags.register_multi_flags_validator(
        ["single_pass", "mode"],
        lambda d: not d["single_pass"] or d["mode"] == "decode",
        message="--single_pass is for --mode=decode only.",
        flag_values=fv,
    )
    acvi_flags.require_finite(__name__, fv)
    acvi_flags.require_learning_rate("lr", fv)
    acvi_flags.require_dropout("transformer_dropout", fv)
    acvi_flags.take_paths(fv, ("vocab_path", "summary_data_path"))


def _define_run_flags(fv: flags.FlagValues) -> None:
    """Defines See et al.'s flags (names, defaults and meanings unchanged) of what a command
    does and where: the data, the vocabulary, the mode, the run's folder and its one-off
    actions."""
    flags.DEFINE_string(
        "data_path", "", "Glob of the .bin chunks, e.g. 'chunked/train_*'.", flag_values=fv
    )
    flags.DEFINE_string("vocab_path", "", "Path of the 'word count' vocab file.", flag_values=fv)
    flags.DEFINE_enum(
        "mode", "train", ["train", "eval", "decode"], "train, eval or decode.", flag_values=fv
    )
    flags.DEFINE_boolean(
        "single_pass",
        False,
        "Decode mode only: decode the data once, in order, and score it.",
        flag_values=fv,
    )
    flags.DEFINE_string("log_root", "", "Root directory of all logging.", flag_values=fv)
    flags.DEFINE_string(
        "exp_name", "", "Experiment name: the subfolder of log_root.", flag_values=fv
    )
    flags.DEFINE_boolean(
        "convert_to_coverage_model",
        False,
        "Train mode with --coverage: add w_c to the latest non-coverage "
        "checkpoint (optimizer state reset, step kept), save it as "
        "<ckpt>_cov_init and exit.",
        flag_values=fv,
    )
    flags.DEFINE_string(
        "decode_split",
        None,
        "Decode mode: the name of the split --data_path holds (train, val, test or your "
        "own, letters, digits, - and _), which names the decode folder (default: the one "
        "its file name names, test_000.bin).",
        flag_values=fv,
    )
    flags.register_validator(
        "decode_split",
        lambda name: name is None or re.fullmatch(r"[A-Za-z0-9_-]+", name) is not None,
        message="--decode_split names a folder: letters, digits, - and _ only",
        flag_values=fv,
    )
    flags.DEFINE_string(
        "ckpt",
        None,
        "Decode mode: %s (default: latest, as See et al.'s decode)." % checkpoints.CKPT_HELP,
        flag_values=fv,
    )
    flags.DEFINE_boolean(
        "restore_best_model",
        False,
        "Train mode: copy the eval job's best model (without optimizer state) into train/ "
        "and exit.",
        flag_values=fv,
    )
    flags.DEFINE_boolean(
        "debug",
        False,
        "Stop at the first op that makes a NaN or Inf "
        "(tf.debugging.enable_check_numerics; TF2 has no tfdbg CLI).",
        flag_values=fv,
    )


def _define_model_flags(fv: flags.FlagValues) -> None:
    """Defines See et al.'s model and training hyperparameters (names, defaults and meanings
    unchanged): sizes, lengths, the optimizer's settings, the pointer and coverage."""
    flags.DEFINE_integer("hidden_dim", 256, "LSTM size.", lower_bound=1, flag_values=fv)
    flags.DEFINE_integer("emb_dim", 128, "Word-embedding size.", lower_bound=1, flag_values=fv)
    flags.DEFINE_integer("batch_size", 16, "Minibatch size.", lower_bound=1, flag_values=fv)
    flags.DEFINE_integer(
        "max_enc_steps", 400, "Article truncation length.", lower_bound=1, flag_values=fv
    )
    flags.DEFINE_integer(
        "max_dec_steps",
        100,
        "Summary truncation length (decode: max length).",
        lower_bound=1,
        flag_values=fv,
    )
    flags.DEFINE_integer("beam_size", 4, "Beam width (decode).", lower_bound=1, flag_values=fv)
    flags.DEFINE_integer(
        "min_dec_steps", 35, "Minimum summary length (decode).", lower_bound=0, flag_values=fv
    )
    flags.DEFINE_integer(
        "vocab_size",
        50000,
        "Vocabulary size including the 4 reserved tokens; 0 reads the whole file.",
        lower_bound=0,
        flag_values=fv,
    )
    flags.DEFINE_float(
        "lr",
        0.15,
        "Learning rate (Adagrad's 0.15; with --optimizer=adam and no --lr, Adam's default 0.001).",
        lower_bound=0.0,
        flag_values=fv,
    )
    flags.DEFINE_float(
        "adagrad_init_acc",
        0.1,
        "Adagrad initial accumulator value.",
        lower_bound=0.0,
        flag_values=fv,
    )
    flags.DEFINE_float(
        "rand_unif_init_mag", 0.02, "Uniform init range of the LSTM weights.", flag_values=fv
    )
    flags.DEFINE_float("trunc_norm_init_std", 1e-4, "Truncated-normal init std.", flag_values=fv)
    flags.DEFINE_float(
        "max_grad_norm",
        2.0,
        "Global-norm gradient clipping (0: off).",
        lower_bound=0.0,
        flag_values=fv,
    )
    flags.DEFINE_boolean(
        "pointer_gen", True, "False gives the seq2seq + attention baseline.", flag_values=fv
    )
    flags.DEFINE_boolean("coverage", False, "Coverage vector and coverage loss.", flag_values=fv)
    flags.DEFINE_float(
        "cov_loss_wt", 1.0, "Weight of the coverage loss.", lower_bound=0.0, flag_values=fv
    )


def _define_transformer_flags(fv: flags.FlagValues) -> None:
    """Defines ``--model_type`` and the Transformer baseline's sizes."""
    flags.DEFINE_enum(
        "model_type",
        "pointer_generator",
        ["pointer_generator", "transformer"],
        "pointer_generator: See et al.'s model (the context mechanisms apply); "
        "transformer: the ACVI journal's Transformer baseline "
        "(pointer_generator/transformer.py: no copy, no coverage, --context "
        "does not apply).",
        flag_values=fv,
    )
    flags.DEFINE_integer(
        "transformer_units",
        256,
        "--model_type=transformer: model size (journal: 256).",
        lower_bound=1,
        flag_values=fv,
    )
    flags.DEFINE_integer(
        "transformer_layers",
        4,
        "--model_type=transformer: encoder and decoder layers each (journal: 4).",
        lower_bound=1,
        flag_values=fv,
    )
    flags.DEFINE_integer(
        "transformer_heads",
        4,
        "--model_type=transformer: attention heads (journal: 4).",
        lower_bound=1,
        flag_values=fv,
    )
    flags.DEFINE_float(
        "transformer_dropout",
        0.2,
        "--model_type=transformer: dropout (journal: 0.2).",
        lower_bound=0.0,
        flag_values=fv,
    )


def _define_training_flags(fv: flags.FlagValues) -> None:
    """Defines the additions for training: the optimizer, the run's length and curriculum,
    and checkpoints."""
    flags.DEFINE_enum(
        "optimizer",
        "adagrad",
        ["adagrad", "adam"],
        "adagrad (See et al.) or adam (the ACVI paper's runs).",
        flag_values=fv,
    )
    flags.DEFINE_integer(
        "max_steps",
        0,
        "Stop training at this global step (0: never, as the "
        "original; with --phases, the end of the curriculum).",
        lower_bound=0,
        flag_values=fv,
    )
    flags.DEFINE_string(
        "phases",
        "",
        "Curriculum: 'paper' (the ACVI paper's Table 5) or "
        "'start-end:max_enc:max_dec,...'; empty trains at --max_enc_steps / "
        "--max_dec_steps throughout.",
        flag_values=fv,
    )
    flags.DEFINE_integer(
        "coverage_steps",
        3000,
        "With --phases: steps of the final coverage phase (0: none).",
        lower_bound=0,
        flag_values=fv,
    )
    acvi_flags.require_total_steps(
        ["max_steps", "phases"],
        lambda d: d["max_steps"] or d["phases"],
        "set --max_steps or --phases",
        fv,
    )
    flags.DEFINE_integer(
        "checkpoint_secs", 60, "Save a checkpoint this often.", lower_bound=1, flag_values=fv
    )
    flags.DEFINE_integer(
        "checkpoint_steps",
        0,
        "Also save every this many steps (0: only by time and at phase ends).",
        lower_bound=0,
        flag_values=fv,
    )


def _define_eval_and_summary_flags(fv: flags.FlagValues) -> None:
    """Defines the eval job's batches and what TensorBoard shows, and how often."""
    flags.DEFINE_integer(
        "eval_max_batches",
        0,
        "Eval mode: validation batches each checkpoint is scored on (0: all of them).",
        lower_bound=0,
        flag_values=fv,
    )
    flags.DEFINE_integer(
        "summary_steps",
        1,
        "Write TensorBoard scalars every this many steps.",
        lower_bound=1,
        flag_values=fv,
    )
    flags.DEFINE_integer(
        "histogram_steps",
        50,
        "Train mode: TensorBoard histograms of the posterior on the first articles of "
        "--summary_data_path every this many steps (0: none).",
        lower_bound=0,
        flag_values=fv,
    )
    flags.DEFINE_integer(
        "image_steps",
        250,
        "Train mode: TensorBoard attention and sigma images and the greedy summary of the "
        "first article of --summary_data_path every this many steps (0: none).",
        lower_bound=0,
        flag_values=fv,
    )
    flags.DEFINE_string(
        "summary_data_path",
        "",
        "Train mode: .bin files (a glob) whose first articles the histograms and images "
        "show, e.g. the validation chunks (default: --data_path).",
        flag_values=fv,
    )


def _define_decode_flags(fv: flags.FlagValues) -> None:
    """Defines the additions for decode mode: batches, the folder, the report, shards and the
    beam's ranking."""
    flags.DEFINE_integer(
        "decode_batch_size",
        32,
        "Decode mode: articles per batched beam-search call (the original decodes one at a time).",
        lower_bound=1,
        flag_values=fv,
    )
    flags.DEFINE_boolean(
        "decode_overwrite",
        False,
        "Decode mode: replace an existing "
        "single_pass decode folder. Without it a finished folder (with "
        "metrics.json) is refused and an interrupted one is resumed after its "
        "last complete article.",
        flag_values=fv,
    )
    flags.DEFINE_integer(
        "report_examples",
        report_lib.DEFAULT_DETAIL,
        "Single-pass decode: the first this many articles carry their attention, p_gen "
        "and (ACVI) sigma and KL in the decode folder's report.html; every article is "
        "listed with its scores.",
        lower_bound=0,
        flag_values=fv,
    )
    flags.DEFINE_integer(
        "num_shards",
        None,
        "Single-pass decode in several processes or machines: the number of shards, each "
        "decoding every num_shards-th batch into the same folder; the last to finish "
        "scores it (default: one, or the workers of TF_CONFIG).",
        lower_bound=1,
        flag_values=fv,
    )
    flags.DEFINE_integer(
        "shard_index",
        None,
        "This process's shard, 0 to --num_shards - 1 (default: 0, or its TF_CONFIG index).",
        lower_bound=0,
        flag_values=fv,
    )
    flags.DEFINE_boolean(
        "initial_state_attention",
        True,
        "Decode mode: the original decode-time attention (the previous context "
        "re-attended from the incoming state, its attention added to coverage); "
        "False decodes exactly like training.",
        flag_values=fv,
    )
    flags.DEFINE_enum(
        "length_normalization",
        "average",
        ["average", "gnmt", "none"],
        "Beam ranking: the original's average log-probability, GNMT's length "
        "penalty, or the total log-probability.",
        flag_values=fv,
    )
    flags.DEFINE_float(
        "gnmt_alpha", 0.6, "Alpha of the GNMT length penalty.", lower_bound=0.0, flag_values=fv
    )
    flags.DEFINE_integer(
        "decode_max_batches",
        0,
        "Decode mode without single_pass: stop after this many batches (0: never, as the "
        "original).",
        lower_bound=0,
        flag_values=fv,
    )


# Flags of this entry point that decide the model's variables (and the optimizer's).
MODEL_FLAGS = (
    "model_type",
    "hidden_dim",
    "emb_dim",
    "vocab_size",
    "pointer_gen",
    "optimizer",
    "transformer_layers",
    "transformer_units",
    "transformer_heads",
)
# Flags of this entry point that belong to each command, never taken from the run's
# record: the mode, the data it reads, where the run is, one-off actions, the decode's
# folder and shards. (min_dec_steps is the given one or derived, ``min_dec_steps``.)
COMMAND_FLAGS = (
    "mode",
    "data_path",
    "single_pass",
    "log_root",
    "exp_name",
    "convert_to_coverage_model",
    "restore_best_model",
    "ckpt",
    "decode_split",
    "debug",
    "eval_max_batches",
    "decode_overwrite",
    "num_shards",
    "shard_index",
    "decode_max_batches",
    "report_examples",
)


def _check_run_dir(config):
    """Checks that the run exists (not ``--mode=train``, which makes it once its record
    is written: a refused training run leaves no folder behind)."""
    if config.mode != "train" and not os.path.isdir(experiment.run_dir(config)):
        raise app.UsageError(
            "%s does not exist; run --mode=train first (same --log_root and --exp_name)"
            % experiment.run_dir(config)
        )


class SummarizationTask(Task):
    """See et al.'s pointer-generator: ``--mode=train``, ``eval`` (the eval job) or
    ``decode`` on the run ``--log_root/--exp_name``."""

    entry_point = "pointer_generator.run_summarization"
    names_the_run = "--log_root and --exp_name"
    model_flags = MODEL_FLAGS
    command_flags = COMMAND_FLAGS
    inputs = "Documents"
    outputs = "Summaries"
    served = "summarizer"
    old_best_dir = "eval"  # See's layout
    to_validate = "run the eval job (--mode=eval) beside training to keep a best model"
    to_train = "train first (--mode=train) or give --ckpt"

    define_flags = staticmethod(define_flags)
    define_run_flags = staticmethod(serving.define_run_flags)
    files_read = staticmethod(serving.files_read)

    # the Task is the first argument of these: they restore the run in its folders
    raw_text = serving.raw_text
    served_module = serving.served_module

    def run_dir(self, config: Config) -> str:
        return experiment.run_dir(config)

    def checkpoint_dir(self, config: Config) -> str:
        return experiment.train_dir(config)

    def vocabulary_record(
        self, config: Config, vocabularies: vocab_lib.Vocab, preprocessing: bool = False
    ) -> Dict[str, Tuple[str, str]]:
        return experiment.vocabularies(config, vocabularies)

    def embeddings(
        self, config: Config, vocabularies: vocab_lib.Vocab
    ) -> Dict[str, Tuple[int, str]]:
        source = experiment.vocabulary_source(config)
        return {"model/embedding/embeddings": (vocabularies.size(), source)}

    def trains(self, config: Config) -> bool:
        return config.mode == "train"

    def prepare(self, config: Config) -> Config:
        if not config.data_path or not config.log_root:
            raise app.UsageError("--data_path and --log_root are required")
        _check_run_dir(config)
        return config

    def check(self, config: Config) -> None:
        if not config.vocab_path:
            raise app.UsageError("--vocab_path is required")
        experiment.phases(config)  # a curriculum that cannot be parsed is refused here

    def training_inputs(self, config: Config, resuming: bool) -> TrainingInputs:
        vocab = experiment.load_vocab(config, "vocab_size" in config.given)
        return TrainingInputs(
            experiment.vocabularies(config, vocab),
            bin_files.expand_data_path(config.data_path),  # none: refused here
            vocab,
        )

    def train(
        self, config: Config, strategy: tf.distribute.Strategy, inputs: TrainingInputs
    ) -> keras.Model:
        _start_debugging(config)
        return jobs.train(
            self,
            config,
            inputs.loaded,
            experiment.train_dir(config),
            experiment.phases(config),
            strategy,
        )

    def infer(self, config: Config, strategy: tf.distribute.Strategy) -> Optional[dict]:
        _start_debugging(config)
        vocab = experiment.load_vocab(config, "vocab_size" in config.given)
        experiment.check_beam(config, vocab)
        with stops.AtOnce("; rerun the same command to resume"):  # a stop keeps what is done
            if config.mode == "decode":
                return jobs.decode(self, config, vocab)
            os.makedirs(experiment.eval_dir(config), exist_ok=True)
            return jobs.evaluate(self, config, vocab)

    def run_settings(self, config: Config) -> Config:
        """The run's record with the given decode settings, its decode lengths
        (``experiment.decode_config``) and the command's ``--ckpt``."""
        settings = runner.recorded_config(
            self,
            os.path.join(config.log_root, config.exp_name),
            **serving.given_settings(config),
            log_root=config.log_root,  # where the run is now
            exp_name=config.exp_name,
        )
        return experiment.decode_config(settings).replace(ckpt=config.ckpt)


def _start_debugging(config):
    """``--debug``: every op's output checked for NaN and infinities."""
    if config.debug:
        tf.debugging.enable_check_numerics()


TASK = SummarizationTask()
