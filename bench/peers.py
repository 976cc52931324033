"""This project's NMT against other implementations of the same model with the same weights.

Each comparison builds a second implementation from another library's own pieces, copies
this project's weights into it, checks on one batch that the two compute the same thing,
then times both in one process, interleaved (the order flips every round) after one
untimed round, in CPU time (``time.process_time``, all threads) and wall time. The table
gives the median and range of the per-round ratios ours / peer.

Peers (``--peer``):

* ``tfa``: ``tensorflow_addons.seq2seq``, the TF2 port of the library tensorflow/nmt was
  built on, running the ``acvi_paper`` model (bidirectional encoder, two decoder layers,
  Luong attention with input feeding, the encoder's final states passed to the decoder)
  as tensorflow/nmt builds it: Keras's ``Bidirectional(LSTM)`` encoder, ``StackedRNNCells``
  of ``LSTMCell`` in an ``AttentionWrapper`` with ``LuongAttention``; a training step
  through ``BasicDecoder`` with a ``TrainingSampler`` (the output projection over all steps
  after the loop, as tensorflow/nmt), and beam search through ``BeamSearchDecoder`` with
  the GNMT length penalty and tensorflow/nmt's limit of twice the longest source.
  tensorflow-addons installs on the tf215 lane only (``make LANE=tf215 venv``).
* ``keras``: Keras's own layers where they express part of the same model: the NMT
  encoder (embedding and one bidirectional layer) against ``Bidirectional(LSTM)``
  (``bench/encoder_lstm.py`` times the LSTM layers alone at every host's size), and the
  Luong attention block (``general`` score, softmax, context, ``W_c [h; c]``) over all
  target steps at once against ``keras.layers.Attention`` on projected keys, as a
  decoder without input feeding would run it (this project's decoders feed the
  attention vector back, so they run the block once per step).

Both implementations run without dropout, so that they compute the same function
(``acvi_paper`` trains with dropout 0.2). The training step is the forward and backward
pass, global-norm clipping at 5 and an SGD update (ours: ``training_lib.make_train_step``). Rows
go to BENCHMARKS.md through ``bench/_report.py``.

Usage: python bench/peers.py [--peer=keras,tfa] [--rounds=7] [--batch=128] [--src_len=50]
  [--tgt_len=50] [--beam_width=10] [--length_penalty_weight=1.0]
"""

import os
import statistics
import sys
from typing import Any, Dict, Tuple

import numpy as np
import tensorflow as tf
from absl import flags

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
from acvi_tf import compat
from acvi_tf import config as config_lib
from acvi_tf.compat import keras
from acvi_tf.formats import nmt_text
from acvi_tf.training import losses
from acvi_tf.training import step as training_lib
from nmt import hparams
from nmt import model as nmt_model
from nmt import translator as translator_lib

import _report as report

PEERS = ("keras", "tfa")
# IWSLT'15 En-Vi's vocabularies, as bench/host_step.py's translation setting
SRC_VOCAB, TGT_VOCAB = 17191, 7709
PRESET = hparams.PRESETS["acvi_paper"]
MIN_SAMPLE_S = 1.0  # seconds of calls per timed sample, at least
MAX_GRADIENT_NORM = 5.0  # tensorflow/nmt's default, run_nmt's --max_gradient_norm
# See et al.'s original TF1 code against this project: measured by hand, as the
# original cannot ship in this repository.
ORIGINAL_NOTES = [
    "Against See et al.'s original TF1 summarizer (ported minimally to Python 3 / "
    "`tf.compat.v1`; measured by hand, the original cannot ship here): paper size (V 50k, "
    "400/100 tokens, batch 16, Adagrad), same random batch, 10-12 interleaved rounds on 2 "
    "cores under load; outputs equal to float32 noise (losses, gradients, beam outputs).",
    "",
    "| compared (by hand) | this project / original, CPU time | wall (noisy) |",
    "|---|---|---|",
    "| SA training step, no coverage | 0.518 | 0.78 |",
    "| SA training step, coverage | 0.542 | 0.58 |",
    "| ACVI training step, no coverage / coverage | 0.603 / 0.628 (ACVI/SA 1.16) | 0.81 / 0.81 |",
    "| beam decode, 16 x 400-token articles, beam 4, max 100 | 5.2x faster (batched vs "
    "one at a time) | 3.8x faster |",
]


def define_flags(fv: flags.FlagValues) -> None:
    """Defines this benchmark's flags on ``fv``.

    Args:
      fv: where the flags go.
    """
    flags.DEFINE_list(
        "peer", list(PEERS), "Peers to time: keras and/or tfa (tf215 lane).", flag_values=fv
    )
    flags.DEFINE_integer(
        "rounds", 7, "Timed interleaved rounds per comparison.", lower_bound=1, flag_values=fv
    )
    flags.DEFINE_integer(
        "batch", 128, "Sentences per batch (training and decoding).", lower_bound=1, flag_values=fv
    )
    flags.DEFINE_integer(
        "src_len", 50, "Source tokens (the longest sentence).", lower_bound=2, flag_values=fv
    )
    flags.DEFINE_integer(
        "tgt_len", 50, "Target tokens (the longest sentence).", lower_bound=2, flag_values=fv
    )
    flags.DEFINE_integer(
        "beam_width", PRESET["beam_width"], "Beam width.", lower_bound=1, flag_values=fv
    )
    flags.DEFINE_float(
        "length_penalty_weight",
        1.0,
        "GNMT length penalty alpha (tensorflow/nmt's default is 0, no penalty).",
        lower_bound=0.0,
        flag_values=fv,
    )
    flags.register_validator(
        "peer",
        lambda names: set(names) <= set(PEERS),
        message="--peer: keras and/or tfa",
        flag_values=fv,
    )


def _tfa():
    """``tensorflow_addons``, or None where it does not install (TensorFlow >= 2.16)."""
    if compat.TF_VERSION >= (2, 16):
        return None
    import tensorflow_addons as tfa

    return tfa


def random_batch(size: int, src_steps: int, tgt_steps: int) -> Dict[str, tf.Tensor]:
    """A random NMT batch, its lengths from 3/4 of the longest to the longest.

    Args:
      size: sentences.
      src_steps, tgt_steps: the longest source and target (the first sentence's).

    Returns:
      dict of int32 tensors: ``src``, ``src_len``, ``tgt_in``, ``tgt_out``, ``tgt_len``.
    """
    rng = np.random.default_rng(0)

    def lengths(steps):
        drawn = rng.integers(steps * 3 // 4, steps + 1, size=size)
        drawn[0] = steps
        return drawn.astype(np.int32)

    src_len, tgt_len = lengths(src_steps), lengths(tgt_steps)
    src = rng.integers(3, SRC_VOCAB, size=(size, src_steps)).astype(np.int32)
    src = np.where(np.arange(src_steps) < src_len[:, None], src, nmt_text.EOS_ID)
    tgt = rng.integers(3, TGT_VOCAB, size=(size, tgt_steps + 1)).astype(np.int32)
    return {
        key: tf.constant(value)
        for key, value in dict(
            src=src, src_len=src_len, tgt_in=tgt[:, :-1], tgt_out=tgt[:, 1:], tgt_len=tgt_len
        ).items()
    }


def our_model(batch: Dict[str, tf.Tensor]) -> nmt_model.NMTModel:
    """The ``acvi_paper`` NMT model without dropout, built on ``batch``."""
    model = nmt_model.NMTModel(
        SRC_VOCAB,
        TGT_VOCAB,
        PRESET["num_units"],
        PRESET["num_encoder_layers"],
        PRESET["num_decoder_layers"],
        PRESET["encoder_type"],
        PRESET["attention"],
        dropout=0.0,
        seed=1,
    )
    model(batch)
    if len(model.forward_layers) != 1 or len(model.cells) != 2:
        raise ValueError("the peers are written for one bidirectional layer and two decoder ones")
    return model


class KerasEncoder:
    """The NMT encoder from Keras's layers: ``Embedding``, ``Bidirectional(LSTM)``.

    Args:
      model: the ``NMTModel`` whose encoder weights it copies.
      batch: a batch to build the layers on.
    """

    def __init__(self, model: nmt_model.NMTModel, batch: Dict[str, tf.Tensor]) -> None:
        units = model.num_units
        self.embedding = keras.layers.Embedding(SRC_VOCAB, units)
        self.encoder = keras.layers.Bidirectional(
            keras.layers.LSTM(units, return_sequences=True, return_state=True)
        )
        self(batch["src"], batch["src_len"])
        self.copy_weights(model)
        self.trainable_variables = self.embedding.trainable_variables + (
            self.encoder.trainable_variables
        )

    def copy_weights(self, model: nmt_model.NMTModel) -> None:
        """Sets every weight to its counterpart's in ``model``."""
        self.embedding.set_weights(model.src_embedding.get_weights())
        self.encoder.set_weights(
            model.forward_layers[0].get_weights() + model.backward_layers[0].get_weights()
        )

    def __call__(self, src: tf.Tensor, src_len: tf.Tensor) -> Tuple[tf.Tensor, list]:
        """Encoder outputs [B, S, 2 units] and the final ``[[h, c] forward, [h, c] backward]``."""
        mask = tf.sequence_mask(src_len, tf.shape(src)[1])
        outputs, fw_h, fw_c, bw_h, bw_c = self.encoder(self.embedding(src), mask=mask)
        return outputs, [[fw_h, fw_c], [bw_h, bw_c]]


class TfaNMT:
    """The NMT model as tensorflow/nmt builds it, from ``tfa.seq2seq``'s pieces.

    Args:
      model: the ``NMTModel`` whose weights it copies.
      tfa: the ``tensorflow_addons`` module.
      batch: a batch to build the layers on.
    """

    def __init__(self, model: nmt_model.NMTModel, tfa: Any, batch: Dict[str, tf.Tensor]) -> None:
        self.tfa = tfa
        units = model.num_units
        self.encoder = KerasEncoder(model, batch)
        self.tgt_embedding = keras.layers.Embedding(TGT_VOCAB, units)
        self.mechanism = tfa.seq2seq.LuongAttention(units)
        self.cell = tfa.seq2seq.AttentionWrapper(
            keras.layers.StackedRNNCells([keras.layers.LSTMCell(units) for _ in model.cells]),
            self.mechanism,
            attention_layer_size=units,
        )
        self.projection = keras.layers.Dense(TGT_VOCAB, use_bias=False)
        self.loss(batch)  # builds every weight
        self._decoder_layers = [
            self.tgt_embedding,
            self.mechanism.memory_layer,
            self.cell._attention_layers[0],
            self.projection,
            *self.cell._cell.cells,
        ]
        self.copy_weights(model)
        self.trainable_variables = self.encoder.trainable_variables + [
            v for layer in self._decoder_layers for v in layer.trainable_variables
        ]

    def copy_weights(self, model: nmt_model.NMTModel) -> None:
        """Sets every weight to its counterpart's in ``model``."""
        self.encoder.copy_weights(model)
        ours = [
            model.tgt_embedding,
            model.scorer.memory_projection,
            model.attention_layer,
            model.output_projection,
            *model.cells,
        ]
        for theirs, layer in zip(self._decoder_layers, ours):
            theirs.set_weights(layer.get_weights())

    def _initial_state(self, src, src_len, multiplier):
        """Sets up the attention memory; the wrapper's state, batch tiled ``multiplier`` times."""
        memory, states = self.encoder(src, src_len)
        tile = lambda t: self.tfa.seq2seq.tile_batch(t, multiplier)  # noqa: E731
        self.mechanism.setup_memory(tile(memory), memory_sequence_length=tile(src_len))
        state = self.cell.get_initial_state(
            batch_size=tf.shape(src)[0] * multiplier, dtype=memory.dtype
        )
        cell_state = tf.nest.pack_sequence_as(state.cell_state, tf.nest.flatten(states))
        return state.clone(cell_state=tf.nest.map_structure(tile, cell_state))

    def loss(self, batch: Dict[str, tf.Tensor]) -> tf.Tensor:
        """tensorflow/nmt's loss: the masked cross-entropy summed, over the batch size."""
        decoder = self.tfa.seq2seq.BasicDecoder(self.cell, self.tfa.seq2seq.TrainingSampler())
        outputs, _, _ = decoder(
            self.tgt_embedding(batch["tgt_in"]),
            initial_state=self._initial_state(batch["src"], batch["src_len"], 1),
            sequence_length=batch["tgt_len"],
        )
        logits = self.projection(outputs.rnn_output)
        return losses.sequence_loss(logits, batch["tgt_out"], batch["tgt_len"])[0]

    def beam_search(
        self, src: tf.Tensor, src_len: tf.Tensor, beam_width: int, length_penalty_weight: float
    ) -> tf.Tensor:
        """The best beam's ids [B, T] (``</s>`` and what follows it to be cut)."""
        decoder = _unwrapped_state(self.tfa.seq2seq.BeamSearchDecoder)(
            self.cell,
            beam_width,
            embedding_fn=self.tgt_embedding,
            output_layer=self.projection,
            length_penalty_weight=length_penalty_weight,
            maximum_iterations=2 * tf.reduce_max(src_len),
        )
        outputs, _, _ = decoder(
            None,
            start_tokens=tf.fill([tf.shape(src)[0]], nmt_text.SOS_ID),
            end_token=nmt_text.EOS_ID,
            initial_state=self._initial_state(src, src_len, beam_width),
        )
        return outputs.predicted_ids[:, :, 0]


def _unwrapped_state(decoder_class):
    """``decoder_class`` whose initial state is made of plain tuples again.

    ``BeamSearchDecoder.initialize`` keeps the cell's state as a layer attribute, which
    Keras wraps (``_TupleWrapper``); with typing_extensions >= 4.6 (the tf215 lane has
    4.16) the decoding loop's ``tf.while_loop`` cannot trace the wrapper.
    """

    class Decoder(decoder_class):
        def initialize(self, embedding, start_tokens, end_token, initial_state):
            finished, inputs, state = super().initialize(
                embedding, start_tokens, end_token, initial_state
            )
            cell_state = tf.nest.pack_sequence_as(initial_state, tf.nest.flatten(state.cell_state))
            return finished, inputs, state._replace(cell_state=cell_state)

    return Decoder


def _interleaved(runs, rounds):
    """CPU and wall seconds per call of each of ``runs`` (name -> callable), per round
    (``report.time_interleaved``, each round at least ``MIN_SAMPLE_S`` of calls per form,
    every result fetched from the device)."""

    def fetched(run):
        # (an embedding's gradient is IndexedSlices: its values are fetched)
        return lambda: tf.nest.map_structure(lambda t: t.numpy(), run(), expand_composites=True)

    wall, cpu = report.time_interleaved(
        {name: fetched(run) for name, run in runs.items()}, rounds, MIN_SAMPLE_S
    )
    return cpu, wall


def _result(compared, size, cpu, wall, equality):
    """The table row from the per-round times of ``ours`` and ``peer``, and the raw times."""
    row = [
        compared,
        size,
        "%.0f / %.0f"
        % (1e3 * statistics.median(cpu["ours"]), 1e3 * statistics.median(cpu["peer"])),
        report.ratio_cell(cpu["ours"], cpu["peer"]),
        report.ratio_cell(wall["ours"], wall["peer"]),
        equality,
    ]
    return row, dict(compared=compared, cpu_s=cpu, wall_s=wall)


def _relative_difference(got, want):
    """max |got - want| / max |want| over a nest of arrays."""
    got = np.concatenate([np.ravel(tf.convert_to_tensor(t)) for t in tf.nest.flatten(got)])
    want = np.concatenate([np.ravel(tf.convert_to_tensor(t)) for t in tf.nest.flatten(want)])
    return float(np.max(np.abs(got - want)) / np.max(np.abs(want)))


def _check(name, difference, tolerance):
    """Stops the run when the two implementations differ by more than ``tolerance``."""
    if not difference <= tolerance:
        raise AssertionError("%s: the peer differs from ours by %.2g" % (name, difference))


def _compare_train_step(config, model, peer, batch):
    """Row for the training step: ours (``training_lib.make_train_step``) against tfa's
    decoder."""
    peer.copy_weights(model)
    # run_nmt's default --max_gradient_norm
    ours_step = training_lib.make_train_step(model, keras.optimizers.SGD(1.0), MAX_GRADIENT_NORM)
    peer_optimizer = keras.optimizers.SGD(1.0)
    variables = peer.trainable_variables

    @tf.function
    def peer_step(batch):
        with tf.GradientTape() as tape:
            loss = peer.loss(batch)
        grads = tape.gradient(loss, variables)
        clipped, norm = tf.clip_by_global_norm(grads, MAX_GRADIENT_NORM)
        peer_optimizer.apply_gradients(zip(clipped, variables))
        return dict(train_loss=loss, grad_norm=norm)

    runs = dict(
        ours=lambda: ours_step(batch, tf.constant(False), tf.constant(1, tf.int64)),
        peer=lambda: peer_step(batch),
    )
    # Two steps from the same weights: the first's loss and gradient norm, and the
    # second's loss (after each side's update).
    checks = {name: [run(), run()] for name, run in runs.items()}
    loss = _relative_difference(
        [r["train_loss"] for r in checks["ours"]], [r["train_loss"] for r in checks["peer"]]
    )
    norm = _relative_difference(checks["ours"][0]["grad_norm"], checks["peer"][0]["grad_norm"])
    _check("training loss", loss, 1e-5)
    _check("gradient norm", norm, 1e-4)
    cpu, wall = _interleaved(runs, config.rounds)
    return _result(
        "NMT training step (forward, backward, clip, SGD) vs `tfa.seq2seq` "
        "`AttentionWrapper` + `BasicDecoder`",
        "batch %d, %d/%d tokens" % (config.batch, config.src_len, config.tgt_len),
        cpu,
        wall,
        "loss (2 steps) rel. diff %.1g, gradient norm %.1g" % (loss, norm),
    )


def identical_translations(ours: tf.Tensor, theirs: tf.Tensor) -> Tuple[int, int]:
    """How many translations are the same in ``Translator.search``'s results and the
    ``BeamSearchDecoder``'s best beams.

    Args:
      ours: ``{"ids": [B, T], "lengths": [B], ...}``.
      theirs: ids [B, T'], a translation ending at its first ``</s>``.

    Returns:
      ``(identical, B)``.
    """
    expected = np.asarray(theirs).tolist()
    same = 0
    for b, row in enumerate(expected):
        row = row[: row.index(nmt_text.EOS_ID)] if nmt_text.EOS_ID in row else row
        same += np.asarray(ours["ids"][b, : int(ours["lengths"][b])]).tolist() == row
    return same, len(expected)


def _compare_beam_search(config, model, peer, batch):
    """Row for beam search: ``Translator``'s against ``BeamSearchDecoder``."""
    peer.copy_weights(model)
    width, alpha = config.beam_width, config.length_penalty_weight
    ours = translator_lib.Translator(model, None, "beam_search", width, alpha).search
    theirs = tf.function(lambda src, src_len: peer.beam_search(src, src_len, width, alpha))
    src, src_len = batch["src"], batch["src_len"]
    runs = dict(ours=lambda: ours(src, src_len)["ids"], peer=lambda: theirs(src, src_len))
    out = ours(src, src_len)
    same, total = identical_translations(out, theirs(src, src_len))
    lengths = out["lengths"].numpy()
    if same != total:
        raise AssertionError("beam search: %d of %d translations differ" % (total - same, total))
    cpu, wall = _interleaved(runs, config.rounds)
    return _result(
        "NMT beam search (beam %d, GNMT length penalty %g) vs `tfa.seq2seq.BeamSearchDecoder`"
        % (width, alpha),
        "batch %d, %d source tokens, up to %d steps"
        % (config.batch, config.src_len, 2 * config.src_len),
        cpu,
        wall,
        "ids identical, %d/%d sentences (lengths %d-%d)"
        % (same, total, lengths.min(), lengths.max()),
    )


def _gradient_pass(forward, variables, inputs=()):
    """A compiled forward and backward pass: ``sum(sin(outputs))`` and its gradients."""

    @tf.function
    def run():
        with tf.GradientTape() as tape:
            tape.watch(list(inputs))
            outputs = forward()
            loss = tf.add_n([tf.reduce_sum(tf.sin(t)) for t in tf.nest.flatten(outputs)])
        return outputs, tape.gradient(loss, list(inputs) + list(variables))

    return run


def _dense(gradients):
    """Gradients with ``IndexedSlices`` (an embedding's) made dense."""
    return [tf.convert_to_tensor(g) for g in gradients]


def _compare_encoder(config, model, batch):
    """Row for the encoder: ours (``ProjectedLSTM``) against ``Bidirectional(LSTM)``."""
    peer = KerasEncoder(model, batch)
    src, src_len = batch["src"], batch["src_len"]
    mask = tf.sequence_mask(src_len, config.src_len, dtype=tf.float32)[:, :, None]

    def ours():
        outputs, _, states = model.encode(src, src_len, training=True)
        return outputs * mask, states

    def theirs():
        outputs, states = peer(src, src_len)
        return outputs * mask, states

    ours_variables = model.src_embedding.trainable_variables + [
        v
        for layer in model.forward_layers + model.backward_layers
        for v in layer.trainable_variables
    ]
    runs = dict(
        ours=_gradient_pass(ours, ours_variables),
        peer=_gradient_pass(theirs, peer.trainable_variables),
    )
    (ours_out, ours_grads), (peer_out, peer_grads) = runs["ours"](), runs["peer"]()
    outputs = _relative_difference(ours_out, peer_out)
    grads = _relative_difference(_dense(ours_grads), _dense(peer_grads))
    _check("encoder outputs", outputs, 1e-5)
    _check("encoder gradients", grads, 1e-4)
    cpu, wall = _interleaved(runs, config.rounds)
    return _result(
        "NMT encoder (embedding, bi LSTM), forward + backward: `ProjectedLSTM` vs keras "
        "`Bidirectional(LSTM)`",
        "batch %d, %d tokens, %d units" % (config.batch, config.src_len, model.num_units),
        cpu,
        wall,
        "outputs and states rel. diff %.1g, gradients %.1g" % (outputs, grads),
    )


def _compare_attention(config, model, batch):
    """Row for Luong attention over all target steps: ours against ``keras.layers.Attention``."""
    rng = np.random.default_rng(1)
    units = model.num_units
    query = tf.constant(rng.normal(size=(config.batch, config.tgt_len, units)), tf.float32)
    memory = tf.constant(rng.normal(size=(config.batch, config.src_len, 2 * units)), tf.float32)
    mask = tf.sequence_mask(batch["src_len"], config.src_len)
    keys_layer = keras.layers.Dense(units, use_bias=False)
    attention = keras.layers.Attention()
    output_layer = keras.layers.Dense(units, use_bias=False)

    def ours():
        probs = model.scorer(query, model.scorer.prepare(memory), mask)
        context = model.context_layer.draw(probs, model.context_layer.prepare(memory, mask))
        return model.attention_layer(tf.concat([query, context], axis=-1))

    def theirs():
        context = attention([query, memory, keys_layer(memory)], mask=[None, mask])
        return output_layer(tf.concat([query, context], axis=-1))

    theirs()
    keys_layer.set_weights(model.scorer.memory_projection.get_weights())
    output_layer.set_weights(model.attention_layer.get_weights())
    ours_variables = (
        model.scorer.memory_projection.trainable_variables
        + model.attention_layer.trainable_variables
    )
    peer_variables = keys_layer.trainable_variables + output_layer.trainable_variables
    runs = dict(
        ours=_gradient_pass(ours, ours_variables, (query, memory)),
        peer=_gradient_pass(theirs, peer_variables, (query, memory)),
    )
    (ours_out, ours_grads), (peer_out, peer_grads) = runs["ours"](), runs["peer"]()
    outputs = _relative_difference(ours_out, peer_out)
    grads = _relative_difference(ours_grads, peer_grads)
    _check("attention outputs", outputs, 1e-5)
    _check("attention gradients", grads, 1e-4)
    cpu, wall = _interleaved(runs, config.rounds)
    return _result(
        "Luong attention block (general score, context, W_c [h; c]) over all target steps, "
        "forward + backward: ours vs `keras.layers.Attention`",
        "batch %d, %d queries x %d keys, %d units"
        % (config.batch, config.tgt_len, config.src_len, units),
        cpu,
        wall,
        "outputs rel. diff %.1g, gradients %.1g" % (outputs, grads),
    )


def run(config: config_lib.Config) -> None:
    """Compares the chosen peers with this project's NMT parts (equal results, interleaved
    times) and writes the results table.

    Args:
      config: the parsed flags (``define_flags``).
    """
    tf.get_logger().setLevel("ERROR")
    keras.utils.set_random_seed(1)
    tfa = _tfa()
    peers = list(config.peer)
    lane_notes = []
    if "tfa" in peers and tfa is None:
        message = (
            "The tfa peer needs tensorflow-addons, which runs on the tf215 lane only "
            "(TensorFlow 2.15; this is %s): `make LANE=tf215 venv`, then "
            "`.venv-tf215/bin/python bench/peers.py --peer=tfa`." % tf.__version__
        )
        print(message)
        lane_notes.append(message)
        peers.remove("tfa")
    if not peers:
        return
    batch = random_batch(config.batch, config.src_len, config.tgt_len)
    model = our_model(batch)
    results = []
    if "tfa" in peers:
        peer = TfaNMT(model, tfa, batch)
        results.append(_compare_train_step(config, model, peer, batch))
        results.append(_compare_beam_search(config, model, peer, batch))
    if "keras" in peers:
        results.append(_compare_encoder(config, model, batch))
        results.append(_compare_attention(config, model, batch))
    notes = [
        "`acvi_paper` model (%d units, bidirectional encoder, %d decoder layers, Luong "
        "attention with input feeding), vocabularies %d/%d (IWSLT'15 En-Vi), random "
        "weights, no dropout; lengths drawn from 3/4 of the longest to the longest; "
        "TensorFlow %s; %d interleaved rounds after one untimed round, each at least %g s "
        "of calls per form. Ratios are ours / peer per round, median (min-max): below 1, "
        "ours is faster."
        % (
            PRESET["num_units"],
            PRESET["num_decoder_layers"],
            SRC_VOCAB,
            TGT_VOCAB,
            tf.__version__,
            config.rounds,
            MIN_SAMPLE_S,
        )
    ]
    if "tfa" in peers:
        notes.append(
            "On random weights few translations end before the search's limit (the lengths "
            "in the beam row), so every step runs the whole batch."
        )
    notes += lane_notes
    if "keras" in peers:  # once in BENCHMARKS.md: the run make bench makes on every lane
        notes += ORIGINAL_NOTES
    report.emit(
        "Peers: the same model, the same weights, another implementation",
        [
            "compared",
            "size",
            "ms CPU ours / peer (median)",
            "CPU time ours / peer (range)",
            "wall ours / peer (range)",
            "equal first",
        ],
        [row for row, _ in results],
        notes,
        config=peers + ["tf%d.%d" % compat.TF_VERSION],
        data=[data for _, data in results],
    )


if __name__ == "__main__":
    config_lib.run_command(define_flags, run)
