"""Train, evaluate and caption with the ACVI video captioner.

Run as ``python -m video_caption.run_captioning``.

Modes (``--mode``):

* ``train``: teacher-forced training on the train split; every ``--valid_every`` steps
  (and at the end) the validation clips are captioned with beam search and scored
  (BLEU-4, METEOR, ROUGE-L, CIDEr-D); the best ``--best_metric`` (CIDEr by default;
  arctic-capgen-vid used BLEU-4) is kept in ``out_dir/best/``. Checkpoints of model,
  optimizer and step go to ``out_dir/train/`` every ``--checkpoint_steps`` and a killed
  run resumes from the latest one. ``--patience`` validations without improvement stop
  training early (arctic-capgen-vid: 20). TensorBoard logs in ``out_dir/train_log``.
* ``eval``: perplexity and the caption metrics of a checkpoint on ``--eval_splits``.
* ``decode``: captions of ``--decode_split`` into ``out_dir/decode_<split>/``
  (``captions.json``, ``metrics.json``, ``results.txt``, attention heat maps of the first
  ``--attention_images`` clips, ``report.html``: with ``--video_dir``, its attention is
  over thumbnails of the sampled frames), with the most-common-training-caption baseline
  scored beside them.

Eval, decode and a resume take the run's settings from ``out_dir/hparams.json``
(``acvi_flags.run_config``); the model's flags need not be repeated.

Defaults are the paper's (section 4.2, appendix B): 1000-d LSTMs, 256-d embeddings,
100-d attention, dropout 0.5, Adam with its default rate, beam 5. The arctic-capgen-vid
extras (doubly-stochastic attention penalty, weight decay, Adadelta, clip 10) are flags.

Typical use (docs/captioner.md)::

  python -m video_caption.features --video_dir=YouTubeClips --output=feats
  python -m data_prep.msvd --corpus_csv=video_corpus.csv --mapping=youtube_mapping.txt \\
      --features=feats --output_dir=msvd
  python -m video_caption.run_captioning --mode=train --data_dir=msvd --features=feats \\
      --out_dir=runs/acvi --context=acvi
  python -m video_caption.run_captioning --mode=decode --out_dir=runs/acvi \\
      --decode_split=test
"""

import collections
import json
import os
import shutil
from typing import Dict, List, Union

import numpy as np
import tensorflow as tf
from absl import app, flags, logging

from acvi_tf import builders, files
from acvi_tf import config as config_lib
from acvi_tf import flags as acvi_flags
from acvi_tf.compat import keras
from acvi_tf.config import Config
from acvi_tf.formats.frame_features import FeaturesError
from acvi_tf.formats.video_folder import find_videos
from acvi_tf.inference import decoding, folders
from acvi_tf.inference import report as report_lib
from acvi_tf.metrics import captions as caption_metrics
from acvi_tf.training import checkpoints, distribute, summaries
from acvi_tf.training import step as training_lib
from acvi_tf.training import trainer as trainer_lib
from video_caption import data, experiment
from video_caption import decode as decode_lib
from video_caption import features as features_lib
from video_caption import frames as frames_lib

MODES = ("train", "eval", "decode")
REPORTED = experiment.REPORTED
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
# The validation captions of the posterior histograms (the first is the images' clip).
SUMMARY_CAPTIONS = 8


def define_flags(fv: flags.FlagValues = flags.FLAGS) -> None:
    """Defines this command's flags (and the shared ones when missing) on ``fv``."""
    if "context" not in fv:
        acvi_flags.define_flags(fv)

    def string(name, default, help_text):
        flags.DEFINE_string(name, default, help_text, flag_values=fv)

    def integer(name, default, help_text, lower_bound=0):
        flags.DEFINE_integer(name, default, help_text, lower_bound=lower_bound, flag_values=fv)

    def real(name, default, help_text):
        flags.DEFINE_float(name, default, help_text, lower_bound=0.0, flag_values=fv)

    flags.DEFINE_enum("mode", "train", list(MODES), "train, eval or decode.", flag_values=fv)
    string(
        "data_dir", None, "Prepared dataset (data_prep.msvd): {train,val,test}.jsonl and vocab.txt."
    )
    string(
        "features",
        None,
        "Feature store: a folder of <clip>.npy/.npz, an HDF5 file or "
        "arctic-capgen-vid's FEAT_key_vidID_value_features.pkl.",
    )
    string("out_dir", None, "Experiment folder (checkpoints, logs, decodes).")
    string("ckpt", None, "eval/decode: %s (default: best, else latest)." % checkpoints.CKPT_HELP)
    integer("vocab_size", 0, "Keep this many ids, reserved included (0: the whole file).")
    integer(
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
    integer(
        "max_caption_len",
        30,
        "Drop training captions with this many words or more "
        "(arctic-capgen-vid's maxlen; 0 keeps all).",
    )
    integer("encoder_units", 1000, "Encoder LSTM size per direction (paper: 1000).", 1)
    integer("decoder_units", 1000, "Decoder LSTM size (paper: 1000).", 1)
    integer("emb_dim", 256, "Word embedding size (paper: 256).", 1)
    integer("attention_units", 100, "Additive attention size of W_h, W_s (paper: 100).", 1)
    integer("output_units", 0, "Size of V [s; c] in eq. (4) (0: decoder_units).")
    real("dropout", 0.5, "Dropout on the non-recurrent connections (paper: 0.5).")
    flags.DEFINE_enum(
        "optimizer",
        "adam",
        ["adam", "adadelta"],
        "adam (paper) or adadelta (arctic-capgen-vid).",
        flag_values=fv,
    )
    real("learning_rate", 0.001, "Learning rate (Adam's default; Adadelta: use 1.0).")
    real("max_grad_norm", 0.0, "Clip the gradients' global norm (0: off; arctic: 10).")
    real(
        "alpha_c",
        0.0,
        "Doubly-stochastic attention penalty weight (0: off, the paper; "
        "arctic-capgen-vid: 0.70602).",
    )
    real("weight_decay", 0.0, "L2 weight decay on every kernel (0: off; arctic: 1e-4).")
    integer("batch_size", 64, "Captions per training batch.", 1)
    integer("max_steps", 30000, "Training steps.", 1)
    integer(
        "valid_every",
        2000,
        "Validate (beam search + metrics) every this many steps (arctic-capgen-vid: 2000).",
        1,
    )
    integer("checkpoint_steps", 1000, "Save a checkpoint every this many steps.", 1)
    integer("summary_steps", 10, "TensorBoard scalars every this many steps.", 1)
    integer(
        "histogram_steps",
        40,
        "TensorBoard histograms of the posterior on the first validation captions every "
        "this many steps (0: none).",
        0,
    )
    integer(
        "image_steps",
        200,
        "TensorBoard attention and sigma images and the greedy caption of the first "
        "validation clip every this many steps (0: none).",
        0,
    )
    integer(
        "patience",
        0,
        "Stop after this many validations without a better "
        "--best_metric (0: never; arctic-capgen-vid: 20).",
    )
    flags.DEFINE_flag(
        acvi_flags.multi_enum_flag(
            "metrics",
            REPORTED,
            REPORTED,
            "Caption metrics computed by validation, eval and decode (METEOR is the slow one).",
        ),
        flag_values=fv,
    )
    flags.DEFINE_enum(
        "best_metric",
        "CIDEr",
        list(REPORTED),
        "Validation metric that picks best/ (arctic-capgen-vid: Bleu_4).",
        flag_values=fv,
    )
    integer("beam_size", 5, "Beam width (paper: 5; 1 is greedy).", 1)
    integer("max_decode_len", 50, "Most words per generated caption.", 1)
    flags.DEFINE_enum(
        "length_normalization",
        "none",
        ["none", "average", "gnmt"],
        "Beam score: none (arctic-capgen-vid: total log-probability), average, gnmt.",
        flag_values=fv,
    )
    integer("decode_batch_size", 100, "Clips per beam-search call.", 1)
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
    integer("attention_images", 0, "decode: heat maps (PNG) of the first N clips.")
    integer(
        "report_examples",
        report_lib.DEFAULT_DETAIL,
        "decode: the first N clips carry their attention over the frames (and ACVI's "
        "sigma and KL) in report.html; every clip is listed with its CIDEr-D.",
    )
    string(
        "video_dir",
        None,
        "decode: the folder of the clips' videos (<clip>.mp4, .avi, ... as "
        "video_caption.features reads it); report.html then shows the sampled frames of "
        "the --report_examples clips as thumbnails (default: frame indices).",
    )
    acvi_flags.require_total_steps(
        ["patience"],
        lambda d: not d["patience"],
        "--patience may end training before the Gumbel phase; set --patience=0",
        fv,
    )
    acvi_flags.require_finite(__name__, fv)
    acvi_flags.require_learning_rate("learning_rate", fv)
    acvi_flags.require_dropout("dropout", fv)
    acvi_flags.take_paths(fv, ("data_dir", "features"))


def _require(config, *names):
    for name in names:
        if not config[name]:
            raise app.UsageError("--%s is required" % name)


def most_common_caption(records: List[dict]) -> str:
    """The most frequent tokenized training caption: the constant-caption baseline."""
    counts = collections.Counter(c for r in records for c in r["captions"])
    return min(counts.items(), key=lambda kv: (-kv[1], kv[0]))[0]


def _format(metrics):
    return ", ".join("%s %.4f" % (name, metrics[name]) for name in REPORTED if name in metrics)


def _frame_labels(num_frames):
    return ["f%d" % (i + 1) for i in range(num_frames)]


def train(
    exp: experiment.Experiment, strategy: tf.distribute.Strategy, step_var: tf.Variable
) -> float:
    """The training loop under ``strategy`` (the model built in its scope); returns the
    best validation ``--best_metric``."""
    config, model = exp.config, exp.model
    chief = distribute.is_chief(strategy)
    optimizer = (
        keras.optimizers.Adam(config.learning_rate)
        if config.optimizer == "adam"
        else keras.optimizers.Adadelta(config.learning_rate)
    )
    best_dir = experiment.best_dir(config)
    checkpointer = checkpoints.Checkpointer(
        experiment.train_dir(config),
        step_var,
        best_dir=best_dir,
        check=experiment.vocabulary_check(config, exp.vocab),
        scratch=None if chief else distribute.worker_scratch_dir(config.out_dir, strategy),
        model=model,
        optimizer=optimizer,
    )
    checkpointer.restore_latest()
    context_layer = model.context_layer
    train_step = training_lib.make_train_step(
        model, optimizer, config.max_grad_norm, config.jit_compile, sum_keys=("tokens",)
    )

    train_set = exp.split("train")
    pairs = train_set.caption_pairs(exp.vocab, config.max_caption_len)
    if not pairs:
        raise data.DataError(
            "no training caption in %s is usable: every one is empty after the vocabulary "
            "or has --max_caption_len=%d tokens or more; check the split's captions or raise "
            "--max_caption_len" % (config.data_dir, config.max_caption_len)
        )
    logging.info(
        "training on %d captions of %d clips; vocabulary %d",
        len(pairs),
        len(train_set.records),
        exp.vocab.size(),
    )
    # locked before the event file: a trainer refused by another's lock leaves none there
    with trainer_lib.lock_folder(checkpointer.write_dir) as lock:
        writer = (
            tf.summary.create_file_writer(os.path.join(config.out_dir, "train_log"))
            if chief
            else tf.summary.create_noop_writer()
        )

        def validate(step):
            metrics = _validate(exp, writer, step, record=chief)
            return metrics[config.best_metric], metrics

        posterior = (
            posterior_summaries(exp, writer)
            if chief and (config.histogram_steps or config.image_steps)
            else None
        )

        with trainer_lib.Trainer(
            checkpointer,
            config.max_steps,
            writer,
            context_layer,
            nan_policy=config.nan_policy,
            summary_every=config.summary_steps,
            checkpoint_every=config.checkpoint_steps,
            validate=validate,
            validate_every=config.valid_every,
            metric=config.best_metric,
            patience=config.patience,
            describe=lambda batch: "batch of %d captions" % len(batch["caption_len"]),
            after_step=posterior and (lambda step, results, batch: posterior(step)),
            lock=lock,
        ) as trainer:
            while not trainer.finished:
                # a new order every pass, seeded by the step it starts at (so a resume reshuffles
                # the same way every time)
                rng = np.random.default_rng([config.seed, trainer.step])
                batches = train_set.caption_batches(
                    pairs, config.batch_size, rng, fixed_length=config.jit_compile
                )
                trainer.train(batches, train_step)
        writer.flush()
        return checkpointer.best_value if checkpointer.best_value is not None else -1.0


def posterior_summaries(
    exp: experiment.Experiment, writer: tf.summary.SummaryWriter
) -> summaries.PosteriorSummaries:
    """``summaries.PosteriorSummaries`` of the first ``SUMMARY_CAPTIONS`` validation
    captions in split order; the images and the greedy caption are of the first.

    Args:
      exp: the run's data, model and decoder.
      writer: the run's TensorBoard writer.
    """
    config = exp.config
    clips = exp.split("val")
    pairs = clips.caption_pairs(exp.vocab)[:SUMMARY_CAPTIONS]
    if not pairs:
        raise data.DataError(
            "no validation caption in %s is usable for the TensorBoard posterior summaries "
            "(every one is empty after the vocabulary); check the split's captions or set "
            "--histogram_steps=0 --image_steps=0" % config.data_dir
        )
    batch = next(clips.caption_batches(pairs, len(pairs)))
    steps = batch["caption_in"].shape[1]
    greedy = decode_lib.CaptionDecoder(exp.model, exp.vocab, 1, config.max_decode_len)
    first = clips.records[pairs[0][0]]

    def decode():
        features, num_frames = batch["features"][:1], batch["num_frames"][:1]
        words, _ = greedy.caption(features, num_frames)[0]
        return "**%s** (greedy): %s  \nreference: %s" % (
            first["clip"],
            " ".join(words),
            " ".join(exp.vocab.decode(pairs[0][1])),
        )

    forward = summaries.posterior_forward(
        exp.model, batch, tf.sequence_mask(batch["caption_len"], steps)
    )
    return summaries.PosteriorSummaries(
        writer,
        forward,
        _frame_labels(int(batch["num_frames"][0])),
        exp.vocab.decode(pairs[0][1]) + ["</s>"],
        decode,
        config.histogram_steps,
        config.image_steps,
    )


def _validate(exp, writer, step, record=True):
    """Scores the validation split, logs it, writes TensorBoard and (with ``record``)
    validation.jsonl."""
    metrics, captions, attentions = exp.score("val")
    logging.info("step %d validation: %s", step, _format(metrics))
    clip_set = exp.split("val")
    first = clip_set.records[0]
    words = captions[first["clip"]].split()
    with writer.as_default(step=step):
        for name, value in metrics.items():
            tf.summary.scalar("val_" + name, value)
        samples = [
            "**%s**: %s  \nreference: %s" % (r["clip"], captions[r["clip"]], r["references"][0])
            for r in clip_set.records[:5]
        ]
        tf.summary.text("val_captions", "\n\n".join(samples))
        if words:
            summaries.write_attention_image(
                "val_attention",
                attentions[first["clip"]],
                _frame_labels(int(clip_set.num_frames[0])),
                words,
                step,
            )
    if record:
        record_validation(os.path.join(exp.config.out_dir, "validation.jsonl"), metrics, step)
    return metrics


def record_validation(path: str, metrics: Dict[str, float], step: int) -> None:
    """Writes ``path`` with the lines of earlier steps and then ``step``'s: a kill after
    this write and before ``best.json``'s record validates the step again on resume, and
    its line stays one. A line that is not JSON (an append a kill cut) is dropped.

    Args:
      path: the run's ``validation.jsonl``.
      metrics: the step's scores by name.
      step: the validated step.
    """
    lines = []
    if os.path.exists(path):
        with open(path, encoding="utf-8") as f:
            lines = [line for line in f if _line_step(line) < step]
    lines.append(json.dumps(dict(metrics, step=step)) + "\n")
    files.atomic_write_text(path, "".join(lines))


def _line_step(line):
    """The step of a validation.jsonl line (infinity for one that is not JSON)."""
    try:
        return json.loads(line)["step"]
    except (ValueError, KeyError, TypeError):
        return float("inf")


def evaluate(exp: experiment.Experiment) -> Dict[str, dict]:
    """Perplexity and caption metrics of the restored model on ``--eval_splits``, into
    ``eval_metrics.json`` (checked writable first)."""
    output = os.path.join(exp.config.out_dir, "eval_metrics.json")
    files.check_output(output, "--out_dir's eval_metrics.json")
    path = exp.restore()
    results = {}
    for name in exp.config.eval_splits:
        metrics, _, _ = exp.score(name)
        metrics["perplexity"] = exp.perplexity(name)
        results[name] = metrics
        print("%s: %s, perplexity %.2f" % (name, _format(metrics), metrics["perplexity"]))
    files.atomic_write_text(output, json.dumps(dict(results, checkpoint=path), indent=2) + "\n")
    return results


def decode(config: Config) -> dict:
    """Captions ``--decode_split``, scores them and the constant-caption baseline, with
    the decode folder locked (a second decode of it stops in one line); a finished
    decode folder is refused before the model is built, or replaced with
    ``--decode_overwrite`` once the new captions are scored."""
    folder = os.path.join(config.out_dir, "decode_" + config.decode_split)
    lock = files.lock_beside(folder, "decode")
    try:
        if not config.decode_overwrite:
            folders.refuse_finished(folder)
        return _decode(experiment.Experiment(config), folder)
    finally:
        lock.close()


def _decode(exp, folder):
    config = exp.config
    path = exp.restore()
    name = config.decode_split
    metrics, captions, attentions = exp.score(name)
    clip_set = exp.split(name)
    constant = most_common_caption(exp.split("train").records)
    baseline = caption_metrics.caption_metrics(
        clip_set.references(), {clip: constant for clip in captions}, names=exp.metric_names()
    )
    if os.path.isdir(folder):  # an interrupted decode, or one --decode_overwrite replaces
        shutil.rmtree(folder)
    files.atomic_write_text(
        os.path.join(folder, "captions.json"), json.dumps(captions, indent=1, sort_keys=True) + "\n"
    )
    report = dict(
        model=metrics,
        constant_caption=dict(baseline, caption=constant),
        checkpoint=path,
        split=name,
        clips=len(captions),
    )
    names = exp.metric_names()
    table = ["%-18s %s" % ("", " ".join("%8s" % m for m in names))]
    for label, values in (("model", metrics), ("constant caption", baseline)):
        table.append("%-18s %s" % (label, " ".join("%8.4f" % values[m] for m in names)))
    text = "%s split, %d clips, checkpoint %s\n%s\n" % (name, len(captions), path, "\n".join(table))
    files.atomic_write_text(os.path.join(folder, "results.txt"), text)
    for record in clip_set.records[: config.attention_images]:
        words = captions[record["clip"]].split()
        if words:
            with files.atomic_write(
                os.path.join(folder, "attention", record["clip"] + ".png"), binary=True
            ) as f:
                f.write(
                    summaries.attention_png(
                        attentions[record["clip"]],
                        _frame_labels(config.num_frames),
                        words,
                        title=record["clip"],
                    )
                )
    write_decode_report(exp, folder, clip_set, captions, attentions, report)
    # last: a folder with metrics.json is a finished decode (folders.refuse_finished)
    files.atomic_write_text(
        os.path.join(folder, "metrics.json"), json.dumps(report, indent=2) + "\n"
    )
    print(text, end="")
    logging.info("Wrote %s", folder)
    return report


# The shorter side of the report's frame thumbnails, in pixels.
THUMBNAIL_SIZE = 64
REPORT_NOTES = (report_lib.POSTERIOR_NOTE,)
# Where the report's clips without detail have their caption and references, given the split.
REPORT_ELSEWHERE = (
    "Its caption is this folder's captions.json entry for the clip, its references the "
    "clip's record in --data_dir's %s.jsonl."
)


def write_decode_report(
    exp: experiment.Experiment,
    folder: str,
    clip_set: data.ClipSet,
    captions: Dict[str, str],
    attentions: Dict[str, np.ndarray],
    metrics: Dict[str, float],
) -> None:
    """Writes the decode's ``report.html`` (``acvi_tf.inference.report``): every caption
    with its CIDEr-D, the first ``--report_examples`` with their attention over the
    frames.

    Args:
      exp: the run's data, model and decoder.
      folder: the decode folder.
      clip_set: the decoded split.
      captions: the caption of each clip.
      attentions: each caption's attention over the frames [words, frames].
      metrics: the split's scores.
    """
    references = clip_set.references()
    cider = caption_metrics.cider_per_caption(references, captions)
    records = clip_set.records
    rows = [
        report_lib.example_row(
            i, captions[r["clip"]].split(), {"CIDEr-D": cider[r["clip"]]}, name=r["clip"]
        )
        for i, r in enumerate(records)
    ]
    count = exp.config.report_examples
    posteriors = _posteriors(exp, clip_set, count, attentions)
    details = {}
    for i, record in enumerate(records[:count]):
        clip, attn = record["clip"], attentions[record["clip"]]
        details[i] = report_lib.example_detail(
            _frame_labels(attn.shape[1]),
            captions[clip].split(),
            " | ".join(references[clip]),
            attn,
            labels=decoding.posterior_labels(exp.model),
            **posteriors[clip],
        )
    notes = _frame_strips(exp.config, clip_set, details)
    shown = dict(metrics["model"], clips=metrics["clips"], checkpoint=metrics["checkpoint"])
    report_lib.write_report(
        os.path.join(folder, "report.html"),
        folder,
        shown,
        rows,
        details,
        "CIDEr-D of each caption (coco-caption, PTB-tokenised; their mean is CIDEr)",
        notes + list(REPORT_NOTES),
        REPORT_ELSEWHERE % exp.config.decode_split,
    )


def _check_video_dir(config):
    if config.video_dir and not os.path.isdir(config.video_dir):
        raise app.UsageError(
            "--video_dir=%s is not a folder; give the folder of the clips' videos, or leave "
            "it out to show frame indices" % config.video_dir
        )


def _extraction_settings(config):
    """``(K, max_frames)`` of the features' extraction: those ``--features`` records,
    else ``--num_frames`` and ``frames.MAX_FRAMES``."""
    try:
        settings = features_lib.read_settings(config.features)
    except FeaturesError:
        settings = {}
    return (
        int(settings.get("num_frames", config.num_frames)),
        int(settings.get("max_frames", frames_lib.MAX_FRAMES)),
    )


def _frame_strips(config, clip_set, details):
    """Adds to ``details`` (by clip index) the thumbnails of the frames behind their
    attention columns, read from ``--video_dir`` one clip at a time; returns the report's
    notes on the frames (which clips show indices, and why)."""
    if not config.video_dir:
        return ["Frames: indices (no --video_dir); f1 is the first sampled frame."]
    store_frames, max_frames = _extraction_settings(config)
    clips = {i: clip_set.records[i]["clip"] for i in details}
    try:
        videos = find_videos(config.video_dir, clips.values())
    except FeaturesError:
        videos = {}
    resampled = store_frames > config.num_frames
    notes = [
        "Frames: thumbnails (%d px on the shorter side) of the frames the features were "
        "computed from: %d equally spaced of the first %d of each video in --video_dir=%s%s."
        % (
            THUMBNAIL_SIZE,
            store_frames,
            max_frames,
            config.video_dir,
            ", sampled again to --num_frames=%d" % config.num_frames if resampled else "",
        )
    ]
    missing = [clip for clip in clips.values() if clip not in videos]
    if missing:
        notes.append(
            "Frames: indices for %d clip(s) with no video in --video_dir (%s)."
            % (len(missing), ", ".join(missing[:5]) + (", ..." if len(missing) > 5 else ""))
        )
    sampling = (store_frames, config.num_frames, max_frames, THUMBNAIL_SIZE)
    for i, clip in clips.items():
        if clip in videos:
            rows = int(clip_set.num_frames[i])
            notes += _add_thumbnails(details[i], clip, videos[clip], rows, sampling)
    return notes


def _add_thumbnails(detail, clip, path, rows, sampling):
    """Gives one example's detail the thumbnails of its video (``sampling``: the
    arguments of ``frames.feature_thumbnails`` after the path); returns a note where it
    shows indices instead."""
    try:
        images = frames_lib.feature_thumbnails(path, *sampling)
    except frames_lib.VideoError as e:
        return ["Frames: indices for clip %s: %s." % (clip, e)]
    if len(images) != rows:
        return [
            "Frames: indices for clip %s: its video gives %d sampled frames, its features %d."
            % (clip, len(images), rows)
        ]
    report_lib.add_frames(detail, images)
    return []


def _posteriors(exp, clip_set, count, attentions):
    """``{clip: decoding.example_posterior}`` of a split's first ``count`` clips (or
    more: whole batches), from the encoder run again on their features and their
    captions' ``attentions``."""
    found = {}
    for records, batch in clip_set.clip_batches(exp.config.decode_batch_size):
        if len(found) >= count:
            break
        inputs = dict(features=batch["features"], num_frames=batch["num_frames"])
        attn = [attentions[record["clip"]] for record in records]
        values = decoding.posterior(exp.model, exp.model.start(inputs)[0], decoding.pad_steps(attn))
        arrays = {k: v.numpy() for k, v in values.items()}
        for j, record in enumerate(records):
            row = {k: v[j] for k, v in arrays.items()}
            found[record["clip"]] = decoding.example_posterior(row, len(attn[j]))
    return found


def run(config: Config) -> Union[float, dict]:
    """Runs ``--mode`` on the command's frozen flags (an ``acvi_tf.config.Config``);
    returns its result."""
    _require(config, "out_dir")
    resuming = checkpoints.latest_checkpoint(experiment.train_dir(config)) is not None
    if config.mode != "train" or resuming:
        config = acvi_flags.run_config(
            config, config.out_dir, MODEL_FLAGS, COMMAND_FLAGS, define_flags
        )
    _require(config, "data_dir", "features")
    if config.mode == "train" and config.best_metric not in config.metrics:
        # the metric that picks the best model; an eval or a decode scores what it is given
        raise app.UsageError(
            "--best_metric=%s must be one of --metrics=%s"
            % (config.best_metric, ",".join(config.metrics))
        )
    strategy = builders.configure_runtime(config, trains=config.mode == "train")
    if config.mode != "train":
        os.makedirs(config.out_dir, exist_ok=True)
        _check_video_dir(config)
        if config.mode == "decode":
            return decode(config)
        return evaluate(experiment.Experiment(config))
    with acvi_flags.refused_run_undone(config.out_dir, experiment.train_dir(config)):
        os.makedirs(config.out_dir, exist_ok=True)
        with acvi_flags.training_record(
            config.out_dir,
            config,
            MODEL_FLAGS if resuming else None,
            distribute.is_chief(strategy),
            experiment.vocabularies(config, experiment.load_vocab(config)),
            [experiment.split_path(config, "train")],
            COMMAND_FLAGS,
            checkpoint_dir=experiment.train_dir(config),
        ):
            # the global step is the process's own (a plain variable), the model's mirrored
            step_var = tf.Variable(0, dtype=tf.int64, name="global_step")
            with strategy.scope():
                best = train(experiment.Experiment(config), strategy, step_var)
    print("best validation %s %.4f" % (config.best_metric, best))
    return best


if __name__ == "__main__":
    config_lib.run_command(define_flags, run)
