"""The translator's jobs, which its Task (``nmt.task``) runs: training with dev BLEU
and the best model, and inference on ``--inference_input_file``.
"""

import functools
import os
import time
from typing import TYPE_CHECKING, Callable, Dict, Optional, Tuple

import tensorflow as tf
from absl import logging

from acvi_tf import files
from acvi_tf import progress as progress_lib
from acvi_tf.compat import keras
from acvi_tf.config import Config
from acvi_tf.formats import nmt_text
from acvi_tf.inference import report as report_lib
from acvi_tf.metrics import bleu as bleu_lib
from acvi_tf.runner import inference, restoring, training
from acvi_tf.runner.task import Task
from acvi_tf.training import checkpoints, distribute, losses, summaries
from acvi_tf.training import step as training_lib
from nmt import data, experiment, schedule

if TYPE_CHECKING:
    from nmt import translator as translator_lib
# The dev pairs of the posterior histograms (the first is the images' pair).
SUMMARY_PAIRS = 8
# What an inference writes beside its output file, named after it.
REPORT_SUFFIX, ATTENTION_SUFFIX = ".report.html", ".attention"


def learning_rate_schedule(config: Config) -> keras.optimizers.schedules.LearningRateSchedule:
    """The ``--decay_scheme`` schedule (a constant when there is none)."""
    return schedule.decay_schedule(
        config.learning_rate, config.decay_scheme, config.num_train_steps
    )


def _bleu(config, references, translations):
    """Corpus BLEU of ``translations`` (words) against the lines of a reference file
    (BPE pieces with ``--subword_option=bpe``)."""
    return bleu_lib.corpus_bleu([experiment.words(config)(r) for r in references], translations)


def evaluate_split(
    config: Config,
    forward: Callable[[Dict[str, tf.Tensor]], Dict[str, tf.Tensor]],
    name: str,
    prefix: str,
    vocabs: data.Vocabs,
    translator: "translator_lib.Translator",
    writer: tf.summary.SummaryWriter,
    step: int,
    write_dir: str,
) -> Tuple[float, float]:
    """Perplexity (batches of ``forward``, the model's traced call) and BLEU of ``prefix``;
    writes ``write_dir/output_<name>``.

    Args:
      config: the run's flags (``--src``, ``--tgt``, the search's).
      forward: the model's traced call on a batch.
      name: the split's name (``dev``, ``test``) in the logs and the output file.
      prefix: the split's files without the language suffix.
      vocabs: the source and target vocabularies.
      translator: the run's translator.
      writer: the run's TensorBoard writer.
      step: the training step evaluated.
      write_dir: where ``output_<name>`` is written.

    Returns:
      ``(bleu, nll)``: the BLEU and the NLL per target token (perplexity's logarithm,
      uncapped).
    """
    src_vocab, tgt_vocab = vocabs
    source = ("%s.%s" % (prefix, config.src), "%s.%s" % (prefix, config.tgt))
    pairs = nmt_text.read_parallel(*source)
    # tensorflow/nmt's eval reader drops empty pairs but truncates nothing
    examples = data.make_examples(pairs, src_vocab, tgt_vocab)
    total_nll, total_tokens = 0.0, 0.0
    for batch in data.eval_dataset(examples, config.batch_size, source):
        out = forward(batch)
        nll, count = losses.sequence_loss(
            out["logits"], batch["tgt_out"], batch["tgt_len"], token_nll=out["token_nll"]
        )
        total_nll += float(nll) * int(tf.shape(batch["src"])[0])
        total_tokens += float(count)
    ppl = losses.perplexity(total_nll, total_tokens)
    # a line only when the decode takes long (an untrained model's translations do)
    progress = progress_lib.Progress(len(pairs), "translated %s sentences" % name, delay=10.0)
    pieces = translator.translate([src for src, _ in pairs], config.infer_batch_size, progress)
    words = experiment.words(config)
    hypotheses = [words(h) for h in pieces]
    files.atomic_write_text(
        os.path.join(write_dir, "output_" + name), "".join(h + "\n" for h in hypotheses)
    )
    score = _bleu(config, [tgt for _, tgt in pairs], hypotheses)
    tokens, alignment = translator.alignment(pairs[0][0], pieces[0])
    with writer.as_default(step=step):
        tf.summary.scalar("%s_ppl" % name, ppl)
        tf.summary.scalar("%s_bleu" % name, score)
        tf.summary.text(  # the source as the model reads it, as the image's columns
            "%s_sample" % name,
            "SRC: %s\n\nREF: %s\n\nNMT: %s" % (pairs[0][0], words(pairs[0][1]), hypotheses[0]),
        )
        summaries.write_attention_image(
            "%s_attention" % name, alignment, pairs[0][0].split(), tokens, step
        )
    # tensorflow/nmt's line, then the NLL per token at full precision (near ppl 1 the
    # rounded perplexity is too coarse to compare runs)
    nll = total_nll / max(total_tokens, 1.0)
    logging.info("  %s: ppl %.2f, bleu %.1f, nll %.6f", name, ppl, score, nll)
    return score, nll


def train(
    task: Task, config: Config, vocabs: data.Vocabs, strategy: tf.distribute.Strategy
) -> float:
    """The training loop with tensorflow/nmt's evaluation schedule, under ``strategy``,
    in the folders of ``task`` (the translator's)."""
    # the global step is the process's own (a plain variable), the model's mirrored
    step_var = tf.Variable(0, dtype=tf.int64, name="global_step")
    with strategy.scope():
        return _train(task, config, vocabs, strategy, step_var)


def _train(task, config, vocabs, strategy, step_var):
    src_vocab, tgt_vocab = vocabs
    chief = distribute.is_chief(strategy)
    write_dir = distribute.worker_scratch_dir(config.out_dir, strategy)
    model = experiment.build_model(config, vocabs)
    optimizer = (
        keras.optimizers.SGD(learning_rate_schedule(config))
        if config.optimizer == "sgd"
        else keras.optimizers.Adam(learning_rate_schedule(config))
    )
    checkpointer = checkpoints.Checkpointer(
        config.out_dir,
        step_var,
        max_to_keep=5,
        checkpoint_name="translate.ckpt",
        best_dir=task.best_dir(config),
        check=restoring.vocabulary_check(task, config, vocabs),
        scratch=None if chief else write_dir,
        model=model,
        optimizer=optimizer,
    )
    checkpointer.restore_latest()
    total = config.num_train_steps
    train_step = training_lib.make_train_step(
        model,
        optimizer,
        config.max_gradient_norm,
        config.jit_compile,
        sum_keys=("predict_count",),
    )

    source = tuple("%s.%s" % (config.train_prefix, lang) for lang in (config.src, config.tgt))
    pairs = nmt_text.read_parallel(*source)
    examples = data.make_examples(
        pairs, src_vocab, tgt_vocab, config.src_max_len, config.tgt_max_len
    )
    dataset = data.train_dataset(
        examples,
        config.batch_size,
        config.src_max_len,
        config.num_buckets,
        seed=config.seed + int(step_var),
        pad_to=((config.src_max_len, config.tgt_max_len) if config.jit_compile else None),
        source=source,
    )
    translator = experiment.build_decoder(config, model, vocabs)
    # the validations' forward pass, traced once for any batch shape (the En-De sample's
    # 500 dev pairs: 2.9 s with the trace, 7.1 s called eagerly; the same sums)
    forward = tf.function(
        lambda batch: model(batch), input_signature=[data.BATCH_SIGNATURE], autograph=False
    )

    def options(writer):
        stats = dict(nll=0.0, count=0.0, words=0, start=time.time())

        def log_stats(step, results, batch):
            """tensorflow/nmt's log line and scalars every --steps_per_stats steps."""
            stats["nll"] += float(results["nll"]) * int(tf.shape(batch["src"])[0])
            stats["count"] += float(results["predict_count"])
            stats["words"] += int(tf.reduce_sum(batch["src_len"]) + tf.reduce_sum(batch["tgt_len"]))
            if step % config.steps_per_stats and step != total:  # a short run has its line
                return
            elapsed = time.time() - stats["start"]
            step_time, wps = elapsed / config.steps_per_stats, stats["words"] / elapsed
            ppl = losses.perplexity(stats["nll"], stats["count"])
            rate = optimizer.learning_rate
            lr = float(tf.convert_to_tensor(rate(optimizer.iterations) if callable(rate) else rate))
            logging.info(
                "step %d lr %g step-time %.2fs wps %.2fK ppl %.2f gN %.2f kl %.3f bleu %.1f",
                step,
                lr,
                step_time,
                wps / 1000,
                ppl,
                float(results["grad_norm"]),
                float(results["kl"]),
                checkpointer.best_value or 0.0,
            )
            with writer.as_default(step=step):
                tf.summary.scalar("lr", lr)
                tf.summary.scalar("train_ppl", ppl)
                tf.summary.scalar("step_time", step_time)
                tf.summary.scalar("words_per_second", wps)
                for name, value in results.items():
                    if name not in ("nll", "predict_count"):  # train_ppl shows them
                        tf.summary.scalar(name, value)
            stats.update(nll=0.0, count=0.0, words=0, start=time.time())

        posterior = (
            posterior_summaries(config, model, vocabs, translator, writer)
            if chief
            and config.model_type != "transformer"  # whose outputs hold no posterior
            and (config.histogram_steps or config.image_steps)
            else None
        )

        def after_step(step, results, batch):
            log_stats(step, results, batch)
            if posterior is not None:
                posterior(step)

        def validate(step):
            evaluation = (vocabs, translator, writer, step, write_dir)
            dev_bleu, dev_nll = evaluate_split(
                config, forward, "dev", config.dev_prefix, *evaluation
            )
            if config.test_prefix:
                evaluate_split(config, forward, "test", config.test_prefix, *evaluation)
            return dev_bleu, {"dev_nll": dev_nll}

        return dict(
            loss_key="train_loss",
            tokens_key=None,
            nan_policy=config.nan_policy,
            summary_every=0,
            checkpoint_every=10 * config.steps_per_stats,
            validate=validate,
            validate_every=config.steps_per_external_eval or 50 * config.steps_per_stats,
            metric="dev BLEU",
            tie_key="dev_nll",  # equal BLEU (0.0 early on): the lower dev perplexity wins
            describe=lambda batch: _describe(batch, src_vocab),
            after_step=after_step,
        )

    event_dir = os.path.join(config.out_dir, "train_log")
    training.drive(
        training.TrainingRun(
            model, checkpointer, total, event_dir, options, lambda t: t.train(dataset, train_step)
        ),
        strategy,
    )
    return checkpointer.best_value if checkpointer.best_value is not None else -1.0


def posterior_summaries(
    config: Config,
    model: "keras.Model",
    vocabs: data.Vocabs,
    translator: "translator_lib.Translator",
    writer: tf.summary.SummaryWriter,
) -> summaries.PosteriorSummaries:
    """``summaries.PosteriorSummaries`` of the first ``SUMMARY_PAIRS`` dev pairs; the
    images and the greedy translation are of the first.

    Args:
      config: the run's flags (``--dev_prefix``, ``--src``, ``--tgt``, the summaries'
        periods).
      model: the model being trained.
      vocabs: the source and target vocabularies.
      translator: the run's translator (its greedy alignment of the first pair).
      writer: the run's TensorBoard writer.
    """
    src_vocab, tgt_vocab = vocabs
    source = ("%s.%s" % (config.dev_prefix, config.src), "%s.%s" % (config.dev_prefix, config.tgt))
    pairs = nmt_text.read_parallel(*source)
    examples = data.make_examples(pairs, src_vocab, tgt_vocab)[:SUMMARY_PAIRS]
    batch = next(iter(data.eval_dataset(examples, SUMMARY_PAIRS, source)))
    steps = tf.shape(batch["tgt_out"])[1]
    first_source = " ".join(src_vocab.decode(examples[0]["src"]))
    first_target = tgt_vocab.decode(examples[0]["tgt_out"])

    def decode():
        tokens, _ = translator.alignment(first_source)
        return "SRC: %s\n\nREF: %s\n\nNMT (greedy): %s" % (
            first_source,
            " ".join(first_target),
            " ".join(tokens),
        )

    return summaries.PosteriorSummaries(
        writer,
        summaries.posterior_forward(model, batch, tf.sequence_mask(batch["tgt_len"], steps)),
        first_source.split(),
        first_target + [nmt_text.EOS],
        decode,
        config.histogram_steps,
        config.image_steps,
    )


def _describe(batch, src_vocab):
    """The batch's first source sentence, to find a skipped batch in the data."""
    ids = batch["src"][0, : int(batch["src_len"][0])].numpy()
    return "batch of %d pairs starting with %r" % (
        int(tf.shape(batch["src"])[0]),
        " ".join(src_vocab.id2word(i) for i in ids)[:200],
    )


def check_evaluation_files(config: Config) -> None:
    """Reads the dev and test files before training, so that a missing or unaligned one
    stops the run now, not at its first validation hours later.

    Raises:
      NmtDataError: a file is missing, not UTF-8, or the two sides' line counts differ.
    """
    for flag in ("dev_prefix", "test_prefix"):
        prefix = config[flag]
        if prefix:
            try:
                nmt_text.read_parallel(
                    *("%s.%s" % (prefix, lang) for lang in (config.src, config.tgt))
                )
            except nmt_text.NmtDataError as e:
                raise nmt_text.NmtDataError("--%s=%s: %s" % (flag, prefix, e)) from e


def infer(task: Task, config: Config, vocabs: data.Vocabs) -> Optional[float]:
    """Translates ``--inference_input_file`` with the run's newest checkpoint (or
    ``--ckpt``'s), in the folders of ``task`` (the translator's); BLEU against
    ``--inference_ref_file``. The input, the references and the output file are checked
    before the model is built.

    Returns:
      The BLEU score; None without references.
    """
    sources = nmt_text.read_lines(config.inference_input_file)
    output = config.inference_output_file or os.path.join(config.out_dir, "output_infer")
    given = ("--inference_input_file", "--inference_ref_file")
    inputs = dict(zip(given, (config.inference_input_file, config.inference_ref_file)))
    protected = files.run_files(config.out_dir, *experiment.files_read(config))
    files.check_output(output, "--inference_output_file", inputs, protected)
    references = None
    if config.inference_ref_file:
        references = nmt_text.read_lines(config.inference_ref_file)
        if len(references) != len(sources):
            raise nmt_text.NmtDataError(
                "%s has %d lines, but --inference_input_file=%s has %d; give one reference "
                "a line of the input"
                % (
                    config.inference_ref_file,
                    len(references),
                    config.inference_input_file,
                    len(sources),
                )
            )
    build = functools.partial(experiment.build_model, config, vocabs)
    translate = functools.partial(_translate, config, vocabs, sources, references, output)
    run = inference.InferenceRun(vocabs, build, translate, newest=True)
    return inference.drive(task, config, run)


def _translate(config, vocabs, sources, references, output, model, path, step):
    """The inference with the restored ``model``: the translations, their attention
    images, BLEU and the report."""
    del path, step
    experiment.log_search(config)
    translator = experiment.build_decoder(config, model, vocabs)
    progress = progress_lib.Progress(len(sources), "translated sentences")
    pieces = translator.translate(sources, config.infer_batch_size, progress)
    hypotheses = [experiment.words(config)(h) for h in pieces]
    files.atomic_write_text(output, "".join(h + "\n" for h in hypotheses))
    logging.info("Wrote %d translations to %s", len(hypotheses), output)
    # the images and the report go beside the output file, named after it, so that the
    # inferences of several files into one folder keep theirs
    for i, line in enumerate(sources[: config.attention_images]):
        tokens, alignment = translator.alignment(line, pieces[i])
        path = os.path.join(output + ATTENTION_SUFFIX, "%06d.png" % i)
        with files.atomic_write(path, binary=True) as f:
            f.write(summaries.attention_png(alignment, line.split(), tokens))
    score = None
    if references is not None:
        score = _bleu(config, references, hypotheses)
        logging.info("BLEU %.2f", score)
        print("BLEU %.2f" % score)
    report = output + REPORT_SUFFIX
    _write_report(config, translator, sources, pieces, references, score, report)
    return score


REPORT_ELSEWHERE = (
    "Its source and reference are line #+1 of --inference_input_file and "
    "--inference_ref_file (# as in the list, counted from 0)."
)
REPORT_NOTES = (
    "Detail: the listed translation with its attention, from a teacher-forced pass of it "
    "(the attention its search computed).",
    report_lib.POSTERIOR_NOTE,
)


def _write_report(config, translator, sources, pieces, references, score, path):
    """Writes the inference's ``report.html`` (``acvi_tf.inference.report``): every
    translation (``pieces``, as the model wrote them) in words with its sentence BLEU
    (with references), the first ``--report_examples`` with their attention over the
    model's own tokens."""
    words = experiment.words(config)
    rows, details = [], {}
    detailed = min(len(pieces), config.report_examples)
    progress = progress_lib.Progress(detailed, "inspected translations for the report", delay=10)
    for i, (source, hypothesis) in enumerate(zip(sources, pieces)):
        scores = {}
        if references:
            scores["sentence BLEU"] = bleu_lib.sentence_bleu(
                words(references[i]), words(hypothesis)
            )
        rows.append(report_lib.example_row(i, words(hypothesis).split(), scores))
        if i < config.report_examples:
            found = translator.inspect(source, hypothesis)
            details[i] = report_lib.example_detail(
                source.split(),
                found["words"],
                words(references[i]) if references else "",
                found["attn"],
                sigma=found.get("sigma"),
                kl=found.get("kl"),
                scale=found.get("scale"),
                labels=found["labels"],
            )
            progress(i + 1)
    metrics = dict(num_sentences=len(pieces))
    label = "none (no --inference_ref_file)"
    if references:
        metrics["bleu"] = score
        label = bleu_lib.SENTENCE_BLEU
    title = path[: -len(REPORT_SUFFIX)]  # the output file the page is of
    report_lib.write_report(
        path, title, metrics, rows, details, label, REPORT_NOTES, REPORT_ELSEWHERE
    )
    logging.info("Wrote %s", path)
