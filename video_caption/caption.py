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
from typing import Any, Callable, Dict, List, Optional, Tuple

import numpy as np
from absl import flags

from acvi_tf import builders, files
from acvi_tf import config as config_lib
from acvi_tf import progress as progress_lib
from acvi_tf.config import Config
from acvi_tf.formats import frame_features
from acvi_tf.inference import commands
from acvi_tf.runner import runner
from video_caption import decode as decode_lib
from video_caption import experiment, task
from video_caption import features as features_lib


def define_run_flags(fv: flags.FlagValues = flags.FLAGS) -> None:
    """Defines the flags that name a trained run and its search settings on ``fv``
    (shared with ``video_caption.export``)."""
    commands.define_run_flags(fv, "best/", "beam_size", 1, "decode_batch_size", "Videos")


def define_flags(fv: flags.FlagValues = flags.FLAGS) -> None:
    """Defines the command's flags on ``fv``."""
    define_run_flags(fv)
    commands.define_io_flags(fv, "Video paths", "Captions")


def given_settings(config: Config) -> Dict[str, Any]:
    """The flags a command gives that replace the run's recorded ones (None: the run's)."""
    return dict(
        beam_size=config.beam_size,
        decode_batch_size=config.decode_batch_size,
        allow_data_change=config.allow_data_change,
    )


def run_config(out_dir: str, given: Dict[str, Any]) -> Config:
    """The run's settings as its ``hparams.json`` records them, with ``given`` on top."""
    return runner.recorded_config(task.TASK, out_dir, **given, out_dir=out_dir)


def extract(videos: List[str], settings: Dict[str, Any], folder: str) -> str:
    """Features of ``videos`` with the training store's ``settings``, into ``folder``
    under the names ``000000``, ``000001``, ... (the videos' own names may repeat).

    Raises:
      acvi_tf.inference.commands.InputError: a video is missing, or could not be decoded.
    """
    video_dir = os.path.join(folder, "videos")
    os.makedirs(video_dir)
    for index, path in enumerate(videos):
        if not os.path.isfile(path):
            raise commands.InputError(
                "video %d of the input, %s, is not a file; give the path of a video file"
                % (index + 1, path)
            )
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
        raise commands.InputError(
            "%d video(s) could not be decoded: %s; convert them to a format FFmpeg reads "
            "(mp4, avi, ...) or leave them out"
            % (len(names), ", ".join(videos[int(name)] for name in names[:10]))
        )
    return store


def caption(
    videos: List[str],
    config: Config,
    decoder: decode_lib.CaptionDecoder,
    statistics: Optional[Tuple[np.ndarray, np.ndarray]],
) -> List[str]:
    """Captions of the video files ``videos``, in order.

    Args:
      videos: the videos' paths.
      config: the run's settings (``--features``, ``--num_frames``, ``--decode_batch_size``).
      decoder: the restored run's beam search (``experiment.load_decoder``'s).
      statistics: the training frames' ``(mean, std)`` to standardise with (None: none).

    Raises:
      acvi_tf.inference.commands.InputError: a video is missing, or could not be decoded.
    """
    if not videos:
        return []
    settings = features_lib.read_settings(config.features)
    with tempfile.TemporaryDirectory(prefix="caption-") as folder:
        store_path = extract(videos, settings, folder)
        names = ["%06d" % index for index in range(len(videos))]
        records = [dict(clip=name, vid=name, captions=["-"], references=["-"]) for name in names]
        with frame_features.open_features(store_path) as store:
            clips = experiment.clip_set(config, records, store, store_path, statistics)
            progress = progress_lib.Progress(len(names), "captioned videos")
            captions, _ = decoder.caption_set(clips, config.decode_batch_size, progress)
    return [captions[name] for name in names]


def _caption_lines(
    lines: List[str], caption_videos: Callable[[List[str]], List[str]], source: str
) -> List[str]:
    """A caption for each line's video (stripped), an empty one for a blank line; a line
    that names no file is refused before any video is read (``source``: the input)."""
    videos = [line.strip() for line in lines]
    for number, video in enumerate(videos, start=1):
        if video and not os.path.isfile(video):
            raise commands.InputError(
                "%s:%d: %s is not a file; give one video a line (its path, absolute or "
                "from the folder the command runs in), or a blank line for none"
                % ("standard input" if source == "-" else source, number, video)
            )
    by_video = iter(caption_videos([v for v in videos if v]))
    return [next(by_video) if video else "" for video in videos]


def run(config: Config) -> List[str]:
    """Captions the videos of ``--input`` into ``--output``; returns the captions."""
    model_config = run_config(config.out_dir, given_settings(config))
    builders.configure_runtime(model_config)
    decoder = experiment.load_decoder(model_config, config.ckpt)
    statistics = experiment.load_statistics(model_config)
    return commands.map_lines(
        config.input,
        config.output,
        lambda lines: _caption_lines(
            lines, lambda videos: caption(videos, model_config, decoder, statistics), config.input
        ),
        "captions",
        files.run_files(config.out_dir, *experiment.files_read(model_config)),
        lambda lines: filter(None, (line.strip() for line in lines)),
    )


if __name__ == "__main__":
    config_lib.run_command(define_flags, run)
