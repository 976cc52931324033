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

The conversion is the captioner's (``video_caption.serving``); the Runner
(``acvi_tf.runner.runner.serve``) runs it.
"""

from typing import List

from absl import flags

from acvi_tf import config as config_lib
from acvi_tf.config import Config
from acvi_tf.runner import runner
from video_caption.task import TASK


def define_flags(fv: flags.FlagValues = flags.FLAGS) -> None:
    """Defines the command's flags on ``fv``."""
    runner.define_serve_flags(TASK, fv)


def run(config: Config) -> List[str]:
    """Captions the videos of ``--input`` into ``--output``; returns the captions."""
    return runner.serve(TASK, config)


if __name__ == "__main__":
    config_lib.run_command(define_flags, run)
