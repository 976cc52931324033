"""What a host declares to the Runner (``acvi_tf.runner.runner``): its flags and which
of them make the model, where a run lives (its checkpoints and best model), what a
training run records of its inputs and what a restore checks of them
(``acvi_tf.runner.restoring``), its jobs (training; evaluation, decoding or inference),
and what the commands on a trained run need of it (the raw-text command's conversion of
lines, the export's SavedModel).

A host is one ``Task`` subclass in one module (``pointer_generator.task``, ``nmt.task``,
``video_caption.task``); its training entry point parses the flags and hands the Task
to the Runner.
"""

import abc
import dataclasses
from typing import Any, Callable, Dict, Iterable, List, Mapping, Optional, Sequence, Tuple

import tensorflow as tf
from absl import flags

from acvi_tf.config import Config
from acvi_tf.training import checkpoints


@dataclasses.dataclass(frozen=True)
class TrainingInputs:
    """What a training run reads, loaded once before its record is written.

    Attributes:
      vocabularies: the record's vocabulary fingerprints (``<host>.experiment.vocabularies``).
      data_files: the training data's files, whose fingerprints the record keeps.
      loaded: the host's loaded vocabulary (or vocabularies) for its training job; None
        when the job loads its own.
    """

    vocabularies: Mapping[str, Any]
    data_files: Sequence[str]
    loaded: Any = None


class Task(abc.ABC):
    """One host's side of the Runner.

    Attributes:
      entry_point: the training command's module (``pointer_generator.run_summarization``),
        which run records name as their writer.
      names_the_run: the flags that name a run's folder, for messages (``--out_dir``).
      model_flags: the flags that decide the model's variables (and its optimizer's): a
        resume or a command on the run refuses a changed one.
      command_flags: the flags that belong to each command and are never taken from a
        run's record (the mode, the data it reads, where it writes).
      inputs: what an input line of the raw-text command holds, plural (``Sentences``).
      outputs: what an output line holds, plural (``Translations``).
      served: what the export serves, for its log (``translator``).
      reads_text: the exported model reads text (its export takes ``--pretokenized``).
      old_best_dir: the name an older layout gave the best-model folder, which a run of
        that layout still restores from (``checkpoints.best_dir``); None: no older one.
      to_validate: how a run gets a best model, for the warning of a command that finds
        none.
      to_train: what to do when a run holds no checkpoint, for the error.
    """

    entry_point: str
    names_the_run: str
    model_flags: Tuple[str, ...]
    command_flags: Tuple[str, ...]
    inputs: str
    outputs: str
    served: str
    reads_text: bool = True
    old_best_dir: Optional[str] = None
    to_validate: str = "rerun the training command to validate it first"
    to_train: str = "train first or give --ckpt"

    @abc.abstractmethod
    def define_flags(self, fv: flags.FlagValues) -> None:
        """Defines the training command's flags (and the shared ones when missing)."""

    def run_dir(self, config: Config) -> str:
        """The run's folder, the one holding its record (``hparams.json``): ``--out_dir``
        by default."""
        return config.out_dir

    def checkpoint_dir(self, config: Config) -> str:
        """The folder of the run's training checkpoints (default: the run's folder)."""
        return self.run_dir(config)

    def best_dir(self, config: Config) -> str:
        """The folder of the run's best model: ``best/`` in the run's folder, or the older
        layout's ``old_best_dir`` where only that one exists."""
        return checkpoints.best_dir(self.run_dir(config), self.old_best_dir)

    def vocabulary_record(
        self, config: Config, vocabularies: Any, preprocessing: bool = False
    ) -> Dict[str, Tuple[str, str]]:
        """What a run's record keeps of its vocabularies, which a command on the run
        checks (``acvi_tf.flags.check_vocabularies``): ``name -> (where the vocabulary
        came from, as a refusal names it; its fingerprint)``. Default: nothing.

        Args:
          config: the command's settings.
          vocabularies: the host's loaded vocabulary (or vocabularies).
          preprocessing: with the files that turn raw text into the vocabularies' units
            (NMT's BPE codes), where the host has them.
        """
        del config, vocabularies, preprocessing
        return {}

    def embeddings(self, config: Config, vocabularies: Any) -> Dict[str, Tuple[int, str]]:
        """The checkpoint variables whose first dimension is a vocabulary's size:
        ``variable name -> (the size, the flags that gave the vocabulary)``
        (``checkpoints.vocabulary_check``). Default: none."""
        del config, vocabularies
        return {}

    @abc.abstractmethod
    def trains(self, config: Config) -> bool:
        """Whether the command trains (else it evaluates, decodes or infers)."""

    def prepare(self, config: Config) -> Config:
        """The command's settings before the run's record is read: presets applied, the
        flags that name the run checked. Default: ``config`` as it is.

        Raises:
          absl.app.UsageError: a flag the command needs is missing.
        """
        return config

    def check(self, config: Config) -> None:
        """Checks the settings once the run's record is read (a flag the record could
        give is required only here). Default: none.

        Raises:
          absl.app.UsageError: a flag the command needs is missing or contradicts another.
        """

    @abc.abstractmethod
    def training_inputs(self, config: Config, resuming: bool) -> TrainingInputs:
        """Loads what a training run reads, before its record is written (a refused input
        leaves nothing behind)."""

    @abc.abstractmethod
    def train(
        self, config: Config, strategy: tf.distribute.Strategy, inputs: TrainingInputs
    ) -> Any:
        """Trains (or resumes) the run under ``strategy``; returns the training's result."""

    @abc.abstractmethod
    def infer(self, config: Config, strategy: tf.distribute.Strategy) -> Any:
        """Runs a command on a trained run that does not train it (evaluation, decoding,
        inference); returns its result."""

    @abc.abstractmethod
    def define_run_flags(self, fv: flags.FlagValues) -> None:
        """Defines the flags of a command on a trained run (raw text, export): those that
        name the run, ``--ckpt``, the search settings it may change and
        ``--allow_data_change``."""

    @abc.abstractmethod
    def run_settings(self, config: Config) -> Config:
        """The trained run's settings for a command on it: the run's record
        (``runner.recorded_config``) with the search settings ``config`` gives on top
        and ``config``'s ``--ckpt``.

        Raises:
          absl.app.UsageError: the named folder holds no run.
          acvi_tf.flags.DecodeSettingError: a given search setting contradicts another.
        """

    @abc.abstractmethod
    def files_read(self, config: Config) -> List[str]:
        """What a command on the run reads beside the run's folder (its vocabularies,
        corpus record, training files), which its outputs must not replace."""

    @abc.abstractmethod
    def raw_text(self, config: Config) -> Callable[[List[str]], List[str]]:
        """Restores the run ``config`` describes (``run_settings``'s) and returns the
        raw-text command's conversion: input lines -> one output line each, a blank
        input line giving a blank output."""

    def named_files(self, lines: List[str]) -> Iterable[str]:
        """The files the input lines name, which the output must not replace either
        (default: none)."""
        del lines
        return ()

    @abc.abstractmethod
    def served_module(
        self, config: Config, pretokenized: bool
    ) -> Tuple[tf.Module, Dict[str, Callable]]:
        """Restores the run ``config`` describes and returns the module its export saves,
        with the module's signatures by name (``serving_default`` first).

        Args:
          config: ``run_settings``'s settings.
          pretokenized: the exported model takes text tokenised as the corpus was
            (``--pretokenized``; False where the model reads no text).
        """
