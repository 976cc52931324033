"""Exports a trained translator as a TensorFlow SavedModel that translates raw strings.

``python -m nmt.export --out_dir=runs/mine --export_dir=served/1`` writes a SavedModel
whose graph holds the whole path of ``nmt.translate``: the corpus's ``tftext``
tokenisation (``acvi_tf.text.graph_tokenizer``), its BPE segmentation when it has one
(``acvi_tf.text.graph_bpe``, equal to subword-nmt's), the source vocabulary lookup, the run's
greedy, sampled or GNMT beam search with its best weights (``--infer_mode``,
``--beam_width``, ``--length_penalty_weight``, ``--sampling_temperature`` and ``--seed``
change it; a sampling export draws with one seed, so a batch gives the same samples at
every call), and the target words joined by spaces (``@@`` markers removed). Its
signatures:

- ``serving_default``: ``sentences`` [B] string -> ``translations`` [B] string,
  ``scores`` [B] float32 (the search's score). An empty sentence gives "".
- ``tokenize``: ``texts`` [B] string -> ``tokens`` [B] string, the source tokens the
  model reads (BPE segments on a BPE corpus), joined by spaces.

Loading needs TensorFlow and tensorflow-text only (``import tensorflow_text`` first).
``--pretokenized`` (for a Treebank or PTB corpus) exports a model that takes sentences
tokenised as the corpus was; BPE is still applied in the graph. The search runs without
XLA.

The served module is the translator's (``nmt.serving.ServedTranslator``); the Runner
(``acvi_tf.runner.runner.export``) saves it.
"""

import tensorflow as tf
from absl import flags

from acvi_tf import config as config_lib
from acvi_tf.config import Config
from acvi_tf.runner import runner
from nmt.task import TASK


def define_flags(fv: flags.FlagValues = flags.FLAGS) -> None:
    """Defines the command's flags on ``fv``."""
    runner.define_export_flags(TASK, fv)


def run(config: Config) -> tf.Module:
    """Exports the run in ``--out_dir`` to ``--export_dir``; returns the
    ``serving.ServedTranslator`` saved."""
    return runner.export(TASK, config)


if __name__ == "__main__":
    config_lib.run_command(define_flags, run)
