"""pointer_generator.summarize: summaries of raw text equal --mode=decode's on the same
articles, tokenised as the corpus was built; both read the model's flags from the run's
record and derive the shortest summary from the longest."""

import gc
import json
import logging
import os
import shutil

import pytest

from acvi_tf import config as config_lib
from acvi_tf import files
from acvi_tf import flags as acvi_flags
from acvi_tf.formats import bin_files
from acvi_tf.formats.bin_files import read_bin_file
from acvi_tf.inference import commands
from acvi_tf.training import checkpoints
from data_prep import summarization
from pointer_generator import run_summarization, serving, summarize

from conftest import command, untraced

# Decodes, summaries and the eval job run untraced: what is checked is what the commands
# read and write, on a 10-step run; the traced beam search is test_pg_decode.py's and
# the export's (test_export.py). The run trains traced, in the module's fixture.
pytestmark = pytest.mark.eager

WORDS = "the cat sat on a mat while dogs ran in parks and birds sang , near Rome .".split()


# The run's model flags, none of them See's default; decode and summarize read them from
# the run's record.
MODEL = [
    "--vocab_size=0",
    "--hidden_dim=8",
    "--emb_dim=6",
    "--max_enc_steps=30",
    "--max_dec_steps=6",
    "--acvi_variance_net=relu",
    "--optimizer=adam",
]


def _run(root, *argv):
    config = config_lib.parse(
        run_summarization.define_flags, ["x", "--log_root=%s" % root, "--exp_name=run", *argv]
    )
    return run_summarization.run(config)


@pytest.fixture(scope="module")
def trained(tmp_path_factory):
    """A corpus built from raw JSON lines, a run trained on it, its test split decoded
    without the model's flags."""
    root = tmp_path_factory.mktemp("summarize")
    raw = []
    for i in range(60):
        words = [WORDS[(i * 7 + k * 3) % len(WORDS)] for k in range(8 + i % 5)]
        raw.append(
            dict(
                article="Story %d: %s" % (i, " ".join(words).capitalize()), abstract="Story %d." % i
            )
        )
    (root / "train.jsonl").write_text("".join(json.dumps(r) + "\n" for r in raw[:45]))
    (root / "test.jsonl").write_text("".join(json.dumps(r) + "\n" for r in raw[45:]))
    corpus = root / "corpus"
    argv = ["x", "--train_input=%s" % (root / "train.jsonl"), "--out_dir=%s" % corpus]
    argv += ["--test_input=%s" % (root / "test.jsonl"), "--allow_empty=val", "--tokenizer=ptb"]
    summarization.build(config_lib.parse(summarization.define_flags, argv))
    train = ["--data_path=%s" % (corpus / "chunked" / "train_*"), "--max_steps=10"]
    _run(
        root, *MODEL, "--vocab_path=%s" % (corpus / "vocab"), "--batch_size=4", "--lr=0.05", *train
    )
    with untraced():  # as the tests' commands (pytestmark)
        _run(
            root,
            "--mode=decode",
            "--single_pass",
            "--data_path=%s" % (corpus / "chunked" / "test_*"),
            "--beam_size=2",
            "--decode_batch_size=2",
        )
    [decode_dir] = [d for d in os.listdir(root / "run") if d.startswith("decode_")]
    return root, raw, corpus, root / "run" / decode_dir


def test_raw_text_summaries_equal_the_decode_of_the_same_articles(trained, tmp_path):
    root, raw, corpus, decode_dir = trained
    by_tokens = {}
    tokenize = serving.corpus_tokenizer(str(corpus / "vocab"))
    for record in raw:
        by_tokens[tokenize(record["article"])] = record["article"]
    test = [article for article, _ in read_bin_file(str(corpus / "chunked" / "test_000.bin"))]
    assert test and all(a in by_tokens for a in test)  # the builder's tokens, again
    (tmp_path / "in.txt").write_text("".join(by_tokens[a] + "\n" for a in test) + "\n")
    argv = [
        "summarize",
        "--log_root=%s" % root,
        "--exp_name=run",
        "--input=%s" % (tmp_path / "in.txt"),
        "--output=%s" % (tmp_path / "out.txt"),
        "--beam_size=2",
        "--decode_batch_size=2",
    ]
    summaries = summarize.run(config_lib.parse(summarize.define_flags, argv))
    decoded = [
        " ".join((decode_dir / "decoded" / ("%06d_decoded.txt" % i)).read_text().split())
        for i in range(len(test))
    ]
    assert summaries[: len(test)] == decoded and summaries[-1] == ""  # an empty line: ""
    assert (tmp_path / "out.txt").read_text().splitlines() == summaries
    # nor may --output replace the corpus record the command reads, or what the run
    # trained on
    for kept in (corpus / "corpus.json", corpus / "chunked" / "train_000.bin"):
        before = kept.read_bytes()
        refused = argv[:4] + ["--output=%s" % kept]
        with pytest.raises(files.OutputError, match="or one it reads; write to another file"):
            summarize.run(config_lib.parse(summarize.define_flags, refused))
        assert kept.read_bytes() == before
    # an input of no line is an error, not an empty output
    (tmp_path / "empty.txt").write_text("")
    argv[3] = "--input=%s" % (tmp_path / "empty.txt")
    with pytest.raises(commands.InputError, match="empty.txt holds no line, so there is nothing"):
        summarize.run(config_lib.parse(summarize.define_flags, argv))


def test_standard_input_and_output_and_bad_bytes(trained, capsys, monkeypatch):
    root, raw, _, _ = trained
    argv = ["--log_root=%s" % root, "--exp_name=run", "--beam_size=2"]
    article = (raw[0]["article"] + "\n").encode()
    status, out, err = command("pointer_generator.summarize", argv, capsys, monkeypatch, article)
    assert status == 0, err[-2000:]
    assert len(out.splitlines()) == 1 and out.strip()
    status, _, err = command(
        "pointer_generator.summarize", argv, capsys, monkeypatch, b"ok\ncaf\xe9\n"
    )
    assert status == 2
    assert err.strip().splitlines()[-1] == (
        "error: <stdin>:2: byte 4 is not UTF-8; re-encode the input as UTF-8"
    )


def test_decode_reads_the_model_from_the_record_and_derives_min_dec_steps(trained, absl_caplog):
    root, _, corpus, decode_dir = trained
    # the run's max_dec_steps=6 and See's 35% of it: 2, printed and in the folder's name
    assert decode_dir.name == "decode_test_30maxenc_2beam_2mindec_6maxdec_ckpt-10"
    lengths = [len(p.read_text().split()) for p in (decode_dir / "decoded").iterdir()]
    assert len(lengths) == 15 and max(lengths) < 6  # not padded to the maximum
    # a decode with the model's flags repeated summarises its first article the same way
    data = "--data_path=%s" % (corpus / "chunked" / "test_*")
    repeated = [*MODEL, "--vocab_path=%s" % (corpus / "vocab"), "--beam_size=2"]
    _run(root, "--mode=decode", data, "--decode_max_batches=1", *repeated)
    shown = json.loads((root / "run" / "decode" / "attn_vis_data.json").read_text())
    reference = shown["abstract_str"].replace("__", "").split()  # OOVs marked __w__
    [index] = [
        i
        for i in range(15)
        if (decode_dir / "reference" / ("%06d_reference.txt" % i)).read_text().split() == reference
    ]
    decoded = (decode_dir / "decoded" / ("%06d_decoded.txt" % index)).read_text().split()
    assert shown["decoded_lst"] == decoded
    assert (
        "Decoding with max_enc_steps=30 (given), max_dec_steps=6 (given), min_dec_steps=2 "
        "(derived: See's 35, at most 35% of max_dec_steps), beam_size=2 (given)"
    ) in absl_caplog.text
    # a glob of no file is named as such, not as a file name without a split
    nothing = "--data_path=%s" % (corpus / "chunked" / "nosuch_*")
    with pytest.raises(bin_files.BinFileError, match="nosuch_.*' matches no file"):
        _run(root, "--mode=decode", "--single_pass", nothing, *repeated[-2:-1])


def test_contradicting_flags_and_impossible_lengths_are_refused(trained, tmp_path):
    root, raw, corpus, _ = trained
    decode = ["--mode=decode", "--data_path=%s" % (corpus / "chunked" / "test_*")]
    decode += ["--decode_max_batches=1"]  # should a refusal fail, the decode still ends
    with pytest.raises(
        acvi_flags.FlagChangeError, match="--hidden_dim=8, this command gives --hidden_dim=16"
    ):
        _run(root, *decode, "--hidden_dim=16")
    with pytest.raises(
        acvi_flags.DecodeSettingError,
        match=r"--min_dec_steps=7 exceeds max_dec_steps=6 \(the run's\)",
    ):
        _run(root, *decode, "--min_dec_steps=7")
    with pytest.raises(acvi_flags.DecodeSettingError, match=r"max_dec_steps=6 \(phase 0-"):
        _run(root, "--mode=eval", decode[1], "--eval_max_batches=1", "--min_dec_steps=7")
    (tmp_path / "in.txt").write_text(raw[0]["article"] + "\n")
    for argv, match in (
        (["--min_dec_steps=7"], r"--min_dec_steps=7 exceeds max_dec_steps=6 \(the run's\)"),
        (["--max_dec_steps=3", "--min_dec_steps=4"], r"max_dec_steps=3 \(given\)"),
        (["--beam_size=40"], "--beam_size=40 proposes 80 candidates"),
    ):
        argv += ["--input=%s" % (tmp_path / "in.txt"), "--output=%s" % (tmp_path / "out.txt")]
        config = config_lib.parse(
            summarize.define_flags, ["x", "--log_root=%s" % root, "--exp_name=run", *argv]
        )
        with pytest.raises(acvi_flags.DecodeSettingError, match=match):
            summarize.run(config)


def test_a_run_without_a_record_takes_the_flags_and_names_a_mismatch(
    trained, tmp_path, absl_caplog
):
    root, _, corpus, _ = trained
    shutil.copytree(root / "run" / "train", tmp_path / "run" / "train")
    argv = ["--mode=decode", "--data_path=%s" % (corpus / "chunked" / "test_*")]
    argv += ["--vocab_path=%s" % (corpus / "vocab"), "--vocab_size=0", "--emb_dim=6"]
    tf_logger = logging.getLogger("tensorflow")
    tf_logger.addHandler(absl_caplog.handler)
    try:
        with pytest.raises(
            checkpoints.CheckpointMismatchError,
            match=r"model.ckpt-10 holds .* with shape .*: the run was trained with other model",
        ):
            _run(tmp_path, *argv, "--hidden_dim=16")
        gc.collect()  # the failed restore, which lists no value it left
    finally:
        tf_logger.removeHandler(absl_caplog.handler)
    assert "hparams.json is missing" in absl_caplog.text
    assert "could not be found" not in absl_caplog.text


def test_the_eval_job_reads_the_record_and_derives_the_phase_s_minimum(trained, absl_caplog):
    root, _, corpus, _ = trained
    # the run's --max_steps=10 tells the job where training ends: it scores step 10, stops
    data = "--data_path=%s" % (corpus / "chunked" / "test_*")
    loss = _run(root, "--mode=eval", data, "--eval_max_batches=1")
    assert loss > 0
    assert (
        "Sample summaries of phase 0-10: max_dec_steps=6 (the phase's), min_dec_steps=2 (derived)"
    ) in absl_caplog.text
    # again on the finished run: nothing left to score, nothing rescored
    best = root / "run" / "best" / "best.json"
    recorded = best.read_text()
    absl_caplog.clear()
    assert _run(root, "--mode=eval", data, "--eval_max_batches=1") == loss
    assert best.read_text() == recorded
    assert absl_caplog.messages[-1] == (
        "The eval job ends: %s records the score of step 10, the last of the run's training "
        "(its phases and --max_steps end at step 10); remove it to score again" % best
    )


def test_a_corpus_without_its_record_is_tokenised_as_before_records_with_a_warning(
    tmp_path, absl_caplog
):
    (tmp_path / "vocab").write_text("the 3\n")
    record, settings = serving.corpus_record(str(tmp_path / "vocab"))
    assert record == str(tmp_path / "corpus.json")
    assert settings == dict(tokenizer="treebank", lowercase=True)
    assert "if the corpus was built with another tokenizer, put the file back" in (absl_caplog.text)
