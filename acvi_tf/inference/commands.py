"""What the inference commands of the hosts share: ``summarize``, ``translate`` and
``caption`` read one input a line and write one output a line, and the last two name
their run by ``--out_dir`` with the same flags.
"""

from typing import Callable, Iterable, List, Optional, Sequence

from absl import flags

from acvi_tf import errors, files
from acvi_tf import flags as acvi_flags
from acvi_tf.training import checkpoints


class InputError(errors.UserError, ValueError):
    """A command's input lines cannot be read; the message names the line and the fix."""


class LineError(InputError):
    """An input line that a conversion refuses; ``map_lines`` names the input and the
    line's number before the message.

    Args:
      number: the line's number, from 1.
      message: what is wrong with it and the fix.
    """

    def __init__(self, number: int, message: str) -> None:
        super().__init__(message)
        self.number = number
        self.message = message


def define_run_flags(
    fv: flags.FlagValues, best: str, beam: str, beam_lower_bound: int, batch: str, items: str
) -> None:
    """Defines on ``fv`` the flags that name a trained run by ``--out_dir`` and its search
    settings: ``--ckpt``, the beam flag and the batch flag (both default to the run's),
    and ``--allow_data_change``.

    Args:
      fv: the command's flags.
      best: the run's best-model folder, for ``--ckpt``'s help (``best/``).
      beam: the training command's beam flag (``beam_width``).
      beam_lower_bound: its least value (0: greedy search allowed).
      batch: the training command's inference batch flag (``infer_batch_size``).
      items: what one search takes, plural (``Sentences``).
    """
    flags.DEFINE_string("out_dir", None, "The run's --out_dir.", flag_values=fv)
    flags.DEFINE_string(
        "ckpt",
        None,
        "Checkpoint: %s (default: %s's best model, else the newest)."
        % (checkpoints.CKPT_HELP, best),
        flag_values=fv,
    )
    flags.DEFINE_integer(
        beam,
        None,
        "Beam width. Default: the run's.",
        lower_bound=beam_lower_bound,
        flag_values=fv,
    )
    flags.DEFINE_integer(
        batch, None, "%s per search. Default: the run's." % items, lower_bound=1, flag_values=fv
    )
    acvi_flags.define_allow_data_change(fv)
    flags.mark_flag_as_required("out_dir", flag_values=fv)


def define_io_flags(fv: flags.FlagValues, inputs: str, outputs: str) -> None:
    """Defines ``--input`` and ``--output`` on ``fv``: files of one item a line, ``-``
    (the default) for standard input and output.

    Args:
      fv: the command's flags.
      inputs: what an input line holds, plural (``Sentences``).
      outputs: what an output line holds, plural (``Translations``).
    """
    flags.DEFINE_string(
        "input", "-", "%s, one per line; - is standard input." % inputs, flag_values=fv
    )
    flags.DEFINE_string(
        "output", "-", "%s, one per line; - is standard output." % outputs, flag_values=fv
    )


def map_lines(
    input_path: str,
    output_path: str,
    convert: Callable[[List[str]], List[str]],
    what: str,
    protected: Sequence[str] = (),
    line_files: Optional[Callable[[List[str]], Iterable[str]]] = None,
) -> List[str]:
    """Reads ``input_path``, converts its lines and writes one output a line.

    Args:
      input_path: the ``--input`` file, or ``-``.
      output_path: the ``--output`` file, or ``-``.
      convert: the input lines -> one output for each.
      what: what an output is, plural (``translations``).
      protected: the run's files, which the output must not replace
        (``files.run_files``).
      line_files: the input lines -> the files they name (a captioner's videos), which
        the output must not replace either.

    Returns:
      The outputs.

    Raises:
      InputError: a line is not UTF-8, the input holds no line, or ``convert`` refuses
        a line (``LineError``).
      files.OutputError, OSError: ``output_path`` cannot be written, or is the input or
        a file of the run (found before ``convert`` runs).
    """
    source = "standard input" if input_path == "-" else input_path
    lines = files.read_input_lines(input_path, InputError)
    if not lines:
        raise InputError(
            "%s holds no line, so there is nothing to write %s of; give the input at least "
            "one line (a blank line gives a blank output)" % (source, what)
        )
    if output_path != "-":
        named = list(line_files(lines)) if line_files else []
        files.check_output(output_path, "--output", {"--input": input_path}, [*protected, *named])
    try:
        outputs = convert(lines)
    except LineError as e:
        raise InputError("%s:%d: %s" % (source, e.number, e.message)) from None
    files.write_output_lines(output_path, outputs, lines, what)
    return outputs
