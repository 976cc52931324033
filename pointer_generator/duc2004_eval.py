"""Scores a decode folder on DUC 2004 task 1: ROUGE-1.5.5 recall at 75 bytes, all references.

``python -m pointer_generator.duc2004_eval --decode_dir=DIR --references=.../references.json``
reads ``DIR/decoded/%06d_decoded.txt`` (written by ``run_summarization --mode=decode
--single_pass`` on the ``test.bin`` of ``data_prep.duc2004``) and the references that
builder wrote, and scores them the standard DUC 2004 way: ROUGE-1.5.5 with ``-b 75``
(every summary truncated to its first 75 bytes) against all human summaries of each
document. The paper reports recall, so the report gives ROUGE-1, ROUGE-2 and ROUGE-L
recall with their 95% confidence intervals; it is written to
``DIR/DUC2004_ROUGE_results.txt`` and ``DIR/duc2004_metrics.json`` and printed. The
decode folder's own ``reference/`` (the first reference only) is not used.

A decoded file holds one sentence per line; its lines are joined with spaces into one
sentence before scoring. ROUGE-1.5.5 applies ``-b`` per sentence when it reads text for
ROUGE-L (and leaves the joining spaces out of the count for ROUGE-N), so only a one-line
summary is cut at exactly 75 bytes for every measure. The scoring is
``pointer_generator.duc2004_scoring``'s.
"""

from typing import Dict

from absl import flags

from acvi_tf import config as config_lib
from pointer_generator import duc2004_scoring


def define_flags(fv: flags.FlagValues = flags.FLAGS) -> None:
    """Defines the command's flags on ``fv``."""
    flags.DEFINE_string(
        "decode_dir",
        None,
        "A decode folder of run_summarization (--mode=decode --single_pass) on the DUC 2004 "
        "test.bin.",
        flag_values=fv,
    )
    flags.DEFINE_string(
        "references",
        None,
        "references.json written by data_prep.duc2004 next to that test.bin.",
        flag_values=fv,
    )
    flags.mark_flags_as_required(["decode_dir", "references"], flag_values=fv)


def run(config: config_lib.Config) -> Dict[str, float]:
    """Scores ``--decode_dir`` and prints the report."""
    metrics = duc2004_scoring.score_duc2004(config.decode_dir, config.references)
    print(duc2004_scoring.duc2004_report(metrics), end="")
    print(
        "Written to %s and %s in %s"
        % (duc2004_scoring.RESULTS_FILE, duc2004_scoring.METRICS_FILE, config.decode_dir)
    )
    return metrics


if __name__ == "__main__":
    config_lib.run_command(define_flags, run)
