"""The summarizer's jobs, which its Task (``pointer_generator.task``) runs: training
through the curriculum (See et al.'s two phases, or the transformer's one), the eval job
that scores each new checkpoint and keeps the best model, and decode mode.
"""

import functools
import glob
import os
import time
from typing import Any, Dict, Iterable, List, Optional, Tuple

import numpy as np
import tensorflow as tf
from absl import app, logging

from acvi_tf import files
from acvi_tf import flags as acvi_flags
from acvi_tf.compat import keras
from acvi_tf.config import Config
from acvi_tf.formats import bin_files
from acvi_tf.runner import evaluation, inference, restoring, training
from acvi_tf.runner.task import Task
from acvi_tf.training import checkpoints, distribute, summaries
from acvi_tf.training import step as training_lib
from pointer_generator import batcher as batcher_lib
from pointer_generator import curriculum, experiment
from pointer_generator import decode as decode_lib
from pointer_generator import losses as losses_lib
from pointer_generator import vocab as vocab_lib

RUNNING_AVG_DECAY = 0.99
# The articles of the posterior histograms (the first is the images' article).
SUMMARY_ARTICLES = 8


def decode_settings(
    config: Config, checkpoint_path: str, command_flags: Iterable[str]
) -> Dict[str, Any]:
    """What a single-pass decode's output depends on besides its data, for its folder's
    ``manifest.json``: the checkpoint (its name and the SHA-256 of its index, which holds
    every tensor's checksum), the vocabulary's SHA-256, and ``flags``: every flag of the
    run's record and the command line but the command's own (``command_flags``: where
    things are, how it runs) and ``--vocab_path`` (its content counts instead).

    Args:
      config: the decode's ``Config`` (``experiment.decode_config``'s).
      checkpoint_path: the checkpoint it decodes with.
      command_flags: the training command's own flags (``task.COMMAND_FLAGS``).

    Returns:
      A dict of JSON values.
    """
    own = set(command_flags) | set(acvi_flags.COMMAND_FLAGS) | {"vocab_path"}
    return dict(
        checkpoint=os.path.basename(checkpoint_path),
        checkpoint_sha256=files.sha256(checkpoint_path + ".index"),
        vocab_sha256=files.sha256(config.vocab_path),
        flags={name: value for name, value in config.record().items() if name not in own},
    )


def build_optimizer(config: Config) -> "keras.optimizers.Optimizer":
    """The training optimizer of ``--optimizer``: Adam (at ``--lr`` where given, else
    1e-3) or See's Adagrad (``--lr``, ``--adagrad_init_acc``)."""
    if config.optimizer == "adam":
        return keras.optimizers.Adam(config.lr if "lr" in config.given else 1e-3)
    return keras.optimizers.Adagrad(config.lr, initial_accumulator_value=config.adagrad_init_acc)


def phase_batcher(
    config: Config, vocab: vocab_lib.Vocab, phase: curriculum.Phase, seed: Optional[int]
) -> batcher_lib.Batcher:
    """The training data (``--data_path``) cut to a curriculum phase's lengths.

    Args:
      config: the run's flags.
      vocab: the run's vocabulary.
      phase: the curriculum phase (its ``max_enc_steps`` and ``max_dec_steps``).
      seed: the batcher's shuffling seed.
    """
    return batcher_lib.Batcher(
        config.data_path,
        vocab,
        config.batch_size,
        phase.max_enc_steps,
        phase.max_dec_steps,
        config.pointer_gen,
        seed=seed,
        pad_encoder=config.jit_compile,
    )


def _describe(batch):
    """The first article's opening words, to find a skipped batch in the data."""
    return "batch starting with article %r" % " ".join(
        batch["original_articles"][0].numpy().decode("utf-8", "replace").split()[:12]
    )


def _write_projector_config(train_dir, vocab):
    metadata = os.path.join(train_dir, "vocab_metadata.tsv")
    vocab.write_metadata(metadata)
    with open(os.path.join(train_dir, "projector_config.pbtxt"), "w", encoding="utf-8") as f:
        f.write(
            'embeddings {\n  tensor_name: "model/embedding/embeddings/.ATTRIBUTES/'
            'VARIABLE_VALUE"\n  metadata_path: "vocab_metadata.tsv"\n}\n'
        )


def _run_variables():
    """The global step and the coverage switch: the process's own plain variables (made
    outside a distribution strategy's scope, where the model's are mirrored)."""
    return (
        tf.Variable(0, dtype=tf.int64, name="global_step"),
        tf.Variable(False, name="coverage_started"),
    )


def build_checkpointer(
    task: Task,
    config: Config,
    train_dir: str,
    model: "keras.Model",
    optimizer: "keras.optimizers.Optimizer",
    vocab: vocab_lib.Vocab,
    run_variables: Optional[Tuple[tf.Variable, tf.Variable]] = None,
    scratch: Optional[str] = None,
) -> checkpoints.Checkpointer:
    """The run's checkpointer: model, optimizer, step, coverage switch and RNG state in
    ``train/``, 3 kept.

    Args:
      task: the summarizer's Task (the run's folders).
      config: the run's flags (its recorded vocabulary is checked on restore).
      train_dir: the checkpoint folder.
      model, optimizer: what the checkpoints hold.
      vocab: the run's vocabulary.
      run_variables: the global step and the coverage switch (default: new ones).
      scratch: a non-chief worker's folder (``checkpoints.Checkpointer``).
    """
    step, coverage_started = run_variables or _run_variables()
    return checkpoints.Checkpointer(
        train_dir,
        step,
        max_to_keep=3,
        checkpoint_name="model.ckpt",
        check=restoring.vocabulary_check(task, config, vocab),
        scratch=scratch,
        model=model,
        optimizer=optimizer,
        coverage_started=coverage_started,
    )


def _start_coverage(config, model, checkpointer):
    """What ``convert_to_coverage_model`` does, in process: a fresh ``w_c`` and optimizer."""
    w_c = model.scorer.coverage_projection.kernel
    w_c.assign(keras.initializers.GlorotUniform()(w_c.shape))
    optimizer = build_optimizer(config)
    optimizer.build(model.trainable_variables)
    checkpointer.checkpoint.optimizer = optimizer
    checkpointer.checkpoint.coverage_started.assign(True)
    logging.info(
        "Coverage phase starts at step %d: new w_c, optimizer state reset", int(checkpointer.step)
    )
    return optimizer


def train(
    task: Task,
    config: Config,
    vocab: vocab_lib.Vocab,
    train_dir: str,
    phases: List[curriculum.Phase],
    strategy: Optional[tf.distribute.Strategy] = None,
) -> keras.Model:
    """The training loop across curriculum phases under ``strategy`` (default: the
    current one); resumes from the latest checkpoint."""
    strategy = strategy or tf.distribute.get_strategy()
    run_variables = _run_variables()
    with strategy.scope():
        return _train(task, config, vocab, train_dir, phases, strategy, run_variables)


def _train(task, config, vocab, train_dir, phases, strategy, run_variables):
    chief = distribute.is_chief(strategy)
    model = experiment.build_model(config, vocab)
    optimizer = build_optimizer(config)
    optimizer.build(model.trainable_variables)
    scratch = None if chief else distribute.worker_scratch_dir(train_dir, strategy)
    checkpointer = build_checkpointer(
        task, config, train_dir, model, optimizer, vocab, run_variables, scratch
    )
    checkpointer.restore_latest()
    optimizer = checkpointer.checkpoint.optimizer
    if config.convert_to_coverage_model or config.restore_best_model:
        return _convert_or_restore(task, config, model, checkpointer, train_dir, vocab)
    if chief:
        _write_projector_config(train_dir, vocab)
    total = curriculum.training_end(phases, config.max_steps, warn=True)

    def options(writer):
        posterior = (
            posterior_summaries(config, vocab, model, phases[-1], checkpointer, writer)
            if chief and (config.histogram_steps or config.image_steps)
            else None
        )

        def log_learning_rate(step, results, batch):
            del results, batch
            if step % config.summary_steps == 0:
                with writer.as_default(step=step):
                    tf.summary.scalar("learning_rate", optimizer.learning_rate)
            if posterior is not None:
                posterior(step)

        return dict(
            loss_key="total_loss",
            nan_policy=config.nan_policy,
            summary_every=config.summary_steps,
            checkpoint_every=config.checkpoint_steps,
            checkpoint_secs=config.checkpoint_secs,
            describe=_describe,
            after_step=log_learning_rate,
        )

    def feed(trainer):
        nonlocal optimizer
        train_steps = {}  # one trace per (optimizer, coverage): lengths need no retrace
        while not trainer.finished:
            step = trainer.step
            phase = curriculum.phase_at(phases, step)
            if phase.coverage and not bool(checkpointer.checkpoint.coverage_started):
                if config.phases:
                    optimizer = _start_coverage(config, model, checkpointer)
                else:  # --coverage from the first step: w_c trains from the start
                    checkpointer.checkpoint.coverage_started.assign(True)
            logging.info("Training phase %s (from step %d)", phase, step)
            key = (id(optimizer), phase.coverage)
            if key not in train_steps:
                # w_c has no gradient before the coverage phase of a curriculum: left alone
                train_steps[key] = training_lib.make_train_step(
                    model,
                    optimizer,
                    config.max_grad_norm,
                    config.jit_compile,
                    norm_key="global_norm",
                    sum_keys=("tokens",),
                    coverage_on=phase.coverage,
                )
            batcher = phase_batcher(config, vocab, phase, config.seed + step)
            train_step = train_steps[key]
            trainer.train(
                batcher.dataset(),
                lambda batch, *step: train_step(
                    {k: batch[k] for k in experiment.MODEL_SIGNATURE}, *step
                ),
                until=phase.end,
            )
            trainer.save()

    training.drive(
        training.TrainingRun(model, checkpointer, total, train_dir, options, feed), strategy
    )
    return model


def posterior_summaries(
    config: Config,
    vocab: vocab_lib.Vocab,
    model: "keras.Model",
    last_phase: curriculum.Phase,
    checkpointer: checkpoints.Checkpointer,
    writer: tf.summary.SummaryWriter,
) -> Optional[summaries.PosteriorSummaries]:
    """``summaries.PosteriorSummaries`` of the first ``SUMMARY_ARTICLES`` articles of
    ``--summary_data_path`` (default ``--data_path``) in file order, cut to the last
    phase's lengths; the images and the greedy summary are of the first. Coverage
    follows the run's switch (``checkpointer``'s). None when ``--data_path`` holds no
    usable article.

    Args:
      config: the run's flags.
      vocab: the run's vocabulary.
      model: the model being trained.
      last_phase: the curriculum's last phase.
      checkpointer: the run's checkpointer (its coverage switch).
      writer: the run's TensorBoard writer.
    """
    path = config.summary_data_path or config.data_path
    if config.summary_data_path and not glob.glob(path):
        raise app.UsageError(
            "--summary_data_path=%r matches no file; give a glob of .bin chunks such as "
            "'finished_files/chunked/val_*'" % path
        )
    batch = next(
        batcher_lib.Batcher(
            path,
            vocab,
            SUMMARY_ARTICLES,
            last_phase.max_enc_steps,
            last_phase.max_dec_steps,
            config.pointer_gen,
            single_pass=True,
        ).batches(),
        None,
    )
    if batch is None and not config.summary_data_path:
        return None  # the training batcher reports the unusable --data_path
    if batch is None:
        raise bin_files.BinFileError(
            "%s: no usable article for the TensorBoard posterior summaries; point "
            "--summary_data_path at other .bin chunks" % path
        )
    inputs = {name: tf.constant(batch[name]) for name in experiment.MODEL_SIGNATURE}
    forward = summaries.posterior_forward(
        model, inputs, inputs["dec_padding_mask"], p_gen=config.pointer_gen
    )
    oovs = [decode_lib.as_text(w) for w in batch["art_oovs"][0]]
    enc_len, dec_len = int(batch["enc_lens"][0]), int(batch["dec_padding_mask"][0].sum())
    first = {name: value if np.ndim(value) == 0 else value[:1] for name, value in batch.items()}
    decoders = {}

    def coverage():
        return bool(checkpointer.checkpoint.coverage_started)

    def decode():
        if coverage() not in decoders:
            decoders[coverage()] = experiment.build_decoder(
                config.replace(beam_size=1),
                model,
                vocab,
                coverage_on=coverage(),
                record_attention=False,
                max_dec_steps=last_phase.max_dec_steps,
                min_dec_steps=experiment.derived_min_dec_steps(last_phase.max_dec_steps),
            )
        words = decoders[coverage()].decode(first)[0]["words"]
        return "**article**: %s  \nreference: %s  \ndecoded (greedy): %s" % (
            " ".join(decode_lib.as_text(batch["original_articles"][0]).split()[:60]),
            decode_lib.as_text(batch["original_abstracts"][0]),
            " ".join(words),
        )

    return summaries.PosteriorSummaries(
        writer,
        lambda: forward(coverage_on=coverage()),
        decode_lib.as_text(batch["original_articles"][0]).split()[:enc_len],
        vocab_lib.outputids2words(batch["target_batch"][0, :dec_len].tolist(), vocab, oovs),
        decode,
        config.histogram_steps,
        config.image_steps,
    )


def _convert_or_restore(task, config, model, checkpointer, train_dir, vocab):
    """``--convert_to_coverage_model`` or ``--restore_best_model``: writes one checkpoint
    into ``train/`` for training to resume from, and names it (relative to the folder,
    so the run can move) in the ``checkpoint`` file."""
    if config.convert_to_coverage_model:
        if not config.coverage:
            raise app.UsageError("--convert_to_coverage_model needs --coverage")
        latest = checkpointer.latest
        if not latest:
            raise app.UsageError("no checkpoint in %s to convert" % train_dir)
        if bool(checkpointer.checkpoint.coverage_started):
            raise app.UsageError(
                "%s already has coverage (converting again would re-randomise w_c and reset "
                "the optimizer); resume training with --coverage instead" % latest
            )
        _start_coverage(config, model, checkpointer)
        path = checkpointer.checkpoint.write(latest + "_cov_init")
    else:
        best = checkpoints.latest_checkpoint(task.best_dir(config))
        if not best:
            raise app.UsageError(
                "no best model in %s; run --mode=eval first" % task.best_dir(config)
            )
        _, step = restoring.restore(task, config, model, vocab, best)
        checkpointer.step.assign(step)
        checkpointer.checkpoint.optimizer = build_optimizer(config)
        path = checkpointer.checkpoint.write(
            os.path.join(train_dir, os.path.basename(best).replace("bestmodel", "model.ckpt"))
        )
    kept = [p for p in checkpointer.manager.checkpoints if p != path]
    checkpoints.write_index(train_dir, kept + [path])
    logging.info("Saved %s; training resumes from it", path)
    return model


def _write_samples(config, model, vocab, phase, batch, step, summarizers, count=3):
    """TensorBoard text of the first validation articles' beam-search summaries beside
    their references, and the first one's attention heat map (``val_summaries``,
    ``val_attention``), as NMT and the captioner write theirs.

    ``summarizers`` caches one ``decode.Summarizer`` per curriculum phase.
    """
    if phase not in summarizers:
        shortest = experiment.min_dec_steps(config, phase.max_dec_steps, "the phase's")
        logging.info(
            "Sample summaries of phase %d-%d: max_dec_steps=%d (the phase's), "
            "min_dec_steps=%d (%s)",
            phase.start,
            phase.end,
            phase.max_dec_steps,
            shortest,
            "given" if "min_dec_steps" in config.given else "derived",
        )
        summarizers[phase] = experiment.build_decoder(
            config,
            model,
            vocab,
            coverage_on=phase.coverage,
            max_dec_steps=phase.max_dec_steps,
            min_dec_steps=shortest,
        )
    # only the first ``count`` articles are shown: decode only those
    batch = {
        name: value if value.shape.rank == 0 else value[:count] for name, value in batch.items()
    }
    results = summarizers[phase].decode(batch)
    articles = [decode_lib.as_text(a).split() for a in np.asarray(batch["original_articles"])]
    references = [decode_lib.as_text(a) for a in np.asarray(batch["original_abstracts"])]
    texts = [
        "**article**: %s  \nreference: %s  \ndecoded: %s"
        % (" ".join(articles[i][:60]), references[i], " ".join(result["words"]))
        for i, result in enumerate(results)
    ]
    tf.summary.text("val_summaries", "\n\n".join(texts))
    if results[0]["words"]:
        length = int(batch["enc_lens"][0])
        summaries.write_attention_image(
            "val_attention",
            results[0]["attn"][:, :length],
            articles[0][:length],
            results[0]["words"],
            step,
        )


def evaluate(task: Task, config: Config, vocab: vocab_lib.Vocab) -> Optional[float]:
    """The concurrent eval job: each new checkpoint of ``train/`` on the same validation
    batches, its TensorBoard logs in ``eval/``, the best model kept in ``best/``.

    See's job reloads the latest checkpoint before every batch and keeps the model whose
    running-average loss (decay 0.99, started on the first batch) is lowest, so it scores
    one checkpoint over and over and mixes the losses of several. This one scores each
    new checkpoint once, on the first ``--eval_max_batches`` batches of the validation
    files in file order (all of them with 0), keeps the best model by that mean loss, and
    waits for the next checkpoint. The running average is still written to TensorBoard
    under See's name. The job ends once it has scored the checkpoint of the last step.

    Args:
      task: the summarizer's Task (the run's folders).
      config: the run's settings.
      vocab: its vocabulary.

    Returns:
      The best model's mean validation loss.
    """
    train_dir, phases = task.checkpoint_dir(config), experiment.phases(config)
    for phase in phases:  # a given minimum must fit every phase's samples
        experiment.min_dec_steps(
            config, phase.max_dec_steps, "phase %d-%d's" % (phase.start, phase.end)
        )
    best_dir = task.best_dir(config)

    def build():
        model = experiment.build_model(config, vocab)
        step = tf.Variable(0, dtype=tf.int64)
        # reads train/ (never writes there) and keeps the best model in best/
        checkpointer = checkpoints.Checkpointer(
            train_dir,
            step,
            best_dir=best_dir,
            best_name="bestmodel",
            best_to_keep=3,
            check=restoring.vocabulary_check(task, config, vocab),
            model=model,
        )
        return evaluation.EvalRun(
            checkpointer,
            curriculum.training_end(phases, config.max_steps),
            "its phases and --max_steps",
            _Validation(config, model, vocab, phases),
        )

    return evaluation.drive(experiment.eval_dir(config), best_dir, build)


class _Validation:
    """The eval job's score of a restored checkpoint: the mean losses of the validation
    batches of its step's curriculum phase. It also writes See's running average of the
    batches' losses (across checkpoints) and the sample summaries.

    Args:
      config: the run's settings.
      model: the eval job's model.
      vocab: the run's vocabulary.
      phases: the run's curriculum.
    """

    def __init__(
        self,
        config: Config,
        model: "keras.Model",
        vocab: vocab_lib.Vocab,
        phases: List[curriculum.Phase],
    ) -> None:
        self._config, self._model, self._vocab, self._phases = config, model, vocab, phases
        self._losses = {}  # the eval step, with and without coverage
        self._summarizers = {}  # the sample summaries' decoder of each phase
        self._running_avg = None

    def __call__(self, step: int, path: str) -> Tuple[Dict[str, float], int]:
        del path  # restored into the model
        config, phase = self._config, curriculum.phase_at(self._phases, step)
        batcher = batcher_lib.Batcher(
            config.data_path,
            self._vocab,
            config.batch_size,
            phase.max_enc_steps,
            phase.max_dec_steps,
            config.pointer_gen,
            single_pass=True,
            pad_encoder=config.jit_compile,
        )
        if phase.coverage not in self._losses:
            self._losses[phase.coverage] = _eval_step(config, self._model, phase.coverage)
        sums, batches, first = {}, 0, None
        for batch in batcher.dataset().take(config.eval_max_batches or -1):
            first = batch if first is None else first
            results = self._losses[phase.coverage](
                {k: batch[k] for k in experiment.MODEL_SIGNATURE}
            )
            for name, value in results.items():
                sums[name] = sums.get(name, 0.0) + float(value)
            loss = float(results["loss"])
            self._running_avg = min(
                loss
                if self._running_avg is None
                else self._running_avg * RUNNING_AVG_DECAY + (1 - RUNNING_AVG_DECAY) * loss,
                12.0,
            )
            batches += 1
        if not batches:
            raise bin_files.BinFileError(
                "%s: no usable validation example (empty articles or abstracts, or abstracts "
                "without <s> </s> tags); point --data_path at the validation chunks"
                % config.data_path
            )
        tf.summary.scalar("running_avg_loss/decay=%f" % RUNNING_AVG_DECAY, self._running_avg)
        _write_samples(config, self._model, self._vocab, phase, first, step, self._summarizers)
        return {name: total / batches for name, total in sums.items()}, batches


def _eval_step(config, model, coverage_on):
    """The eval job's losses of a batch, with or without coverage."""

    @tf.function(
        input_signature=[experiment.MODEL_SIGNATURE],
        autograph=False,
        jit_compile=config.jit_compile or None,
    )
    def losses(batch):
        out = model(batch, coverage_on=coverage_on)
        return losses_lib.compute_losses(
            out, batch, config.pointer_gen, coverage_on, config.cov_loss_wt, model.context_layer
        )

    return losses


def _decode_dir_name(config: Config, checkpoint_path: str) -> str:
    """The single-pass decode folder's name for ``checkpoint_path``; a ``--data_path`` of no
    file is refused first, before its name is read for a split."""
    bin_files.expand_data_path(config.data_path)
    return decode_lib.decode_dir_name(
        decode_lib.data_split(config.data_path, config.decode_split),
        config.max_enc_steps,
        config.beam_size,
        config.min_dec_steps,
        config.max_dec_steps,
        checkpoint_path,
    )


def decode(task: Task, config: Config, vocab: vocab_lib.Vocab) -> Optional[dict]:
    """Decode mode: batched beam search with ``--ckpt``, else the newest training
    checkpoint (reloaded as the trainer writes new ones, without ``--single_pass``).

    Args:
      task: the summarizer's Task: the run's folders, and the training command's own
        flags, which a single-pass decode's manifest leaves out (``decode_settings``).
      config: the run's settings.
      vocab: its vocabulary.

    Returns:
      A single-pass decode's metrics; else None.
    """
    config = experiment.decode_config(config)
    root = task.run_dir(config)

    def refuse(checkpoint):
        decode_lib.refuse_finished(os.path.join(root, _decode_dir_name(config, checkpoint)))

    build = functools.partial(experiment.build_model, config, vocab)
    refused = refuse if config.single_pass and not config.decode_overwrite else None
    summarize = functools.partial(_decode, task, config, vocab)
    run = inference.InferenceRun(vocab, build, summarize, refused, newest=True)
    return inference.drive(task, config, run)


def _decode(task, config, vocab, model, latest, step):
    """Decode mode with the restored ``model`` (``latest``'s, of ``step``)."""
    root, train_dir = task.run_dir(config), task.checkpoint_dir(config)
    summarizer = experiment.build_decoder(
        config,
        model,
        vocab,
        coverage_on=experiment.coverage_at(config, step),
        record_attention=not config.single_pass,
    )
    if config.single_pass:
        batcher = batcher_lib.Batcher(
            config.data_path,
            vocab,
            config.decode_batch_size,
            config.max_enc_steps,
            config.max_dec_steps,
            config.pointer_gen,
            single_pass=True,
            pad_encoder=config.jit_compile,
        )
        total = sum(1 for path in batcher.paths for _ in bin_files.read_bin_file(path))
        decode_dir = os.path.join(root, _decode_dir_name(config, latest))
        return decode_lib.decode_single_pass(
            summarizer,
            batcher,
            decode_dir,
            config.decode_overwrite,
            total=total,
            settings=decode_settings(config, latest, task.command_flags),
            shard=distribute.decode_shard(config.num_shards, config.shard_index),
            report_examples=config.report_examples,
        )
    batcher = batcher_lib.Batcher(
        config.data_path,
        vocab,
        config.decode_batch_size,
        config.max_enc_steps,
        config.max_dec_steps,
        config.pointer_gen,
        seed=config.seed,
        pad_encoder=config.jit_compile,
        bucketing=False,
    )
    last_load = time.time()
    for count, batch in enumerate(batcher.batches(), start=1):
        reloads = config.ckpt in (None, checkpoints.LATEST_KEY)  # the original's, every 60 s
        if reloads and time.time() - last_load > 60:
            newest = checkpoints.latest_checkpoint(train_dir)
            if newest not in (None, latest):
                try:
                    restoring.restore(task, config, model, vocab, newest)
                    latest = newest
                except checkpoints.UNREADABLE as e:  # deleted by the trainer since listed
                    logging.warning("Keeping %s: cannot read %s (%s)", latest, newest, e)
            last_load = time.time()
        decode_lib.decode_examples(summarizer, batch, os.path.join(root, "decode"))
        if config.decode_max_batches and count >= config.decode_max_batches:
            return None
