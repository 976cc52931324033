"""Import See et al.'s TF1 pointer-generator checkpoints for ``run_summarization``.

The command line

  python -m pointer_generator.see_checkpoint --tf1_checkpoint=pretrained_model/train \
      --vocab_path=finished_files/vocab --vocab_size=50000 --hidden_dim=256 \
      --emb_dim=128 --out_dir=logs/see/train

copies the variables of a checkpoint written by abisee/pointer-generator (the released
pretrained models, or any run of the original) into a soft-attention ``PointerGenerator``
and writes it as ``out_dir/model.ckpt-<global_step>``, a checkpoint that
``run_summarization`` (``--log_root=logs --exp_name=see --context=sa``) decodes with or
resumes training from. ``pointer_generator.see_import`` maps the variables and says how
each is converted.
"""

from absl import app, flags, logging

from acvi_tf import config as config_lib
from acvi_tf.training import checkpoints
from pointer_generator import see_import, task
from pointer_generator import vocab as vocab_lib


def define_flags(fv: flags.FlagValues = flags.FLAGS) -> None:
    """Defines this command's flags on ``fv``: run_summarization's (the model flags
    ``--vocab_path``, ``--vocab_size``, ``--hidden_dim``, ``--emb_dim``, ``--pointer_gen``,
    ``--context`` mean the same in both tools), ``--tf1_checkpoint`` and ``--out_dir``."""
    task.define_flags(fv)
    flags.DEFINE_string(
        "tf1_checkpoint",
        "",
        "See et al.'s TF1 checkpoint: a prefix such as "
        "'pretrained_model/train/model-238410' or a directory holding a "
        "'checkpoint' file.",
        flag_values=fv,
    )
    flags.DEFINE_string(
        "out_dir",
        "",
        "Where to write the TF2 checkpoint: the train/ folder "
        "of a run_summarization experiment, e.g. logs/see/train.",
        flag_values=fv,
    )


def run(config: config_lib.Config) -> str:
    """Imports ``--tf1_checkpoint`` and writes it to ``--out_dir`` for run_summarization.

    Args:
      config: the command's frozen flags (an ``acvi_tf.config.Config``).

    Returns:
      The path of the checkpoint written.
    """
    for name in ("tf1_checkpoint", "vocab_path", "out_dir"):
        if not config[name]:
            raise app.UsageError("--%s is required" % name)
    if "context" in config.given and config.context != "sa":
        raise app.UsageError(
            "See et al.'s checkpoints are soft-attention models: --context must be sa"
        )
    held = checkpoints.latest_checkpoint(config.out_dir)
    if held:
        raise see_import.SeeCheckpointError(
            "--out_dir=%s already holds checkpoints (newest: %s), which the import would "
            "mix with or write over; import into an empty folder" % (config.out_dir, held)
        )
    vocab = vocab_lib.Vocab(config.vocab_path, config.vocab_size, "vocab_size" in config.given)
    model = see_import.build_see_model(
        vocab.size(), config.hidden_dim, config.emb_dim, config.pointer_gen
    )
    try:
        imported = see_import.import_see_checkpoint(config.tf1_checkpoint, model)
    except see_import.SeeCheckpointError as e:
        raise app.UsageError(str(e)) from e
    path = see_import.save_for_run_summarization(model, imported, config.out_dir)
    logging.info(
        "Wrote %s. Decode or train with run_summarization --context=sa%s and a "
        "--log_root/--exp_name whose train/ folder is %s",
        path,
        " --coverage" if imported.coverage else "",
        config.out_dir,
    )
    return path


if __name__ == "__main__":
    config_lib.run_command(define_flags, run)
