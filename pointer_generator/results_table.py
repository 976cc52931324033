"""Prints the ``metrics.json`` of decode folders side by side.

``python -m pointer_generator.results_table NAME=DIR [NAME=DIR ...]``
"""

import os
import sys

from acvi_tf import errors, files

USAGE = "usage: python -m pointer_generator.results_table NAME=DIR [NAME=DIR ...]"

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


def table(columns):
    """Text table of ``[(name, metrics dict)]``; ROUGE and METEOR shown as percentages."""
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


def main(argv):
    """Prints the table of the ``NAME=DIR`` arguments; a bad one is one ``error:`` line."""
    if len(argv) < 2 or not all("=" in item for item in argv[1:]):
        errors.report(ValueError(USAGE))
    columns = []
    for item in argv[1:]:
        name, _, folder = item.partition("=")
        try:
            metrics = files.read_json(
                os.path.join(folder, "metrics.json"), "decode the folder again to rewrite it"
            )
        except (OSError, files.RecordError) as e:
            errors.report(e)
        columns.append((name, metrics))
    print(table(columns))


if __name__ == "__main__":
    main(sys.argv)
