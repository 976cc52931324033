"""The translator's Task (``acvi_tf.runner.task``): tensorflow/nmt's flags and presets, the run
in ``--out_dir``, its jobs (``nmt.jobs``) and its commands on a trained run
(``nmt.serving``).
"""

import os
from typing import Dict, Optional, Tuple

import tensorflow as tf
from absl import app, flags

from acvi_tf import flags as acvi_flags
from acvi_tf.config import Config
from acvi_tf.inference import report as report_lib
from acvi_tf.runner import runner
from acvi_tf.runner.task import Task, TrainingInputs
from acvi_tf.training import checkpoints
from nmt import data, experiment, hparams, jobs, serving

# Flags of this entry point that decide the model's variables (and the optimizer's).
MODEL_FLAGS = (
    "model_type",
    "num_units",
    "num_layers",
    "num_encoder_layers",
    "num_decoder_layers",
    "encoder_type",
    "attention",
    "attention_architecture",
    "num_heads",
    "optimizer",
)
# Flags of this entry point that belong to each command, never taken from the run's
# record: where the run is, and inference's input, output, checkpoint and heat maps.
COMMAND_FLAGS = (
    "out_dir",
    "inference_input_file",
    "inference_output_file",
    "inference_ref_file",
    "ckpt",
    "attention_images",
    "report_examples",
)


def define_flags(fv: flags.FlagValues = flags.FLAGS) -> None:
    """Defines the training command's flags (and the shared ones when missing) on ``fv``."""
    if "context" not in fv:
        acvi_flags.define_flags(fv)
    _define_data_flags(fv)
    _define_model_flags(fv)
    _define_training_flags(fv)
    _define_inference_flags(fv)
    acvi_flags.require_finite(__name__, fv)
    acvi_flags.require_learning_rate("learning_rate", fv)
    acvi_flags.require_dropout("dropout", fv)
    acvi_flags.take_paths(fv, ("train_prefix", "dev_prefix", "test_prefix", "vocab_prefix"))


def _define_data_flags(fv: flags.FlagValues) -> None:
    """Defines tensorflow/nmt's data flags: the languages, the files' prefixes, the run's folder
    and the lengths and buckets of the batches."""
    flags.DEFINE_string("src", None, "Source suffix, e.g. en.", flag_values=fv)
    flags.DEFINE_string("tgt", None, "Target suffix, e.g. vi.", flag_values=fv)
    flags.DEFINE_string(
        "train_prefix", None, "Train prefix: files prefix.src and prefix.tgt.", flag_values=fv
    )
    flags.DEFINE_string("dev_prefix", None, "Dev prefix (BLEU picks best/ on it).", flag_values=fv)
    flags.DEFINE_string("test_prefix", None, "Test prefix.", flag_values=fv)
    flags.DEFINE_string(
        "vocab_prefix",
        None,
        "Vocab prefix: files prefix.src, prefix.tgt "
        "(checked: <unk> <s> </s> first, repaired into out_dir if not).",
        flag_values=fv,
    )
    flags.DEFINE_string("out_dir", None, "Output directory.", flag_values=fv)
    flags.DEFINE_integer(
        "src_max_len", 50, "Truncate training sources to this.", lower_bound=1, flag_values=fv
    )
    flags.DEFINE_integer(
        "tgt_max_len", 50, "Truncate training targets to this.", lower_bound=1, flag_values=fv
    )
    flags.DEFINE_integer("num_buckets", 5, "Length buckets.", lower_bound=1, flag_values=fv)


def _define_model_flags(fv: flags.FlagValues) -> None:
    """Defines the model: the preset, the architecture, its sizes, dropout and initialisation."""
    flags.DEFINE_enum(
        "hparams_preset",
        "",
        ["", "acvi_paper", "iwslt15"],
        "A group of settings (explicit flags win).",
        flag_values=fv,
    )
    flags.DEFINE_enum(
        "model_type",
        "rnn",
        ["rnn", "transformer"],
        "rnn: the Luong LSTM model (ACVI applies); transformer: the small "
        "Transformer baseline (num_units, num_layers, num_heads, dropout; "
        "--context does not apply).",
        flag_values=fv,
    )
    flags.DEFINE_integer(
        "num_heads", 4, "Transformer attention heads.", lower_bound=1, flag_values=fv
    )
    flags.DEFINE_integer(
        "num_units", 32, "LSTM, embedding and attention size.", lower_bound=1, flag_values=fv
    )
    flags.DEFINE_integer(
        "num_layers",
        2,
        "Layers of encoder and decoder unless set apart.",
        lower_bound=1,
        flag_values=fv,
    )
    flags.DEFINE_integer(
        "num_encoder_layers",
        None,
        "Encoder layers (bi: both directions "
        "together, so 2 = one bidirectional layer, as tensorflow/nmt).",
        flag_values=fv,
    )
    flags.DEFINE_integer("num_decoder_layers", None, "Decoder layers.", flag_values=fv)
    flags.DEFINE_enum("encoder_type", "uni", ["uni", "bi"], "Encoder type.", flag_values=fv)
    flags.DEFINE_enum(
        "attention",
        "luong",
        ["luong", "scaled_luong"],
        "Luong general attention, optionally with a learned scale.",
        flag_values=fv,
    )
    flags.DEFINE_enum(
        "attention_architecture",
        "standard",
        ["standard"],
        "Attention on top of the decoder stack (the only one here).",
        flag_values=fv,
    )
    flags.DEFINE_boolean(
        "output_attention", True, "Project the attention vector (Luong).", flag_values=fv
    )
    flags.DEFINE_boolean(
        "pass_hidden_state", True, "Decoder starts from the encoder states.", flag_values=fv
    )
    flags.DEFINE_float(
        "dropout",
        0.2,
        "Input dropout rate of every LSTM.",
        lower_bound=0.0,
        flag_values=fv,
    )
    flags.DEFINE_float("init_weight", 0.1, "Uniform init range of every weight.", flag_values=fv)


def _define_training_flags(fv: flags.FlagValues) -> None:
    """Defines training: the optimizer and its schedule, the run's length, the batch and
    clipping, and how often it logs and evaluates."""
    flags.DEFINE_enum("optimizer", "sgd", ["sgd", "adam"], "Optimizer.", flag_values=fv)
    flags.DEFINE_float("learning_rate", 1.0, "Learning rate.", lower_bound=0.0, flag_values=fv)
    flags.DEFINE_enum(
        "decay_scheme",
        "",
        ["", "luong234", "luong5", "luong10"],
        "Learning-rate decay (luong234: staircase halvings over the last third).",
        flag_values=fv,
    )
    flags.DEFINE_integer("num_train_steps", 12000, "Training steps.", lower_bound=1, flag_values=fv)
    flags.DEFINE_integer(
        "steps_per_stats",
        100,
        "Log and summarise every this many steps.",
        lower_bound=1,
        flag_values=fv,
    )
    flags.DEFINE_integer(
        "histogram_steps",
        50,
        "TensorBoard histograms of the posterior on the first dev pairs every this many "
        "steps (0: none).",
        lower_bound=0,
        flag_values=fv,
    )
    flags.DEFINE_integer(
        "image_steps",
        100,
        "TensorBoard attention and sigma images and the greedy translation of the first "
        "dev pair every this many steps (0: none).",
        lower_bound=0,
        flag_values=fv,
    )
    flags.DEFINE_integer(
        "steps_per_external_eval",
        None,
        "BLEU on dev/test every this many steps (default 10 x steps_per_stats x 5, as "
        "tensorflow/nmt).",
        flag_values=fv,
    )
    flags.DEFINE_float(
        "max_gradient_norm", 5.0, "Global-norm clipping (0: off).", lower_bound=0.0, flag_values=fv
    )
    flags.DEFINE_integer("batch_size", 128, "Batch size.", lower_bound=1, flag_values=fv)


def _define_inference_flags(fv: flags.FlagValues) -> None:
    """Defines inference: the search and its batches, subwords, the files it reads and writes,
    and its report."""
    flags.DEFINE_enum(
        "infer_mode",
        "greedy",
        ["greedy", "sample", "beam_search"],
        "Decoding: greedy, sample (at --sampling_temperature, seeded by --seed) or "
        "beam_search (with --beam_width).",
        flag_values=fv,
    )
    flags.DEFINE_float(
        "sampling_temperature",
        0.0,
        "Softmax temperature of infer_mode=sample (> 0 there).",
        lower_bound=0.0,
        flag_values=fv,
    )
    flags.DEFINE_integer(
        "beam_width", 0, "Beam width (beam_search).", lower_bound=0, flag_values=fv
    )
    flags.DEFINE_float(
        "length_penalty_weight", 0.0, "GNMT length penalty alpha.", lower_bound=0.0, flag_values=fv
    )
    flags.DEFINE_enum(
        "subword_option", "", ["", "bpe"], "bpe: remove '@@ ' before BLEU.", flag_values=fv
    )
    flags.DEFINE_integer(
        "infer_batch_size", 32, "Sentences per decoding call.", lower_bound=1, flag_values=fv
    )
    flags.DEFINE_string(
        "inference_input_file", None, "Translate this file and exit.", flag_values=fv
    )
    flags.DEFINE_string(
        "inference_output_file", None, "Where the translation goes.", flag_values=fv
    )
    flags.DEFINE_string(
        "inference_ref_file", None, "Reference of the inference input: BLEU.", flag_values=fv
    )
    flags.DEFINE_string(
        "ckpt",
        None,
        "Inference: %s (default: latest, as tensorflow/nmt)." % checkpoints.CKPT_HELP,
        flag_values=fv,
    )
    flags.DEFINE_integer(
        "attention_images",
        0,
        "Inference: also write attention heat maps (PNG) of the first N translations "
        "into <output file>.attention/ (the output file: out_dir/output_infer by default).",
        lower_bound=0,
        flag_values=fv,
    )
    flags.DEFINE_integer(
        "report_examples",
        report_lib.DEFAULT_DETAIL,
        "Inference: the first this many sentences carry their attention (and ACVI's sigma "
        "and KL) in <output file>.report.html; every sentence is listed.",
        lower_bound=0,
        flag_values=fv,
    )


def apply_preset(config: Config) -> Config:
    """``config`` with the preset's values on every flag the command line did not give."""
    return config.replace(**hparams.preset_values(config.hparams_preset, config.given))


class TranslationTask(Task):
    """Luong NMT: trains in ``--out_dir``, or translates ``--inference_input_file`` with
    the run there."""

    entry_point = "nmt.run_nmt"
    names_the_run = "--out_dir"
    model_flags = MODEL_FLAGS
    command_flags = COMMAND_FLAGS
    inputs = "Sentences"
    outputs = "Translations"
    served = "translator"
    old_best_dir = "best_bleu"  # the layout before every host kept its best model in best/

    define_flags = staticmethod(define_flags)
    define_run_flags = staticmethod(serving.define_run_flags)
    files_read = staticmethod(experiment.files_read)

    # the Task is the first argument of these: they restore the run in its folders
    raw_text = serving.raw_text
    served_module = serving.served_module

    def vocabulary_record(
        self, config: Config, vocabularies: data.Vocabs, preprocessing: bool = False
    ) -> Dict[str, Tuple[str, str]]:
        return experiment.vocabularies(config, vocabularies, codes=preprocessing)

    def embeddings(self, config: Config, vocabularies: data.Vocabs) -> Dict[str, Tuple[int, str]]:
        return {
            "model/src_embedding/embeddings": (
                vocabularies.src.size(),
                experiment.vocabulary_source(config, config.src),
            ),
            "model/tgt_embedding/embeddings": (
                vocabularies.tgt.size(),
                experiment.vocabulary_source(config, config.tgt),
            ),
        }

    def trains(self, config: Config) -> bool:
        return not config.inference_input_file

    def prepare(self, config: Config) -> Config:
        # the preset first: the run's record holds the values it set, and wins over it
        config = apply_preset(config)
        if not config.out_dir:
            raise app.UsageError("--out_dir is required")
        return config

    def check(self, config: Config) -> None:
        for name in ("src", "tgt", "vocab_prefix"):
            if not config[name]:
                raise app.UsageError("--%s is required" % name)
        experiment.check_search(config)
        if self.trains(config):
            for name in ("train_prefix", "dev_prefix"):
                if not config[name]:
                    raise app.UsageError("--%s is required for training" % name)

    def training_inputs(self, config: Config, resuming: bool) -> TrainingInputs:
        os.makedirs(config.out_dir, exist_ok=True)
        vocabs = experiment.load_vocabs(config)
        jobs.check_evaluation_files(config)
        return TrainingInputs(
            # a resume trains on segmented text: the record keeps the codes it was split with
            experiment.vocabularies(config, vocabs, codes=not resuming),
            ["%s.%s" % (config.train_prefix, lang) for lang in (config.src, config.tgt)],
            vocabs,
        )

    def train(
        self, config: Config, strategy: tf.distribute.Strategy, inputs: TrainingInputs
    ) -> float:
        best = jobs.train(self, config, inputs.loaded, strategy)
        print("best dev BLEU %.2f" % best)
        return best

    def infer(self, config: Config, strategy: tf.distribute.Strategy) -> Optional[float]:
        # inference leaves the run's record as it is
        return jobs.infer(self, config, experiment.load_vocabs(config))

    def run_settings(self, config: Config) -> Config:
        """The run's record with the given search settings and the command's ``--ckpt``."""
        settings = runner.recorded_config(
            self, config.out_dir, **serving.given_settings(config), out_dir=config.out_dir
        )
        return settings.replace(ckpt=config.ckpt)


TASK = TranslationTask()
