"""Atomic writes keep the old file on failure and give normal permissions."""

import os
import re
import stat

import pytest

from acvi_tf import errors, files
from acvi_tf.inference import commands

from conftest import no_writes_in


def test_atomic_write_replaces_only_on_success(tmp_path):
    target = tmp_path / "sub" / "out.txt"
    files.atomic_write_text(str(target), "first\n")
    assert target.read_text() == "first\n"
    with pytest.raises(RuntimeError):
        with files.atomic_write(str(target)) as f:
            f.write("half a")
            raise RuntimeError("crash while writing")
    assert target.read_text() == "first\n"
    assert os.listdir(target.parent) == ["out.txt"]  # no partial file left


def test_atomic_write_uses_the_umask_like_open(tmp_path):
    old = os.umask(0o022)
    try:
        files.atomic_write_text(str(tmp_path / "a"), "x")
        with files.atomic_write(str(tmp_path / "b"), binary=True) as f:
            f.write(b"\x00\x01")
    finally:
        os.umask(old)
    assert stat.S_IMODE(os.stat(tmp_path / "a").st_mode) == 0o644
    assert (tmp_path / "b").read_bytes() == b"\x00\x01"


def test_output_lines_log_what_they_hold(tmp_path, absl_caplog):
    """One output line for each input line; the log counts the outputs apart from the
    empty lines kept for blank input lines."""
    path = str(tmp_path / "out.txt")
    files.write_output_lines(path, ["a b", "", "c"], ["x y", " ", "z"], "summaries")
    assert open(path).read() == "a b\n\nc\n"
    assert absl_caplog.messages[-1] == (
        "Wrote 2 summaries to %s (blank input lines stay blank: 1)" % path
    )
    files.write_output_lines(path, ["a"], ["x"], "captions")
    assert absl_caplog.messages[-1] == "Wrote 1 captions to %s" % path


@pytest.mark.parametrize(
    "content, message",
    [
        (
            b'{"score": 3',
            r"best.json is not valid JSON \(Expecting ',' delimiter: line 1 column 12",
        ),
        (b"", r"best.json is not valid JSON \(Expecting value: line 1 column 1"),
        (b'{"w": "\xff"}', r"best.json: byte 8 is not UTF-8"),
        (b"[1, 2]", r"best.json holds a JSON array where a JSON object belongs"),
    ],
)
def test_a_record_that_cannot_be_read_back_is_one_error_naming_it(tmp_path, content, message):
    path = tmp_path / "best.json"
    path.write_bytes(content)
    with pytest.raises(files.RecordError, match=message + r".*; delete it$"):
        files.read_json(str(path), "delete it")
    path.write_text('{"score": 3}')
    assert files.read_json(str(path), "delete it") == {"score": 3}


def test_a_refused_folder_gets_its_file_back_as_it_was(tmp_path):
    path = tmp_path / "hparams.json"
    for before in (None, b'{"hidden_dim": 8}'):
        if before is not None:
            path.write_bytes(before)
        with pytest.raises(KeyError):
            with files.restored_on(str(path), (KeyError,)):
                files.atomic_write_text(str(path), '{"hidden_dim": 16}')
                raise KeyError("refused")
        assert (path.read_bytes() if path.exists() else None) == before
    with pytest.raises(ValueError):  # not a refusal: what the block wrote stays
        with files.restored_on(str(path), (KeyError,)):
            files.atomic_write_text(str(path), "new")
            raise ValueError("a crash")
    assert path.read_text() == "new"


def _add_files(run):
    os.makedirs(run / "train", exist_ok=True)
    (run / "hparams.json").write_text("{}")
    (run / "train" / "events").write_text("")


def test_a_refused_new_run_leaves_what_the_folder_held_before(tmp_path):
    run = tmp_path / "run"
    with pytest.raises(KeyError):  # a new folder goes again, and those made above it
        with files.undone_on(str(tmp_path / "logs" / "run"), (KeyError,)):
            _add_files(tmp_path / "logs" / "run")
            raise KeyError("refused")
    assert os.listdir(tmp_path) == []
    run.mkdir()
    (run / "notes.txt").write_text("mine")
    with pytest.raises(KeyError):  # what the folder held stays
        with files.undone_on(str(run), (KeyError,)):
            _add_files(run)
            raise KeyError("refused")
    assert os.listdir(run) == ["notes.txt"]
    for error, spared, keep in (
        (ValueError, (), False),  # not a refusal
        (KeyError, (KeyError,), False),  # a refusal whose files are worth reading
        (KeyError, (), True),  # the folder holds what a later command uses
    ):
        with pytest.raises(error):
            with files.undone_on(str(run), (KeyError,), spared, keep=lambda: keep):
                _add_files(run)
                raise error("failed")
        assert sorted(os.listdir(run)) == ["hparams.json", "notes.txt", "train"]
        (run / "hparams.json").unlink()
        (run / "train" / "events").unlink()
        (run / "train").rmdir()


def test_a_byte_order_mark_at_the_start_is_dropped(tmp_path, monkeypatch):
    path = tmp_path / "in.txt"
    path.write_bytes(b"\xef\xbb\xbfen\tit\r\nsecond\xef\xbb\xbf\n")
    assert list(files.utf8_lines(str(path), ValueError)) == [
        (1, "en\tit\r\n"),
        (2, "second\ufeff\n"),  # only the file's first bytes are a mark
    ]
    assert files.read_input_lines(str(path), ValueError) == ["en\tit", "second\ufeff"]


def test_a_folder_that_cannot_be_written_is_named_by_the_target_with_a_fix(
    tmp_path, monkeypatch, capsys
):
    no_writes_in(monkeypatch, tmp_path)
    target = str(tmp_path / "out.txt")
    with pytest.raises(PermissionError) as raised:
        files.atomic_write_text(target, "x")
    assert raised.value.filename == target
    with pytest.raises(SystemExit) as stop:
        errors.report(raised.value)
    assert stop.value.code == 2
    assert capsys.readouterr().err == (
        "error: %s: Permission denied; make its folder writable, or write to another "
        "folder\n" % target
    )


def test_an_output_that_cannot_be_written_is_refused_before_the_work(tmp_path, monkeypatch):
    (tmp_path / "in.txt").write_text("a\nb\n")
    out = tmp_path / "out"
    out.mkdir()
    no_writes_in(monkeypatch, out)
    converted = []
    with pytest.raises(PermissionError, match="out.txt"):
        commands.map_lines(
            str(tmp_path / "in.txt"), str(out / "out.txt"), converted.extend, "copies"
        )
    assert converted == [] and os.listdir(out) == []
    commands.map_lines(str(tmp_path / "in.txt"), str(tmp_path / "ok.txt"), list, "copies")
    assert (tmp_path / "ok.txt").read_text() == "a\nb\n"
    # an output that is a folder, or the input itself (by another path too)
    for output, message in (
        (tmp_path, "--output=%s is a folder; give the path of a file" % tmp_path),
        (
            tmp_path / "." / "in.txt",
            "--output=%s is the file --input reads; write to another file"
            % (tmp_path / "." / "in.txt"),
        ),
    ):
        with pytest.raises(files.OutputError, match="^" + re.escape(message)):
            commands.map_lines(str(tmp_path / "in.txt"), str(output), converted.extend, "copies")
    assert converted == [] and (tmp_path / "in.txt").read_text() == "a\nb\n"
    # nor a file of the trained run: its record, its checkpoints and index, a vocabulary
    run = tmp_path / "run"
    for name in (
        "hparams.json",
        "best/best.json",
        "best/ckpt-3.index",
        "ckpt-3.data-00000-of-00001",
        "checkpoint",
    ):
        (run / name).parent.mkdir(parents=True, exist_ok=True)
        (run / name).write_text("kept")
    (tmp_path / "vocab.de").write_text("kept")
    protected = files.run_files(str(run), str(tmp_path / "vocab.de"), "")
    assert len(protected) == 6
    for kept in protected:
        with pytest.raises(
            files.OutputError, match="a file of the trained run or one it reads; write to another"
        ):
            commands.map_lines(
                str(tmp_path / "in.txt"), kept, converted.extend, "copies", protected
            )
        assert converted == [] and open(kept).read() == "kept"
    commands.map_lines(str(tmp_path / "in.txt"), str(run / "out.txt"), list, "copies", protected)
