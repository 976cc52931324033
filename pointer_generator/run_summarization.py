"""Train or evaluate the pointer-generator: ``python -m pointer_generator.run_summarization``.

Every flag of See et al.'s ``run_summarization.py`` keeps its name, default and meaning;
the ACVI flags come from ``acvi_tf.flags``. Additions: ``--optimizer``, ``--max_steps``,
``--phases`` / ``--coverage_steps`` (the curriculum in one process),
``--checkpoint_secs`` and ``--eval_max_batches``. Layout: the original's
``log_root/exp_name/train`` (checkpoints ``model.ckpt-<step>``, TensorBoard) and
``log_root/exp_name/eval`` (each checkpoint's validation loss and See's running average
for TensorBoard); the best model in ``log_root/exp_name/best``, as in every host
(``bestmodel-<step>``, ``best.json``; the ``eval`` folder of a run trained before still
serves). The eval job, decode mode and a resume take the run's settings from its
``hparams.json`` (``acvi_flags.run_config``);
the model's flags need not be repeated.

The flags and the jobs are the summarizer's Task (``pointer_generator.task``); the
Runner (``acvi_tf.runner.runner``) runs it.
"""

from typing import Any

from acvi_tf.config import Config
from acvi_tf.runner import runner
from pointer_generator.task import TASK, define_flags

__all__ = ["define_flags", "run"]


def run(config: Config) -> Any:
    """Runs ``--mode`` on the command's frozen flags (an ``acvi_tf.config.Config``).

    Returns:
      The trained model, the eval job's best loss, or the decode's metrics.
    """
    return runner.run(TASK, config)


if __name__ == "__main__":
    runner.main(TASK)
