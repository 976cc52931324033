"""The captioner's jobs, which its Task (``video_caption.task``) runs: training with
validation captions scored and the best model kept, evaluation of a checkpoint, and
decode (captions, metrics, attention heat maps and ``report.html``).
"""

import collections
import functools
import json
import os
import shutil
from typing import Dict, List

import numpy as np
import tensorflow as tf
from absl import logging

from acvi_tf import files
from acvi_tf.compat import keras
from acvi_tf.config import Config
from acvi_tf.formats.frame_features import FeaturesError
from acvi_tf.formats.video_folder import find_videos
from acvi_tf.inference import decoding, folders
from acvi_tf.inference import report as report_lib
from acvi_tf.metrics import captions as caption_metrics
from acvi_tf.runner import inference, restoring, training
from acvi_tf.runner.task import Task
from acvi_tf.training import checkpoints, distribute, summaries
from acvi_tf.training import step as training_lib
from video_caption import data, experiment, extraction
from video_caption import decode as decode_lib
from video_caption import frames as frames_lib

REPORTED = experiment.REPORTED
# The validation captions of the posterior histograms (the first is the images' clip).
SUMMARY_CAPTIONS = 8


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
    best_dir = exp.task.best_dir(config)
    checkpointer = checkpoints.Checkpointer(
        exp.task.checkpoint_dir(config),
        step_var,
        best_dir=best_dir,
        check=restoring.vocabulary_check(exp.task, config, exp.vocab),
        scratch=None if chief else distribute.worker_scratch_dir(config.out_dir, strategy),
        model=model,
        optimizer=optimizer,
    )
    checkpointer.restore_latest()
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

    def options(writer):
        def validate(step):
            metrics = _validate(exp, writer, step, record=chief)
            return metrics[config.best_metric], metrics

        posterior = (
            posterior_summaries(exp, writer)
            if chief and (config.histogram_steps or config.image_steps)
            else None
        )
        return dict(
            nan_policy=config.nan_policy,
            summary_every=config.summary_steps,
            checkpoint_every=config.checkpoint_steps,
            validate=validate,
            validate_every=config.valid_every,
            metric=config.best_metric,
            patience=config.patience,
            describe=lambda batch: "batch of %d captions" % len(batch["caption_len"]),
            after_step=posterior and (lambda step, results, batch: posterior(step)),
        )

    def feed(trainer):
        while not trainer.finished:
            # a new order every pass, seeded by the step it starts at (so a resume reshuffles
            # the same way every time)
            rng = np.random.default_rng([config.seed, trainer.step])
            batches = train_set.caption_batches(
                pairs, config.batch_size, rng, fixed_length=config.jit_compile
            )
            trainer.train(batches, train_step)

    event_dir = os.path.join(config.out_dir, "train_log")
    training.drive(
        training.TrainingRun(model, checkpointer, config.max_steps, event_dir, options, feed),
        strategy,
    )
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
    return _restored(exp, functools.partial(_evaluate, exp, output))


def _restored(exp, job):
    """``job(checkpoint path)``'s result, with the experiment's model restored by the
    Runner (``--ckpt``, else the best model, else the newest checkpoint) and the search
    settings logged."""

    def run(model, path, step):
        del model, step  # the experiment's
        experiment.log_search(exp.config)
        return job(path)

    return inference.drive(
        exp.task, exp.config, inference.InferenceRun(exp.vocab, lambda: exp.model, run)
    )


def _evaluate(exp, output, path):
    results = {}
    for name in exp.config.eval_splits:
        metrics, _, _ = exp.score(name)
        metrics["perplexity"] = exp.perplexity(name)
        results[name] = metrics
        print("%s: %s, perplexity %.2f" % (name, _format(metrics), metrics["perplexity"]))
    files.atomic_write_text(output, json.dumps(dict(results, checkpoint=path), indent=2) + "\n")
    return results


def decode(task: Task, config: Config) -> dict:
    """Captions ``--decode_split``, scores them and the constant-caption baseline, with
    the decode folder locked (a second decode of it stops in one line); a finished
    decode folder is refused before the model is built, or replaced with
    ``--decode_overwrite`` once the new captions are scored.

    Args:
      task: the captioner's Task, which names the run's folders.
      config: the run's settings.

    Returns:
      The decode's report (``metrics.json``'s content).
    """
    folder = os.path.join(config.out_dir, "decode_" + config.decode_split)
    lock = files.lock_beside(folder, "decode")
    try:
        if not config.decode_overwrite:
            folders.refuse_finished(folder)
        exp = experiment.Experiment(task, config)
        return _restored(exp, functools.partial(_decode, exp, folder))
    finally:
        lock.close()


def _decode(exp, folder, path):
    config = exp.config
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


def _extraction_settings(config):
    """``(K, max_frames)`` of the features' extraction: those ``--features`` records,
    else ``--num_frames`` and ``frames.MAX_FRAMES``."""
    try:
        settings = extraction.read_settings(config.features)
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
