"""The lead-N baseline, scored exactly like decoded summaries.

``python -m pointer_generator.lead_baseline --data_path='.../test_*' --vocab_path=vocab
--num_sentences=3 --out_dir=logs/lead3_test`` writes the decode folder layout
(``reference/``, ``decoded/``) with the first N sentences of every article as the summary,
then ROUGE-1.5.5, METEOR, the novel-word and OOV-adoption rates (``metrics.json``).
"""

from absl import app, flags

from acvi_tf import config as config_lib
from pointer_generator import batcher as batcher_lib
from pointer_generator import decode as decode_lib
from pointer_generator import vocab as vocab_lib


def define_flags(fv: flags.FlagValues = flags.FLAGS) -> None:
    """Defines the command's flags on ``fv``."""
    flags.DEFINE_string("data_path", "", "Glob of the .bin chunks to summarise.", flag_values=fv)
    flags.DEFINE_string("vocab_path", "", "Vocab file (for the OOV adoption rate).", flag_values=fv)
    flags.DEFINE_integer(
        "vocab_size", 50000, "Vocabulary size, as the model's.", lower_bound=0, flag_values=fv
    )
    flags.DEFINE_integer(
        "num_sentences", 3, "N of lead-N (See et al.: 3).", lower_bound=1, flag_values=fv
    )
    flags.DEFINE_string(
        "out_dir", "", "The folder to write (refused if it exists).", flag_values=fv
    )
    flags.DEFINE_boolean("overwrite", False, "Replace an existing out_dir.", flag_values=fv)


def run(config: config_lib.Config) -> None:
    """Writes and scores the lead-N summaries of ``--data_path``."""
    if not (config.data_path and config.vocab_path and config.out_dir):
        raise app.UsageError("--data_path, --vocab_path and --out_dir are required")
    vocab = vocab_lib.Vocab(config.vocab_path, config.vocab_size, "vocab_size" in config.given)
    # Lead-N reads the untruncated original articles; the lengths only size the arrays.
    batcher = batcher_lib.Batcher(config.data_path, vocab, 64, 400, 100, single_pass=True)
    decode_lib.lead_baseline(
        batcher,
        config.out_dir,
        config.num_sentences,
        lambda w: vocab.word2id(w) != 0,
        config.overwrite,
    )


if __name__ == "__main__":
    config_lib.run_command(define_flags, run)
