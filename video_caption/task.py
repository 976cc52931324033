"""The captioner's Task (``acvi_tf.runner.task``): arctic-capgen-vid's flags, the run in
``--out_dir`` (checkpoints in ``train/``), its jobs (``video_caption.jobs``) and its
commands on a trained run (``video_caption.serving``).
"""

import os
from typing import Dict, Optional, Tuple, Union

import tensorflow as tf
from absl import app, flags

from acvi_tf import flags as acvi_flags
from acvi_tf.config import Config
from acvi_tf.inference import report as report_lib
from acvi_tf.runner import runner
from acvi_tf.runner.task import Task, TrainingInputs
from acvi_tf.training import checkpoints
from video_caption import data, experiment, jobs, serving

MODES = ("train", "eval", "decode")
# Flags of this entry point that decide the model's variables (and the optimizer's).
MODEL_FLAGS = (
    "emb_dim",
    "encoder_units",
    "decoder_units",
    "attention_units",
    "output_units",
    "vocab_size",
    "optimizer",
)
# Flags of this entry point that belong to each command, never taken from the run's
# record: the mode, where the run is, and what eval and decode read and write.
COMMAND_FLAGS = (
    "mode",
    "out_dir",
    "ckpt",
    "decode_split",
    "decode_overwrite",
    "eval_splits",
    "attention_images",
    "report_examples",
    "video_dir",
)


def _string(fv: flags.FlagValues, name: str, default: Optional[str], help_text: str) -> None:
    flags.DEFINE_string(name, default, help_text, flag_values=fv)


def _integer(
    fv: flags.FlagValues, name: str, default: int, help_text: str, lower_bound: int = 0
) -> None:
    flags.DEFINE_integer(name, default, help_text, lower_bound=lower_bound, flag_values=fv)


def _real(fv: flags.FlagValues, name: str, default: float, help_text: str) -> None:
    flags.DEFINE_float(name, default, help_text, lower_bound=0.0, flag_values=fv)


def define_flags(fv: flags.FlagValues = flags.FLAGS) -> None:
    """Defines the training command's flags (and the shared ones when missing) on ``fv``."""
    if "context" not in fv:
        acvi_flags.define_flags(fv)
    _define_data_flags(fv)
    _define_model_flags(fv)
    _define_training_flags(fv)
    _define_decode_flags(fv)
    flags.DEFINE_flag(
        acvi_flags.multi_enum_flag(
            "metrics",
            experiment.REPORTED,
            experiment.REPORTED,
            "Caption metrics computed by validation, eval and decode (METEOR is the slow one).",
        ),
        flag_values=fv,
    )
    acvi_flags.require_finite(__name__, fv)
    acvi_flags.require_learning_rate("learning_rate", fv)
    acvi_flags.require_dropout("dropout", fv)
    acvi_flags.take_paths(fv, ("data_dir", "features"))


def _define_data_flags(fv: flags.FlagValues) -> None:
    """Defines what a command reads and where the run is: the mode, the dataset, the features
    and how a clip's frames are read, the run's folder and checkpoint."""
    flags.DEFINE_enum("mode", "train", list(MODES), "train, eval or decode.", flag_values=fv)
    _string(
        fv,
        "data_dir",
        None,
        "Prepared dataset (data_prep.msvd): {train,val,test}.jsonl and vocab.txt.",
    )
    _string(
        fv,
        "features",
        None,
        "Feature store: a folder of <clip>.npy/.npz, an HDF5 file or "
        "arctic-capgen-vid's FEAT_key_vidID_value_features.pkl.",
    )
    _string(fv, "out_dir", None, "Experiment folder (checkpoints, logs, decodes).")
    _string(
        fv, "ckpt", None, "eval/decode: %s (default: best, else latest)." % checkpoints.CKPT_HELP
    )
    _integer(fv, "vocab_size", 0, "Keep this many ids, reserved included (0: the whole file).")
    _integer(
        fv,
        "num_frames",
        24,
        "Frames per clip K (paper: 24 of the first 240); clips with "
        "more feature rows are sampled, fewer are zero-padded and masked.",
        1,
    )
    flags.DEFINE_enum(
        "feature_norm",
        "none",
        ["none", "standardize"],
        "none: the features "
        "as stored (the paper); standardize: per dimension, with the mean "
        "and deviation of the training frames (useful for features of a "
        "randomly initialised CNN, whose scale is arbitrary).",
        flag_values=fv,
    )
    _integer(
        fv,
        "max_caption_len",
        30,
        "Drop training captions with this many words or more "
        "(arctic-capgen-vid's maxlen; 0 keeps all).",
    )


def _define_model_flags(fv: flags.FlagValues) -> None:
    """Defines the model's sizes and dropout (the paper's appendix B)."""
    _integer(fv, "encoder_units", 1000, "Encoder LSTM size per direction (paper: 1000).", 1)
    _integer(fv, "decoder_units", 1000, "Decoder LSTM size (paper: 1000).", 1)
    _integer(fv, "emb_dim", 256, "Word embedding size (paper: 256).", 1)
    _integer(fv, "attention_units", 100, "Additive attention size of W_h, W_s (paper: 100).", 1)
    _integer(fv, "output_units", 0, "Size of V [s; c] in eq. (4) (0: decoder_units).")
    _real(fv, "dropout", 0.5, "Dropout on the non-recurrent connections (paper: 0.5).")


def _define_training_flags(fv: flags.FlagValues) -> None:
    """Defines training: the optimizer, arctic-capgen-vid's extras, the batch, the run's length,
    validation, checkpoints and TensorBoard."""
    flags.DEFINE_enum(
        "optimizer",
        "adam",
        ["adam", "adadelta"],
        "adam (paper) or adadelta (arctic-capgen-vid).",
        flag_values=fv,
    )
    _real(fv, "learning_rate", 0.001, "Learning rate (Adam's default; Adadelta: use 1.0).")
    _real(fv, "max_grad_norm", 0.0, "Clip the gradients' global norm (0: off; arctic: 10).")
    _real(
        fv,
        "alpha_c",
        0.0,
        "Doubly-stochastic attention penalty weight (0: off, the paper; "
        "arctic-capgen-vid: 0.70602).",
    )
    _real(fv, "weight_decay", 0.0, "L2 weight decay on every kernel (0: off; arctic: 1e-4).")
    _integer(fv, "batch_size", 64, "Captions per training batch.", 1)
    _integer(fv, "max_steps", 30000, "Training steps.", 1)
    _integer(
        fv,
        "valid_every",
        2000,
        "Validate (beam search + metrics) every this many steps (arctic-capgen-vid: 2000).",
        1,
    )
    _integer(fv, "checkpoint_steps", 1000, "Save a checkpoint every this many steps.", 1)
    _integer(fv, "summary_steps", 10, "TensorBoard scalars every this many steps.", 1)
    _integer(
        fv,
        "histogram_steps",
        40,
        "TensorBoard histograms of the posterior on the first validation captions every "
        "this many steps (0: none).",
        0,
    )
    _integer(
        fv,
        "image_steps",
        200,
        "TensorBoard attention and sigma images and the greedy caption of the first "
        "validation clip every this many steps (0: none).",
        0,
    )
    _integer(
        fv,
        "patience",
        0,
        "Stop after this many validations without a better "
        "--best_metric (0: never; arctic-capgen-vid: 20).",
    )
    flags.DEFINE_enum(
        "best_metric",
        "CIDEr",
        list(experiment.REPORTED),
        "Validation metric that picks best/ (arctic-capgen-vid: Bleu_4).",
        flag_values=fv,
    )
    acvi_flags.require_total_steps(
        ["patience"],
        lambda d: not d["patience"],
        "--patience may end training before the Gumbel phase; set --patience=0",
        fv,
    )


def _define_decode_flags(fv: flags.FlagValues) -> None:
    """Defines the beam search and what eval and decode read and write."""
    _integer(fv, "beam_size", 5, "Beam width (paper: 5; 1 is greedy).", 1)
    _integer(fv, "max_decode_len", 50, "Most words per generated caption.", 1)
    flags.DEFINE_enum(
        "length_normalization",
        "none",
        ["none", "average", "gnmt"],
        "Beam score: none (arctic-capgen-vid: total log-probability), average, gnmt.",
        flag_values=fv,
    )
    _integer(fv, "decode_batch_size", 100, "Clips per beam-search call.", 1)
    flags.DEFINE_enum(
        "decode_split", "test", list(data.SPLITS), "decode: the split.", flag_values=fv
    )
    flags.DEFINE_boolean(
        "decode_overwrite",
        False,
        "decode: replace a finished decode_<split>/ folder (one with metrics.json), which "
        "is refused without it.",
        flag_values=fv,
    )
    flags.DEFINE_list("eval_splits", ["val", "test"], "eval: the splits.", flag_values=fv)
    _integer(fv, "attention_images", 0, "decode: heat maps (PNG) of the first N clips.")
    _integer(
        fv,
        "report_examples",
        report_lib.DEFAULT_DETAIL,
        "decode: the first N clips carry their attention over the frames (and ACVI's "
        "sigma and KL) in report.html; every clip is listed with its CIDEr-D.",
    )
    _string(
        fv,
        "video_dir",
        None,
        "decode: the folder of the clips' videos (<clip>.mp4, .avi, ... as "
        "video_caption.features reads it); report.html then shows the sampled frames of "
        "the --report_examples clips as thumbnails (default: frame indices).",
    )


def _require(config, *names):
    for name in names:
        if not config[name]:
            raise app.UsageError("--%s is required" % name)


def _check_video_dir(config):
    if config.video_dir and not os.path.isdir(config.video_dir):
        raise app.UsageError(
            "--video_dir=%s is not a folder; give the folder of the clips' videos, or leave "
            "it out to show frame indices" % config.video_dir
        )


class CaptioningTask(Task):
    """The video captioner: ``--mode=train``, ``eval`` or ``decode`` on the run in
    ``--out_dir``."""

    entry_point = "video_caption.run_captioning"
    names_the_run = "--out_dir"
    model_flags = MODEL_FLAGS
    command_flags = COMMAND_FLAGS
    inputs = "Video paths"
    outputs = "Captions"
    served = "captioner"
    reads_text = False

    define_flags = staticmethod(define_flags)
    define_run_flags = staticmethod(serving.define_run_flags)
    files_read = staticmethod(experiment.files_read)
    named_files = staticmethod(serving.named_files)

    # the Task is the first argument of these: they restore the run in its folders
    raw_text = serving.raw_text
    served_module = serving.served_module

    def checkpoint_dir(self, config: Config) -> str:
        return experiment.train_dir(config)

    def vocabulary_record(
        self, config: Config, vocabularies: data.Vocab, preprocessing: bool = False
    ) -> Dict[str, Tuple[str, str]]:
        return experiment.vocabularies(config, vocabularies)

    def embeddings(self, config: Config, vocabularies: data.Vocab) -> Dict[str, Tuple[int, str]]:
        source = experiment.vocabulary_source(config)
        return {"model/embedding/embeddings": (vocabularies.size(), source)}

    def trains(self, config: Config) -> bool:
        return config.mode == "train"

    def prepare(self, config: Config) -> Config:
        _require(config, "out_dir")
        return config

    def check(self, config: Config) -> None:
        _require(config, "data_dir", "features")
        if self.trains(config) and config.best_metric not in config.metrics:
            # the metric that picks the best model; an eval or a decode scores what it is given
            raise app.UsageError(
                "--best_metric=%s must be one of --metrics=%s"
                % (config.best_metric, ",".join(config.metrics))
            )

    def training_inputs(self, config: Config, resuming: bool) -> TrainingInputs:
        return TrainingInputs(
            experiment.vocabularies(config, experiment.load_vocab(config)),
            [experiment.split_path(config, "train")],
        )

    def train(
        self, config: Config, strategy: tf.distribute.Strategy, inputs: TrainingInputs
    ) -> float:
        # the global step is the process's own (a plain variable), the model's mirrored
        step_var = tf.Variable(0, dtype=tf.int64, name="global_step")
        with strategy.scope():
            best = jobs.train(experiment.Experiment(self, config), strategy, step_var)
        print("best validation %s %.4f" % (config.best_metric, best))
        return best

    def infer(
        self, config: Config, strategy: tf.distribute.Strategy
    ) -> Union[dict, Dict[str, dict]]:
        os.makedirs(config.out_dir, exist_ok=True)
        _check_video_dir(config)
        if config.mode == "decode":
            return jobs.decode(self, config)
        return jobs.evaluate(experiment.Experiment(self, config))

    def run_settings(self, config: Config) -> Config:
        """The run's record with the given search settings and the command's ``--ckpt``."""
        settings = runner.recorded_config(
            self, config.out_dir, **serving.given_settings(config), out_dir=config.out_dir
        )
        return settings.replace(ckpt=config.ckpt)


TASK = CaptioningTask()
