"""Exports a trained summarizer as a TensorFlow SavedModel that summarises raw strings.

``python -m pointer_generator.export --log_root=logs --exp_name=mine --export_dir=served/1``
writes a SavedModel whose graph holds the whole path from text to summary: the corpus's
``tftext`` tokenisation (``acvi_tf.text.graph_tokenizer``), truncation to ``--max_enc_steps``,
the vocabulary lookup with each document's own out-of-vocabulary words (the copy
mechanism's extended vocabulary), the batched beam search of ``--mode=decode`` with the
run's best weights, and the summary's words joined by spaces. Its signatures:

- ``serving_default``: ``documents`` [B] string -> ``summaries`` [B] string, ``scores``
  [B] float32 (the beam's normalised log-probability). An empty document gives "".
- ``summarize_with_attention``: the same plus ``tokens`` [B, N] (the document's tokens,
  "" padded), ``attention`` [B, T, N] and ``p_gens`` [B, T] of each summary word (zeros
  for an empty document, which has none).
- ``tokenize``: ``texts`` [B] string -> ``tokens`` [B] string, joined by spaces.

Loading needs TensorFlow and tensorflow-text only::

  import tensorflow as tf
  import tensorflow_text  # registers the tokeniser's ops
  served = tf.saved_model.load("served/1")
  served.signatures["serving_default"](documents=tf.constant(["A text ..."]))

A corpus built with ``--tokenizer=treebank`` or ``ptb`` has no graph form of its
tokeniser: ``--pretokenized`` exports a model that takes text already tokenised as the
corpus was (tokens separated by spaces) instead. The beam search runs without XLA.

The served module is the summarizer's (``pointer_generator.serving.ServedSummarizer``);
the Runner (``acvi_tf.runner.runner.export``) saves it.
"""

import tensorflow as tf
from absl import flags

from acvi_tf import config as config_lib
from acvi_tf.config import Config
from acvi_tf.runner import runner
from pointer_generator.task import TASK


def define_flags(fv: flags.FlagValues = flags.FLAGS) -> None:
    """Defines the command's flags on ``fv``."""
    runner.define_export_flags(TASK, fv)


def run(config: Config) -> tf.Module:
    """Exports the run named by ``--log_root``/``--exp_name`` to ``--export_dir``;
    returns the ``serving.ServedSummarizer`` saved."""
    return runner.export(TASK, config)


if __name__ == "__main__":
    config_lib.run_command(define_flags, run)
