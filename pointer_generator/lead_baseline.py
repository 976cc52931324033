"""The lead-N baseline, scored exactly like decoded summaries.

``python -m pointer_generator.lead_baseline --data_path='.../test_*' --vocab_path=vocab
--num_sentences=3 --out_dir=logs/lead3_test`` writes the decode folder layout
(``reference/``, ``decoded/``) with the first N sentences of every article as the summary,
then ROUGE-1.5.5, METEOR, the novel-word and OOV-adoption rates (``metrics.json``).
"""

from absl import app, flags

from acvi_tf import errors
from pointer_generator import batcher as batcher_lib
from pointer_generator import decode as decode_lib
from pointer_generator import vocab as vocab_lib

flags.DEFINE_string("data_path", "", "Glob of the .bin chunks to summarise.")
flags.DEFINE_string("vocab_path", "", "Vocab file (for the OOV adoption rate).")
flags.DEFINE_integer("vocab_size", 50000, "Vocabulary size, as the model's.", lower_bound=0)
flags.DEFINE_integer("num_sentences", 3, "N of lead-N (See et al.: 3).", lower_bound=1)
flags.DEFINE_string("out_dir", "", "The folder to write (refused if it exists).")
flags.DEFINE_boolean("overwrite", False, "Replace an existing out_dir.")
FLAGS = flags.FLAGS


def main(argv):
    if len(argv) > 1:
        raise app.UsageError("Unknown command-line arguments: %s" % " ".join(argv[1:]))
    if not (FLAGS.data_path and FLAGS.vocab_path and FLAGS.out_dir):
        raise app.UsageError("--data_path, --vocab_path and --out_dir are required")
    vocab = vocab_lib.Vocab(FLAGS.vocab_path, FLAGS.vocab_size)
    # Lead-N reads the untruncated original articles; the lengths only size the arrays.
    batcher = batcher_lib.Batcher(FLAGS.data_path, vocab, 64, 400, 100, single_pass=True)
    decode_lib.lead_baseline(
        batcher,
        FLAGS.out_dir,
        FLAGS.num_sentences,
        lambda w: vocab.word2id(w) != 0,
        FLAGS.overwrite,
    )


if __name__ == "__main__":
    errors.run(main)
