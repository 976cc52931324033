"""Summaries of new text with a trained run.

``python -m pointer_generator.summarize --log_root=logs --exp_name=mine --input=new.txt``
reads one document per line (``--input``, a file or ``-`` for standard input), tokenises
each the way the run's corpus was built (its ``corpus.json`` next to the vocabulary,
written by ``data_prep.summarization``; Treebank and lowercase without one), decodes
``--decode_batch_size`` documents per batched beam search with the run's best model (the
eval job's ``bestmodel`` in ``best/``, else the newest training checkpoint, or
``--ckpt``) and writes one summary per line (``--output``, default standard output): the
decoded tokens joined by spaces, as ``--mode=decode`` writes them (there one sentence per
line). An empty line gives an empty summary. The model is the one the run's
``hparams.json`` records; the decode flags default to the run's (``--min_dec_steps`` to
one derived from the maximum) and may be given here.

Usage::

  python -m pointer_generator.summarize --log_root=logs --exp_name=mine \\
      --input=articles.txt --output=summaries.txt [--beam_size=4 --max_dec_steps=120]
  cat articles.txt | python -m pointer_generator.summarize --log_root=logs --exp_name=mine

The conversion is the summarizer's (``pointer_generator.serving``); the Runner
(``acvi_tf.runner.runner.serve``) runs it.
"""

from typing import List

from absl import flags

from acvi_tf import config as config_lib
from acvi_tf.config import Config
from acvi_tf.runner import runner
from pointer_generator.task import TASK


def define_flags(fv: flags.FlagValues = flags.FLAGS) -> None:
    """Defines the command's flags on ``fv``."""
    runner.define_serve_flags(TASK, fv)


def run(config: Config) -> List[str]:
    """Summarises ``--input`` into ``--output``; returns the summaries."""
    return runner.serve(TASK, config)


if __name__ == "__main__":
    config_lib.run_command(define_flags, run)
