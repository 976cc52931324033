"""This project's attention scores and NMT beam search against ``tfa.seq2seq``.

tensorflow-addons' ``seq2seq`` is the TF2 port of the library tensorflow/nmt was built on
(``tf.contrib.seq2seq``). It installs only on the tf215 lane (TensorFlow 2.15, Python <=
3.11); elsewhere these tests are skipped with that reason. Each test copies one set of
weights into both implementations and compares their outputs.
"""

import numpy as np
import pytest
import tensorflow as tf

from acvi_tf import compat
from acvi_tf.contexts import attention as attention_lib
from acvi_tf.formats import nmt_text
from nmt import model as nmt_lib
from nmt import translator as translator_lib

if compat.TF_VERSION >= (2, 16):
    pytest.skip(
        "tensorflow-addons runs on the tf215 lane only (TensorFlow 2.15); this is "
        "TensorFlow %d.%d" % compat.TF_VERSION,
        allow_module_level=True,
    )
import tensorflow_addons as tfa

pytestmark = pytest.mark.filterwarnings("ignore::UserWarning")

B, N, D, UNITS = 3, 7, 5, 6


def _memory():
    rng = np.random.default_rng(0)
    memory = rng.normal(size=[B, N, D]).astype(np.float32)
    lengths = np.array([7, 4, 1], np.int32)
    memory *= np.arange(N)[None, :, None] < lengths[:, None, None]
    return memory, lengths


def _ours(scorer, query, memory, lengths):
    keys = scorer.prepare(tf.constant(memory))
    return scorer(tf.constant(query), keys, memory_mask=tf.sequence_mask(lengths, N)).numpy()


def _theirs(mechanism, query, lengths):
    state = mechanism.initial_state(B, tf.float32)  # the previous alignments, unused
    probs, _ = mechanism([tf.constant(query), state])
    return probs.numpy()


@pytest.mark.parametrize("scale", [False, True])
def test_luong_scores_equal_luong_attention(scale):
    memory, lengths = _memory()
    query = np.random.default_rng(1).normal(size=[B, UNITS]).astype(np.float32)
    theirs = tfa.seq2seq.LuongAttention(UNITS, memory, lengths, scale=scale)
    expected = _theirs(theirs, query, lengths)
    ours = attention_lib.MultiplicativeScorer(UNITS, mode="general", scale=scale)
    ours.prepare(tf.constant(memory))
    ours.build(None)
    ours.memory_projection.kernel.assign(theirs.memory_layer.kernel)
    if scale:
        theirs.scale_weight.assign(1.7)  # away from its initial 1, so the scale shows
        ours.g.assign(theirs.scale_weight)
        expected = _theirs(theirs, query, lengths)
    np.testing.assert_allclose(_ours(ours, query, memory, lengths), expected, rtol=1e-5, atol=1e-6)
    assert np.all(expected[2, 1:] == 0.0)  # the one-token source attends to its token


@pytest.mark.parametrize("normalize", [False, True])
def test_additive_scores_equal_bahdanau_attention(normalize):
    """Bahdanau's ``v^T tanh(W_k h + W_q s)``; its weight-normalised form
    ``g v / |v|`` with a bias ``b`` is the same scorer with ``v' = g v / |v|`` and ``b``
    as the query projection's bias."""
    memory, lengths = _memory()
    query = np.random.default_rng(2).normal(size=[B, 4]).astype(np.float32)
    theirs = tfa.seq2seq.BahdanauAttention(UNITS, memory, lengths, normalize=normalize)
    _theirs(theirs, query, lengths)  # builds the query layer and v
    if normalize:
        theirs.attention_g.assign(0.8)
        theirs.attention_b.assign(np.linspace(-0.5, 0.5, UNITS))
    expected = _theirs(theirs, query, lengths)
    ours = attention_lib.AdditiveScorer(UNITS)
    _ours(ours, query, memory, lengths)  # builds the weights
    ours.memory_projection.kernel.assign(theirs.memory_layer.kernel)
    ours.query_projection.kernel.assign(theirs.query_layer.kernel)
    v = theirs.attention_v.numpy()
    if normalize:
        v = theirs.attention_g.numpy() * v / np.linalg.norm(v)
        ours.query_projection.bias.assign(theirs.attention_b)
    else:
        ours.query_projection.bias.assign(tf.zeros([UNITS]))
    ours.energy.kernel.assign(v[:, np.newaxis])
    np.testing.assert_allclose(_ours(ours, query, memory, lengths), expected, rtol=1e-5, atol=1e-6)


class _StepCell(compat.keras.layers.AbstractRNNCell):
    """The NMT host's decoder step as the RNN cell ``BeamSearchDecoder`` drives."""

    def __init__(self, model, constants, **kwargs):
        super().__init__(**kwargs)
        self.model = model
        self.constants = constants

    @property
    def state_size(self):
        units = self.model.num_units
        return dict(cells=[[units, units] for _ in self.model.cells], attention=units)

    @property
    def output_size(self):
        return self.model.output_projection.units

    def call(self, inputs, states):
        output, state, attn, context = self.model.step(inputs, states, self.constants)
        return self.model.log_probs(output, state, attn, context, self.constants), state


@pytest.mark.parametrize("alpha", [0.0, 1.0])
@pytest.mark.parametrize("beam_width", [1, 4])
def test_nmt_beam_search_equals_the_beam_search_decoder(beam_width, alpha):
    """The NMT host's translations (``Translator``'s search) are those of
    ``BeamSearchDecoder`` on the same model: identical ids over 5 random models."""
    for seed in range(5):
        compat.keras.utils.set_random_seed(seed)
        model = nmt_lib.NMTModel(10, 12, 8, encoder_type="bi", dropout=0.0, init_weight=1.0)
        rng = np.random.default_rng(seed)
        src_len = np.array([6, 4, 5, 2], np.int32)
        src = np.where(
            np.arange(6)[None] < src_len[:, None], rng.integers(3, 10, (4, 6)), nmt_text.EOS_ID
        ).astype(np.int32)
        ours = translator_lib.Translator(model, None, "beam_search", beam_width, alpha).search(
            dict(src=tf.constant(src), src_len=tf.constant(src_len))
        )
        constants, state = model.start(dict(src=tf.constant(src), src_len=tf.constant(src_len)))
        tiled = tf.nest.map_structure(
            lambda t: None if t is None else tfa.seq2seq.tile_batch(t, beam_width), constants
        )
        decoder = tfa.seq2seq.BeamSearchDecoder(
            _StepCell(model, tiled),
            beam_width,
            embedding_fn=model.tgt_embedding,
            length_penalty_weight=alpha,
            maximum_iterations=2 * int(src_len.max()),
        )
        theirs, _, _ = decoder(
            None,
            start_tokens=tf.fill([4], nmt_text.SOS_ID),
            end_token=nmt_text.EOS_ID,
            initial_state=tfa.seq2seq.tile_batch(state, beam_width),
        )
        for b in range(4):
            expected = theirs.predicted_ids[b, :, 0].numpy().tolist()
            if nmt_text.EOS_ID in expected:
                expected = expected[: expected.index(nmt_text.EOS_ID)]
            got = ours["ids"][b, : int(ours["lengths"][b])].numpy().tolist()
            assert got == expected, (seed, b)
