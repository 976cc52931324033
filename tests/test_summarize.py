"""pointer_generator.summarize: summaries of raw text equal --mode=decode's on the same
articles, tokenised as the corpus was built."""

import json
import os
import subprocess
import sys

import pytest

from acvi_tf import config as config_lib
from acvi_tf.formats.bin_files import read_bin_file
from data_prep import summarization
from pointer_generator import run_summarization, summarize

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
WORDS = "the cat sat on a mat while dogs ran in parks and birds sang , near Rome .".split()


@pytest.fixture(scope="module")
def trained(tmp_path_factory):
    """A corpus built from raw JSON lines, a run trained on it, its test split decoded."""
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
    argv += ["--test_input=%s" % (root / "test.jsonl"), "--tokenizer=ptb"]
    summarization.build(config_lib.parse(summarization.define_flags, argv))
    common = [
        "--vocab_path=%s" % (corpus / "vocab"),
        "--vocab_size=0",
        "--log_root=%s" % root,
        "--exp_name=run",
        "--hidden_dim=8",
        "--emb_dim=6",
        "--batch_size=4",
        "--max_enc_steps=30",
        "--max_dec_steps=6",
        "--context=acvi",
    ]

    def run(*argv):
        config = config_lib.parse(run_summarization.define_flags, ["x", *common, *argv])
        return run_summarization.run(config)

    run("--data_path=%s" % (corpus / "chunked" / "train_*"), "--max_steps=3")
    run(
        "--mode=decode",
        "--single_pass",
        "--data_path=%s" % (corpus / "chunked" / "test_*"),
        "--beam_size=2",
        "--min_dec_steps=1",
        "--decode_batch_size=2",
    )
    [decode_dir] = [d for d in os.listdir(root / "run") if d.startswith("decode_")]
    return root, raw, corpus, root / "run" / decode_dir


def test_raw_text_summaries_equal_the_decode_of_the_same_articles(trained, tmp_path):
    root, raw, corpus, decode_dir = trained
    by_tokens = {}
    tokenize = summarize.corpus_tokenizer(str(corpus / "vocab"))
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
        "--min_dec_steps=1",
        "--decode_batch_size=2",
    ]
    summaries = summarize.run(config_lib.parse(summarize.define_flags, argv))
    decoded = [
        " ".join((decode_dir / "decoded" / ("%06d_decoded.txt" % i)).read_text().split())
        for i in range(len(test))
    ]
    assert summaries[: len(test)] == decoded and summaries[-1] == ""  # an empty line: ""
    assert (tmp_path / "out.txt").read_text().splitlines() == summaries


def test_standard_input_and_output_and_bad_bytes(trained, tmp_path):
    root, raw, _, _ = trained
    command = [sys.executable, "-m", "pointer_generator.summarize", "--log_root=%s" % root]
    command += ["--exp_name=run", "--beam_size=2", "--min_dec_steps=1"]
    done = subprocess.run(
        command,
        input=(raw[0]["article"] + "\n").encode(),
        capture_output=True,
        cwd=ROOT,
        check=False,
    )
    assert done.returncode == 0, done.stderr.decode()[-2000:]
    assert len(done.stdout.decode().splitlines()) == 1 and done.stdout.strip()
    done = subprocess.run(
        command, input=b"ok\ncaf\xe9\n", capture_output=True, cwd=ROOT, check=False
    )
    assert done.returncode == 2
    assert done.stderr.decode().strip().splitlines()[-1] == (
        "error: <stdin>:2: byte 4 is not UTF-8; re-encode the input as UTF-8"
    )
