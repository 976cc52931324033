"""See et al.'s ``.bin`` chunk files: records of an 8-byte length and a tf.train.Example.

Each record is a signed 64-bit length (``struct`` format ``q``, little-endian as written
on x86) followed by that many bytes of a serialized ``tf.train.Example`` with two bytes
features, ``article`` and ``abstract``. There is no CRC framing, so this is not TFRecord
and ``tf.data.TFRecordDataset`` cannot read it.
"""

import glob
import os
import struct
from typing import Iterable, Iterator, List, Tuple

import tensorflow as tf

from acvi_tf import errors, files

_LENGTH = struct.Struct("<q")


class BinFileError(errors.UserError, ValueError):
    """A ``.bin`` file is malformed; the message names the file, the record and the fix."""


def _feature(example, path, index, key):
    values = example.features.feature[key].bytes_list.value
    if not values:
        raise BinFileError(
            "%s: record %d has no '%s' feature; every record needs 'article' and "
            "'abstract' bytes features (rebuild the file with data_prep)" % (path, index, key)
        )
    try:
        return values[0].decode("utf-8")
    except UnicodeDecodeError as e:
        raise BinFileError(
            "%s: record %d: its '%s' is not UTF-8 text (%s); rebuild the file "
            "with data_prep" % (path, index, key, e)
        ) from e


def read_bin_file(path: str) -> Iterator[Tuple[str, str]]:
    """Yields ``(article, abstract)`` strings from one ``.bin`` file, in file order.

    Raises:
      BinFileError: truncated length prefix, record longer than the file, unparsable
        ``tf.train.Example``, or a missing feature.
    """
    with open(path, "rb") as f:
        size = os.fstat(f.fileno()).st_size
        index = 0
        while True:
            prefix = f.read(_LENGTH.size)
            if not prefix:
                return
            if len(prefix) < _LENGTH.size:
                raise BinFileError(
                    "%s: record %d: truncated length prefix (%d of 8 bytes); the file was "
                    "cut short, rebuild it" % (path, index, len(prefix))
                )
            (length,) = _LENGTH.unpack(prefix)
            remaining = size - f.tell()
            if not 0 <= length <= remaining:  # never read (allocate) more than is there
                raise BinFileError(
                    "%s: record %d claims %d bytes but only %d remain; the file was cut "
                    "short, rebuild it" % (path, index, length, remaining)
                )
            payload = f.read(length)
            example = tf.train.Example()
            try:
                example.ParseFromString(payload)
            except Exception as e:  # protobuf raises its own DecodeError type
                raise BinFileError(
                    "%s: record %d is not a serialized tf.train.Example (%s); is this a "
                    "See-format .bin file?" % (path, index, e)
                ) from e
            yield (
                _feature(example, path, index, "article"),
                _feature(example, path, index, "abstract"),
            )
            index += 1


def write_bin_file(path: str, pairs: Iterable[Tuple[str, str]]) -> int:
    """Writes ``(article, abstract)`` pairs as one ``.bin`` file, atomically.

    Returns:
      The number of records written.
    """
    count = 0
    with files.atomic_write(path, binary=True) as f:
        for article, abstract in pairs:
            example = tf.train.Example()
            example.features.feature["article"].bytes_list.value.append(article.encode("utf-8"))
            example.features.feature["abstract"].bytes_list.value.append(abstract.encode("utf-8"))
            payload = example.SerializeToString()
            f.write(_LENGTH.pack(len(payload)))
            f.write(payload)
            count += 1
    return count


def write_chunked(
    out_dir: str, split: str, pairs: Iterable[Tuple[str, str]], chunk_size: int = 1000
) -> List[str]:
    """Writes pairs as ``{split}_000.bin``, ``{split}_001.bin``, ... of ``chunk_size`` each.

    Returns:
      The list of files written.
    """
    pairs = list(pairs)
    paths = []
    for start in range(0, len(pairs), chunk_size):
        path = os.path.join(out_dir, "%s_%03d.bin" % (split, start // chunk_size))
        write_bin_file(path, pairs[start : start + chunk_size])
        paths.append(path)
    return paths


def expand_data_path(pattern: str) -> List[str]:
    """Sorted files matching the ``--data_path`` glob; a clear error when none match."""
    paths = sorted(glob.glob(pattern))
    if not paths:
        raise BinFileError(
            "--data_path=%r matches no file; give a glob of .bin chunks such as "
            "'finished_files/chunked/train_*'" % (pattern,)
        )
    return paths
