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
(``acvi_flags.run_config``); the model's flags need not be repeated. The flags and the
jobs are the captioner's Task (``video_caption.task``); the Runner
(``acvi_tf.runner.runner``) runs it.

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

from typing import Any

from acvi_tf.config import Config
from acvi_tf.runner import runner
from video_caption.task import TASK, define_flags

__all__ = ["define_flags", "run"]


def run(config: Config) -> Any:
    """Runs ``--mode`` on the command's frozen flags (an ``acvi_tf.config.Config``);
    returns its result: the best validation score, or the eval's or decode's metrics."""
    return runner.run(TASK, config)


if __name__ == "__main__":
    runner.main(TASK)
