"""nmt.export: a SavedModel that translates raw strings, loaded in a fresh process
without this project, gives run_nmt's inference on the same sentences."""

import json
import pathlib

import pytest
import served

from acvi_tf import config as config_lib
from acvi_tf.formats import bpe, nmt_text
from acvi_tf.text import tokenizers
from data_prep import translation
from nmt import export, run_nmt, serving

from conftest import run_settings

pytestmark = pytest.mark.slow  # scheduled first (conftest.py)

SAMPLE = pathlib.Path(__file__).resolve().parent.parent / "data_prep" / "samples" / "debian_en_de"
WORDS = [("cat", "gatto"), ("dog", "cane"), ("sleeps", "dorme"), ("runs", "corre")]
BEAM = ("--infer_mode=beam_search", "--beam_width=2")
TRICKY = ["Don't stop: it's 10:30, the U.S. grew 3.5%!", "“Quoted” — Straße ﬁne …", ""]


def _corpus_and_run(root, bpe_merges, tokenizer, steps):
    """A corpus of raw English -> Italian pairs, a short run on it, and its inference of
    the training sentences (the project's own decoding): ``(corpus, its data folder, run,
    raw pairs, outputs)``."""
    rows = []
    for i in range(60):
        (a, x), (b, y) = WORDS[i % 4], WORDS[(i * 3 + 1) % 4]
        rows.append(("The %s and the %s, %d." % (a, b, i), "Il %s e il %s, %d." % (x, y, i)))
    (root / "pairs.tsv").write_text("en\tit\n" + "".join("%s\t%s\n" % r for r in rows))
    corpus = root / "corpus"
    argv = ["x", "--src=en", "--tgt=it", "--input=%s" % (root / "pairs.tsv")]
    argv += ["--out_dir=%s" % corpus, "--bpe_merges=%d" % bpe_merges, "--tokenizer=" + tokenizer]
    translation.build(config_lib.parse(translation.define_flags, argv))
    data = corpus / "bpe" if bpe_merges else corpus
    run = root / "run"
    common = ["run_nmt", "--src=en", "--tgt=it", "--vocab_prefix=%s" % (data / "vocab")]
    common += ["--out_dir=%s" % run, "--num_units=16", "--infer_batch_size=3"]
    common += ["--optimizer=adam"]
    if bpe_merges:
        common.append("--subword_option=bpe")
    train = ["--train_prefix=%s" % (data / "train"), "--dev_prefix=%s" % (data / "dev")]
    train += ["--num_train_steps=%d" % steps, "--steps_per_stats=40", "--learning_rate=0.01"]
    run_nmt.run(config_lib.parse(run_nmt.define_flags, common + train))
    # the sentences it trained on (more of them, and translated less alike), with a beam
    # search that the greedy run's record does not hold
    infer = ["--inference_input_file=%s" % (data / "train.en")]
    infer += ["--inference_output_file=%s" % (root / "infer.it"), *BEAM]
    run_nmt.run(config_lib.parse(run_nmt.define_flags, common + infer))
    outputs = nmt_text.read_lines(str(root / "infer.it"))  # in words
    return corpus, data, run, rows, outputs


def _export(run, export_dir, *extra):
    argv = ["export", "--out_dir=%s" % run, "--export_dir=%s" % export_dir, *extra]
    return export.run(config_lib.parse(export.define_flags, argv))


def test_the_exported_translator_translates_raw_text_as_inference_does(tmp_path, absl_caplog):
    corpus, data, run, rows, expected = _corpus_and_run(tmp_path, 20, "tftext", 60)
    settings = json.loads((corpus / "corpus.json").read_text())
    prepare = serving.preprocessor(run_settings("nmt.translate", "--out_dir=%s" % run))
    by_source = {prepare(en): en for en, _ in rows}
    sources = nmt_text.read_lines(str(data / "train.en"))
    raw = [by_source[line] for line in sources]
    absl_caplog.clear()
    _export(run, tmp_path / "served", *BEAM)
    assert "infer_mode=beam_search (given), beam_width=2 (given)" in absl_caplog.text
    calls = [("serving_default", {"sentences": raw[i : i + 3]}) for i in range(0, len(raw), 3)]
    calls += [("serving_default", {"sentences": ["", raw[0]]}), ("tokenize", {"texts": TRICKY})]
    calls += [("tokenize", {"texts": raw})]
    answers, project_modules = served.call(tmp_path / "served", calls)
    assert project_modules == []
    translations = [t for answer in answers[:-3] for t in answer["translations"]]
    assert raw and translations == expected
    assert len(set(translations)) > 1 and not any("@@" in t for t in translations)
    assert answers[-3]["translations"] == ["", translations[0]]
    # the source tokens the model reads: the builder's tokens (and segments)
    tokenize = tokenizers.tokenizer(settings["tokenizer"], settings["lowercase"])
    assert answers[-2]["tokens"] == [prepare(t) if t else "" for t in TRICKY]
    assert answers[-1]["tokens"] == sources and any("@@" in line for line in sources)
    # before BPE, the builder's tftext tokens
    assert [bpe.remove_bpe(t) for t in answers[-2]["tokens"]] == [tokenize(t) for t in TRICKY]


def test_the_shipped_sample_exports_pretokenized_and_translates_as_inference_does(tmp_path):
    """The En-De sample (Treebank tokens, BPE): the export refuses raw text, and with
    --pretokenized segments the tokenised test sentences in its graph as the builder did
    and translates them as run_nmt's inference."""
    run = tmp_path / "run"
    common = ["run_nmt", "--src=en", "--tgt=de", "--vocab_prefix=%s" % (SAMPLE / "bpe" / "vocab")]
    common += ["--subword_option=bpe", "--out_dir=%s" % run, "--num_units=8", "--beam_width=2"]
    common += ["--infer_mode=beam_search", "--infer_batch_size=25"]
    for lang in ("en", "de"):  # 20 dev sentences keep the run's closing validation short
        lines = nmt_text.read_lines(str(SAMPLE / "bpe" / ("dev." + lang)))[:20]
        (tmp_path / ("dev." + lang)).write_text("".join(line + "\n" for line in lines))
    train = [
        "--train_prefix=%s" % (SAMPLE / "bpe" / "train"),
        "--dev_prefix=%s" % (tmp_path / "dev"),
    ]
    train += ["--num_train_steps=4", "--steps_per_stats=4"]
    run_nmt.run(config_lib.parse(run_nmt.define_flags, common + train))
    # the first 25 test sentences (an untrained search runs to its step limit)
    segmented = nmt_text.read_lines(str(SAMPLE / "bpe" / "test.en"))
    (tmp_path / "test.en").write_text("".join(line + "\n" for line in segmented[:25]))
    infer = ["--inference_input_file=%s" % (tmp_path / "test.en")]
    infer.append("--inference_output_file=%s" % (tmp_path / "infer.de"))
    run_nmt.run(config_lib.parse(run_nmt.define_flags, common + infer))
    expected = nmt_text.read_lines(str(tmp_path / "infer.de"))  # in words
    with pytest.raises(Exception, match="--tokenizer=treebank, which has no graph form"):
        _export(run, tmp_path / "refused")
    assert not (tmp_path / "refused").exists()
    _export(run, tmp_path / "served", "--pretokenized")
    tokens = nmt_text.read_lines(str(SAMPLE / "test.en"))
    batches = [tokens[:25]]
    calls = [("serving_default", {"sentences": batch}) for batch in batches]
    calls += [("tokenize", {"texts": tokens})]
    answers, _ = served.call(tmp_path / "served", calls)
    assert [t for answer in answers[:-1] for t in answer["translations"]] == expected
    assert answers[-1]["tokens"] == segmented  # all 500, segmented as the builder did
