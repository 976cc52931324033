"""tensorflow/nmt's beam search against a plain-Python port of BeamSearchDecoder's step.

The port keeps each beam as a Python list of hypotheses (tokens, total log-probability,
stored length, finished, state) and follows ``tf.contrib.seq2seq``'s ``_beam_search_step``
one candidate at a time; on the tf215 lane ``test_tfa_parity.py`` also compares the NMT
host's beam search with ``tfa.seq2seq.BeamSearchDecoder`` itself.
"""

import numpy as np
import pytest
import tensorflow as tf
from inputs import START, STOP, FakeDecoder, S

from acvi_tf.inference import beam_search, decoding, gnmt_beam_search


def _penalty(length, alpha):
    return ((5.0 + length) / 6.0) ** alpha if alpha else 1.0


def contrib_beam_search(decoder, init_state, beam_size, max_steps, alpha, run_on=False):
    """BeamSearchDecoder's algorithm for one input.

    Returns the answer's tokens before [STOP], its score, and the steps run. The search
    stops when every hypothesis is finished, or, with ``run_on``, after ``max_steps``
    steps (as an input of a batch does while others are still searching).
    """
    beam = [
        dict(tokens=[], logp=0.0 if i == 0 else -np.inf, length=0, finished=i > 0, state=init_state)
        for i in range(beam_size)
    ]
    for steps in range(1, max_steps + 1):
        candidates = []
        for hyp in beam:
            last = hyp["tokens"][-1] if hyp["tokens"] else START
            lp, state = decoder.step_np(last, hyp["state"])
            for token, token_lp in enumerate(lp.astype(np.float32)):
                if hyp["finished"]:
                    token_lp = 0.0 if token == STOP else np.finfo(np.float32).min
                total = np.float32(hyp["logp"]) + np.float32(token_lp)
                grows = not hyp["finished"] and token != STOP
                score = total / _penalty(hyp["length"] + grows, alpha)
                candidates.append((score, total, hyp, token, state))
        # best score first; equal scores keep candidate order (hypothesis-major)
        order = sorted(range(len(candidates)), key=lambda i: -candidates[i][0])
        beam = []
        for i in order[:beam_size]:
            score, total, hyp, token, state = candidates[i]
            beam.append(
                dict(
                    tokens=hyp["tokens"] + [token],
                    logp=total,
                    length=hyp["length"] + (not hyp["finished"]),
                    finished=hyp["finished"] or token == STOP,
                    state=state,
                    score=score,
                )
            )
        if not run_on and all(hyp["finished"] for hyp in beam):
            break
    best = beam[0]["tokens"]
    return (best[: best.index(STOP)] if STOP in best else best), beam[0]["score"], steps


@pytest.mark.parametrize("beam_size", [1, 3, 5])
@pytest.mark.parametrize("alpha", [0.0, 0.6, 1.0])
def test_matches_the_beam_search_decoder_port(beam_size, alpha):
    batch, max_steps = 8, 9
    finished_early = 0
    for seed in range(4):
        # [STOP] likely enough that hypotheses finish at many different steps
        decoder = FakeDecoder(seed, stop_bias=1.0 + seed / 2)
        init = np.random.default_rng(seed + 10).normal(size=(batch, S)).astype(np.float32)
        out = gnmt_beam_search.gnmt_beam_search(
            decoder.step_tf,
            tf.constant(init),
            batch,
            decoding.SearchSettings(max_steps, START, STOP, beam_size=beam_size, gnmt_alpha=alpha),
        )
        # the batch searches until its last input is done: the others run on
        steps = max(
            contrib_beam_search(decoder, init[b], beam_size, max_steps, alpha)[2]
            for b in range(batch)
        )
        for b in range(batch):
            tokens, score, _ = contrib_beam_search(
                decoder, init[b], beam_size, steps, alpha, run_on=True
            )
            length = int(out["lengths"][b])
            assert out["ids"][b, :length].numpy().tolist() == tokens, (seed, b)
            assert np.all(out["ids"][b, length:].numpy() == STOP)
            np.testing.assert_allclose(float(out["scores"][b]), score, rtol=1e-5)
            finished_early += length < max_steps - 1
    assert finished_early >= 4  # answers of several lengths


def test_differs_from_see_et_al_where_a_longer_hypothesis_wins_late():
    """The two searches are different algorithms: over these inputs, with a length
    penalty, some answers differ (See's search keeps the first ``beam_size`` results,
    BeamSearchDecoder keeps finished hypotheses competing in the beam)."""
    batch, beam_size, max_steps = 16, 3, 9
    differ = 0
    for seed in range(4):
        decoder = FakeDecoder(seed, stop_bias=1.0)
        init = tf.constant(np.random.default_rng(seed).normal(size=(batch, S)), tf.float32)
        ours = gnmt_beam_search.gnmt_beam_search(
            decoder.step_tf,
            init,
            batch,
            decoding.SearchSettings(max_steps, START, STOP, beam_size=beam_size, gnmt_alpha=1.0),
        )
        see = beam_search.beam_search(
            decoder.step_tf,
            init,
            batch,
            decoding.SearchSettings(
                max_steps,
                START,
                STOP,
                beam_size=beam_size,
                length_normalization="gnmt",
                gnmt_alpha=1.0,
            ),
        )
        differ += int(np.sum(np.any(ours["ids"].numpy() != see["ids"].numpy(), axis=1)))
    assert differ > 0


def test_the_step_limit_cuts_the_search_and_keeps_the_width():
    decoder = FakeDecoder(0)
    init = tf.constant(np.random.default_rng(0).normal(size=(4, S)), tf.float32)
    full = gnmt_beam_search.gnmt_beam_search(
        decoder.step_tf,
        init,
        4,
        decoding.SearchSettings(3, START, STOP, beam_size=3, gnmt_alpha=0.0),
    )
    limited = gnmt_beam_search.gnmt_beam_search(
        decoder.step_tf,
        init,
        4,
        decoding.SearchSettings(
            12, START, STOP, beam_size=3, step_limit=tf.constant(3), gnmt_alpha=0.0
        ),
    )
    assert limited["ids"].shape == (4, 12)
    np.testing.assert_array_equal(limited["ids"][:, :3], full["ids"])
    np.testing.assert_array_equal(limited["lengths"], full["lengths"])


def test_settings_it_cannot_honour_are_refused():
    decoder = FakeDecoder(seed=2)
    init = tf.constant(np.zeros((1, S), np.float32))
    for asked in (dict(record_extras=True), dict(shrink=True)):
        settings = decoding.SearchSettings(3, START, STOP, beam_size=2, **asked)
        with pytest.raises(ValueError, match="records no extras"):
            gnmt_beam_search.gnmt_beam_search(decoder.step_tf, init, 1, settings)
