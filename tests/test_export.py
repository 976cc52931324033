"""pointer_generator.export: a SavedModel that summarises raw strings, loaded in a fresh
process without this project, gives --mode=decode's summaries; its tokeniser is the
builders' own."""

import collections
import errno
import json
import os
import re
import stat
import subprocess
import sys

import numpy as np
import pytest
import served
import tensorflow as tf
from absl import logging
from tensorflow.core.protobuf import saved_model_pb2

from acvi_tf import config as config_lib
from acvi_tf.formats.bin_files import read_bin_file
from acvi_tf.inference import export as export_lib
from acvi_tf.text import tokenizers
from data_prep import summarization
from pointer_generator import batcher as batcher_lib
from pointer_generator import decode as decode_lib
from pointer_generator import experiment, export, run_summarization, serving, task
from pointer_generator import vocab as vocab_lib

from conftest import run_settings

pytestmark = pytest.mark.slow  # scheduled first (conftest.py)

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
SAMPLE = os.path.join(ROOT, "data_prep", "samples", "debian_descriptions")
# 19 words: the articles below repeat none (5 is prime to 19)
WORDS = "the cat sat on a mat while Zed's dogs ran in parks and birds sang , near Rome up".split()
TRICKY = [
    "Don't stop: it's 10:30, the U.S. economy grew 3.5% (est.) in 2019...",
    "“Quoted” ‘single’ «angle» — dash -- and – en; 1,000,000 items; a,b",
    "E-mail foo@bar.com or www.debian.org/doc. Prices: $5.99/kg & 20% off!?",
    "Straße ÄÖÜ café ﬁne … ０１２ tab\there\u200bzero\u00a0nbsp",
    "The dogs' bones, 'tis the '90s rock'n'roll; CAN'T won't I'm",
    "",
]


def _train_and_decode(root, vocab, data, steps, decode_batch_size, *extra):
    common = [
        "--vocab_path=%s" % vocab,
        "--vocab_size=0",
        "--log_root=%s" % root,
        "--exp_name=run",
        "--hidden_dim=16",
        "--emb_dim=6",
        "--batch_size=4",
        "--max_enc_steps=30",
        "--max_dec_steps=6",
        "--context=acvi",
        *extra,
    ]

    def run(*argv):
        config = config_lib.parse(run_summarization.define_flags, ["x", *common, *argv])
        return run_summarization.run(config)

    run("--data_path=%s" % os.path.join(data, "train_*"), "--max_steps=%d" % steps)
    run(
        "--mode=decode",
        "--single_pass",
        "--data_path=%s" % os.path.join(data, "test_*"),
        "--beam_size=2",
        "--min_dec_steps=1",
        "--decode_batch_size=%d" % decode_batch_size,
    )
    [decode_dir] = [d for d in os.listdir(root / "run") if d.startswith("decode_")]
    return root / "run" / decode_dir


def _traces(export_dir):
    """How many graphs of each of the module's functions the SavedModel holds."""
    saved = saved_model_pb2.SavedModel()
    with open(os.path.join(export_dir, "saved_model.pb"), "rb") as f:
        saved.ParseFromString(f.read())
    names = [f.signature.name for f in saved.meta_graphs[0].graph_def.library.function]
    return collections.Counter(re.sub(r"^__inference_(.*)_\d+$", r"\1", n) for n in names)


def _decoded(decode_dir, count):
    return [
        " ".join((decode_dir / "decoded" / ("%06d_decoded.txt" % i)).read_text().split())
        for i in range(count)
    ]


def _export(root, export_dir, *extra):
    argv = ["export", "--log_root=%s" % root, "--exp_name=run", "--export_dir=%s" % export_dir]
    argv += ["--beam_size=2", "--min_dec_steps=1", *extra]
    return export.run(config_lib.parse(export.define_flags, argv))


@pytest.fixture(scope="module")
def raw_run(tmp_path_factory):
    """A corpus built from raw JSON lines with the tftext tokenizer, a run trained on it,
    its test split decoded, and the raw test articles in the decode's order."""
    root = tmp_path_factory.mktemp("export")
    raw = []
    for i in range(60):
        words = [WORDS[(i * 7 + k * 5) % len(WORDS)] for k in range(8 + i % 5)]
        article = "Story %d: %s Qx%d's end." % (i, " ".join(words).capitalize(), i)
        raw.append(dict(article=article, abstract="Qx%d's %s %s." % (i, words[1], words[0])))
    (root / "train.jsonl").write_text("".join(json.dumps(r) + "\n" for r in raw[:45]))
    (root / "test.jsonl").write_text("".join(json.dumps(r) + "\n" for r in raw[45:]))
    corpus = root / "corpus"
    argv = ["x", "--train_input=%s" % (root / "train.jsonl"), "--out_dir=%s" % corpus]
    argv += ["--test_input=%s" % (root / "test.jsonl"), "--allow_empty=val", "--tokenizer=tftext"]
    summarization.build(config_lib.parse(summarization.define_flags, argv))
    # enough steps to learn to copy the out-of-vocabulary "qx<i>" words into summaries
    decode_dir = _train_and_decode(root, corpus / "vocab", corpus / "chunked", 150, 2, "--lr=0.5")
    tokenize = tokenizers.tokenizer("tftext")
    by_tokens = {tokenize(r["article"]): r["article"] for r in raw}
    test = [article for article, _ in read_bin_file(str(corpus / "chunked" / "test_000.bin"))]
    assert test and all(a in by_tokens for a in test)  # the builder tokenised with tftext
    return root, [by_tokens[a] for a in test], decode_dir


def test_the_exported_model_summarises_raw_text_as_decode_does(raw_run, absl_caplog):
    root, articles, decode_dir = raw_run
    verbosity = logging.get_verbosity()
    logging.set_verbosity(logging.INFO)  # saving resets absl's level to the verbosity
    try:
        module = _export(root, root / "served" / "1")
    finally:
        logging.set_verbosity(verbosity)
    # the log says what export does: restore, trace, write; it summarises nothing
    lines = [r.getMessage() for r in absl_caplog.records]
    steps = ("Restored", "Tracing", "Writing", "Exported", "Summaris")
    assert [line.split(" ")[0] for line in lines if line.startswith(steps)] == [
        "Restored",
        "Tracing",
        "Tracing",
        "Exported",
    ], lines
    signatures = "serving_default, summarize_with_attention, tokenize"
    assert "Tracing the signatures %s and writing the SavedModel" % signatures in lines
    # each signature is traced once, by the save, and its graph saved once
    traces = _traces(root / "served" / "1")
    assert [traces[f] for f in ("summarize", "summarize_with_attention", "tokenize")] == [1, 1, 1]
    batches = [articles[i : i + 2] for i in range(0, len(articles), 2)]  # the decode's batches
    calls = [("serving_default", {"documents": batch}) for batch in batches]
    calls += [
        ("serving_default", {"documents": ["", articles[0]]}),
        ("tokenize", {"texts": TRICKY}),
        ("summarize_with_attention", {"documents": batches[0]}),
        ("summarize_with_attention", {"documents": ["", articles[0]]}),
    ]
    answers, project_modules = served.call(root / "served" / "1", calls)
    assert project_modules == []
    summaries = [s for answer in answers[: len(batches)] for s in answer["summaries"]]
    assert summaries == _decoded(decode_dir, len(articles))
    assert sum("qx" in s for s in summaries) >= len(summaries) // 2  # copied OOV words
    assert answers[-4]["summaries"] == ["", summaries[0]]  # an empty document
    # the builders' tokeniser and the exported graph's agree on tricky strings
    assert answers[-3]["tokens"] == [tokenizers.tokenizer("tftext")(t) for t in TRICKY]
    # an empty document has no summary word, so no attention or p_gen either
    empty = answers[-1]
    assert empty["summaries"] == ["", summaries[0]]
    assert not np.any(empty["attention"][0]) and not np.any(empty["p_gens"][0])
    np.testing.assert_allclose(
        np.sum(empty["attention"][1][: len(summaries[0].split())], -1), 1.0, atol=1e-5
    )
    # the attention of each summary word is a distribution over the document's tokens
    with_attention = answers[-2]
    assert with_attention["summaries"] == summaries[:2]
    attention = np.asarray(with_attention["attention"])
    for row, summary in enumerate(with_attention["summaries"]):
        steps = len(summary.split())
        np.testing.assert_allclose(attention[row, :steps].sum(-1), 1.0, atol=1e-5)
    tokens = [t for t in with_attention["tokens"][0] if t]  # "" pads the shorter documents
    assert tokens == tokenizers.tokenizer("tftext")(articles[0]).split()[:30]
    assert module is not None


def test_the_graph_batch_equals_the_batcher_s(raw_run):
    """Tokens, ids and each document's out-of-vocabulary ids (the copy mechanism's
    extended vocabulary) as ``batcher.make_batch`` builds them."""
    root, articles, _ = raw_run
    config = run_settings("pointer_generator.summarize", "--log_root=%s" % root, "--exp_name=run")
    vocab = vocab_lib.Vocab(str(root / "corpus" / "vocab"), 0)
    module = serving.ServedSummarizer(
        experiment.load_decoder(task.TASK, config),
        30,
        True,
        export_lib.graph_tokenizer_for(*serving.corpus_record(config.vocab_path), False),
    )
    tokenize = tokenizers.tokenizer("tftext")
    examples = [batcher_lib.Example(tokenize(a), [], vocab, 30, 6) for a in articles]
    expected = batcher_lib.make_batch(examples, vocab.word2id("[PAD]"), 6)
    assert expected["max_art_oovs"] >= 2  # the "Qx<i>'s" words are out of the vocabulary
    batch, _, _, oovs = module.batch(tf.constant(articles))
    for name in decode_lib.DECODE_FIELDS:
        np.testing.assert_array_equal(batch[name].numpy(), expected[name], err_msg=name)
    assert oovs.to_list() == [[w.encode() for w in e.article_oovs] for e in examples]


def test_export_refuses_an_existing_folder_and_a_tokenizer_without_a_graph_form(raw_run, tmp_path):
    root, _, _ = raw_run
    (tmp_path / "taken").mkdir()
    with pytest.raises(Exception, match="exists; give a new --export_dir"):
        _export(root, tmp_path / "taken")
    record = root / "corpus" / "corpus.json"
    saved = record.read_text()
    record.write_text(json.dumps(dict(tokenizer="treebank", lowercase=True)))
    try:
        with pytest.raises(Exception, match="--tokenizer=treebank, which has no graph form"):
            _export(root, tmp_path / "new")
    finally:
        record.write_text(saved)
    assert not (tmp_path / "new").exists()
    # a corpus without its record is said to be taken for Treebank's, not to record it
    missing = str(tmp_path / "corpus.json")
    settings = dict(tokenizer="treebank", lowercase=True)
    with pytest.raises(Exception) as refused:
        export_lib.graph_tokenizer_for(missing, settings, False)
    assert str(refused.value).startswith(
        "%s is missing, so the corpus is taken to be tokenised with treebank, which has no "
        "graph form; rebuild the corpus with --tokenizer=tftext" % missing
    )


class _Doubler(tf.Module):
    @tf.function(input_signature=[tf.TensorSpec([None], tf.float32)])
    def double(self, x):
        return dict(y=2.0 * x)


def test_an_export_is_readable_by_others_and_clears_what_a_killed_export_left(tmp_path):
    """The SavedModel folder has the permissions of a folder made under the umask (not
    mkdtemp's 0700); a staging folder of this machine whose process is gone is removed,
    one whose process runs and another machine's are kept."""
    gone = subprocess.run(
        [sys.executable, "-c", "import os; print(os.getpid())"], capture_output=True, check=True
    )
    prefix = export_lib.staging_prefix()
    left = tmp_path / ("%s%s-abc" % (prefix, gone.stdout.decode().strip()))
    running = tmp_path / ("%s%d-def" % (prefix, os.getpid()))
    elsewhere = tmp_path / (".export-another_machine-%s-ghi" % gone.stdout.decode().strip())
    for folder in (left, running, elsewhere):
        (folder / "variables").mkdir(parents=True)
    module = _Doubler()
    umask = os.umask(0o022)
    try:
        export_lib.save(module, str(tmp_path / "served"), {"serving_default": module.double})
    finally:
        os.umask(umask)
    assert stat.S_IMODE(os.stat(tmp_path / "served").st_mode) == 0o755
    assert sorted(p.name for p in tmp_path.iterdir()) == sorted(
        [running.name, elsewhere.name, "served"]
    )
    loaded = tf.saved_model.load(str(tmp_path / "served"))
    assert loaded.signatures["serving_default"](x=tf.constant([1.5]))["y"].numpy() == [3.0]


def test_a_pretokenized_export_of_the_shipped_corpus_equals_decode(tmp_path):
    """The shipped test split (Treebank tokens) through a --pretokenized export equals the
    batched beam search --mode=decode runs (``decode.Summarizer``), batch for batch."""
    vocab = os.path.join(SAMPLE, "vocab")
    common = ["--vocab_path=%s" % vocab, "--vocab_size=2000", "--log_root=%s" % tmp_path]
    common += ["--exp_name=run", "--hidden_dim=8", "--emb_dim=6", "--batch_size=4"]
    common += ["--max_enc_steps=30", "--max_dec_steps=6", "--context=acvi"]
    argv = ["x", *common, "--data_path=%s" % os.path.join(SAMPLE, "chunked", "train_*")]
    run_summarization.run(
        config_lib.parse(run_summarization.define_flags, argv + ["--max_steps=3"])
    )
    _export(tmp_path, tmp_path / "served", "--pretokenized")
    test = [a for a, _ in read_bin_file(os.path.join(SAMPLE, "chunked", "test_000.bin"))]
    vocab_words = vocab_lib.Vocab(vocab, 2000)
    summarizer = experiment.load_decoder(
        task.TASK,
        run_settings(
            "pointer_generator.summarize",
            "--log_root=%s" % tmp_path,
            "--exp_name=run",
            "--beam_size=2",
            "--min_dec_steps=1",
        ),
    )
    batches = [test[i : i + 100] for i in range(0, len(test), 100)]
    expected = []
    for batch in batches:
        examples = [batcher_lib.Example(a, [], vocab_words, 30, 6) for a in batch]
        padded = batcher_lib.make_batch(examples, vocab_words.word2id("[PAD]"), 6)
        expected += [" ".join(r["words"]) for r in summarizer.decode(padded)]
    answers, _ = served.call(
        tmp_path / "served", [("serving_default", {"documents": batch}) for batch in batches]
    )
    assert [s for answer in answers for s in answer["summaries"]] == expected


def test_an_export_that_cannot_be_written_names_its_folder(tmp_path, monkeypatch):
    """A folder the user may not write, or a full disk, is named by --export_dir, not by
    the hidden staging folder; no staging folder stays."""
    module = _Doubler()
    target = str(tmp_path / "served")

    def refused(prefix, dir):
        raise PermissionError(13, "Permission denied", os.path.join(dir, prefix + "x1"))

    with monkeypatch.context() as patch:
        patch.setattr(export_lib.tempfile, "mkdtemp", refused)
        with pytest.raises(PermissionError) as raised:
            export_lib.save(module, target, {"serving_default": module.double})
    assert raised.value.filename == target

    def full(module, staging, signatures):
        raise tf.errors.ResourceExhaustedError(
            None, None, "%s/variables/x.data; No space left on device" % staging
        )

    with monkeypatch.context() as patch:
        patch.setattr(export_lib.tf.saved_model, "save", full)
        with pytest.raises(OSError) as raised:
            export_lib.save(module, target, {"serving_default": module.double})
    assert (raised.value.errno, raised.value.filename) == (errno.ENOSPC, target)
    assert os.listdir(tmp_path) == []


def test_an_export_finished_meanwhile_is_not_replaced_without_overwrite(tmp_path, monkeypatch):
    """Two exports to one new folder: the one that ends second finds the first one's
    SavedModel there and is refused, as it would have been had it started later."""
    module = _Doubler()
    target = tmp_path / "served"
    real = export_lib.tf.saved_model.save

    def another_export_ends_first(module, staging, signatures):
        real(module, staging, signatures=signatures)
        target.mkdir()
        (target / "saved_model.pb").write_bytes(b"the other export's")

    monkeypatch.setattr(export_lib.tf.saved_model, "save", another_export_ends_first)
    with pytest.raises(Exception, match="exists; give a new --export_dir"):
        export_lib.save(module, str(target), {"serving_default": module.double})
    assert (target / "saved_model.pb").read_bytes() == b"the other export's"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["served"]


def test_overwrite_replaces_only_an_export(tmp_path):
    """--overwrite replaces a SavedModel's folder, never a run's folder or anything that
    is not an export (a run's train/ or best/, the run itself, another folder)."""
    module = _Doubler()
    run = tmp_path / "run"
    (run / "best").mkdir(parents=True)
    for name in ("hparams.json", "best/best.json", "best/checkpoint"):
        (run / name).write_text("kept")
    (tmp_path / "notes").mkdir()
    (tmp_path / "notes" / "todo.txt").write_text("kept")
    for target, held in (
        (run, "it holds %s" % (run / "hparams.json")),
        (run / "best", "it holds"),
        (tmp_path / "notes", "no saved_model.pb"),
    ):
        with pytest.raises(Exception, match="is not an export \\(%s" % re.escape(held)):
            export_lib.save(module, str(target), {"serving_default": module.double}, True)
    assert (run / "hparams.json").read_text() == "kept" and (run / "best" / "best.json").exists()
    assert (tmp_path / "notes" / "todo.txt").read_text() == "kept"
    served = str(tmp_path / "served")
    export_lib.save(module, served, {"serving_default": module.double})
    export_lib.save(module, served, {"serving_default": module.double}, True)  # an export
    assert os.path.exists(os.path.join(served, "saved_model.pb"))
