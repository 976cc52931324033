"""Pointer-generator decoding: the decode step, batched beam search, output files."""

import json
import os
import shutil
import tempfile

import browser
import numpy as np
import pytest
import tensorflow as tf
from absl import flags
from hypothesis import assume, given, settings
from hypothesis import strategies as st

from acvi_tf import config as config_lib
from acvi_tf import files
from acvi_tf.compat import keras
from acvi_tf.contexts import acvi as acvi_lib
from acvi_tf.formats import bin_files, see_vocab
from acvi_tf.inference import report as report_lib
from acvi_tf.metrics import meteor as meteor_lib
from acvi_tf.metrics import rouge as rouge_lib
from pointer_generator import batcher as batcher_lib
from pointer_generator import decode as decode_lib
from pointer_generator import losses as losses_lib
from pointer_generator import model as model_lib
from pointer_generator import run_summarization
from pointer_generator import vocab as vocab_lib

WORDS = ["the", "cat", "sat", "on", "mat", "a", "dog", "ran", "to", "park", "."]


@pytest.fixture(scope="module")
def corpus(tmp_path_factory):
    root = tmp_path_factory.mktemp("decode")
    (root / "vocab").write_text("".join("%s %d\n" % (w, 50 - i) for i, w in enumerate(WORDS)))
    rng = np.random.default_rng(0)
    pairs = []
    for i in range(7):
        article = " ".join(rng.choice(WORDS + ["zebra%d" % i, "quokka"], size=6 + i))
        pairs.append((article, "<s> the cat . </s> <s> zebra%d ran . </s>" % i))
    bin_files.write_chunked(str(root), "test", pairs, chunk_size=4)
    return root


@pytest.fixture(scope="module")
def vocab(corpus):
    return vocab_lib.Vocab(str(corpus / "vocab"), 0)


@pytest.fixture(scope="module")
def model(vocab):
    keras.utils.set_random_seed(3)
    m = model_lib.PointerGenerator(vocab.size(), hidden_dim=6, emb_dim=5, trunc_norm_init_std=0.5)
    batch = _batch(vocab, "test_*", 2)
    m({k: batch[k] for k in ("enc_batch", "enc_padding_mask", "dec_batch")}, coverage_on=True)
    return m


def _batch(vocab, pattern, size, corpus_dir=None):
    return next(
        batcher_lib.Batcher(
            os.path.join(corpus_dir or _batch.root, pattern), vocab, size, 20, 8, single_pass=True
        ).batches()
    )


@pytest.fixture(autouse=True, scope="module")
def _root(corpus):
    _batch.root = str(corpus)


@pytest.mark.parametrize("coverage_on", [False, True])
def test_decode_step_without_initial_state_attention_is_the_training_step(
    model, vocab, coverage_on
):
    batch = _batch(vocab, "test_*", 3)
    out = model(batch, coverage_on=coverage_on)
    gold = losses_lib.gold_log_probs(
        out["vocab_logits"],
        out["attn"],
        out["p_gen_logit"],
        batch["enc_batch_extend_vocab"],
        batch["target_batch"],
    )
    constants, state = model.start(batch, initial_state_attention=False, coverage_on=coverage_on)
    for t in range(batch["dec_batch"].shape[1]):
        probs, state, extras = model.decode_step(
            tf.constant(batch["dec_batch"][:, t]), state, constants
        )
        np.testing.assert_allclose(extras["attn"], out["attn"][:, t], rtol=1e-4, atol=1e-6)
        picked = tf.math.log(tf.gather(probs, batch["target_batch"][:, t], batch_dims=1))
        np.testing.assert_allclose(picked, gold[:, t], rtol=1e-4, atol=1e-5)


def test_initial_state_attention_reattends_from_the_incoming_state(model, vocab):
    batch = _batch(vocab, "test_*", 2)
    constants, state = model.start(batch, coverage_on=True)
    tokens = tf.fill([2], vocab.word2id(see_vocab.START_DECODING))
    _, new_state, extras = model.decode_step(tokens, state, constants)
    query = tf.concat([state["c"], state["h"]], axis=-1)
    attn0 = model.scorer(
        query, constants["keys"], constants["mask"], coverage=tf.zeros_like(state["coverage"])
    )
    # coverage gets the re-attention, not the new step's attention
    np.testing.assert_allclose(new_state["coverage"], attn0, rtol=1e-5, atol=1e-7)
    assert not np.allclose(extras["attn"], attn0)


def _original_decode_step(model, tokens, state, constants, coverage_on):
    """See's decode graph, one step per call: re-attend from the incoming state with the
    incoming coverage (adding to it), step, attend on the new state (not adding)."""
    h, c, coverage = state["h"], state["c"], state["coverage"]
    query = tf.concat([c, h], axis=-1)
    attn0 = model.scorer(
        query, constants["keys"], constants["mask"], coverage=coverage if coverage_on else None
    )
    if coverage_on:
        coverage = coverage + attn0
    prev_context = model.context_layer.draw(attn0, constants["prepared"])
    context, (h, c), attn, _, _ = model.decoder_step(
        model.embedding(tokens),
        prev_context,
        [h, c],
        coverage if coverage_on else None,
        constants["mask"],
        constants["keys"],
        constants["prepared"],
        constants["z"],
    )
    return dict(h=h, c=c, coverage=coverage), context, attn


@pytest.mark.parametrize("coverage_on", [False, True])
@pytest.mark.parametrize("kind", ["sa", "acvi"])
def test_carried_reattention_equals_the_original_decode_graph(vocab, coverage_on, kind):
    keras.utils.set_random_seed(5)
    layer = acvi_lib.ACVIContext(seed=4) if kind == "acvi" else None
    model = model_lib.PointerGenerator(
        vocab.size(), hidden_dim=6, emb_dim=5, context_layer=layer, trunc_norm_init_std=0.5
    )
    batch = _batch(vocab, "test_*", 4)
    constants, state = model.start(batch, coverage_on=coverage_on)
    original = dict(h=state["h"], c=state["c"], coverage=tf.zeros(tf.shape(constants["mask"])))
    carried = ("h", "c", "coverage") if coverage_on else ("h", "c")
    rng = np.random.default_rng(1)
    for _ in range(6):
        tokens = tf.constant(rng.integers(0, vocab.size(), size=4), tf.int32)
        _, state, extras = model.decode_step(tokens, state, constants)
        original, context, attn = _original_decode_step(
            model, tokens, original, constants, coverage_on
        )
        np.testing.assert_allclose(extras["attn"], attn, rtol=1e-5, atol=1e-7)
        np.testing.assert_allclose(state["context"], context, rtol=1e-5, atol=1e-6)
        for key in carried:
            np.testing.assert_allclose(state[key], original[key], rtol=1e-5, atol=1e-6)
        # reorder rows between steps, as the beam does when it keeps other parents
        rows = rng.permutation(4)
        state, original, constants = (
            tf.nest.map_structure(lambda x: None if x is None else tf.gather(x, rows), s)
            for s in (state, original, constants)
        )
    assert sorted(state) == sorted(carried + ("context", "attn"))
    assert not coverage_on or np.any(state["coverage"])


def test_batched_decoding_equals_one_article_at_a_time(model, vocab):
    summarizer = decode_lib.Summarizer(model, vocab, beam_size=3, max_dec_steps=6, min_dec_steps=2)
    batch = _batch(vocab, "test_*", 4)
    together = summarizer.decode(batch)
    for i in range(4):
        alone = summarizer.decode({k: v[i : i + 1] if np.ndim(v) else v for k, v in batch.items()})
        assert alone[0]["ids"] == together[i]["ids"]
        np.testing.assert_allclose(alone[0]["attn"], together[i]["attn"], rtol=1e-5, atol=1e-7)
    oovs = batch["art_oovs"]
    for i, result in enumerate(together):
        for word_id, word in zip(result["ids"], result["words"]):
            if word_id >= vocab.size():
                assert word == oovs[i][word_id - vocab.size()]


def test_articles_that_finish_early_leave_the_batch_with_the_same_summaries(
    model, vocab, monkeypatch
):
    # A [STOP] bias makes the random model's articles finish at different steps: the
    # batched search drops each one's rows then (one at a time has nothing to drop).
    bias = model.vocab_projection.bias
    saved = bias.numpy()
    bias.assign(saved + 1.6 * (np.arange(len(saved)) == vocab.word2id("[STOP]")))
    try:
        summarizer = decode_lib.Summarizer(
            model, vocab, beam_size=3, max_dec_steps=10, min_dec_steps=1
        )
        batch = _batch(vocab, "test_*", 7)
        together = summarizer.decode(batch)
        for i in range(7):
            alone = summarizer.decode(
                {k: v[i : i + 1] if np.ndim(v) else v for k, v in batch.items()}
            )
            assert alone[0]["ids"] == together[i]["ids"], i
            np.testing.assert_allclose(alone[0]["attn"], together[i]["attn"], rtol=1e-5, atol=1e-7)
        assert {len(r["ids"]) for r in together} == {1, 10}
        rows = []
        step = model.decode_step

        def counting_step(tokens, *args, **kwargs):
            rows.append(int(tf.shape(tokens)[0]))
            return step(tokens, *args, **kwargs)

        monkeypatch.setattr(model, "decode_step", counting_step)
        summarizer.search.python_function(  # eagerly, to see each step's rows
            {name: batch[name] for name in decode_lib.DECODE_FIELDS}
        )
        # the probe step for the extras, step 0 on one row per article, then fewer rows
        assert rows[:3] == [21, 7, 21] and rows[-1] < 21, rows
    finally:
        bias.assign(saved)


def test_xla_beam_search_gives_the_same_summaries(model, vocab):
    batch = _batch(vocab, "test_*", 4)
    options = dict(beam_size=3, max_dec_steps=6, min_dec_steps=2)
    plain = decode_lib.Summarizer(model, vocab, **options).decode(batch)
    compiled = decode_lib.Summarizer(model, vocab, jit_compile=True, **options).decode(batch)
    for one, other in zip(plain, compiled):
        assert one["ids"] == other["ids"]
        np.testing.assert_allclose(one["attn"], other["attn"], rtol=1e-5, atol=1e-6)
        np.testing.assert_allclose(one["p_gens"], other["p_gens"], rtol=1e-5, atol=1e-6)


def test_single_pass_writes_the_original_folder_and_scores_it(
    model, vocab, corpus, tmp_path, monkeypatch
):
    summarizer = decode_lib.Summarizer(
        model, vocab, beam_size=2, max_dec_steps=6, min_dec_steps=1, record_attention=False
    )
    batcher = batcher_lib.Batcher(str(corpus / "test_*"), vocab, 3, 20, 8, single_pass=True)
    decode_dir = tmp_path / decode_lib.decode_dir_name(
        decode_lib.data_split(str(corpus / "test_*")), 20, 2, 1, 6, "/x/model.ckpt-42"
    )
    assert decode_dir.name == "decode_test_20maxenc_2beam_1mindec_6maxdec_ckpt-42"
    settings = {"flags": {"beam_size": 2}}
    # each METEOR mode scored as asked (conftest's exact mode stands in for the full one,
    # which test_metrics.py checks against pycocoevalcap): the modes' scores, by mode
    asked, score = {}, meteor_lib.meteor

    def recorded(references, hypotheses, mode="full"):
        result = score(references, hypotheses, mode)
        asked[mode] = result[0]
        return result

    monkeypatch.setattr(meteor_lib, "meteor", recorded)
    scores = decode_lib.decode_single_pass(summarizer, batcher, str(decode_dir), settings=settings)
    assert scores["rouge_tool"] == "ROUGE-1.5.5"
    assert sorted(asked) == ["exact", "full"] and 0.0 < asked["exact"] <= 1.0
    assert (scores["meteor_exact"], scores["meteor_full"]) == (asked["exact"], asked["full"])
    assert 0.0 <= scores["novel_word_rate"] <= 1.0
    assert json.loads((decode_dir / "metrics.json").read_text())["num_summaries"] == 7
    assert sorted(os.listdir(decode_dir / "reference")) == [
        "%06d_reference.txt" % i for i in range(7)
    ]
    assert (
        decode_dir / "reference" / "000003_reference.txt"
    ).read_text() == "the cat .\nzebra3 ran .\n"
    assert len(os.listdir(decode_dir / "decoded")) == 7
    report = (decode_dir / "ROUGE_results.txt").read_text()
    assert "rouge_1_f_score: %.4f with confidence interval" % scores["rouge_1_f_score"] in report
    with pytest.raises(decode_lib.DecodeFolderError, match="finished decode.*decode_overwrite"):
        decode_lib.decode_single_pass(summarizer, batcher, str(decode_dir), settings=settings)
    # a decode of the folder in progress (its lock held): a second one stops before it
    # reads the folder; another shard's lock does not stop it
    held, shard = (
        decode_lib.lock_shard(str(decode_dir), (0, 1)),
        decode_lib.lock_shard(str(decode_dir), (1, 2)),
    )
    with pytest.raises(files.FolderInUseError, match="being written by another decode"):
        decode_lib.decode_single_pass(summarizer, batcher, str(decode_dir), settings=settings)
    held.close()
    with pytest.raises(decode_lib.DecodeFolderError, match="finished decode"):
        decode_lib.decode_single_pass(summarizer, batcher, str(decode_dir), settings=settings)
    shard.close()
    # killed after 4 of 7 articles (batches of 3): the rerun decodes batches 2 and 3 only
    written = {p: p.read_text() for p in decode_dir.glob("*/*.txt")}
    for name in (
        "metrics.json",
        "ROUGE_results.txt",
        "decoded/000004_decoded.txt",
        "decoded/000005_decoded.txt",
        "reference/000005_reference.txt",
        "reference/000006_reference.txt",
        "decoded/000006_decoded.txt",
    ):
        (decode_dir / name).unlink()
    # another file of the same split, or other decode flags: refused, nothing mixed
    other = tmp_path / "other"
    other.mkdir()
    shutil.copy(next(corpus.glob("test_*")), other / "test_000.bin")
    elsewhere = batcher_lib.Batcher(str(other / "test_*"), vocab, 3, 20, 8, single_pass=True)
    with pytest.raises(decode_lib.DecodeFolderError, match="in data file .*other/test_000.bin"):
        decode_lib.decode_single_pass(summarizer, elsewhere, str(decode_dir), settings=settings)
    with pytest.raises(decode_lib.DecodeFolderError, match=r"in --beam_size \(2 there, 5 here\)"):
        decode_lib.decode_single_pass(
            summarizer, batcher, str(decode_dir), settings={"flags": {"beam_size": 5}}
        )
    # the data edited in place, its size and time kept: refused
    data = next(corpus.glob("test_*"))
    content, stat = data.read_bytes(), data.stat()
    try:
        data.write_bytes(content.replace(b"zebra", b"zebrA"))
        os.utime(data, ns=(stat.st_atime_ns, stat.st_mtime_ns))
        with pytest.raises(decode_lib.DecodeFolderError, match="in data file %s" % data):
            decode_lib.decode_single_pass(summarizer, batcher, str(decode_dir), settings=settings)
    finally:
        data.write_bytes(content)
    calls = []
    real = summarizer.decode
    summarizer.decode = lambda batch, record=False: calls.append(1) or real(batch, record)
    resumed = decode_lib.decode_single_pass(
        summarizer, batcher, str(decode_dir), with_meteor=False, settings=settings
    )
    assert len(calls) == 2
    assert {p: p.read_text() for p in decode_dir.glob("*/*.txt")} == written
    assert resumed["rouge_1_f_score"] == scores["rouge_1_f_score"]


class _FixedSummarizer:
    """Summarises every article as "the cat .", for the decode loop's log lines."""

    def __init__(self, vocab):
        self.vocab = vocab

    def decode(self, batch, record=False):
        return [{"words": ["the", "cat", "."]}] * len(batch["enc_lens"])


def test_shards_report_their_own_articles_and_join_rather_than_resume(
    vocab, corpus, tmp_path, absl_caplog
):
    """7 articles in batches of 3: shard 1 of 2 decodes batch 1 (3 articles), shard 0
    batches 0 and 2 (4); a shard that finds the folder made joins it, and the last scores."""

    def decode(shard):
        batcher = batcher_lib.Batcher(str(corpus / "test_*"), vocab, 3, 20, 8, single_pass=True)
        absl_caplog.clear()
        decode_lib.decode_single_pass(
            _FixedSummarizer(vocab),
            batcher,
            str(tmp_path / "d"),
            total=7,
            with_meteor=False,
            shard=shard,
        )
        return [r.getMessage() for r in absl_caplog.records]

    first = decode((1, 2))
    assert [m.split(",")[0] for m in first if "decoded" in m] == [
        "shard 1 of 2: decoded 3/3 articles"
    ]
    assert not [m for m in first if "Resum" in m or "joins" in m]
    second = decode((0, 2))
    assert "Shard 0 of 2 joins the decode in %s (3 summaries written)" % (tmp_path / "d") in second
    assert [m.split(",")[0] for m in second if "decoded" in m] == [
        "shard 0 of 2: decoded 3/4 articles",
        "shard 0 of 2: decoded 4/4 articles",
    ]
    assert not [m for m in second if "Resum" in m]
    assert [m for m in second if m.startswith("Scored 7 summaries in ")]


def test_a_resumed_decode_says_so_and_counts_what_it_keeps(vocab, corpus, tmp_path, absl_caplog):
    folder = tmp_path / "d"
    batcher = batcher_lib.Batcher(str(corpus / "test_*"), vocab, 3, 20, 8, single_pass=True)
    summarizer = _FixedSummarizer(vocab)
    decode_lib.decode_single_pass(summarizer, batcher, str(folder), total=7, with_meteor=False)
    for name in ("metrics.json", "decoded/000006_decoded.txt"):
        (folder / name).unlink()
    absl_caplog.clear()
    decode_lib.decode_single_pass(summarizer, batcher, str(folder), total=7, with_meteor=False)
    messages = [r.getMessage() for r in absl_caplog.records]
    assert "Resuming the interrupted decode in %s (6 summaries written)" % folder in messages
    assert [m.split(",")[0] for m in messages if "decoded" in m] == ["decoded 7/7 articles"]


def test_data_with_no_usable_article_is_named_not_scored(tmp_path):
    with pytest.raises(decode_lib.DecodeFolderError, match="held no usable article"):
        decode_lib.score_folder(str(tmp_path), [], [], [], lambda word: True)


# Summaries in Chinese, Arabic, emoji, and mixed with ASCII, each paired with an ASCII
# text of the same shape: word for word, a distinct short word (never stemmed) for each
# distinct non-ASCII word, punctuation kept.
NON_ASCII = [
    (["猫 坐 在 垫子 上 。", "狗 跑 了 。"], ["猫 在 垫子 上 。", "狗 跑 。"]),
    (["القط جلس على الحصيرة"], ["القط على الحصيرة الحمراء"]),
    (["🐱 🪑 🧶 🐱"], ["🐱 🧶 🪑"]),
    (["the 猫 sat on the mat ."], ["the 猫 sat 🧶 ."]),
]
ASCII_SHAPES = [
    (["cat sit at mat up .", "dog ran ok ."], ["cat at mat up .", "dog ran ."]),
    (["cat sat on rug"], ["cat on rug red"]),
    (["cat box toy cat"], ["cat toy box"]),
    (["the cat sat on the mat ."], ["the cat sat toy ."]),
]


def _split(pairs):
    return [p[0] for p in pairs], [p[1] for p in pairs]


def test_a_decode_of_non_ascii_summaries_scores_them_as_their_ascii_shapes(tmp_path):
    """ROUGE-1.5.5 dropped these words (and died on a reference left empty); through the
    stand-ins the decode's scores are those of the ASCII texts of the same shape, with
    ROUGE-1.5.5's intervals, and within 1e-3 of rouge-score's on those texts."""
    references, hypotheses = _split(NON_ASCII)
    articles = [" ".join(h) for h in hypotheses]
    decode_lib.score_folder(
        str(tmp_path), articles, references, hypotheses, lambda w: True, with_meteor=False
    )
    metrics = json.loads((tmp_path / "metrics.json").read_text())
    assert metrics["rouge_tool"] == "ROUGE-1.5.5" and "rouge_fallback" not in metrics
    assert metrics["rouge_stand_ins"] == 16  # 8 Chinese, 5 Arabic, 3 emoji
    perl = rouge_lib.rouge_perl(*_split(ASCII_SHAPES))
    python = rouge_lib.rouge_python(*_split(ASCII_SHAPES))
    for key, value in python.items():
        assert metrics[key] == perl[key], key
        assert metrics[key + "_cb"] == perl[key + "_cb"], key
        assert metrics[key] == pytest.approx(value, abs=1e-3), key
    assert 0.5 < metrics["rouge_1_f_score"] < 1.0
    assert (
        "16 non-ASCII words through ASCII stand-ins" in (tmp_path / "ROUGE_results.txt").read_text()
    )


def test_split_sentences_after_every_period():
    assert decode_lib.split_sentences("a b . c . d".split()) == ["a b .", "c .", "d"]


def test_the_decode_folder_is_named_after_the_split_the_file_names():
    for path, split in (
        ("finished_files/chunked/test_*", "test"),
        ("interval/test_000.bin", "test"),  # See's code: "val" (in "interval")
        ("data/train_runs/val.bin", "val"),
    ):
        assert decode_lib.data_split(path) == split, path
    assert decode_lib.data_split("data/validation.bin", "val") == "val"  # --decode_split
    assert decode_lib.data_split("data/heldout.bin", "heldout") == "heldout"  # a user's own
    with pytest.raises(flags.IllegalFlagValueError, match="letters, digits, - and _ only"):
        config_lib.parse(run_summarization.define_flags, ["x", "--decode_split=a/b"])
    name = decode_lib.decode_dir_name("test", 400, 4, 35, 100, "/r/model.ckpt-7")
    assert name == "decode_test_400maxenc_4beam_35mindec_100maxdec_ckpt-7"
    for path, how in (("data/validation.bin", "no"), ("data/train_test.bin", "more than one")):
        with pytest.raises(decode_lib.DecodeFolderError) as e:
            decode_lib.data_split(path)
        assert str(e.value) == (
            "--data_path=%s: its file name names %s split (train, val or test), which names "
            "the decode folder; give --decode_split=test (or train, val)" % (path, how)
        )


def test_lead_baseline_is_scored_the_same_way(vocab, corpus, tmp_path):
    batcher = batcher_lib.Batcher(str(corpus / "test_*"), vocab, 3, 20, 8, single_pass=True)
    metrics = decode_lib.lead_baseline(
        batcher, str(tmp_path / "lead"), 1, lambda w: vocab.word2id(w) != 0, with_meteor=False
    )
    first = (tmp_path / "lead" / "decoded" / "000000_decoded.txt").read_text().split("\n")[0]
    assert first.endswith(".") or "." not in first
    assert metrics["novel_word_rate"] == 0.0  # lead sentences copy the article
    assert metrics["num_summaries"] == 7
    # its report says that it is a baseline, without the posterior's note
    _, data = browser.page_data(str(tmp_path / "lead" / "report.html"))
    assert len(data["rows"]) == 7 and data["details"] == {}
    assert decode_lib.LEAD_NOTE % 1 in data["notes"]
    assert report_lib.POSTERIOR_NOTE not in data["notes"] and data["detail_note"] == ""
    assert data["missing_note"] == report_lib.missing_note(0, True, decode_lib.REPORT_ELSEWHERE)


def test_examples_mode_writes_attention_visualisation(model, vocab, tmp_path):
    summarizer = decode_lib.Summarizer(model, vocab, beam_size=2, max_dec_steps=5, min_dec_steps=0)
    batch = _batch(vocab, "test_*", 2)
    results = decode_lib.decode_examples(summarizer, batch, str(tmp_path))
    data = json.loads((tmp_path / "attn_vis_data.json").read_text())
    assert data["decoded_lst"] == results[0]["words"]
    assert len(data["attn_dists"]) == len(results[0]["words"])
    assert len(data["article_lst"]) == int(batch["enc_lens"][0])


DECODE_MANIFEST = dict(
    checkpoint="model.ckpt-9",
    checkpoint_sha256="ab" * 32,
    vocab_sha256="cd" * 32,
    flags={"coverage": False, "beam_size": 4, "pointer_gen": True},
    data={"/data/test_000.bin": "ef" * 32, "/data/test_001.bin": "01" * 32},
)


@settings(max_examples=60, deadline=None)
@given(
    finished=st.integers(0, 4),
    damage=st.sampled_from(["manifest_cut", "manifest_text", "delete", "none"]),
    target=st.integers(0, 7),
    cut=st.floats(0.0, 1.0, exclude_max=True),
    text=st.text(max_size=20),
)
def test_a_damaged_interrupted_decode_folder_resumes_or_is_refused(
    finished, damage, target, cut, text
):
    """Fuzz: whatever a kill or a hand left in an interrupted decode folder, preparing
    the resume either keeps every complete pair for the resume to read back, or refuses
    with one DecodeFolderError naming the folder; never another error."""
    manifest = DECODE_MANIFEST
    with tempfile.TemporaryDirectory() as root:
        folder = os.path.join(root, "decode_test")
        decode_lib.prepare_folder(folder, False, manifest)
        for index in range(finished):
            decode_lib.write_pair(folder, index, ["a ."], ["b ."])
        record = os.path.join(folder, decode_lib.MANIFEST)
        if damage.startswith("manifest"):
            with open(record, "rb") as f:
                content = f.read()
            with open(record, "wb") as f:
                if damage == "manifest_cut":
                    f.write(content[: int(cut * len(content))])
                else:
                    f.write(text.encode("utf-8"))
        elif damage == "delete" and finished:
            index = target % finished
            os.remove(decode_lib.pair_path(folder, decode_lib.PAIR_KINDS[target % 2], index))
        try:
            decode_lib.prepare_folder(folder, False, manifest)
        except decode_lib.DecodeFolderError as e:
            assert folder in str(e)
            assert damage.startswith("manifest")
            return
        kept = sum(decode_lib.has_pair(folder, index) for index in range(finished))
        assert kept == finished - (damage == "delete" and finished > 0)


@settings(max_examples=40, deadline=None)
@given(
    field=st.sampled_from(
        [("checkpoint", None), ("checkpoint_sha256", None), ("vocab_sha256", None)]
        + [("flags", name) for name in ("coverage", "beam_size", "acvi_decode")]
        + [("data", "/data/test_%03d.bin" % index) for index in (0, 1, 2)]
    ),
    value=st.one_of(st.none(), st.booleans(), st.integers(), st.text(max_size=8)),
)
def test_a_resume_with_any_manifest_entry_changed_is_refused_naming_it(field, value):
    """Fuzz: an interrupted decode resumed with one entry of its manifest changed, added
    (a flag or data file it did not have) or removed (None) is refused, naming that entry
    with both values."""
    key, name = field
    changed = json.loads(json.dumps(DECODE_MANIFEST))
    entries, entry = (changed[key], name) if name else (changed, key)
    old = entries.get(entry)
    assume(value != old)
    if value is None:
        del entries[entry]
    else:
        entries[entry] = value
    label = {"flags": "--%s", "data": "data file %s"}[key] % name if name else key
    with tempfile.TemporaryDirectory() as root:
        folder = os.path.join(root, "decode_test")
        decode_lib.prepare_folder(folder, False, DECODE_MANIFEST)
        with pytest.raises(decode_lib.DecodeFolderError) as refused:
            decode_lib.prepare_folder(folder, False, changed)
    shown = ["none" if v is None else str(v) for v in (old, value)]
    assert "in %s (%s there, %s here)" % (label, *shown) in str(refused.value)


SAMPLE = os.path.join(
    os.path.dirname(os.path.dirname(os.path.abspath(__file__))),
    "data_prep",
    "samples",
    "debian_descriptions",
)


@pytest.mark.slow
def test_sharded_decodes_write_the_single_run_folder_byte_for_byte(tmp_path):
    """The shipped test split (400 descriptions) decoded in one run, in 2 shards and in
    3: the same decoded/ and reference/ files, byte for byte, and the same scores, the
    last shard to finish scoring the folder."""
    sample_vocab = vocab_lib.Vocab(os.path.join(SAMPLE, "vocab"), 2000)
    keras.utils.set_random_seed(4)
    sample_model = model_lib.PointerGenerator(sample_vocab.size(), hidden_dim=16, emb_dim=8)
    summarizer = decode_lib.Summarizer(
        sample_model, sample_vocab, beam_size=2, max_dec_steps=8, min_dec_steps=2
    )

    def decode(folder, shard):
        batcher = batcher_lib.Batcher(
            os.path.join(SAMPLE, "chunked", "test_*"), sample_vocab, 48, 60, 8, single_pass=True
        )
        return decode_lib.decode_single_pass(
            summarizer, batcher, str(folder), with_meteor=False, shard=shard
        )

    single = decode(tmp_path / "single", (0, 1))
    assert single["num_summaries"] == 400

    def contents(folder):
        return {
            os.path.join(kind, name): (folder / kind / name).read_bytes()
            for kind in decode_lib.PAIR_KINDS
            for name in sorted(os.listdir(folder / kind))
        }

    expected = contents(tmp_path / "single")
    for count in (2, 3):
        folder = tmp_path / ("shards%d" % count)
        results = [decode(folder, (index, count)) for index in (1, 0, 2)[:count]]
        assert results[:-1] == [None] * (count - 1)  # only the last shard scores
        assert contents(folder) == expected
        assert results[-1] == single
        # a scored folder is finished: a shard run again is refused, as one run would be
        with pytest.raises(decode_lib.DecodeFolderError, match="finished decode"):
            decode(folder, (0, count))
