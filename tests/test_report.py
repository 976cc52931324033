"""``report.html``: a real tiny decode of the shipped Debian descriptions sample with ACVI,
opened in headless Chromium (Debian's ``chromium``), checked through the page's DOM, its
network log and a screenshot."""

import itertools
import os
import re
import shutil

import browser
import numpy as np
import pytest
import sacrebleu
import tensorflow as tf

from acvi_tf.compat import keras
from acvi_tf.contexts import acvi as acvi_lib
from acvi_tf.contexts import registry, ved
from acvi_tf.formats import bin_files
from acvi_tf.inference import decoding
from acvi_tf.inference import report as report_lib
from acvi_tf.metrics import bleu as bleu_lib
from acvi_tf.metrics import rouge as rouge_lib
from pointer_generator import batcher as batcher_lib
from pointer_generator import decode as decode_lib
from pointer_generator import model as model_lib
from pointer_generator import vocab as vocab_lib

from conftest import untraced

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
SAMPLE = os.path.join(ROOT, "data_prep", "samples", "debian_descriptions")
ARTICLES, DETAILED, BATCH, MAX_ENC, MAX_DEC = 6, 4, 3, 30, 10


@pytest.fixture(scope="module")
def decoded(tmp_path_factory):
    """A single-pass decode of the sample's first test articles by a tiny ACVI model."""
    root = tmp_path_factory.mktemp("report")
    pairs = itertools.islice(
        bin_files.read_bin_file(os.path.join(SAMPLE, "chunked", "test_000.bin")), ARTICLES
    )
    bin_files.write_chunked(str(root / "data"), "test", pairs)
    vocab = vocab_lib.Vocab(os.path.join(SAMPLE, "vocab"), 300)
    keras.utils.set_random_seed(0)
    model = model_lib.PointerGenerator(
        vocab.size(),
        hidden_dim=8,
        emb_dim=6,
        context_layer=acvi_lib.ACVIContext(seed=1),
        rand_unif_init_mag=0.5,
        trunc_norm_init_std=0.5,
    )
    summarizer = decode_lib.Summarizer(
        model, vocab, beam_size=2, max_dec_steps=MAX_DEC, min_dec_steps=3, record_attention=False
    )
    batcher = batcher_lib.Batcher(
        str(root / "data" / "test_*"), vocab, BATCH, MAX_ENC, MAX_DEC, single_pass=True
    )
    with untraced():  # what the page shows of a decode, not its graph (test_pg_decode.py)
        summarizer.decode(next(batcher.batches()), record=True)  # builds the model
        for weight in model.scorer.trainable_variables:  # peaked attention: clear largest
            weight.assign(weight * 10.0)
        folder = str(root / "decode_test")
        metrics = decode_lib.decode_single_pass(
            summarizer, batcher, folder, with_meteor=False, report_examples=DETAILED
        )
        batch = next(batcher.batches())
        results = summarizer.decode(batch, record=True)
    return dict(
        folder=folder,
        metrics=metrics,
        model=model,
        batch=batch,
        results=results,
        batcher=batcher,
        summarizer=summarizer,
    )


def clearest_step(attn):
    """The step whose TOP_K-th and next weights are furthest apart, and that gap."""
    k = report_lib.TOP_K
    gaps = [np.sort(row)[::-1][k - 1] - np.sort(row)[::-1][k] for row in attn]
    return int(np.argmax(gaps)), float(np.max(gaps))


def test_the_report_opens_in_chromium_and_shows_the_decodes_attention(decoded, tmp_path):
    path = os.path.join(decoded["folder"], "report.html")
    _, data = browser.page_data(path)
    attn = decoded["results"][0]["attn"]
    step, gap = clearest_step(attn)
    assert gap > 2e-3  # the page's 3 decimals keep the order of the largest weights
    word = max(data["rows"][0]["text"].split(), key=len)  # the text filter finds substrings
    threshold = float(np.mean([r["s"]["ROUGE-1 F1"] for r in data["rows"]]))
    result, requests = browser.probe(path, tmp_path, 0, step, word, threshold)

    expected = np.argsort(-attn[step], kind="stable")[: report_lib.TOP_K]
    assert sorted(result["top"]) == sorted(expected.tolist())
    source = decode_lib.as_text(decoded["batch"]["original_articles"][0]).split()
    assert result["topWords"] == [source[i] for i in sorted(expected)]
    assert result["selected"] == [step]
    assert result["sigmaBars"] == int(decoded["batch"]["enc_lens"][0])
    assert result["klBars"] == len(decoded["results"][0]["words"])
    labels = data["details"]["0"]["labels"]
    assert result["titles"] == [labels["sigma"], None, labels["kl"]]
    assert labels["kl"].startswith("KL per step: bound") and result["scaleBars"] == 0
    scores = sorted(r["s"]["ROUGE-L F1"] for r in data["rows"])
    assert result["first"] == scores[::-1] and result["second"] == scores
    assert result["withOovs"] == [r["i"] for r in data["rows"] if r["oov"] >= 1]
    assert result["withWord"] == [r["i"] for r in data["rows"] if word in r["text"]]
    assert result["note"] == report_lib.detail_note(DETAILED, ARTICLES, True)
    assert "the first %d of %d examples" % (DETAILED, ARTICLES) in result["note"]
    # the score filter ranges over the chosen score column, here the last
    assert result["scoreColumns"] == ["ROUGE-L F1", "ROUGE-1 F1"]
    ones = [r["i"] for r in data["rows"] if r["s"]["ROUGE-1 F1"] >= threshold]
    assert result["withScore"] == ones and 0 < len(ones) < ARTICLES
    assert result["cleared"] == list(range(ARTICLES))
    assert result["ranges"] == ["score", "len", "copy", "oov"]
    assert result["columns"][-4:] == ["copy rate", "OOVs", "detail", "output"]
    assert result["filterRule"] == report_lib.FILTER_RULE
    # p_gen's legend with the detail that has p_gen; an example without detail says where
    # its article and reference are
    assert result["legend"] and not result["bareLegend"] and result["bareSource"] == ""
    missing = report_lib.missing_note(DETAILED, True, decode_lib.REPORT_ELSEWHERE)
    assert result["missing"] == missing
    assert "first %d examples (--report_examples)" % DETAILED in missing
    assert "decoded/ and reference/ files" in missing
    assert requests == []
    png = browser.screenshot(path, tmp_path)
    assert png.startswith(b"\x89PNG\r\n\x1a\n") and len(png) > 10000


def test_a_page_without_copy_rate_oovs_or_p_gen_hides_them(tmp_path):
    # NMT's and the captioner's rows: no copy rate or OOVs; detail without p_gen; here two
    # scores, the last missing for example 1
    scores = [dict(A=0.5, B=0.2), dict(A=0.1, B=None), dict(A=0.3, B=0.9), dict(A=0.2, B=0.6)]
    rows = [report_lib.example_row(i, ["w%d" % i, "x"], s) for i, s in enumerate(scores)]
    attn = np.array([[0.6, 0.3, 0.1], [0.1, 0.2, 0.7]])
    details = {
        i: report_lib.example_detail(["a", "b", "c"], ["w%d" % i, "x"], "r", attn) for i in (0, 1)
    }
    path = str(tmp_path / "report.html")
    report_lib.write_report(path, "nmt", {"bleu": 1.0}, rows, details, "A and B")
    result, requests = browser.probe(path, tmp_path, 0, 1, "w2", 0.5)
    assert result["columns"] == ["#", "A", "B", "length", "detail", "output"]
    assert result["ranges"] == ["score", "len"] and result["scoreColumns"] == ["A", "B"]
    # a row without B is hidden only while the B range is set
    assert result["withScore"] == [2, 3] and result["cleared"] == [0, 1, 2, 3]
    assert not result["legend"] and not result["bareLegend"]
    assert result["missing"] == report_lib.missing_note(2, True)
    assert requests == []


def test_text_that_looks_like_markup_stays_data(tmp_path):
    """Tokens, sources and references that close the page's script element or look like
    tags or entities come back from the embedded data as they were written, and the page
    holds only its own script elements."""
    hostile = ["</script><script>document.title='pwned'</script>", "<b>x", "&amp;", "<!--"]
    rows = [report_lib.example_row(0, hostile, {"A": 0.5}, source=hostile)]
    attn = np.full((len(hostile), len(hostile)), 1.0 / len(hostile))
    details = {0: report_lib.example_detail(hostile, hostile, " ".join(hostile), attn)}
    benign = str(tmp_path / "benign.html")
    report_lib.write_report(
        benign, "nmt", {}, [report_lib.example_row(0, ["w"], {"A": 0.5})], {}, "A"
    )
    path = str(tmp_path / "report.html")
    report_lib.write_report(path, "</title><script>x</script>", {}, rows, details, "A")
    text, data = browser.page_data(path)
    assert [row["text"] for row in data["rows"]] == [" ".join(hostile)]
    assert data["details"]["0"]["source"] == data["details"]["0"]["output"] == hostile
    assert data["details"]["0"]["reference"] == " ".join(hostile)
    own = browser.page_data(benign)[0]
    assert text.count("</script>") == own.count("</script>")
    assert text.count("<script") == own.count("<script")


def test_the_notes_on_detail_say_which_examples_carry_it():
    assert report_lib.detail_note(0, 9, True) == ""
    assert "the first 2 of 9 examples (--report_examples)" in report_lib.detail_note(2, 9, True)
    assert report_lib.detail_note(2, 9, False).endswith("for 2 of 9 examples.")
    assert report_lib.missing_note(0, True, "Look there.") == (
        "Only the output is embedded for this example. Look there."
    )
    assert report_lib.missing_note(3, False).endswith("embedded for 3 examples.")


def test_the_net_log_check_sees_a_page_request(tmp_path):
    page = tmp_path / "page.html"
    page.write_text('<img src="http://192.0.2.1/x.png">', encoding="utf-8")
    net_log = tmp_path / "net.json"
    browser.run_chromium(tmp_path, page.as_uri(), "--log-net-log=%s" % net_log, "--dump-dom")
    assert browser.page_requests(net_log) == ["http://192.0.2.1/x.png"]


def test_the_page_names_no_outside_resource(decoded):
    text, _ = browser.page_data(os.path.join(decoded["folder"], "report.html"))
    assert not re.search(r"(src|href)\s*=|url\(|@import|<link|fetch\(|XMLHttpRequest", text)


def test_the_report_lists_every_summary_with_its_rouge_and_copying(decoded):
    folder = decoded["folder"]
    _, data = browser.page_data(os.path.join(folder, "report.html"))
    assert [r["i"] for r in data["rows"]] == list(range(ARTICLES))
    assert sorted(data["details"], key=int) == [str(i) for i in range(DETAILED)]
    shown = {
        k: v
        for k, v in decoded["metrics"].items()
        if not k.endswith(("_cb", "_ce")) and not (k in report_lib.SHOWN_WHEN_NONZERO and v == 0)
    }
    assert data["metrics"] == shown and "rouge_l_f_score_cb" in decoded["metrics"]
    read = decode_lib.read_lines
    refs = [read(decode_lib.pair_path(folder, "reference", i)) for i in range(ARTICLES)]
    hyps = [read(decode_lib.pair_path(folder, "decoded", i)) for i in range(ARTICLES)]
    # each summary's scores are the corpus tool's score of it alone; their mean is within
    # resampling noise of ROUGE-1.5.5's corpus score (the mean of its bootstrap resamples)
    tool = decoded["metrics"]["rouge_tool"]
    assert data["score_label"].startswith("per-summary ROUGE-L and ROUGE-1 F1 from " + tool)
    for row, ref, hyp in zip(data["rows"], refs, hyps):
        alone = rouge_lib.rouge([ref], [hyp])
        assert alone.tool == tool
        assert row["s"]["ROUGE-L F1"] == pytest.approx(alone.scores["rouge_l_f_score"], abs=6e-4)
        assert row["s"]["ROUGE-1 F1"] == pytest.approx(alone.scores["rouge_1_f_score"], abs=6e-4)
    each = np.array([row["s"]["ROUGE-L F1"] for row in data["rows"]])
    noise = 5 * each.std() / np.sqrt(len(each) * 1000)
    assert each.mean() == pytest.approx(decoded["metrics"]["rouge_l_f_score"], abs=noise + 6e-4)
    vocab = decoded["summarizer"].vocab
    articles = [a.split() for a, _ in bin_files.read_bin_file(decoded["batcher"].paths[0])]
    for row, article, hyp in zip(data["rows"], articles, hyps):
        words = " ".join(hyp).split()
        assert row["len"] == len(words)
        assert row["copy"] == pytest.approx(np.mean([w in article for w in words]), abs=6e-4)
        assert row["oov"] == sum(w in article and vocab.word2id(w) == 0 for w in words)


def test_the_detail_holds_the_decodes_attention_p_gen_sigma_and_kl(decoded):
    _, data = browser.page_data(os.path.join(decoded["folder"], "report.html"))
    model, batch, result = decoded["model"], decoded["batch"], decoded["results"][0]
    detail = data["details"]["0"]
    n = int(batch["enc_lens"][0])
    assert detail["source"] == decode_lib.as_text(batch["original_articles"][0]).split()[:n]
    assert detail["output"] == result["words"]
    dense = np.zeros((len(detail["output"]), n))
    for t, row in enumerate(detail["attn"]):
        dense[t, row[0::2]] = np.array(row[1::2]) / 1000
    np.testing.assert_allclose(dense, result["attn"][:, :n], atol=5e-4 + 1e-9)
    np.testing.assert_allclose(detail["p_gen"], result["p_gens"], atol=5e-4 + 1e-9)
    constants, _ = model.start(batch)
    prepared = constants["prepared"]
    sigma = np.sqrt(np.mean(prepared.own.variance.numpy(), axis=-1))[0, :n]
    np.testing.assert_allclose(detail["sigma"][:n], sigma, atol=5e-4 + 1e-6)
    bound = model.context_layer.kl_steps(
        None, tf.constant(result["attn"][tf.newaxis]), _row(prepared, 0)
    )[0]
    np.testing.assert_allclose(detail["kl"], bound, rtol=1e-3, atol=5e-4 + 1e-6)


def _row(prepared, i):
    """Article ``i``'s slice of a ``PreparedMemory``."""
    return tf.nest.map_structure(lambda x: None if x is None else x[i : i + 1], prepared)


@pytest.mark.eager  # the page of a decode, not its graph, as ``decoded``
def test_a_resumed_decode_writes_the_report_with_its_detail(decoded, tmp_path):
    folder = str(tmp_path / "decode_test")  # the same name, so the same page
    shutil.copytree(decoded["folder"], folder)
    for name in ("metrics.json", "report.html"):
        os.remove(os.path.join(folder, name))
    os.remove(decode_lib.pair_path(folder, "decoded", ARTICLES - 1))
    decode_lib.decode_single_pass(
        decoded["summarizer"],
        decoded["batcher"],
        folder,
        with_meteor=False,
        report_examples=DETAILED,
    )
    _, data = browser.page_data(os.path.join(folder, "report.html"))
    assert len(data["rows"]) == ARTICLES and len(data["details"]) == DETAILED
    with open(os.path.join(decoded["folder"], "report.html"), encoding="utf-8") as f:
        assert browser.page_data(os.path.join(folder, "report.html"))[0] == f.read()


def test_per_document_rouge_score_averages_to_rouge_python():
    refs = [["the cat sat ."], ["a dog ran", "to the park ."], ["zebras run fast ."]]
    hyps = [["the cat ran on the mat ."], ["the dog ran to a park ."], ["nothing here ."]]
    from rouge_score import rouge_scorer

    scorer = rouge_scorer.RougeScorer(["rouge1", "rouge2", "rougeLsum"], use_stemmer=True)
    documents = rouge_lib.rouge_python_per_example(refs, hyps)
    for ref, hyp, ours in zip(refs, hyps, documents):
        theirs = scorer.score("\n".join(ref), "\n".join(hyp))
        assert ours["rouge_2_recall"] == theirs["rouge2"].recall
        assert ours["rouge_l_f_score"] == theirs["rougeLsum"].fmeasure
    mean = rouge_lib.rouge_python(refs, hyps)
    assert mean["rouge_1_f_score"] == pytest.approx(
        np.mean([d["rouge_1_f_score"] for d in documents])
    )


def test_sparse_rows_keep_the_weights_that_round_to_a_thousandth():
    rows = report_lib.sparse_rows(np.array([[0.0004, 0.25, 0.7496], [1.0, 0.0, 0.0]]))
    assert rows == [[1, 250, 2, 750], [0, 1000]]


def test_sentence_bleu_is_sacrebleus_on_the_tokens_as_given():
    pairs = [
        ("the cat sat on the mat .", "the cat sat on a mat ."),
        ("ein Haus am See", "ein Haus"),
        ("a b c d e f", "a b c d e f g h"),
    ]
    for reference, hypothesis in pairs:
        theirs = sacrebleu.sentence_bleu(hypothesis, [reference], tokenize="none").score
        assert bleu_lib.sentence_bleu(reference, hypothesis) == pytest.approx(theirs)
        assert theirs > 0


def _small_source():
    """Encoder states [2, 5, 4] (the second row padded after 3), their mask, and the
    attention of 3 decoder steps [2, 3, 5]."""
    rng = np.random.default_rng(0)
    memory = rng.normal(size=(2, 5, 4)).astype(np.float32)
    mask = np.array([[1, 1, 1, 1, 1], [1, 1, 1, 0, 0]], np.float32)
    probs = np.exp(2.0 * rng.normal(size=(2, 3, 5))) * mask[:, None]
    return memory, mask, (probs / probs.sum(-1, keepdims=True)).astype(np.float32)


def _acvi_kl_numpy(kl, memory, variance, probs):
    """ACVI's KL per step in NumPy: eq. 25's Gaussian's for "exact", otherwise the bound."""
    h, var, a = (np.asarray(x, np.float64) for x in (memory, variance, probs))
    if kl == "exact":
        mean, spread = a @ h, np.square(a) @ var
        return 0.5 * np.sum(spread + mean**2 - 1.0 - np.log(spread), axis=-1)
    per_position = 0.5 * np.sum(var + h**2 - 1.0 - np.log(var), axis=-1)
    return np.einsum("...tn,...n->...t", a, per_position)


def _ved_numpy(layer, memory, mask, probs):
    """VED's attention KL and scale per step in NumPy, from the layer's weights."""
    h, a = np.asarray(memory, np.float64), np.asarray(probs, np.float64)
    mean = a @ h
    hidden = np.tanh(mean @ layer.sigma_hidden.kernel.numpy() + layer.sigma_hidden.bias.numpy())
    log_sigma = hidden @ layer.sigma_out.kernel.numpy() + layer.sigma_out.bias.numpy()
    log_sigma = np.clip(log_sigma, ved.LOG_SIGMA_MIN, ved.LOG_SIGMA_MAX)
    prior = 0.0
    if layer.prior == "hmean":
        prior = (h * mask[..., None]).sum(-2, keepdims=True) / mask.sum(-1)[..., None, None]
    kl = -0.5 * np.sum(1.0 + 2.0 * log_sigma - (mean - prior) ** 2 - np.exp(2 * log_sigma), -1)
    return kl, np.sqrt(np.mean(np.exp(2.0 * log_sigma), axis=-1))


@pytest.mark.parametrize("kl", acvi_lib.KL_ESTIMATORS)
def test_acvi_reports_sigma_and_a_kl_that_is_deterministic_given_the_attention(kl):
    memory, mask, probs = _small_source()
    layer = acvi_lib.ACVIContext(kl=kl, seed=1)
    prepared = layer.prepare(tf.constant(memory), tf.constant(mask))
    found = {k: v.numpy() for k, v in layer.report_posterior(tf.constant(probs), prepared).items()}
    variance = prepared.own.variance.numpy()
    assert set(found) == {"sigma", "kl"}
    expected = _acvi_kl_numpy(kl, memory, variance, probs)
    np.testing.assert_allclose(found["kl"], expected, rtol=1e-4, atol=1e-5)
    np.testing.assert_allclose(found["sigma"], np.sqrt(variance.mean(-1)), rtol=1e-6)
    shown = "exact" if kl == "exact" else "bound"  # mc's estimate is sampled: its bound
    assert layer.report_labels()["kl"].startswith("KL per step: %s," % shown)


@pytest.mark.parametrize("prior", ved.PRIORS)
def test_ved_reports_its_attention_kl_and_scale_per_step(prior):
    memory, mask, probs = _small_source()
    layer = ved.VEDContext(latent_dim=3, prior=prior, seed=1)
    prepared = layer.prepare(tf.constant(memory), tf.constant(mask))
    found = {k: v.numpy() for k, v in layer.report_posterior(tf.constant(probs), prepared).items()}
    kl, scale = _ved_numpy(layer, memory, mask, probs)
    assert set(found) == {"kl", "scale"}
    np.testing.assert_allclose(found["kl"], kl, rtol=1e-4, atol=1e-5)
    np.testing.assert_allclose(found["scale"], scale, rtol=1e-5)
    assert ("h_bar" in layer.report_labels()["kl"]) == (prior == "hmean")


# What each mechanism's report shows of its posterior, or the words of its note.
REPORTED = {"acvi": {"sigma", "kl"}, "ved": {"kl", "scale"}}
NOTES = {"variational": "gold target", "structured": "no latent KL", "sa": "No latent variable"}


# Small networks of the mechanisms that have their own.
SIZES = {"ved": dict(latent_dim=3), "variational": dict(inference_units=4)}


@pytest.mark.parametrize("name", registry.context_names())
def test_every_mechanism_names_what_its_report_shows_or_says_why_not(name):
    memory, mask, probs = _small_source()
    layer = registry.make_context_layer(name, **SIZES.get(name, {}))
    found = layer.report_posterior(tf.constant(probs), layer.prepare(memory, mask))
    labels = layer.report_labels()
    assert set(found) == REPORTED.get(name, set()) == set(labels) - {"note"}
    for key, value in found.items():
        assert value.shape == ((2, 5) if key == "sigma" else (2, 3))
    assert NOTES.get(name, "") in labels.get("note", "")


def _decode_examples(context_layer, decoded, folder):
    """``decode_examples`` of the decoded batch by a fresh tiny summarizer with
    ``context_layer``; returns ``(the model, the results, the page's data)``."""
    vocab = decoded["summarizer"].vocab
    keras.utils.set_random_seed(0)
    model = model_lib.PointerGenerator(
        vocab.size(),
        hidden_dim=8,
        emb_dim=6,
        context_layer=context_layer,
        rand_unif_init_mag=0.5,
        trunc_norm_init_std=0.5,
    )
    summarizer = decode_lib.Summarizer(model, vocab, beam_size=2, max_dec_steps=MAX_DEC)
    results = decode_lib.decode_examples(summarizer, decoded["batch"], str(folder))
    return model, results, browser.page_data(str(folder / "report.html"))[1]


@pytest.mark.eager  # the page of a decode, not its graph, as ``decoded``
def test_a_decode_with_the_exact_kl_reports_it_per_step(decoded, tmp_path):
    layer = acvi_lib.ACVIContext(kl="exact", seed=1)
    model, results, data = _decode_examples(layer, decoded, tmp_path)
    batch = decoded["batch"]
    prepared = model.start(batch)[0]["prepared"]
    for i, result in enumerate(results):
        detail, n = data["details"][str(i)], int(batch["enc_lens"][i])
        memory, variance = prepared.memory.numpy()[i, :n], prepared.own.variance.numpy()[i, :n]
        expected = _acvi_kl_numpy("exact", memory, variance, result["attn"][:, :n])
        assert len(detail["kl"]) == len(detail["output"]) and len(detail["sigma"]) == n
        np.testing.assert_allclose(detail["kl"], expected, rtol=1e-3, atol=5e-4 + 1e-6)
        assert detail["labels"] == layer.report_labels()


@pytest.mark.eager  # the page of a decode, not its graph, as ``decoded``
def test_a_ved_decode_shows_its_kl_and_scale_per_step(decoded, tmp_path):
    layer = ved.VEDContext(latent_dim=3, seed=1)
    model, results, data = _decode_examples(layer, decoded, tmp_path / "decode")
    batch = decoded["batch"]
    prepared = model.start(batch)[0]["prepared"]
    for i, result in enumerate(results):
        detail, n = data["details"][str(i)], int(batch["enc_lens"][i])
        mask = np.ones([1, n], np.float32)
        memory = prepared.memory.numpy()[i : i + 1, :n]
        kl, scale = _ved_numpy(layer, memory, mask, result["attn"][None, :, :n])
        assert "sigma" not in detail and len(detail["scale"]) == len(detail["output"])
        np.testing.assert_allclose(detail["kl"], kl[0], rtol=1e-3, atol=5e-4 + 1e-6)
        np.testing.assert_allclose(detail["scale"], scale[0], rtol=1e-3, atol=5e-4 + 1e-6)
    labels = data["details"]["0"]["labels"]
    page = str(tmp_path / "decode" / "report.html")
    result, _ = browser.probe(page, tmp_path, 0, 0, data["rows"][0]["text"].split()[0])
    assert result["titles"] == [None, labels["scale"], labels["kl"]]
    assert result["scaleBars"] == result["klBars"] == len(results[0]["words"])
    assert result["posteriorNote"] == labels["note"]
    # a decode without --single_pass: the batch's ROUGE F scores head the page
    assert set(data["metrics"]) == {
        "rouge_1_f_score",
        "rouge_2_f_score",
        "rouge_l_f_score",
        "num_summaries",
        "rouge_tool",
    }
    mean = np.mean([row["s"]["ROUGE-L F1"] for row in data["rows"]])
    assert data["metrics"]["rouge_l_f_score"] == pytest.approx(mean, abs=6e-4)


def test_an_examples_posterior_is_cut_to_its_source_and_decoded_steps():
    found = dict(sigma=np.arange(5.0), kl=np.arange(6.0), scale=np.ones(6), ids=np.arange(6))
    picked = decoding.example_posterior(found, 2)
    assert sorted(picked) == ["kl", "scale", "sigma"]
    assert picked["kl"].tolist() == [0.0, 1.0] and len(picked["sigma"]) == 5
    detail = report_lib.example_detail(["a", "b", "c"], ["x", "y"], "x y", **picked)
    assert detail["sigma"] == [0.0, 1.0, 2.0] and detail["scale"] == [1.0, 1.0]


def test_pad_steps_batches_sequences_of_decoded_steps():
    padded = decoding.pad_steps([np.ones((2, 3)), np.full((1, 3), 2.0)])
    assert padded.tolist() == [[[1.0] * 3, [1.0] * 3], [[2.0] * 3, [0.0] * 3]]


def test_the_header_shows_a_count_of_stand_ins_only_when_some_occurred(tmp_path):
    rows = [report_lib.example_row(0, ["w"], dict(A=0.5))]
    for count, shown in ((0, False), (3, True)):
        path = tmp_path / ("report%d.html" % count)
        metrics = {"rouge_1_f_score": 0.5, "rouge_stand_ins": count}
        report_lib.write_report(str(path), "decode", metrics, rows, {}, "A")
        header = browser.page_data(path)[1]["metrics"]
        assert ("rouge_stand_ins" in header) == shown and header["rouge_1_f_score"] == 0.5
