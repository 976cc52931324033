"""Atomic file output (a reader never sees a half-written file, a crash leaves the old
one) and checked UTF-8 input.

Every output of the project (``.bin`` chunks, decoded summaries, reports) goes through
``atomic_write``: the data is written to a temporary file in the target's folder, given
the permissions a plain ``open`` would give (0666 minus the umask), then renamed over
the target with ``os.replace``.
"""

import contextlib
import os
import tempfile
from typing import IO, Iterator, Tuple, Type


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
    """
    directory = os.path.dirname(os.path.abspath(path))
    os.makedirs(directory, exist_ok=True)
    handle = tempfile.NamedTemporaryFile(
        "wb" if binary else "w",
        dir=directory,
        delete=False,
        prefix=".partial-",
        encoding=None if binary else "utf-8",
    )
    try:
        with handle:
            yield handle
        os.chmod(handle.name, _default_mode())
        os.replace(handle.name, path)
    except BaseException:
        if os.path.exists(handle.name):
            os.unlink(handle.name)
        raise


def atomic_write_text(path: str, text: str) -> None:
    """Writes ``text`` to ``path`` atomically."""
    with atomic_write(path) as f:
        f.write(text)


def utf8_lines(path: str, error: Type[Exception]) -> Iterator[Tuple[int, str]]:
    """Yields ``(line_number, line)`` of a text file, each line checked as UTF-8.

    Lines end at ``"\\n"`` (kept). A line that is not UTF-8 raises ``error`` (an exception
    class) with a message naming the file, the line and the fix.
    """
    with open(path, "rb") as f:
        for number, raw in enumerate(f, start=1):
            try:
                yield number, raw.decode("utf-8")
            except UnicodeDecodeError as e:
                raise error(
                    "%s:%d: byte %d of the line is not UTF-8; re-encode the file as "
                    "UTF-8 (for example with iconv)" % (path, number, e.start + 1)
                ) from e
