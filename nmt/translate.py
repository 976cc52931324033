"""Translations of new text with a trained run.

``python -m nmt.translate --out_dir=models/en_it --input=new.en`` reads one sentence per
line (``--input``, a file or ``-`` for standard input), tokenises each the way the run's
corpus was built (its ``corpus.json``, written by ``data_prep.translation``; Treebank and
lowercase without one), segments it with the corpus's BPE codes when the run trained on
``bpe/`` (``--subword_option=bpe``), translates ``--infer_batch_size`` sentences per
batched search with the run's best dev-BLEU model (``best/``, else its newest checkpoint, or
``--ckpt``) and writes one translation per line (``--output``, default standard
output), the ``@@`` markers removed. The model and the search are the ones the run's
``hparams.json`` records; ``--infer_mode``, ``--beam_width``, ``--length_penalty_weight``,
``--sampling_temperature``, ``--seed`` and ``--infer_batch_size`` may be given here (a
greedy run searches a beam with ``--infer_mode=beam_search --beam_width=N``, and samples
with ``--infer_mode=sample --sampling_temperature=T``).
``nmt.run_nmt --inference_input_file`` stays tensorflow/nmt's command over already
tokenised text.

Usage::

  python -m nmt.translate --out_dir=models/en_it --input=new.en --output=new.it
  cat new.en | python -m nmt.translate --out_dir=models/en_it
"""

from typing import Any, Callable, Dict, List, Optional, Tuple

from absl import flags

from acvi_tf import builders, files
from acvi_tf import config as config_lib
from acvi_tf import progress as progress_lib
from acvi_tf.config import Config
from acvi_tf.formats import bpe
from acvi_tf.inference import commands
from acvi_tf.runner import runner
from acvi_tf.text import tokenizers
from nmt import experiment, task

# What to do about a corpus record that cannot be read.
CORPUS_FIX = "rebuild the corpus with data_prep.translation, or restore the file"


def define_run_flags(fv: flags.FlagValues = flags.FLAGS) -> None:
    """Defines the flags that name a trained run and its search settings on ``fv``
    (shared with ``nmt.export``)."""
    commands.define_run_flags(fv, "best/", "beam_width", 0, "infer_batch_size", "Sentences")
    flags.DEFINE_enum(
        "infer_mode",
        None,
        ["greedy", "sample", "beam_search"],
        "Search (sample with --sampling_temperature, beam_search with --beam_width). "
        "Default: the run's.",
        flag_values=fv,
    )
    flags.DEFINE_float(
        "sampling_temperature",
        None,
        "Softmax temperature of infer_mode=sample (> 0). Default: the run's.",
        lower_bound=0.0,
        flag_values=fv,
    )
    flags.DEFINE_integer(
        "seed", None, "Seed of infer_mode=sample's draws. Default: the run's.", flag_values=fv
    )
    flags.DEFINE_float(
        "length_penalty_weight",
        None,
        "GNMT length penalty alpha of a beam search. Default: the run's.",
        lower_bound=0.0,
        flag_values=fv,
    )


def given_settings(config: Config) -> Dict[str, Any]:
    """The flags a command gives that replace the run's recorded ones: the search flags
    (``experiment.SEARCH_FLAGS``; None: the run's) and ``--allow_data_change``."""
    given = {name: getattr(config, name) for name in experiment.SEARCH_FLAGS}
    return dict(given, allow_data_change=config.allow_data_change)


def define_flags(fv: flags.FlagValues = flags.FLAGS) -> None:
    """Defines the command's flags on ``fv``."""
    define_run_flags(fv)
    commands.define_io_flags(fv, "Sentences", "Translations")


def run_config(out_dir: str, given: Dict[str, Any]) -> Config:
    """The run's settings as its ``hparams.json`` records them, with ``given`` on top."""
    return runner.recorded_config(task.TASK, out_dir, **given, out_dir=out_dir)


def corpus_record(config: Config) -> Tuple[str, Dict[str, Any], Optional[str]]:
    """The corpus record's path, its settings (``tokenizer``, ``lowercase``; Treebank and
    lowercase without one) and the BPE codes' path (None without BPE)."""
    record, codes = experiment.corpus_files(config)
    return record, tokenizers.corpus_settings(record, CORPUS_FIX), codes


def preprocessor(config: Config) -> Callable[[str], str]:
    """``raw line -> the model's source line``: the corpus's tokenizer, then its BPE."""
    _, settings, codes = corpus_record(config)
    segment = bpe.segmenter(codes) if codes else None
    tokenize = tokenizers.tokenizer(settings["tokenizer"], settings["lowercase"])
    return lambda line: segment(tokenize(line)) if segment else tokenize(line)


def translate(sentences: List[str], config: Config) -> List[str]:
    """Translations of raw ``sentences`` with the run ``config`` describes, in order."""
    searcher = experiment.load_decoder(config, config.ckpt)
    prepare = preprocessor(config)
    sources = [prepare(s) if s.strip() else "" for s in sentences]
    progress = progress_lib.Progress(len(sources), "translated sentences")
    hypotheses = searcher.translate(sources, config.infer_batch_size, progress)
    words = experiment.words(config)
    return [words(h) if s else "" for h, s in zip(hypotheses, sources)]


def run(config: Config) -> List[str]:
    """Translates ``--input`` into ``--output``; returns the translations."""
    model_config = run_config(config.out_dir, given_settings(config)).replace(ckpt=config.ckpt)
    builders.configure_runtime(model_config)
    return commands.map_lines(
        config.input,
        config.output,
        lambda sentences: translate(sentences, model_config),
        "translations",
        files.run_files(config.out_dir, *experiment.files_read(model_config)),
    )


if __name__ == "__main__":
    config_lib.run_command(define_flags, run)
