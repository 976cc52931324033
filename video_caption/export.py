"""Exports a trained captioner as a TensorFlow SavedModel that captions frame features.

``python -m video_caption.export --out_dir=runs/mine --export_dir=served/1`` writes a
SavedModel whose graph holds the path from a clip's per-frame CNN features to its
caption: the choice of ``--num_frames`` equally spaced frames (``frames.sample_indices``),
the standardisation with the training frames' statistics when the run uses it, the beam
search with the run's best weights, and the caption's words joined by spaces. Decoding
video and running the CNN stay outside: extract the features with
``video_caption.features`` and the CNN settings the run's store records
(``features.json``), as ``video_caption.caption`` does. Its signature:

- ``serving_default``: ``frames`` [B, F, D] float32 (each clip's frame features as the
  store holds them, zero padded) and ``frame_counts`` [B] int32 -> ``captions`` [B]
  string, ``scores`` [B] float32 and ``attention`` [B, T, K] float32. A clip of no frames
  gives "".

Loading needs TensorFlow only. The search runs without XLA.
"""

from typing import Callable, Dict, Optional, Tuple

import numpy as np
import tensorflow as tf
from absl import flags

from acvi_tf import config as config_lib
from acvi_tf.config import Config
from acvi_tf.inference import export as export_lib
from video_caption import caption as caption_lib
from video_caption import data, experiment
from video_caption import decode as decode_lib


def define_flags(fv: flags.FlagValues = flags.FLAGS) -> None:
    """Defines the command's flags on ``fv``."""
    caption_lib.define_run_flags(fv)
    export_lib.define_flags(fv, text_input=False)


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


def _served(config: Config) -> Tuple[ServedCaptioner, Dict[str, Callable]]:
    """The served captioner of the run ``config`` describes, and its signature."""
    decoder = experiment.load_decoder(config, config.ckpt)
    statistics = experiment.load_statistics(config)
    module = ServedCaptioner(decoder, config.num_frames, statistics)
    return module, {"serving_default": module.caption}


def run(config: Config) -> ServedCaptioner:
    """Exports the run in ``--out_dir`` to ``--export_dir``."""
    given = caption_lib.given_settings(config)
    return export_lib.export_run(
        config,
        lambda: caption_lib.run_config(config.out_dir, given).replace(ckpt=config.ckpt),
        _served,
        "captioner",
    )


if __name__ == "__main__":
    config_lib.run_command(define_flags, run)
