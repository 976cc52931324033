"""Beam search against a line-by-line Python port of See et al.'s beam_search.py."""

import numpy as np
import pytest
import tensorflow as tf
from inputs import START, STOP, FakeDecoder, S, W

from acvi_tf.inference import beam_search, decoding, greedy_search, sampling
from acvi_tf.inference import search as search_lib


def see_beam_search(decoder, init_state, beam_size, max_steps, min_steps):
    """See et al.'s run_beam_search, for one input, in plain Python."""
    hyps = [([START], [0.0], init_state)]
    results = []
    steps = 0
    avg = lambda h: sum(h[1]) / len(h[0])  # noqa: E731
    while steps < max_steps and len(results) < beam_size:
        all_hyps = []
        for tokens, log_probs, state in hyps:
            lp, new_state = decoder.step_np(tokens[-1], state)
            for j in np.argsort(-lp, kind="stable")[: 2 * beam_size]:
                all_hyps.append((tokens + [int(j)], log_probs + [lp[j]], new_state))
        hyps = []
        for h in sorted(all_hyps, key=avg, reverse=True):
            if h[0][-1] == STOP:
                if steps >= min_steps:
                    results.append(h)
            else:
                hyps.append(h)
            if len(hyps) == beam_size or len(results) == beam_size:
                break
        steps += 1
    if not results:
        results = hyps
    best = sorted(results, key=avg, reverse=True)[0][0][1:]
    return best[: best.index(STOP)] if STOP in best else best


def _states(n, seed):
    return np.random.default_rng(seed).normal(size=(n, S)).astype(np.float32)


@pytest.mark.parametrize(
    "beam_size, max_steps, min_steps", [(1, 6, 0), (2, 8, 2), (3, 10, 0), (4, 9, 4), (5, 12, 3)]
)
def test_batched_beam_search_equals_the_original_algorithm(beam_size, max_steps, min_steps):
    decoder = FakeDecoder(seed=beam_size)
    states = _states(6, seed=beam_size)
    out = beam_search.beam_search(
        decoder.step_tf,
        tf.constant(states),
        6,
        decoding.SearchSettings(max_steps, START, STOP, beam_size=beam_size, min_steps=min_steps),
    )
    for i in range(6):
        expected = see_beam_search(decoder, states[i], beam_size, max_steps, min_steps)
        got = out["ids"][i, : out["lengths"][i]].numpy().tolist()
        assert got == expected, (i, got, expected)
        assert np.all(out["ids"][i, out["lengths"][i] :].numpy() == STOP)


def test_one_at_a_time_gives_identical_outputs():
    decoder = FakeDecoder(seed=11)
    states = _states(5, seed=11)
    batched = beam_search.beam_search(
        decoder.step_tf,
        tf.constant(states),
        5,
        decoding.SearchSettings(10, START, STOP, beam_size=4, min_steps=2, record_extras=True),
    )
    for i in range(5):
        single = beam_search.beam_search(
            decoder.step_tf,
            tf.constant(states[i : i + 1]),
            1,
            decoding.SearchSettings(10, START, STOP, beam_size=4, min_steps=2, record_extras=True),
        )
        np.testing.assert_array_equal(single["ids"][0], batched["ids"][i])
        np.testing.assert_allclose(single["scores"][0], batched["scores"][i], rtol=1e-6)
        np.testing.assert_allclose(single["state_norm"][0], batched["state_norm"][i], rtol=1e-6)


def test_runs_inside_tf_function_and_records_extras():
    decoder = FakeDecoder(seed=3)
    states = _states(3, seed=3)
    compiled = tf.function(
        lambda s: beam_search.beam_search(
            decoder.step_tf,
            s,
            3,
            decoding.SearchSettings(7, START, STOP, beam_size=3, min_steps=1, record_extras=True),
        )
    )
    eager = beam_search.beam_search(
        decoder.step_tf,
        tf.constant(states),
        3,
        decoding.SearchSettings(7, START, STOP, beam_size=3, min_steps=1),
    )
    out = compiled(tf.constant(states))
    np.testing.assert_array_equal(out["ids"], eager["ids"])
    assert out["state_norm"].shape == (3, 7)


def test_scores_follow_the_length_normalisation():
    decoder = FakeDecoder(seed=5)
    states = _states(4, seed=5)
    for mode in beam_search.LENGTH_NORMALIZATIONS:
        out = beam_search.beam_search(
            decoder.step_tf,
            tf.constant(states),
            4,
            decoding.SearchSettings(
                8, START, STOP, beam_size=3, length_normalization=mode, gnmt_alpha=0.7
            ),
        )
        for i in range(4):
            ids = out["ids"][i, : out["lengths"][i]].numpy().tolist()
            # rescore the hypothesis: its tokens and the final stop, if it stopped
            state, total, previous = states[i], 0.0, START
            emitted = ids + ([STOP] if out["lengths"][i] < 8 else [])
            for token in emitted:
                lp, state = decoder.step_np(previous, state)
                total += lp[token]
                previous = token
            n = len(emitted)
            expected = {
                "average": total / (n + 1),
                "none": total,
                "gnmt": total / ((5.0 + n) / 6.0) ** 0.7,
            }[mode]
            np.testing.assert_allclose(out["scores"][i], expected, rtol=1e-4)


def test_greedy_search_takes_the_argmax_path():
    decoder = FakeDecoder(seed=8)
    states = _states(4, seed=8)
    out = greedy_search.greedy_search(
        decoder.step_tf, tf.constant(states), 4, decoding.SearchSettings(9, START, STOP)
    )
    for i in range(4):
        state, token, expected = states[i], START, []
        for _ in range(9):
            lp, state = decoder.step_np(token, state)
            token = int(np.argmax(lp))
            if token == STOP:
                break
            expected.append(token)
        assert out["ids"][i, : out["lengths"][i]].numpy().tolist() == expected


def test_probability_scores_give_the_same_search():
    decoder = FakeDecoder(seed=6)
    states = tf.constant(_states(4, seed=6))

    def probs_step(tokens, state, t):
        log_probs, state, extras = decoder.step_tf(tokens, state, t)
        return tf.exp(log_probs), state, extras

    from_logs = beam_search.beam_search(
        decoder.step_tf,
        states,
        4,
        decoding.SearchSettings(8, START, STOP, beam_size=3, min_steps=1),
    )
    from_probs = beam_search.beam_search(
        probs_step,
        states,
        4,
        decoding.SearchSettings(8, START, STOP, beam_size=3, min_steps=1, probabilities=True),
    )
    np.testing.assert_array_equal(from_logs["ids"], from_probs["ids"])
    np.testing.assert_allclose(from_logs["scores"], from_probs["scores"], rtol=1e-5)
    assert "state_norm" not in from_logs  # extras are recorded only on request
    greedy = greedy_search.greedy_search(
        probs_step, states, 4, decoding.SearchSettings(8, START, STOP, probabilities=True)
    )
    settings = decoding.SearchSettings(8, START, STOP)
    np.testing.assert_array_equal(
        greedy["ids"], greedy_search.greedy_search(decoder.step_tf, states, 4, settings)["ids"]
    )


def test_bad_normalisation_is_rejected():
    decoder = FakeDecoder(seed=1)
    with pytest.raises(ValueError, match="length_normalization"):
        beam_search.beam_search(
            decoder.step_tf,
            tf.constant(_states(1, 1)),
            1,
            decoding.SearchSettings(3, START, STOP, beam_size=2, length_normalization="max"),
        )


def test_step_limit_stops_early_keeps_the_width_and_compiles_with_xla():
    # The limit depends on the data (NMT: twice the longest source) while max_steps sizes
    # the buffers, so XLA can compile the search; the results are max_steps=limit's.
    decoder = FakeDecoder(seed=12)
    states = tf.constant(_states(6, seed=12))
    # min_steps 5: stops before step 5 are dropped, so some inputs end at the limit.
    searches = {
        "beam": lambda steps, **kw: beam_search.beam_search(
            decoder.step_tf,
            states,
            6,
            decoding.SearchSettings(steps, START, STOP, beam_size=3, min_steps=5, **kw),
        ),
        "greedy": lambda steps, **kw: greedy_search.greedy_search(
            decoder.step_tf, states, 6, decoding.SearchSettings(steps, START, STOP, **kw)
        ),
    }
    for name, search in searches.items():
        short = search(6)
        limited = tf.function(
            lambda limit, search=search: search(11, step_limit=limit), jit_compile=True
        )(tf.constant(6))
        assert limited["ids"].shape == (6, 11), name
        np.testing.assert_array_equal(limited["ids"][:, :6], short["ids"], err_msg=name)
        assert np.all(limited["ids"][:, 6:].numpy() == STOP), name
        np.testing.assert_array_equal(limited["lengths"], short["lengths"], err_msg=name)
        np.testing.assert_allclose(limited["scores"], short["scores"], rtol=1e-5)
        assert 6 in short["lengths"].numpy(), name  # some input ran into the limit


def test_shrinking_the_live_batch_gives_the_unshrunk_search():
    # Each input's own [STOP] bias (a constant of the step) makes the inputs finish at
    # different steps, and two never finish (they run into max_steps). Given the
    # constants, the search runs step 0 on one row per input and, shrinking, drops
    # finished inputs' rows; the outputs equal those of a step that holds the constants
    # tiled to every row itself.
    decoder = FakeDecoder(seed=17)
    states = tf.constant(_states(6, seed=17))
    stop_bias = tf.constant([4.0, -9.0, 1.0, 2.5, 0.0, -9.0])
    rows_seen = []

    def step(tokens, state, t, constants):
        assert constants["unused"] is None
        rows_seen.append(tokens.shape[0])
        log_probs, state, extras = decoder.step_tf(tokens, state, t)
        stop = tf.one_hot(STOP, W) * constants["stop_bias"][:, tf.newaxis]
        return tf.nn.log_softmax(log_probs + stop), state, extras

    def search(states, constants=None, shrink=False):
        return beam_search.beam_search(
            step if constants else lambda *a: step(*a, dict(stop_bias=tiled, unused=None)),
            states,
            6,
            decoding.SearchSettings(
                9, START, STOP, beam_size=3, min_steps=1, record_extras=True, shrink=shrink
            ),
            constants=constants,
        )

    tiled = search_lib.tile_beam(stop_bias, 3)
    plain = search(states)
    constants = dict(stop_bias=stop_bias, unused=None)
    rows_seen.clear()
    shrunk = search(states, constants=constants, shrink=True)
    # the probe step, step 0 on one row per input, then all 18 rows and fewer as inputs
    # finish
    assert rows_seen[:3] == [18, 6, 18] and rows_seen[2:] == sorted(rows_seen[2:])[::-1]
    assert len(set(rows_seen)) > 2 and rows_seen[-1] < 18, rows_seen
    unshrunk = search(states, constants=constants)
    compiled = tf.function(lambda s: search(s, constants=constants, shrink=True), autograph=False)(
        states
    )
    lengths = plain["lengths"].numpy()
    assert len(set(lengths)) > 2 and 9 in lengths, lengths
    for out in (unshrunk, shrunk, compiled):
        assert set(out) == set(plain)
        np.testing.assert_array_equal(out["ids"], plain["ids"])
        np.testing.assert_array_equal(out["lengths"], plain["lengths"])
        # a step's float rounding may depend on its number of rows, as in batched
        # against one-at-a-time decoding
        for name in ("scores", "state_norm"):
            np.testing.assert_allclose(out[name], plain[name], rtol=1e-6, err_msg=name)


def _fixed_step(log_probs):
    """A step that gives every row the same log-probabilities [W], whatever it is fed."""
    table = tf.constant(log_probs, tf.float32)

    def step(tokens, state, t):
        del t
        return tf.tile(table[tf.newaxis], [tf.shape(tokens)[0], 1]), state, {}

    return step


@pytest.mark.parametrize("temperature, xla", [(0.5, False), (2.0, False), (2.0, True)])
def test_sampling_draws_from_the_tempered_distribution(temperature, xla):
    # XLA's random numbers are another generator's: other draws, the same distribution
    logits = np.random.default_rng(7).normal(size=W) * 1.5
    log_probs = logits - np.logaddexp.reduce(logits)
    rows = 40_000
    settings = decoding.SearchSettings(1, START, STOP, temperature=temperature, seed=3)
    strategy = sampling.SamplingStrategy(settings)
    search = tf.function(search_lib.search, jit_compile=True) if xla else search_lib.search
    out = search(strategy, _fixed_step(log_probs), tf.zeros([rows, 1]), rows)
    first = np.where(out["lengths"].numpy() > 0, out["ids"][:, 0].numpy(), STOP)
    tempered = np.exp(log_probs / temperature - np.logaddexp.reduce(log_probs / temperature))
    found = np.bincount(first, minlength=W) / rows
    spread = np.sqrt(tempered * (1 - tempered) / rows)
    assert np.all(np.abs(found - tempered) < 5 * spread + 1e-9), (found, tempered)
    # a path's score is the model's (untempered) log-probability of its tokens
    drawn = out["lengths"].numpy() > 0
    np.testing.assert_allclose(out["scores"].numpy()[drawn], log_probs[first[drawn]], rtol=1e-5)
    np.testing.assert_array_equal(out["scores"].numpy()[~drawn], 0.0)


def test_sampling_is_seeded_the_same_eagerly_and_in_a_graph():
    decoder = FakeDecoder(seed=21, stop_bias=-1.0)
    states = tf.constant(_states(8, seed=21))

    def draw(seed):
        strategy = sampling.SamplingStrategy(decoding.SearchSettings(7, START, STOP, seed=seed))
        return search_lib.search(strategy, decoder.step_tf, states, 8)

    eager = draw(5)
    traced = tf.function(draw)(5)
    np.testing.assert_array_equal(traced["ids"], eager["ids"])
    np.testing.assert_allclose(traced["scores"], eager["scores"], rtol=1e-5)
    assert not np.array_equal(draw(6)["ids"], eager["ids"])
    greedy = greedy_search.greedy_search(
        decoder.step_tf, states, 8, decoding.SearchSettings(7, START, STOP)
    )
    assert not np.array_equal(greedy["ids"], eager["ids"])  # it does not take the argmax


def test_greedy_search_records_the_extras_of_the_beam_of_one():
    # both keep one hypothesis, the most likely token at each step: the same path
    decoder = FakeDecoder(seed=9)
    states = tf.constant(_states(5, seed=9))
    settings = decoding.SearchSettings(8, START, STOP, record_extras=True)
    greedy = greedy_search.greedy_search(decoder.step_tf, states, 5, settings)
    beam = beam_search.beam_search(decoder.step_tf, states, 5, settings)
    np.testing.assert_array_equal(greedy["ids"], beam["ids"])
    for i, length in enumerate(greedy["lengths"].numpy()):
        np.testing.assert_allclose(
            greedy["state_norm"][i, :length], beam["state_norm"][i, :length], rtol=1e-6
        )


def test_strategies_refuse_settings_they_cannot_keep():
    settings = decoding.SearchSettings(4, START, STOP, beam_size=3)
    for name in ("greedy", "sample"):
        with pytest.raises(ValueError, match="beam_size=1"):
            decoding.STRATEGIES[name](settings)
    with pytest.raises(ValueError, match="temperature > 0"):
        decoding.STRATEGIES["sample"](decoding.SearchSettings(4, START, STOP, temperature=0.0))
    with pytest.raises(ValueError, match="record_extras=False"):
        decoding.STRATEGIES["gnmt_beam"](
            decoding.SearchSettings(4, START, STOP, beam_size=2, record_extras=True)
        )
