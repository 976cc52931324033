"""Atomic file output (a reader never sees a half-written file, a crash leaves the old
one), checked UTF-8 input, the JSON records the project reads back, the line-by-line
input and output of the commands that read raw text (a file, or standard input and
output for ``-``), and a file's content hash.

Every output of the project (``.bin`` chunks, decoded summaries, reports) goes through
``atomic_write``: the data is written to a temporary file in the target's folder, given
the permissions a plain ``open`` would give (0666 minus the umask), then renamed over
the target with ``os.replace``; a full disk is an ``OSError`` naming the target.
"""

import codecs
import contextlib
import fcntl
import glob
import hashlib
import json
import os
import shutil
import sys
import tempfile
from typing import IO, Any, Callable, Dict, Iterator, List, Optional, Sequence, Tuple, Type

from absl import logging

from acvi_tf import errors

# JSON's names of the types ``json.loads`` returns.
_JSON_TYPES = {dict: "object", list: "array", str: "string", int: "number", float: "number"}


class RecordError(errors.UserError, ValueError):
    """A JSON record the project wrote cannot be read back; the message names the file
    and the fix."""


def _default_mode():
    umask = os.umask(0)
    os.umask(umask)
    return 0o666 & ~umask


@contextlib.contextmanager
def atomic_write(path: str, binary: bool = False) -> Iterator[IO]:
    """A file object whose contents replace ``path`` when the ``with`` block succeeds.

    Args:
      path: the target file; its folder is created if missing.
      binary: open in binary mode (text mode is UTF-8).

    Yields:
      The open temporary file.

    Raises:
      OSError: ``path`` cannot be written; a full disk names ``path``.
    """
    handle = _temporary_beside(path, "wb" if binary else "w", None if binary else "utf-8")
    try:
        with handle:
            yield handle
        os.chmod(handle.name, _default_mode())
        os.replace(handle.name, path)
    except BaseException as e:
        if os.path.exists(handle.name):
            os.unlink(handle.name)
        if isinstance(e, OSError) and e.errno in errors.NO_SPACE and not e.filename:
            raise OSError(e.errno, e.strerror, path) from e
        raise


@contextlib.contextmanager
def named_as(path: str) -> Iterator[None]:
    """An ``OSError`` in the block names ``path`` (what the user gave) instead of the file
    the code made for it (a temporary file, a staging folder, a lock beside it).

    Args:
      path: the file or folder the error names.
    """
    try:
        yield
    except OSError as e:
        raise OSError(e.errno, e.strerror, path) from e


# The prefix of the temporary file an atomic write renames into place.
PARTIAL_PREFIX = ".partial-"


def remove_partials(directory: str) -> None:
    """Removes the temporary files that atomic writes killed before their rename left in
    ``directory`` (a command that writes there alone calls it before it starts), with one
    log line.

    Args:
      directory: the folder.
    """
    left = sorted(glob.glob(os.path.join(glob.escape(directory), PARTIAL_PREFIX + "*")))
    for path in left:
        os.remove(path)
    if left:
        logging.info(
            "removed %d unfinished file(s) of a write that was killed in %s", len(left), directory
        )


def _temporary_beside(path: str, mode: str, encoding: Optional[str]) -> IO:
    """An open temporary file in ``path``'s folder (created if missing); a folder that
    cannot be written is an ``OSError`` naming ``path``, not the temporary file."""
    directory = os.path.dirname(os.path.abspath(path))
    with named_as(path):
        os.makedirs(directory, exist_ok=True)
        return tempfile.NamedTemporaryFile(
            mode, dir=directory, delete=False, prefix=PARTIAL_PREFIX, encoding=encoding
        )


class OutputError(errors.UserError, ValueError):
    """A command's output file cannot be what the flags name; the message says why."""


# The files of a trained run (its record, best-model record, checkpoints and their
# index, its corpus's record) that no command's output may replace.
RUN_FILES = ("hparams.json", "best.json", "checkpoint", "corpus.json", "*.index", "*.data-*")


def run_files(run_dir: str, *more: str) -> List[str]:
    """The files of the trained run in ``run_dir`` (``RUN_FILES``, in any of its folders)
    and ``more`` (its vocabularies), which an output must not replace.

    Args:
      run_dir: the run's folder.
      *more: further files the run needs; empty ones are left out.
    """
    found = [
        path
        for pattern in RUN_FILES
        for path in glob.glob(os.path.join(glob.escape(run_dir), "**", pattern), recursive=True)
    ]
    return found + [path for path in more if path]


def _inside(path: str, folder: str) -> bool:
    """Whether ``path`` is in ``folder`` (at any depth), links resolved."""
    real, root = os.path.realpath(path), os.path.realpath(folder)
    return os.path.commonpath([real, root]) == root


def check_output(
    path: str,
    flag: str,
    inputs: Optional[Dict[str, str]] = None,
    protected: Sequence[str] = (),
) -> None:
    """Refuses now an output file that the command could write only after its work, or
    whose writing would destroy one of its inputs or of the run's files: a command checks
    its output before the work whose result it holds.

    Args:
      path: the file a command will write.
      flag: the flag that names it (``--output``).
      inputs: flag -> the files the command reads (``{"--input": ...}``).
      protected: the run's files (``run_files``); a folder among them, every path in it.

    Raises:
      OutputError: ``path`` is a folder, one of ``inputs`` or one of ``protected``.
      OSError: ``path``'s folder cannot be created or written; names ``path``.
    """
    if os.path.isdir(path):
        raise OutputError("%s=%s is a folder; give the path of a file" % (flag, path))

    def same(other):
        return (
            other
            and os.path.exists(other)
            and os.path.exists(path)
            and os.path.samefile(other, path)
        )

    for name, read in (inputs or {}).items():
        if same(read):
            raise OutputError(
                "%s=%s is the file %s reads; write to another file, or the outputs would "
                "replace what they come from" % (flag, path, name)
            )
    for kept in protected:
        if same(kept):
            raise OutputError(
                "%s=%s is %s, a file of the trained run or one it reads; write to another "
                "file, or the run would lose it" % (flag, path, kept)
            )
        if os.path.isdir(kept) and _inside(path, kept):
            raise OutputError(
                "%s=%s is in %s, a folder of the trained run or one it reads; write to "
                "another file, or the run would lose it" % (flag, path, kept)
            )
    handle = _temporary_beside(path, "wb", None)
    handle.close()
    os.unlink(handle.name)


def atomic_write_text(path: str, text: str) -> None:
    """Writes ``text`` to ``path`` atomically."""
    with atomic_write(path) as f:
        f.write(text)


@contextlib.contextmanager
def restored_on(path: str, refusals: Tuple[Type[BaseException], ...]) -> Iterator[None]:
    """Puts ``path`` back as it was before the ``with`` block (its bytes, or no file) when
    the block raises one of ``refusals``: what a command wrote before it found that it
    must refuse the folder (a training run's record, before its trainer refuses the
    folder's checkpoints) does not stay.

    Args:
      path: the file the block may write.
      refusals: the exceptions that mean the command refused the folder.
    """
    before = None
    if os.path.exists(path):
        with open(path, "rb") as f:
            before = f.read()
    try:
        yield
    except refusals:
        if before is None:
            if os.path.exists(path):
                os.unlink(path)
        else:
            with atomic_write(path, binary=True) as f:
                f.write(before)
        raise


@contextlib.contextmanager
def undone_on(
    folder: str,
    refusals: Tuple[Type[BaseException], ...],
    spared: Tuple[Type[BaseException], ...] = (),
    keep: Callable[[], bool] = lambda: False,
) -> Iterator[None]:
    """Removes what the ``with`` block added to ``folder`` (the folder itself, and the
    folders above it, where the block made them) when the block raises one of
    ``refusals`` but not of ``spared``, and ``keep()`` is false: a training run refused
    for its data or vocabulary before it saved anything leaves no record, event file or
    empty folder behind. What the folders held before the block stays as it was.

    Args:
      folder: the folder the block may create or add to.
      refusals: the exceptions that mean the command refused the run.
      spared: the refusals whose files are worth reading (a run that trained and failed).
      keep: true when the folder holds something a later command can use.
    """
    folder = os.path.abspath(folder)
    existed = os.path.isdir(folder)
    before = set(os.listdir(folder)) if existed else set()
    made, missing = [], folder  # the folders the block may make, innermost first
    while not os.path.isdir(missing):
        made.append(missing)
        missing = os.path.dirname(missing)
    try:
        yield
    except refusals as e:
        if not isinstance(e, spared) and os.path.isdir(folder) and not keep():
            for name in set(os.listdir(folder)) - before:
                path = os.path.join(folder, name)
                if os.path.isdir(path) and not os.path.islink(path):
                    shutil.rmtree(path, ignore_errors=True)
                else:
                    with contextlib.suppress(FileNotFoundError):
                        os.unlink(path)
            for made_folder in made:
                with contextlib.suppress(OSError):  # another process wrote there meanwhile
                    os.rmdir(made_folder)
        raise


def utf8_lines(path: str, error: Type[Exception]) -> Iterator[Tuple[int, str]]:
    """Yields ``(line_number, line)`` of a text file, each line checked as UTF-8.

    Lines end at ``"\\n"`` (kept). A byte order mark at the start of the file (Windows
    tools and Excel write one) is dropped. A line that is not UTF-8 raises ``error`` (an
    exception class) with a message naming the file, the line and the fix.
    """
    with open(path, "rb") as f:
        for number, raw in enumerate(f, start=1):
            if number == 1 and raw.startswith(codecs.BOM_UTF8):
                raw = raw[len(codecs.BOM_UTF8) :]
            try:
                yield number, raw.decode("utf-8")
            except UnicodeDecodeError as e:
                raise error(
                    "%s:%d: byte %d of the line is not UTF-8; re-encode the file as "
                    "UTF-8 (for example with iconv)" % (path, number, e.start + 1)
                ) from e


def read_json(path: str, fix: str, kind: type = dict, error: Type[Exception] = RecordError) -> Any:
    """A JSON record the project wrote (a run's ``hparams.json``, ``best.json``, a
    corpus's ``corpus.json``), read back.

    Args:
      path: the file.
      fix: what the user can do when it cannot be read (a killed write, an edit).
      kind: the type the record's top level must have.
      error: the exception class raised (an ``errors.UserError``).

    Returns:
      The parsed record.

    Raises:
      error: the file is not UTF-8, not JSON, or not of ``kind``; the message names the
        file, where it breaks and ``fix``.
      OSError: the file cannot be opened.
    """
    with open(path, "rb") as f:
        raw = f.read()
    try:
        record = json.loads(raw.decode("utf-8"))
    except UnicodeDecodeError as e:
        raise error("%s: byte %d is not UTF-8; %s" % (path, e.start + 1, fix)) from e
    except json.JSONDecodeError as e:
        raise error(
            "%s is not valid JSON (%s: line %d column %d; cut short or edited?); %s"
            % (path, e.msg, e.lineno, e.colno, fix)
        ) from e
    if not isinstance(record, kind):
        raise error(
            "%s holds a JSON %s where a JSON %s belongs; %s"
            % (path, _JSON_TYPES.get(type(record), "value"), _JSON_TYPES[kind], fix)
        )
    return record


def read_input_lines(path: str, error: Type[Exception]) -> List[str]:
    """The lines of a command's input: a file, or standard input for ``-``.

    Lines end at ``"\\n"`` (a ``"\\r"`` before it is dropped too); a final newline adds no
    empty line; a byte order mark at the start is dropped. A line that is not UTF-8 raises
    ``error`` naming the line.
    """
    if path == "-":
        raw, name = sys.stdin.buffer.read(), "<stdin>"
    else:
        with open(path, "rb") as f:
            raw, name = f.read(), path
    if raw.startswith(codecs.BOM_UTF8):
        raw = raw[len(codecs.BOM_UTF8) :]
    lines = raw.split(b"\n")
    if lines and lines[-1] == b"":
        lines.pop()
    decoded = []
    for number, line in enumerate(lines, start=1):
        try:
            decoded.append(line.decode("utf-8").rstrip("\r"))
        except UnicodeDecodeError as e:
            raise error(
                "%s:%d: byte %d is not UTF-8; re-encode the input as UTF-8"
                % (name, number, e.start + 1)
            ) from e
    return decoded


def write_output_lines(path: str, lines: List[str], inputs: List[str], what: str) -> None:
    """A command's output, one line for each of its input lines: to a file atomically
    (and a log line of what it holds), or to standard output for ``-``.

    Args:
      path: the output file, or ``-``.
      lines: the outputs, an empty one for each blank input line.
      inputs: the input lines, in order.
      what: what an output is, plural (``summaries``).
    """
    text = "".join(line + "\n" for line in lines)
    if path == "-":
        sys.stdout.write(text)
        sys.stdout.flush()
        return
    atomic_write_text(path, text)
    blank = sum(1 for line in inputs if not line.strip())
    kept = " (blank input lines stay blank: %d)" % blank if blank else ""
    logging.info("Wrote %d %s to %s%s", len(lines) - blank, what, path, kept)


def sha256(path: str) -> str:
    """The SHA-256 of a file's whole content, in hex, read in blocks of 1 MiB.

    Args:
      path: the file.

    Returns:
      64 hex digits.
    """
    digest = hashlib.sha256()
    with open(path, "rb") as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


class FolderInUseError(errors.UserError, RuntimeError):
    """Another trainer is writing the run's folder."""


def lock_beside(directory: str, job: str, part: str = ""):
    """Locks ``directory`` for this process with a lock file beside it
    (``.<name><part>.lock`` in its parent), which a command that replaces the folder
    leaves alone (``lock_file``).

    Args:
      directory: the folder the process writes.
      job: what the process is (``"decode"``), for the error message.
      part: what of the folder the lock guards (a shard's ``.shard-0-of-2``); "": all.

    Returns:
      The open lock file; keep it referenced as long as the lock should hold.

    Raises:
      FolderInUseError: another process holds the lock.
    """
    parent, name = os.path.split(os.path.abspath(directory))
    os.makedirs(parent, exist_ok=True)
    return lock_file(os.path.join(parent, ".%s%s.lock" % (name, part)), directory, job)


def lock_file(path: str, directory: str, job: str):
    """Locks ``path`` (created if missing) for this process, on behalf of ``directory``;
    released when the process exits, however it exits.

    Args:
      path: the lock file.
      directory: what it guards, for the error message.
      job: what the process is, for the error message.

    Returns:
      The open lock file; keep it referenced as long as the lock should hold.

    Raises:
      FolderInUseError: another process holds the lock.
      OSError: the lock file cannot be made (a folder the user may not write); names
        ``directory``, not the hidden lock file.
    """
    handle = locked(path, directory, job)
    handle.seek(0)
    handle.truncate()
    handle.write("pid %d" % os.getpid())
    handle.flush()
    return handle


def locked(path: str, directory: str, job: str):
    """``path`` opened and locked (``lock_file``'s arguments), its holder not written: a
    check that closes it at once leaves the holder's line alone."""
    with named_as(directory):
        handle = open(path, "a+", encoding="utf-8")
    try:
        fcntl.flock(handle, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        handle.seek(0)
        holder = handle.read().strip() or "another process"
        handle.close()
        raise FolderInUseError(
            "%s is being written by another %s (%s); wait for it to end, or use "
            "another folder" % (directory, job, holder)
        ) from None
    return handle
