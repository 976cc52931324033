"""Prints the ``metrics.json`` of decode folders side by side.

``python -m pointer_generator.results_table --column=NAME=DIR [--column=NAME=DIR ...]``
"""

import os
from typing import List, Mapping, Tuple

from absl import flags

from acvi_tf import config as config_lib
from acvi_tf import files

ROWS = (
    ("ROUGE-1 F", "rouge_1_f_score"),
    ("ROUGE-2 F", "rouge_2_f_score"),
    ("ROUGE-L F", "rouge_l_f_score"),
    ("METEOR exact", "meteor_exact"),
    ("METEOR full", "meteor_full"),
    ("novel-word rate", "novel_word_rate"),
    ("OOV adoption rate", "oov_adoption_rate"),
    ("summaries", "num_summaries"),
    ("ROUGE tool", "rouge_tool"),
)


def table(columns: List[Tuple[str, Mapping]]) -> str:
    """The text table of the columns; ROUGE and METEOR shown as percentages.

    Args:
      columns: ``(name, metrics)`` pairs, ``metrics`` a ``metrics.json``'s dict.

    Returns:
      The table, one line per row of ``ROWS``.
    """
    lines = ["%-18s" % "" + "".join("%16s" % name for name, _ in columns)]
    for label, key in ROWS:
        cells = []
        for _, metrics in columns:
            value = metrics.get(key)
            value = "-" if value is None else value
            if isinstance(value, float) and key.startswith(("rouge_", "meteor_")):
                value = "%.2f" % (100 * value)
            elif isinstance(value, float):
                value = "%.3f" % value
            cells.append("%16s" % value)
        lines.append("%-18s" % label + "".join(cells))
    return "\n".join(lines)


def define_flags(fv: flags.FlagValues) -> None:
    """Defines this command's flags on ``fv``.

    Args:
      fv: where the flags go.
    """
    flags.DEFINE_multi_string(
        "column",
        None,
        "NAME=DIR: a column named NAME with DIR/metrics.json (a decode or lead-baseline "
        "folder); repeat the flag for each column, in order.",
        flag_values=fv,
    )
    flags.mark_flag_as_required("column", flag_values=fv)
    flags.register_validator(
        "column",
        lambda columns: all("=" in column for column in columns or []),
        message="--column takes NAME=DIR, e.g. --column=ACVI=logs/acvi/decode_test_...",
        flag_values=fv,
    )


def run(config: config_lib.Config) -> None:
    """Prints the table of the ``--column`` folders.

    Args:
      config: the parsed flags (``define_flags``).

    Raises:
      files.RecordError: a ``metrics.json`` cannot be read back.
      OSError: a folder has no ``metrics.json``.
    """
    columns = []
    for column in config.column:
        name, _, folder = column.partition("=")
        metrics = files.read_json(
            os.path.join(folder, "metrics.json"), "decode the folder again to rewrite it"
        )
        columns.append((name, metrics))
    print(table(columns))


if __name__ == "__main__":
    config_lib.run_command(define_flags, run)
