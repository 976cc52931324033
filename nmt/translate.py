"""Translations of new text with a trained run.

``python -m nmt.translate --out_dir=models/en_it --input=new.en`` reads one sentence per
line (``--input``, a file or ``-`` for standard input), tokenises each the way the run's
corpus was built (its ``corpus.json``, written by ``data_prep.translation``; Treebank and
lowercase without one), segments it with the corpus's BPE codes when the run trained on
``bpe/`` (``--subword_option=bpe``), translates ``--infer_batch_size`` sentences per
batched search with the run's best dev-BLEU model (``best/``, else its newest checkpoint, or
``--ckpt``) and writes one translation per line (``--output``, default standard
output), the ``@@`` markers removed. The model and the search are the ones the run's
``hparams.json`` records; ``--infer_mode``, ``--beam_width``, ``--length_penalty_weight``,
``--sampling_temperature``, ``--seed`` and ``--infer_batch_size`` may be given here (a
greedy run searches a beam with ``--infer_mode=beam_search --beam_width=N``, and samples
with ``--infer_mode=sample --sampling_temperature=T``).
``nmt.run_nmt --inference_input_file`` stays tensorflow/nmt's command over already
tokenised text.

Usage::

  python -m nmt.translate --out_dir=models/en_it --input=new.en --output=new.it
  cat new.en | python -m nmt.translate --out_dir=models/en_it

The conversion is the translator's (``nmt.serving``); the Runner
(``acvi_tf.runner.runner.serve``) runs it.
"""

from typing import List

from absl import flags

from acvi_tf import config as config_lib
from acvi_tf.config import Config
from acvi_tf.runner import runner
from nmt.task import TASK


def define_flags(fv: flags.FlagValues = flags.FLAGS) -> None:
    """Defines the command's flags on ``fv``."""
    runner.define_serve_flags(TASK, fv)


def run(config: Config) -> List[str]:
    """Translates ``--input`` into ``--output``; returns the translations."""
    return runner.serve(TASK, config)


if __name__ == "__main__":
    config_lib.run_command(define_flags, run)
