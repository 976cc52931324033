"""acvi_tf.errors: a user's error is one line on stderr and exit status 2; a bug keeps
its traceback."""

import errno
import json
import os
import subprocess
import sys

import pytest
import tensorflow as tf
from absl import app, flags

from acvi_tf import config as config_lib
from acvi_tf import errors, files
from acvi_tf.formats import bin_files, nmt_text
from acvi_tf.training import trainer as trainer_lib
from pointer_generator import results_table
from pointer_generator import vocab as pg_vocab
from video_caption import data as video_data

from conftest import command

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
    assert code == 2 and err == (
        "error: %s: No such file or directory; check the path given for it, or run the "
        "command that writes it first\n" % (tmp_path / "vocab")
    )


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
    assert errors.flag_error_message(refused.value) == (
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
    assert errors.flag_error_message(refused.value) == (
        "--captions is required; give exactly one of --features or --videos "
        "(--helpshort lists the flags)"
    )


def test_a_bug_keeps_its_traceback(monkeypatch):
    def main(argv):
        raise ValueError("a bug")

    monkeypatch.setattr(sys, "argv", ["command"])
    with pytest.raises(ValueError, match="a bug"):
        errors.run(main)


def test_the_summarizer_reports_unusable_data_in_one_line(tmp_path, capsys, monkeypatch):
    """The batcher finds the data unusable once training has started (the run's record,
    event file and projector files written): the refused run leaves no folder."""
    bin_files.write_chunked(str(tmp_path), "train", [("", "<s> a </s>")] * 3, chunk_size=15)
    code, _, err = command(
        "pointer_generator.run_summarization",
        [
            "--data_path=%s" % (tmp_path / "train_*"),
            "--vocab_path=" + VOCAB,
            "--log_root=%s" % tmp_path,
            "--exp_name=exp",
            "--hidden_dim=8",
            "--emb_dim=4",
            "--max_steps=2",
        ],
        capsys,
        monkeypatch,
    )
    assert code == 2, err[-2000:]
    assert "Traceback" not in err
    last = err.strip().splitlines()[-1]
    assert last.startswith("error: %s" % (tmp_path / "train_000.bin"))
    assert "no usable example in 1 file(s)" in last
    assert sorted(os.listdir(tmp_path)) == ["train_000.bin"]


@pytest.mark.parametrize(
    "command, argv",
    [
        ("data_prep.pig_latin", ["--words_file={missing}", "--out_dir={out}"]),
        ("data_prep.wmt16", ["--train_prefix={missing}", "--out_dir={out}"]),
        ("pointer_generator.duc2004_eval", ["--decode_dir={missing}", "--references={missing}"]),
        ("pointer_generator.results_table", ["--column=model={missing}"]),
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


SAMPLES = os.path.join(ROOT, "data_prep", "samples")
PIG_LATIN = os.path.join(SAMPLES, "pig_latin")
SHAPES = os.path.join(SAMPLES, "moving_shapes")
NMT_RUN = ["--src=src", "--tgt=tgt", "--num_units=4", "--out_dir={tmp}/nmt"]
NMT_DATA = ["--train_prefix=%s/train" % PIG_LATIN, "--dev_prefix=%s/dev" % PIG_LATIN]
CAPTIONER = ["--data_dir=" + SHAPES, "--features=%s/features.h5" % SHAPES, "--out_dir={tmp}/vc"]


def _bad_inputs(tmp):
    """The files the user errors below read: empty, header-only, cut short."""
    for name, content in (
        ("vocab", ""),
        ("empty.src", ""),
        ("empty.tgt", ""),
        ("header.tsv", "article\tabstract\n"),
        ("pairs.tsv", "en\tit\n"),
        ("captions.csv", "clip,caption\n"),
        ("nmt/best/best.json", '{"score": 3'),
        ("pg/run/hparams.json", '{"hidden_dim": '),
        ("export/saved_model.pb", ""),
        ("nmtrun/hparams.json", json.dumps(dict(vocab_prefix=str(tmp / "corpus" / "vocab")))),
        ("corpus/corpus.json", '{"tokenizer": '),
        (
            "nmtmoved/hparams.json",
            json.dumps(dict(vocab_prefix=str(tmp / "gone"), src="s", tgt="t")),
        ),
        ("vcmoved/hparams.json", json.dumps(dict(data_dir=str(tmp / "gone"), features="f.h5"))),
        ("vcolder/hparams.json", json.dumps(dict(data_dir="gone", features="f.h5"))),
        ("pgmoved/run/hparams.json", json.dumps(dict(vocab_path=str(tmp / "gone")))),
        ("store/features.json", '{"cnn": '),
        ("videos/clip.mp4", ""),
        ("shapes/vocab.txt", open(os.path.join(SHAPES, "vocab.txt"), encoding="utf-8").read()),
        *(
            ("noval/%s" % name, open(os.path.join(SHAPES, name), encoding="utf-8").read())
            for name in ("vocab.txt", "train.jsonl", "test.jsonl")
        ),
        ("noval/val.jsonl", ""),  # as data_prep.captions --allow_empty=val writes it
        (
            "shapes/train.jsonl",
            json.dumps(dict(clip="a", vid="v", captions=["a", ""], references=["a"])) + "\n",
        ),
    ):
        path = tmp / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(content, encoding="utf-8")


# (entry point, its arguments, what the one line says): each kind of user error
USER_ERRORS = [
    ("pointer_generator.run_summarization", ["--lr=0"], "--lr must be > 0"),
    (
        "pointer_generator.run_summarization",
        ["--transformer_dropout=1"],
        "--transformer_dropout must be in [0, 1)",
    ),
    (
        "pointer_generator.run_summarization",
        ["--mode=decode", "--data_path={tmp}/x", "--vocab_path=" + VOCAB, "--log_root={tmp}"],
        "no checkpoint in {tmp}/train; train first (--mode=train)",
    ),
    (  # refused before the run's folder is made
        "pointer_generator.run_summarization",
        ["--data_path={tmp}/none_*", "--vocab_path=" + VOCAB, "--log_root={tmp}/built"],
        "--data_path='{tmp}/none_*' matches no file; give a glob of .bin chunks",
    ),
    (
        "pointer_generator.run_summarization",
        ["--data_path={tmp}/x", "--vocab_path={tmp}/vocab", "--log_root={tmp}", "--exp_name=e"],
        "{tmp}/vocab has no word besides the 4 special tokens",
    ),
    (
        "pointer_generator.summarize",
        ["--log_root={tmp}/pg", "--exp_name=run"],
        "hparams.json is not valid JSON",
    ),
    (  # the vocabulary the run's record names is gone
        "pointer_generator.summarize",
        ["--log_root={tmp}/pgmoved", "--exp_name=run", "--input={tmp}/pairs.tsv"],
        "{tmp}/gone: no such file: the vocabulary the run trained with, which "
        "{tmp}/pgmoved/run/hparams.json names (--vocab_path={tmp}/gone); put it back there",
    ),
    (
        "pointer_generator.export",
        ["--log_root={tmp}/pg", "--exp_name=run", "--export_dir={tmp}/export"],
        "{tmp}/export exists; give a new --export_dir",
    ),
    ("nmt.run_nmt", ["--learning_rate=0", "--out_dir={tmp}"], "--learning_rate must be > 0"),
    ("nmt.run_nmt", ["--dropout=1.0", "--out_dir={tmp}"], "--dropout must be in [0, 1)"),
    (
        "nmt.run_nmt",
        [*NMT_RUN, "--vocab_prefix={tmp}/empty", *NMT_DATA],
        "{tmp}/empty.src has no word besides the 3 special tokens",
    ),
    (
        "nmt.run_nmt",
        [*NMT_RUN, "--vocab_prefix={tmp}/novocab", *NMT_DATA],
        "{tmp}/novocab.src: no such file (--vocab_prefix={tmp}/novocab, with --src=src and "
        "--tgt=tgt); give the prefix of the two vocabulary files",
    ),
    (
        "nmt.run_nmt",
        [*NMT_RUN, "--vocab_prefix=%s/vocab" % PIG_LATIN, *NMT_DATA],
        "{tmp}/nmt/best/best.json is not valid JSON",
    ),
    (
        "nmt.run_nmt",
        [*NMT_RUN[:-1], "--out_dir={tmp}/nmt2", "--vocab_prefix=%s/vocab" % PIG_LATIN]
        + ["--train_prefix={tmp}/empty", "--dev_prefix=%s/dev" % PIG_LATIN],
        "no training examples in {tmp}/empty.src and {tmp}/empty.tgt",
    ),
    (
        "nmt.run_nmt",
        [*NMT_RUN[:-1], "--out_dir={tmp}/nmt3", "--vocab_prefix=%s/vocab" % PIG_LATIN]
        + ["--train_prefix=%s/train" % PIG_LATIN, "--dev_prefix={tmp}/nodev"],
        "--dev_prefix={tmp}/nodev: {tmp}/nodev.src: no such file; check the path",
    ),
    (
        "nmt.translate",
        ["--out_dir={tmp}/none", "--input={tmp}/empty.src"],
        "{tmp}/none/hparams.json is missing",
    ),
    (  # the files the run's record names are gone
        "nmt.translate",
        ["--out_dir={tmp}/nmtmoved", "--input={tmp}/pairs.tsv"],
        "{tmp}/gone.s: no such file: the vocabulary the run trained with, which "
        "{tmp}/nmtmoved/hparams.json names (--vocab_prefix={tmp}/gone); put it back there",
    ),
    ("nmt.export", ["--out_dir={tmp}/nmt", "--export_dir={tmp}/export"], "{tmp}/export exists"),
    (
        "nmt.export",
        ["--out_dir={tmp}/nmtrun", "--export_dir={tmp}/new"],
        "{tmp}/corpus/corpus.json is not valid JSON",
    ),
    (
        "video_caption.features",
        ["--video_dir={tmp}/videos", "--output={tmp}/store"],
        "{tmp}/store/features.json is not valid JSON",
    ),
    ("video_caption.run_captioning", ["--learning_rate=0"], "--learning_rate must be > 0"),
    ("video_caption.run_captioning", ["--dropout=1"], "--dropout must be in [0, 1)"),
    (
        "video_caption.run_captioning",
        [*CAPTIONER, "--vocab_size=3"],
        "--vocab_size=3 holds only the 4 special tokens",
    ),
    (
        "video_caption.run_captioning",
        ["--data_dir={tmp}/shapes", *CAPTIONER[1:]],
        "{tmp}/shapes/train.jsonl:1: clip a has an empty caption",
    ),
    (
        "video_caption.run_captioning",
        ["--data_dir={tmp}/noval", *CAPTIONER[1:]],
        "{tmp}/noval/val.jsonl holds no clips",
    ),
    ("video_caption.caption", ["--out_dir={tmp}/none"], "{tmp}/none/hparams.json is missing"),
    (  # a record written before path flags were recorded whole
        "video_caption.caption",
        ["--out_dir={tmp}/vcolder", "--input={tmp}/pairs.tsv"],
        "(--data_dir=gone); the record names it relative to the folder the training ran in: "
        "run this command from there",
    ),
    (
        "video_caption.export",
        ["--out_dir={tmp}/vcmoved", "--export_dir={tmp}/vcexport"],
        "{tmp}/gone/vocab.txt: no such file: the vocabulary of the corpus the run trained "
        "on, which {tmp}/vcmoved/hparams.json names (--data_dir={tmp}/gone); put it back there",
    ),
    (
        "video_caption.export",
        ["--out_dir={tmp}/vc", "--export_dir={tmp}/export"],
        "{tmp}/export exists",
    ),
    (
        "data_prep.summarization",
        ["--input={tmp}/header.tsv", "--out_dir={tmp}/built"],
        "{tmp}/header.tsv holds no pair (not one row under its header)",
    ),
    (
        "data_prep.translation",
        ["--src=en", "--tgt=it", "--input={tmp}/pairs.tsv", "--out_dir={tmp}/built"],
        "{tmp}/pairs.tsv holds no pair (not one row under its header)",
    ),
    (
        "data_prep.wmt16",
        ["--src=src", "--tgt=tgt", "--train_prefix={tmp}/empty", "--out_dir={tmp}/built"],
        "would write 0 pairs to train (train 0, dev 0, test 0)",
    ),
    (
        "data_prep.captions",
        ["--captions={tmp}/captions.csv", "--features={tmp}", "--output_dir={tmp}/built"],
        "would write 0 clips to train, val and test",
    ),
    (
        "data_prep.debian_descriptions",
        ["--translation_file={tmp}/empty.src", "--out_dir={tmp}/built"],
        "would write 0 pairs to train, val and test",
    ),
    (
        "data_prep.debian_translations",
        ["--en_file={tmp}/empty.src", "--lang_file={tmp}/empty.tgt", "--out_dir={tmp}/built"],
        "would write 0 pairs to train, dev and test",
    ),
    (
        "data_prep.pig_latin",
        ["--words_file={tmp}/empty.src", "--out_dir={tmp}/built"],
        "would write 0 words to train, dev and test",
    ),
    (
        "data_prep.cnn_dailymail",
        ["--url_lists_dir={tmp}", "--cnn_stories_dir={tmp}/none", "--out_dir={tmp}/built"],
        "--cnn_stories_dir {tmp}/none is not a directory",
    ),
    (
        "data_prep.duc2004",
        ["--docs_dir={tmp}/none", "--models_dir={tmp}", "--out_dir={tmp}/built"],
        "cannot list {tmp}/none",
    ),
    (
        "data_prep.msvd",
        [
            "--corpus_csv={tmp}/captions.csv",
            "--mapping={tmp}/empty.src",
            "--output_dir={tmp}/built",
        ],
        "{tmp}/captions.csv: the header has no column 'VideoID'",
    ),
    ("pointer_generator.lead_baseline", [], "--data_path, --vocab_path and --out_dir are required"),
    ("pointer_generator.see_checkpoint", [], "--tf1_checkpoint is required"),
    (
        "video_caption.features",
        ["--video_dir={tmp}/none", "--output={tmp}/built"],
        "the video folder {tmp}/none is not a folder",
    ),
    (
        "acvi_tf.inference.compare",
        ["--a={tmp}/empty.src", "--b={tmp}/none"],
        "{tmp}/none does not exist; give a decode folder or a translation file",
    ),
    (
        "pointer_generator.duc2004_eval",
        ["--decode_dir={tmp}/none", "--references={tmp}/none"],
        "cannot read --references {tmp}/none",
    ),
]


@pytest.mark.parametrize(
    "module, argv, message",
    USER_ERRORS,
    ids=["%s-%d" % (e[0], i) for i, e in enumerate(USER_ERRORS)],
)
def test_every_entry_point_reports_a_user_error_in_one_line(
    tmp_path, capsys, monkeypatch, module, argv, message
):
    _bad_inputs(tmp_path)
    found = _tree(tmp_path)
    argv = [a.format(tmp=tmp_path) for a in argv]
    code, _, err = command(module, argv, capsys, monkeypatch)
    lines = [line for line in err.splitlines() if not line.startswith(("I", "W"))]
    assert code == 2 and len(lines) == 1, err[-3000:]
    assert lines[0].startswith("error: ") and message.format(tmp=tmp_path) in lines[0], lines[0]
    assert _tree(tmp_path) == found  # a refused command leaves the folders as it found them


def _tree(folder):
    """Every file and folder under ``folder``, with each file's bytes, but the hidden lock
    files a builder keeps beside its output folder (``files.lock_beside``)."""
    tree = {}
    for parent, names, files_here in os.walk(folder):
        for name in names:
            tree[os.path.join(parent, name)] = None
        for name in files_here:
            if name.startswith(".") and name.endswith(".lock"):
                continue
            with open(os.path.join(parent, name), "rb") as f:
                tree[os.path.join(parent, name)] = f.read()
    return tree


# Each host's training command on a new folder, the run's folder and the one it locks.
TRAINERS = [
    (
        "pointer_generator.run_summarization",
        [
            "--data_path=%s/chunked/train_*" % os.path.dirname(VOCAB),
            "--vocab_path=" + VOCAB,
            "--log_root={tmp}",
            "--exp_name=exp",
            "--hidden_dim=8",
            "--emb_dim=4",
        ],
        "exp/train",
    ),
    ("nmt.run_nmt", [*NMT_RUN, "--vocab_prefix=%s/vocab" % PIG_LATIN, *NMT_DATA], "nmt"),
    ("video_caption.run_captioning", CAPTIONER, "vc/train"),
]


def _beside_a_trainer(tmp_path, capsys, monkeypatch, module, argv, locked):
    """Runs the training command ``module`` while another trainer holds ``locked`` (under
    ``tmp_path``); checks that it stops in one line naming the other trainer and returns
    the folders as they were while the other trainer held the lock."""
    other = trainer_lib.lock_folder(str(tmp_path / locked))
    found = _tree(tmp_path)
    try:
        code, _, err = command(module, [a.format(tmp=tmp_path) for a in argv], capsys, monkeypatch)
    finally:
        other.close()
    assert code == 2 and "is being written by another trainer" in err.splitlines()[-1], err
    return found


@pytest.mark.parametrize("module, argv, locked", TRAINERS, ids=[t[0] for t in TRAINERS])
def test_a_trainer_locked_out_of_a_new_folder_adds_no_event_file_to_it(
    tmp_path, capsys, monkeypatch, module, argv, locked
):
    """Two trainers started together on a new folder: the other one takes the lock after
    this one's first check of it; this one stops in one line and leaves no event file
    among the other's."""
    monkeypatch.setattr(trainer_lib, "refuse_in_use", lambda *args, **kwargs: None)
    _beside_a_trainer(tmp_path, capsys, monkeypatch, module, argv, locked)
    events = [n for _, _, names in os.walk(tmp_path) for n in names if "tfevents" in n]
    assert events == []


@pytest.mark.parametrize("module, argv, locked", TRAINERS, ids=[t[0] for t in TRAINERS])
def test_a_second_trainer_of_a_held_folder_is_refused_before_it_writes(
    tmp_path, capsys, monkeypatch, module, argv, locked
):
    """A trainer holds the run's folder: another one started on it stops in one line
    before it restores or writes anything (its record, its event file)."""
    found = _beside_a_trainer(tmp_path, capsys, monkeypatch, module, argv, locked)
    assert _tree(tmp_path) == found


def test_a_full_disk_is_one_line_naming_the_folder(tmp_path, capsys, monkeypatch):
    """TensorFlow's checkpoint write and the project's own writes that find no room end
    in one line naming where; a GPU out of memory stays a traceback."""
    written = tmp_path / "train" / "model.ckpt-4_temp" / "part-00000-of-00001.data-00000-of-00001"
    message = "{{function_node __wrapped__SaveV2}} %s.tempstate1; No space left on device"

    def checkpoint(argv):
        raise tf.errors.ResourceExhaustedError(None, None, message % written + " [Op:SaveV2]")

    def metrics(argv):
        with files.atomic_write(str(tmp_path / "metrics.json")) as f:
            f.write("{")
            raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))

    fix = ": No space left on device; free space there, or write to a folder on another disk\n"
    assert _run(checkpoint, capsys, monkeypatch) == (2, "error: %s%s" % (tmp_path / "train", fix))
    assert _run(metrics, capsys, monkeypatch) == (
        2,
        "error: %s%s" % (tmp_path / "metrics.json", fix),
    )
    assert os.listdir(tmp_path) == []  # the partial metrics.json is removed

    def out_of_memory(argv):
        raise tf.errors.ResourceExhaustedError(None, None, "OOM when allocating tensor")

    with pytest.raises(tf.errors.ResourceExhaustedError):
        errors.run(out_of_memory)


def test_the_results_table_names_a_metrics_file_cut_short(tmp_path):
    (tmp_path / "metrics.json").write_text('{"rouge_1', encoding="utf-8")
    config = config_lib.parse(results_table.define_flags, ["x", "--column=acvi=%s" % tmp_path])
    with pytest.raises(
        files.RecordError, match="%s is not valid JSON" % (tmp_path / "metrics.json")
    ):
        results_table.run(config)
