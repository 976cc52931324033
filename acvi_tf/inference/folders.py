"""A decode's folder: a finished decode (one with ``metrics.json``) is kept unless the
user asks, with ``--decode_overwrite``, to replace it."""

import os

from acvi_tf import errors


class DecodeFolderError(errors.UserError, ValueError):
    """A decode folder that this decode must not resume or replace; the message says why."""


def refuse_finished(decode_dir: str) -> None:
    """Refuses a finished decode folder (one with ``metrics.json``).

    Args:
      decode_dir: the decode's folder.

    Raises:
      DecodeFolderError: ``decode_dir`` holds a finished decode.
    """
    if os.path.exists(os.path.join(decode_dir, "metrics.json")):
        raise DecodeFolderError(
            "%s is a finished decode; remove it or pass --decode_overwrite" % decode_dir
        )
