"""A fourth host, written here at run time from the library's public parts alone: a
toy task that writes a sequence of letters reversed. Its Task and model live in this
file; registered by name in the Runner's catalog, the generic command
(``python -m acvi_tf.runner``) trains it, decodes it, serves raw text and exports it, as
it does for the summarizer, the translator and the captioner, and the Runner's eval job
scores it."""

import json
import os
from typing import Callable, Dict, List, Tuple

import numpy as np
import tensorflow as tf
from absl import app, flags

from acvi_tf import builders
from acvi_tf import flags as acvi_flags
from acvi_tf.compat import keras
from acvi_tf.config import Config
from acvi_tf.inference import decoding
from acvi_tf.inference import export as export_lib
from acvi_tf.runner import catalog, command, evaluation, inference, runner, training
from acvi_tf.runner.task import Task, TrainingInputs
from acvi_tf.training import checkpoints
from acvi_tf.training import step as training_lib

PAD, START, STOP = 0, 1, 2
LETTERS = list("abcdef")
WORDS = ["<pad>", "<s>", "</s>", *LETTERS]
LONGEST = 4  # letters in a sequence; the decoder's steps are one more (the stop)


def _ids(line: str) -> List[int]:
    return [WORDS.index(letter) for letter in line.split()][:LONGEST]


def _batch(lines: List[str]) -> Dict[str, np.ndarray]:
    """Sources and their reversals, padded to the longest sequence."""
    sources = [_ids(line) for line in lines]
    width = LONGEST + 1
    batch = dict(
        src=np.zeros([len(sources), LONGEST], np.int32),
        src_len=np.array([len(s) for s in sources], np.int32),
        tgt_in=np.zeros([len(sources), width], np.int32),
        tgt_out=np.zeros([len(sources), width], np.int32),
    )
    for row, ids in enumerate(sources):
        target = ids[::-1]
        batch["src"][row, : len(ids)] = ids
        batch["tgt_in"][row, : len(ids) + 1] = [START, *target]
        batch["tgt_out"][row, : len(ids) + 1] = [*target, STOP]
    return batch


class Reverser(keras.Model):
    """A GRU encoder and a GRU decoder whose context vector is the library's context
    layer's, over attention by dot product on the encoder's states."""

    loss_key = "loss"
    probability_scores = False
    batch_signature = dict(
        src=tf.TensorSpec([None, LONGEST], tf.int32),
        src_len=tf.TensorSpec([None], tf.int32),
        tgt_in=tf.TensorSpec([None, LONGEST + 1], tf.int32),
        tgt_out=tf.TensorSpec([None, LONGEST + 1], tf.int32),
    )

    def __init__(self, units: int, context_layer) -> None:
        super().__init__()
        self.embedding = keras.layers.Embedding(len(WORDS), units)
        self.encoder = keras.layers.GRU(units, return_sequences=True)
        self.cell = keras.layers.GRUCell(units)
        self.context_layer = context_layer
        self.output_layer = keras.layers.Dense(len(WORDS))

    def start(self, inputs, *, training=False) -> Tuple[dict, tf.Tensor]:
        mask = tf.sequence_mask(inputs["src_len"], tf.shape(inputs["src"])[1], tf.float32)
        memory = self.encoder(self.embedding(inputs["src"]), training=training)
        constants = dict(
            memory=memory, mask=mask, prepared=self.context_layer.prepare(memory, mask)
        )
        return constants, tf.reduce_sum(memory * mask[..., None], 1)

    def _step(self, tokens, state, constants, training=False, use_gumbel=None):
        hidden, _ = self.cell(self.embedding(tokens), [state], training=training)
        scores = tf.einsum("bd,bnd->bn", hidden, constants["memory"])
        attn = tf.nn.softmax(scores + (constants["mask"] - 1.0) * 1e9)
        context = self.context_layer.draw(
            attn, constants["prepared"], training=training, use_gumbel=use_gumbel
        )
        return self.output_layer(tf.concat([hidden, context], -1)), hidden, attn

    def decode_step(self, tokens, state, constants):
        logits, state, attn = self._step(tokens, state, constants)
        return tf.nn.log_softmax(logits), state, {"attn": attn}

    def call(self, batch, training=False, use_gumbel=None):
        constants, state = self.start(batch, training=training)
        logits, attn = [], []
        for t in range(LONGEST + 1):
            step_logits, state, step_attn = self._step(
                batch["tgt_in"][:, t], state, constants, training, use_gumbel
            )
            logits.append(step_logits)
            attn.append(step_attn)
        attn = tf.stack(attn, 1)
        return dict(logits=tf.stack(logits, 1), attn=attn, kl=tf.zeros(tf.shape(attn)[:2]))

    def compute_loss(self, batch, outputs, step):
        del step
        mask = tf.sequence_mask(batch["src_len"] + 1, LONGEST + 1, tf.float32)
        nll = tf.nn.sparse_softmax_cross_entropy_with_logits(batch["tgt_out"], outputs["logits"])
        return dict(loss=tf.reduce_sum(nll * mask) / tf.reduce_sum(mask))


def _settings(max_steps: int) -> decoding.SearchSettings:
    return decoding.SearchSettings(max_steps, START, STOP, beam_size=1)


def _words(ids: np.ndarray, length: int) -> str:
    return " ".join(WORDS[i] for i in ids[:length] if i > STOP)


class ReversalTask(Task):
    """The toy host: ``--mode=train`` on ``--data`` (lines of letters), ``eval`` (the
    Runner's eval job, scoring the run's checkpoints on ``--data``) or ``decode`` of
    ``--data`` into ``--out_dir/decoded.txt``."""

    entry_point = "tests.test_fourth_host"
    names_the_run = "--out_dir"
    model_flags = ("units",)
    command_flags = ("out_dir", "mode", "data", "ckpt")
    inputs = "Letter sequences"
    outputs = "Reversals"
    served = "reverser"

    def define_flags(self, fv: flags.FlagValues) -> None:
        acvi_flags.define_flags(fv)
        self.define_run_flags(fv)
        flags.DEFINE_enum("mode", "train", ["train", "eval", "decode"], "The job.", flag_values=fv)
        flags.DEFINE_string("data", None, "Lines of letters.", flag_values=fv)
        flags.DEFINE_integer("units", 32, "Hidden units.", flag_values=fv)
        flags.DEFINE_integer("steps", 200, "Training steps.", flag_values=fv)

    def define_run_flags(self, fv: flags.FlagValues) -> None:
        if "allow_data_change" not in fv:
            acvi_flags.define_allow_data_change(fv)
        flags.DEFINE_string("out_dir", None, "The run's folder.", flag_values=fv)
        flags.DEFINE_string("ckpt", None, "The checkpoint.", flag_values=fv)

    def trains(self, config: Config) -> bool:
        return config.mode == "train"

    def check(self, config: Config) -> None:
        if not config.out_dir:
            raise app.UsageError("--out_dir is required")

    def training_inputs(self, config: Config, resuming: bool) -> TrainingInputs:
        return TrainingInputs({}, [config.data])

    def _model(self, config: Config) -> Reverser:
        model = Reverser(config.units, builders.context_layer(config))
        model(_batch(["a"]))
        return model

    def train(self, config, strategy, inputs) -> Reverser:
        step = tf.Variable(0, dtype=tf.int64, name="global_step")
        with strategy.scope():
            model = self._model(config)
            optimizer = keras.optimizers.Adam(0.01)
            checkpointer = checkpoints.Checkpointer(
                config.out_dir, step, model=model, optimizer=optimizer
            )
            checkpointer.restore_latest()
            train_step = training_lib.make_train_step(model, optimizer)
            with open(config.data, encoding="utf-8") as f:
                lines = f.read().splitlines()
            batches = [_batch(lines[i : i + 16]) for i in range(0, len(lines), 16)]

            def feed(trainer):
                while not trainer.finished:
                    trainer.train(batches, train_step)
                trainer.save()

            run = training.TrainingRun(
                model,
                checkpointer,
                config.steps,
                os.path.join(config.out_dir, "train_log"),
                lambda writer: dict(summary_every=0, tokens_key=None),
                feed,
            )
            training.drive(run, strategy)
        return model

    def _restored(self, config: Config) -> Reverser:
        """The run's model, restored by the Runner (no vocabulary to check)."""
        run = inference.InferenceRun(None, lambda: self._model(config), lambda model, *_: model)
        return inference.drive(self, config, run)

    def _reverse(self, model: Reverser, lines: List[str]) -> List[str]:
        batch = _batch(lines)
        inputs = dict(src=batch["src"], src_len=batch["src_len"])
        out = decoding.decode(model, decoding.STRATEGIES["greedy"](_settings(LONGEST + 1)), inputs)
        return [_words(ids, n) for ids, n in zip(out["ids"].numpy(), out["lengths"].numpy())]

    def _evaluate(self, config: Config) -> float:
        with open(config.data, encoding="utf-8") as f:
            batch = _batch(f.read().splitlines())

        def build():
            model = self._model(config)
            step = tf.Variable(0, dtype=tf.int64)
            best_dir = self.best_dir(config)
            checkpointer = checkpoints.Checkpointer(
                config.out_dir, step, best_dir=best_dir, model=model
            )

            def score(step, path):
                loss = model.compute_loss(batch, model(batch), step)["loss"]
                return {"loss": float(loss)}, 1

            return evaluation.EvalRun(checkpointer, config.steps, "--steps", score)

        eval_dir = os.path.join(config.out_dir, "eval")
        return evaluation.drive(eval_dir, self.best_dir(config), build)

    def infer(self, config, strategy) -> float:
        if config.mode == "eval":
            return self._evaluate(config)
        with open(config.data, encoding="utf-8") as f:
            lines = f.read().splitlines()
        reversals = self._reverse(self._restored(config), lines)
        with open(os.path.join(config.out_dir, "decoded.txt"), "w", encoding="utf-8") as f:
            f.write("".join(r + "\n" for r in reversals))
        return float(
            np.mean([r == " ".join(line.split()[::-1]) for r, line in zip(reversals, lines)])
        )

    def run_settings(self, config: Config) -> Config:
        settings = runner.recorded_config(self, config.out_dir, out_dir=config.out_dir)
        return settings.replace(ckpt=config.ckpt)

    def files_read(self, config: Config) -> List[str]:
        return [config.data]

    def raw_text(self, config: Config) -> Callable[[List[str]], List[str]]:
        model = self._restored(config)
        return lambda lines: self._reverse(model, lines)

    def served_module(self, config: Config, pretokenized: bool):
        del pretokenized
        module = ServedReverser(self._restored(config))
        return module, {"serving_default": module.reverse}


class ServedReverser(tf.Module):
    """Letters in, reversals out, every step a TensorFlow op."""

    def __init__(self, model: Reverser) -> None:
        super().__init__()
        self._variables = list(model.variables)
        self._model = model
        self._ids = export_lib.vocabulary_table(WORDS, PAD)
        self._words = tf.constant(WORDS)

    @tf.function(input_signature=[tf.TensorSpec([None], tf.string)])
    def reverse(self, texts):
        tokens = tf.strings.split(texts)[:, :LONGEST]
        ids = tf.ragged.map_flat_values(self._ids.lookup, tokens)
        src = ids.to_tensor(PAD, shape=tf.stack([tf.shape(texts)[0], LONGEST]))
        src_len = tf.cast(tokens.row_lengths(), tf.int32)
        out = decoding.decode(
            self._model,
            decoding.STRATEGIES["greedy"](_settings(LONGEST + 1)),
            dict(src=src, src_len=src_len),
        )
        keep = tf.logical_and(
            tf.sequence_mask(out["lengths"], tf.shape(out["ids"])[1]), out["ids"] > STOP
        )
        words = tf.ragged.boolean_mask(tf.gather(self._words, out["ids"]), keep)
        return dict(reversals=tf.strings.reduce_join(words, axis=1, separator=" "))


TASK = ReversalTask()


def _command(*argv: str):
    """The generic command's line ``python -m acvi_tf.runner --task=reversal *argv``,
    run in this process."""
    return command.run(*command.parse(["acvi_tf.runner", "--task=reversal", *argv]))


def test_a_fourth_host_trains_decodes_serves_raw_text_and_exports(monkeypatch, tmp_path):
    monkeypatch.setattr(catalog, "TASKS", dict(catalog.TASKS))
    catalog.register("reversal", TASK)
    rng = np.random.default_rng(0)
    lines = [" ".join(rng.choice(LETTERS, rng.integers(1, LONGEST + 1))) for _ in range(160)]
    data, out = tmp_path / "letters.txt", tmp_path / "run"
    data.write_text("".join(line + "\n" for line in lines))
    common = ["--out_dir=%s" % out, "--data=%s" % data, "--context=sa", "--units=32"]
    _command("--command=run", *common, "--steps=150", "--seed=1")
    record = json.loads((out / acvi_flags.RECORD).read_text())
    assert record["units"] == 32 and os.path.exists(out / "train_log")
    assert record[acvi_flags.ENTRY_POINT] == TASK.entry_point
    assert not {"task", "command"} & set(record)  # the generic command's own

    loss = _command("--command=run", *common[:2], "--mode=eval")
    best = json.loads((out / "best" / checkpoints.BEST_RECORD).read_text())
    assert best["step"] == 150 and best["value"] == loss < 0.5, best
    assert os.listdir(out / "eval")  # its TensorBoard event file
    assert _command("--command=run", *common[:2], "--mode=eval") == loss  # ends at once

    accuracy = _command("--command=run", *common[:2], "--mode=decode")
    decoded = (out / "decoded.txt").read_text().splitlines()
    assert accuracy > 0.8, decoded[:10]  # it learned to reverse

    served = tmp_path / "served.txt"
    _command("--command=serve", "--out_dir=%s" % out, "--input=%s" % data, "--output=%s" % served)
    assert served.read_text().splitlines() == decoded

    _command("--command=export", "--out_dir=%s" % out, "--export_dir=%s" % (tmp_path / "export"))
    loaded = tf.saved_model.load(str(tmp_path / "export"))
    reversals = loaded.signatures["serving_default"](texts=tf.constant(lines))["reversals"]
    assert [r.decode() for r in reversals.numpy()] == decoded
