"""The captioner's commands on a trained run: captions of new video files, their frame
features extracted as the run's training features were and decoded with the run's best
model (``video_caption.caption``), and the path from frame features to caption in
TensorFlow ops as a SavedModel (``video_caption.export``). The captioner's Task
(``video_caption.task``) hands them to the Runner.
"""

import os
import tempfile
from typing import Any, Callable, Dict, List, Optional, Tuple

import numpy as np
import tensorflow as tf
from absl import flags

from acvi_tf import progress as progress_lib
from acvi_tf.config import Config
from acvi_tf.formats import frame_features
from acvi_tf.inference import commands
from acvi_tf.runner.task import Task
from video_caption import data, experiment, extraction
from video_caption import decode as decode_lib


def define_run_flags(fv: flags.FlagValues = flags.FLAGS) -> None:
    """Defines the flags that name a trained run and its search settings on ``fv``."""
    commands.define_run_flags(fv, "best/", "beam_size", 1, "decode_batch_size", "Videos")


def given_settings(config: Config) -> Dict[str, Any]:
    """The flags a command gives that replace the run's recorded ones (None: the run's)."""
    return dict(
        beam_size=config.beam_size,
        decode_batch_size=config.decode_batch_size,
        allow_data_change=config.allow_data_change,
    )


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
    stats = extraction.extract_features(
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
    settings = extraction.read_settings(config.features)
    with tempfile.TemporaryDirectory(prefix="caption-") as folder:
        store_path = extract(videos, settings, folder)
        names = ["%06d" % index for index in range(len(videos))]
        records = [dict(clip=name, vid=name, captions=["-"], references=["-"]) for name in names]
        with frame_features.open_features(store_path) as store:
            clips = experiment.clip_set(config, records, store, store_path, statistics)
            progress = progress_lib.Progress(len(names), "captioned videos")
            captions, _ = decoder.caption_set(clips, config.decode_batch_size, progress)
    return [captions[name] for name in names]


def caption_lines(lines: List[str], caption_videos: Callable[[List[str]], List[str]]) -> List[str]:
    """A caption for each line's video (stripped), an empty one for a blank line; a line
    that names no file is refused before any video is read.

    Raises:
      acvi_tf.inference.commands.LineError: a line names no file.
    """
    videos = [line.strip() for line in lines]
    for number, video in enumerate(videos, start=1):
        if video and not os.path.isfile(video):
            raise commands.LineError(
                number,
                "%s is not a file; give one video a line (its path, absolute or from the "
                "folder the command runs in), or a blank line for none" % video,
            )
    by_video = iter(caption_videos([v for v in videos if v]))
    return [next(by_video) if video else "" for video in videos]


def named_files(lines: List[str]) -> List[str]:
    """The videos the input lines name (the non-blank lines, stripped)."""
    return [line.strip() for line in lines if line.strip()]


def raw_text(task: Task, config: Config) -> Callable[[List[str]], List[str]]:
    """Lines of video paths -> captions with the run ``config`` describes (its best
    model, or ``--ckpt``'s), in the folders of ``task`` (the captioner's)."""
    decoder = experiment.load_decoder(task, config)
    statistics = experiment.load_statistics(config)
    return lambda lines: caption_lines(
        lines, lambda videos: caption(videos, config, decoder, statistics)
    )


class ServedCaptioner(tf.Module):
    """Frame features in, captions out, every step a TensorFlow op.

    Args:
      decoder: a ``decode.CaptionDecoder``.
      num_frames: K, the frames the model reads per clip.
      statistics: the training frames' ``(mean [D], std [D])``, or None (no
        standardisation).
    """

    def __init__(
        self,
        decoder: decode_lib.CaptionDecoder,
        num_frames: int,
        statistics: Optional[Tuple[np.ndarray, np.ndarray]] = None,
    ) -> None:
        super().__init__(name="captioner")
        self._variables = list(decoder.model.variables)  # saved with the graph
        self._search = decoder.search
        self._num_frames = num_frames
        self._statistics = (
            None if statistics is None else tuple(tf.constant(s, tf.float32) for s in statistics)
        )
        self._words = tf.constant(decoder.vocab.words())

    def features(self, frames: tf.Tensor, frame_counts: tf.Tensor) -> Tuple[tf.Tensor, tf.Tensor]:
        """``data.ClipSet``'s features of the clips: K sampled frames, standardised,
        zero padded, and their counts.

        Args:
          frames: [B, F, D] each clip's frame features, zero padded.
          frame_counts: [B] each clip's real frames.

        Returns:
          ``(features [B, K, D], num_frames [B])``.
        """
        k = self._num_frames
        position = tf.range(k)[tf.newaxis]
        counts = frame_counts[:, tf.newaxis]
        chunk, longer = counts // k, counts % k
        # the first frame of each of K chunks, the first ``longer`` chunks one longer
        index = tf.where(counts > k, position * chunk + tf.minimum(position, longer), position)
        valid = position < tf.minimum(counts, k)
        features = tf.gather(frames, tf.where(valid, index, 0), batch_dims=1)
        if self._statistics is not None:
            mean, std = self._statistics
            features = (features - mean) / std
        features = tf.where(valid[..., tf.newaxis], features, 0.0)
        return features, tf.minimum(frame_counts, k)

    @tf.function(
        input_signature=[
            tf.TensorSpec([None, None, None], tf.float32),
            tf.TensorSpec([None], tf.int32),
        ]
    )
    def caption(self, frames: tf.Tensor, frame_counts: tf.Tensor) -> Dict[str, tf.Tensor]:
        """``frames`` [B, F, D], ``frame_counts`` [B] -> ``captions``, ``scores``,
        ``attention``."""
        features, num_frames = self.features(frames, frame_counts)
        # a clip of no frames reads one zero frame (its caption is dropped)
        out = self._search(dict(features=features, num_frames=tf.maximum(num_frames, 1)))
        ids = out["ids"]
        steps = tf.range(tf.shape(ids)[1])[tf.newaxis]
        keep = tf.logical_and(
            steps < out["lengths"][:, tf.newaxis],
            tf.logical_and(tf.not_equal(ids, data.PAD_ID), tf.not_equal(ids, data.BOS_ID)),
        )
        words = tf.ragged.boolean_mask(tf.gather(self._words, ids), keep)
        captions = tf.strings.reduce_join(words, axis=1, separator=" ")
        empty = tf.equal(num_frames, 0)
        return dict(
            captions=tf.where(empty, "", captions),
            scores=tf.where(empty, 0.0, out["scores"]),
            attention=out["attn"],
        )


def served_module(
    task: Task, config: Config, pretokenized: bool
) -> Tuple[tf.Module, Dict[str, Callable]]:
    """The served captioner of the run ``config`` describes, in the folders of ``task``
    (the captioner's), and its signature (``pretokenized`` is False: the model reads
    frame features)."""
    del pretokenized
    decoder = experiment.load_decoder(task, config)
    statistics = experiment.load_statistics(config)
    module = ServedCaptioner(decoder, config.num_frames, statistics)
    return module, {"serving_default": module.caption}
