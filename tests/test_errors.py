"""acvi_tf.errors: a user's error is one line on stderr and exit status 2; a bug keeps
its traceback."""

import os
import subprocess
import sys

import pytest
from absl import app, flags

from acvi_tf import errors
from acvi_tf.formats import bin_files, nmt_text
from pointer_generator import vocab as pg_vocab
from video_caption import data as video_data

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
VOCAB = os.path.join(ROOT, "data_prep", "samples", "debian_descriptions", "vocab")


def _run(main, capsys, monkeypatch):
    monkeypatch.setattr(sys, "argv", ["command"])
    with pytest.raises(SystemExit) as exit_info:
        errors.run(main)
    return exit_info.value.code, capsys.readouterr().err


def test_a_user_error_is_one_line_and_status_2(capsys, monkeypatch):
    def main(argv):
        raise bin_files.BinFileError("a.bin: record 3 is cut short;\nrebuild it")

    code, err = _run(main, capsys, monkeypatch)
    assert code == 2 and err == "error: a.bin: record 3 is cut short; rebuild it\n"


def test_a_missing_file_is_named(capsys, monkeypatch, tmp_path):
    def main(argv):
        open(tmp_path / "vocab", encoding="utf-8")

    code, err = _run(main, capsys, monkeypatch)
    assert code == 2 and err == "error: %s: No such file or directory\n" % (tmp_path / "vocab")


def test_a_usage_error_is_one_line_without_the_help_text(capsys, monkeypatch):
    def main(argv):
        raise app.UsageError("--data_path, --vocab_path and --out_dir are required")

    code, err = _run(main, capsys, monkeypatch)
    assert code == 2 and err == "error: --data_path, --vocab_path and --out_dir are required\n"


def test_a_flag_typo_is_one_line_and_status_2(capsys, monkeypatch):
    monkeypatch.setattr(sys, "argv", ["command", "--no_such_flag=1"])
    with pytest.raises(SystemExit) as exit_info:
        errors.run(lambda argv: None)
    assert exit_info.value.code == 2
    assert capsys.readouterr().err == (
        "error: Unknown command line flag 'no_such_flag' (--helpshort lists the flags)\n"
    )


def test_required_flags_left_out_are_named_in_one_sentence():
    fv = flags.FlagValues()
    for name in ("src", "tgt", "out_dir", "beam"):
        flags.DEFINE_string(name, None, "", flag_values=fv)
    flags.mark_flags_as_required(["src", "tgt", "out_dir"], flag_values=fv)
    with pytest.raises(flags.Error) as refused:
        fv(["command", "--beam=x"])
    assert errors._flag_error_message(refused.value) == (
        "--src, --tgt and --out_dir are required (--helpshort lists the flags)"
    )


def test_one_of_a_group_left_out_is_named_with_the_required_flags():
    fv = flags.FlagValues()
    for name in ("captions", "features", "videos"):
        flags.DEFINE_string(name, None, "", flag_values=fv)
    flags.mark_flag_as_required("captions", flag_values=fv)
    flags.mark_flags_as_mutual_exclusive(["features", "videos"], required=True, flag_values=fv)
    with pytest.raises(flags.Error) as refused:
        fv(["command"])
    assert errors._flag_error_message(refused.value) == (
        "--captions is required; give exactly one of --features or --videos "
        "(--helpshort lists the flags)"
    )


def test_a_bug_keeps_its_traceback(monkeypatch):
    def main(argv):
        raise ValueError("a bug")

    monkeypatch.setattr(sys, "argv", ["command"])
    with pytest.raises(ValueError, match="a bug"):
        errors.run(main)


def test_the_summarizer_reports_unusable_data_in_one_line(tmp_path):
    bin_files.write_chunked(str(tmp_path), "train", [("", "<s> a </s>")] * 3, chunk_size=15)
    result = subprocess.run(
        [
            sys.executable,
            "-m",
            "pointer_generator.run_summarization",
            "--data_path=%s" % (tmp_path / "train_*"),
            "--vocab_path=" + VOCAB,
            "--log_root=%s" % tmp_path,
            "--exp_name=exp",
            "--hidden_dim=8",
            "--emb_dim=4",
            "--max_steps=2",
        ],
        cwd=ROOT,
        capture_output=True,
        text=True,
        check=False,
    )
    assert result.returncode == 2, result.stderr[-2000:]
    assert "Traceback" not in result.stderr
    last = result.stderr.strip().splitlines()[-1]
    assert last.startswith("error: %s" % (tmp_path / "train_000.bin"))
    assert "no usable example in 1 file(s)" in last


@pytest.mark.parametrize(
    "command, argv",
    [
        ("data_prep.pig_latin", ["--words_file={missing}", "--out_dir={out}"]),
        ("data_prep.wmt16", ["--train_prefix={missing}", "--out_dir={out}"]),
        ("pointer_generator.duc2004_eval", ["--decode_dir={missing}", "--references={missing}"]),
        ("pointer_generator.results_table", ["model={missing}"]),
    ],
)
def test_a_builder_or_tool_reports_a_missing_file_in_one_line(tmp_path, command, argv):
    missing = str(tmp_path / "missing")
    argv = [a.format(missing=missing, out=tmp_path / "out") for a in argv]
    result = subprocess.run(
        [sys.executable, "-m", command, *argv],
        cwd=ROOT,
        capture_output=True,
        text=True,
        check=False,
    )
    assert result.returncode == 2, result.stderr[-2000:]
    assert "Traceback" not in result.stderr
    last = result.stderr.strip().splitlines()[-1]
    assert last.startswith("error: ") and missing in last, last


def _nmt_vocab(path, max_size):
    assert not max_size  # NMT's vocabulary is the whole file
    return nmt_text.check_vocab(path, os.path.dirname(path) + "/out")


@pytest.mark.parametrize(
    "read, error, line, max_size",
    [
        (pg_vocab.Vocab, pg_vocab.VocabError, "the 9", 4),
        (video_data.Vocab, video_data.DataError, "the 9", 3),
        (_nmt_vocab, nmt_text.NmtDataError, "the", 0),
    ],
    ids=["summarizer", "captioner", "nmt"],
)
def test_a_vocabulary_needs_a_word_besides_the_special_tokens(
    tmp_path, read, error, line, max_size
):
    """Every host refuses a vocabulary of special tokens only (a model would map every
    word to the unknown one), from the file or from --vocab_size, with one rule."""
    path = tmp_path / "vocab"
    path.write_text("", encoding="utf-8")
    with pytest.raises(error, match="vocab has no word besides the"):
        read(str(path), 0)
    path.write_text(line + "\n", encoding="utf-8")
    read(str(path), 0)
    if max_size:
        with pytest.raises(error, match="--vocab_size=%d holds only" % max_size):
            read(str(path), max_size)
        read(str(path), max_size + 2)
