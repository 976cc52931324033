"""Train, evaluate and translate with Luong NMT + ACVI: ``python -m nmt.run_nmt``.

Flag names, defaults and meanings follow tensorflow/nmt's ``nmt.py``; ``--hparams_preset``
sets a group of them: ``acvi_paper`` (the ACVI paper's MT runs: 256 units, a bidirectional
encoder, 2 decoder layers, Luong "general" attention, dropout 0.2, SGD 1.0, 12K steps,
luong234 decay, beam 10) or ``iwslt15`` (tensorflow/nmt's ``iwslt15.json``: 512 units,
scaled Luong). Explicit flags override the preset.

Training writes ``out_dir/translate.ckpt-<step>`` (5 kept), the best dev-BLEU model in
``out_dir/best/`` (a run trained before has it in ``out_dir/best_bleu/``, still read),
TensorBoard logs in ``out_dir/train_log`` and the translations of dev and test in
``out_dir/output_{dev,test}``. With ``--inference_input_file`` it
translates a file instead (and scores it if ``--inference_ref_file`` is given). Inference
and a resume take the run's settings from ``out_dir/hparams.json``
(``acvi_flags.run_config``); the model's flags need not be repeated.

The flags and the jobs are the translator's Task (``nmt.task``); the Runner
(``acvi_tf.runner.runner``) runs it.
"""

from typing import Optional

from acvi_tf.config import Config
from acvi_tf.runner import runner
from nmt.task import TASK, define_flags

__all__ = ["define_flags", "run"]


def run(config: Config) -> Optional[float]:
    """Trains, or translates ``--inference_input_file``, on the command's frozen flags
    (an ``acvi_tf.config.Config``).

    Returns:
      Training: the best dev BLEU. Inference: the BLEU against
      ``--inference_ref_file``, or None.
    """
    return runner.run(TASK, config)


if __name__ == "__main__":
    runner.main(TASK)
