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

The served module is the captioner's (``video_caption.serving.ServedCaptioner``); the
Runner (``acvi_tf.runner.runner.export``) saves it.
"""

import tensorflow as tf
from absl import flags

from acvi_tf import config as config_lib
from acvi_tf.config import Config
from acvi_tf.runner import runner
from video_caption.task import TASK


def define_flags(fv: flags.FlagValues = flags.FLAGS) -> None:
    """Defines the command's flags on ``fv``."""
    runner.define_export_flags(TASK, fv)


def run(config: Config) -> tf.Module:
    """Exports the run in ``--out_dir`` to ``--export_dir``; returns the
    ``serving.ServedCaptioner`` saved."""
    return runner.export(TASK, config)


if __name__ == "__main__":
    config_lib.run_command(define_flags, run)
