"""Captions of new videos with a trained run.

``python -m video_caption.caption --out_dir=runs/mine --input=videos.txt`` reads one
video path per line (``--input``, a file or ``-`` for standard input), extracts each
video's frame features exactly as the run's training features were extracted (the CNN,
its weights and the frame sampling that ``features.json`` of the run's feature store
records; ``video_caption.features`` wrote it), standardises them with the training
frames' statistics when the run does, and captions ``--decode_batch_size`` videos per
beam search with the run's best model (``best/``, else the newest training checkpoint,
or ``--ckpt``). It writes one caption per line (``--output``, default standard output).
The model and the search are the ones the run's ``hparams.json`` records;
``--beam_size`` and ``--decode_batch_size`` may be given here.

Usage::

  python -m video_caption.caption --out_dir=runs/mine --input=videos.txt --output=captions.txt
  ls clips/*.mp4 | python -m video_caption.caption --out_dir=runs/mine
"""

import os
import tempfile

from absl import flags

from acvi_tf import builders, errors, files
from acvi_tf import config as config_lib
from acvi_tf import flags as acvi_flags
from acvi_tf import progress as progress_lib
from acvi_tf.formats import frame_features
from video_caption import features as features_lib
from video_caption import run_captioning


class InputError(errors.UserError, ValueError):
    """The video list cannot be read; the message names the line and the fix."""


def define_run_flags(fv=flags.FLAGS):
    """Defines the flags that name a trained run and its search settings on ``fv``
    (shared with ``video_caption.export``)."""
    flags.DEFINE_string("out_dir", None, "The run's --out_dir.", flag_values=fv)
    flags.DEFINE_string(
        "ckpt", None, "Checkpoint (default: best/'s, else the newest).", flag_values=fv
    )
    flags.DEFINE_integer(
        "beam_size", None, "Beam width. Default: the run's.", lower_bound=1, flag_values=fv
    )
    flags.DEFINE_integer(
        "decode_batch_size",
        None,
        "Videos per search. Default: the run's.",
        lower_bound=1,
        flag_values=fv,
    )
    flags.mark_flag_as_required("out_dir", flag_values=fv)


def define_flags(fv=flags.FLAGS):
    """Defines the command's flags on ``fv``."""
    define_run_flags(fv)
    flags.DEFINE_string(
        "input", "-", "Video paths, one per line; - is standard input.", flag_values=fv
    )
    flags.DEFINE_string(
        "output", "-", "Captions, one per line; - is standard output.", flag_values=fv
    )


def run_config(out_dir, given):
    """The run's settings as its ``hparams.json`` records them, with ``given`` on top."""
    return acvi_flags.recorded_config(
        run_captioning.define_flags,
        out_dir,
        "--out_dir",
        "video_caption.run_captioning",
        run_captioning.MODEL_FLAGS,
        run_captioning.COMMAND_FLAGS,
        **given,
        out_dir=out_dir,
    )


def extract(videos, settings, folder):
    """Features of ``videos`` with the training store's ``settings``, into ``folder``
    under the names ``000000``, ``000001``, ... (the videos' own names may repeat).

    Raises:
      InputError: a video is missing, or could not be decoded.
    """
    video_dir = os.path.join(folder, "videos")
    os.makedirs(video_dir)
    for index, path in enumerate(videos):
        if not os.path.isfile(path):
            raise InputError("video %d of the input, %s, is not a file" % (index + 1, path))
        extension = os.path.splitext(path)[1].lower()
        os.symlink(os.path.abspath(path), os.path.join(video_dir, "%06d%s" % (index, extension)))
    store = os.path.join(folder, "features")
    weights = settings["weights"]
    stats = features_lib.extract_features(
        video_dir,
        store,
        cnn=settings["cnn"],
        cnn_weights=None if weights == "random" else weights,
        max_frames=settings["max_frames"],
        num_frames=settings["num_frames"],
        dtype=settings.get("dtype", "float32"),
    )
    if stats.failed:
        names = sorted(clip for clip, _, _ in stats.failed)
        raise InputError(
            "%d video(s) could not be decoded: %s"
            % (len(names), ", ".join(videos[int(name)] for name in names[:10]))
        )
    return store


def caption(videos, exp):
    """Captions of the video files ``videos`` with the restored run ``exp``, in order."""
    if not videos:
        return []
    config = exp.config
    settings = features_lib.read_settings(config.features)
    with tempfile.TemporaryDirectory(prefix="caption-") as folder:
        store_path = extract(videos, settings, folder)
        names = ["%06d" % index for index in range(len(videos))]
        records = [dict(clip=name, vid=name, captions=["-"], references=["-"]) for name in names]
        with frame_features.open_features(store_path) as store:
            clip_set = exp.clip_set(records, store, store_path)
            progress = progress_lib.Progress(len(names), "captioned videos")
            captions, _ = exp.decoder.caption_set(clip_set, config.decode_batch_size, progress)
    return [captions[name] for name in names]


def run(config):
    """Captions the videos of ``--input`` into ``--output``; returns the captions."""
    given = dict(beam_size=config.beam_size, decode_batch_size=config.decode_batch_size)
    model_config = run_config(config.out_dir, given).replace(ckpt=config.ckpt)
    builders.configure_runtime(model_config)
    exp = run_captioning.Experiment(model_config)
    run_captioning.restore(exp)
    videos = [line.strip() for line in files.read_input_lines(config.input, InputError)]
    captions = caption([v for v in videos if v], exp)
    by_video = iter(captions)
    lines = [next(by_video) if video else "" for video in videos]
    files.write_output_lines(config.output, lines, videos, "captions")
    return lines


if __name__ == "__main__":
    config_lib.run_command(define_flags, run)
