"""The stable hash split every demo corpus uses: 90% / 5% / 5% by a hash of a key
(``key_hash``), and the rule every builder follows before it writes: no split ends up
empty unless ``--allow_empty`` names it, no input file holds nothing, and a corpus
already in ``--out_dir`` is replaced only with ``--overwrite``. Also the builders'
tokenizer batch.
"""

import hashlib
import os
from typing import IO, Any, Dict, Iterable, Iterator, List, Mapping, Optional, Sequence, TypeVar

from absl import flags, logging

from acvi_tf import errors, files

TOKENIZE_BATCH = 1000  # records per tokenizer call and progress update


class EmptySplitError(errors.UserError, ValueError):
    """A build would write a split with nothing in it; the message names the split, the
    counts and the fix."""


_Record = TypeVar("_Record")


def from_input(
    records: Iterable[_Record],
    path: str,
    holds: str,
    split: Optional[str],
    allow_empty: Sequence[str],
) -> Iterator[_Record]:
    """Yields an input file's records, refusing a file that holds none (empty, a header
    only, blank lines only): its pairs were meant to be somewhere.

    Args:
      records: what the file's reader yields.
      path: the file, for the message.
      holds: what a record of it is, for the message (``a JSON object line``).
      split: the split the file feeds (``--test_input``), or None.
      allow_empty: ``--allow_empty``: a file that feeds one of these may hold nothing.

    Raises:
      EmptySplitError: the file holds no record.
    """
    count = 0
    for count, record in enumerate(records, start=1):
        yield record
    if not count and split not in allow_empty:
        raise EmptySplitError(
            "%s holds no pair (not %s); give a file with pairs in it%s"
            % (path, holds, ", or add --allow_empty=%s" % split if split else "")
        )


def key_hash(key: str) -> int:
    """The stable hash of a record's key, which decides its split and the caps.

    Args:
      key: the record's key (a file name, an id).

    Returns:
      ``int(sha1(key).hexdigest(), 16)``.
    """
    return int(hashlib.sha1(key.encode("utf-8")).hexdigest(), 16)


def split_of(hash_value: int, names: Sequence[str]) -> str:
    """``names[0]`` if ``hash_value % 100 < 90``, ``names[1]`` if ``< 95``, else ``names[2]``."""
    bucket = hash_value % 100
    if bucket < 90:
        return names[0]
    return names[1] if bucket < 95 else names[2]


def split_by_hash(
    items: Iterable[Any], names: Sequence[str], caps: Optional[Mapping[str, Optional[int]]] = None
) -> Dict[str, List[Any]]:
    """Splits items (with a ``hash_value``) and keeps each split in ascending hash order.

    Args:
      items: objects with an integer ``hash_value``.
      names: the three split names (train, validation, test).
      caps: optional dict split -> the most items to keep (None or missing: all); the
        kept items are those with the smallest hashes, so a capped split is a prefix.

    Returns:
      A dict split -> list of items (ties keep input order).
    """
    caps = caps or {}
    splits = {name: [] for name in names}
    for item in items:
        splits[split_of(item.hash_value, names)].append(item)
    for name, members in splits.items():
        members.sort(key=lambda item: item.hash_value)
        if caps.get(name) is not None:
            del members[caps[name] :]
    return splits


class CorpusExistsError(errors.UserError, ValueError):
    """A build would replace a corpus the user built before; the message names it."""


def define_overwrite(
    flag_values: flags.FlagValues, folder: str = "out_dir", record: str = "corpus.json"
) -> None:
    """Defines ``--overwrite``, which lets a build replace the corpus in its folder.

    Args:
      flag_values: where the flag goes.
      folder: the builder's output folder flag.
      record: the file a finished build leaves in it.
    """
    flags.DEFINE_boolean(
        "overwrite",
        False,
        "Replace the corpus --%s holds (a folder with a %s); without it the build refuses "
        "such a folder before it reads anything." % (folder, record),
        flag_values=flag_values,
    )


def start_build(out_dir: str, record: str, overwrite: bool, folder: str = "out_dir") -> IO[str]:
    """Locks ``out_dir`` for a build, and refuses a folder that holds a corpus (its
    ``record``) unless ``overwrite``: the runs trained on it would no longer find their
    data. With ``overwrite`` the record goes first, so that a rebuild cut short, whose
    folder mixes old and new files, is not taken for a finished corpus. What the writes of
    a killed build left unfinished (``files.remove_partials``) goes first of all.

    Args:
      out_dir: the build's output folder.
      record: the corpus's record file name (``corpus.json``), which a build writes last.
      overwrite: ``--overwrite``.
      folder: the output folder's flag, for the message.

    Returns:
      The lock (``files.lock_beside``), which keeps a second build out of the folder until
      it is closed: the build runs inside ``with start_build(...):``.

    Raises:
      CorpusExistsError: naming the record and the fix.
      files.FolderInUseError: another build writes the folder.
    """
    lock = files.lock_beside(out_dir, "corpus build")
    try:
        files.remove_partials(out_dir)  # a killed build's unfinished files
        path = os.path.join(out_dir, record)
        if os.path.exists(path):
            if not overwrite:
                raise CorpusExistsError(
                    "%s holds a corpus already (%s); give another --%s, or --overwrite to "
                    "replace it" % (out_dir, path, folder)
                )
            os.remove(path)
            logging.info("replacing the corpus in %s (--overwrite)", out_dir)
    except BaseException:
        lock.close()
        raise
    return lock


def define_allow_empty(names: Sequence[str], flag_values: flags.FlagValues) -> None:
    """Defines ``--allow_empty``, the splits a build may leave without a record.

    Args:
      names: the builder's split names.
      flag_values: where the flag goes.
    """
    flags.DEFINE_list(
        "allow_empty",
        [],
        "Splits the build may leave empty, comma-separated (e.g. val,test); any other "
        "split with no record stops the build before it writes anything.",
        flag_values=flag_values,
    )
    flags.register_validator(
        "allow_empty",
        lambda given: set(given) <= set(names),
        message="--allow_empty takes split names: %s" % ", ".join(names),
        flag_values=flag_values,
    )


def require_records(
    counts: Mapping[str, int],
    allow_empty: Sequence[str] = (),
    caps: Optional[Mapping[str, Optional[int]]] = None,
    what: str = "pairs",
) -> None:
    """Refuses a build whose split would hold no record, unless the user allows it.

    Call it before the build writes anything, so a refused build leaves ``out_dir`` as
    it was.

    Args:
      counts: split -> the number of records the build would write there.
      allow_empty: the splits that may be empty (``--allow_empty``).
      caps: split -> the most records the user keeps there (``--max_val``); a split
        capped to 0 may be empty too.
      what: what a record is, for the message (``pairs``, ``clips``).

    Raises:
      EmptySplitError: naming the empty splits, every split's count and the fix.
    """
    allowed = set(allow_empty) | {split for split, cap in (caps or {}).items() if cap == 0}
    empty = [split for split, count in counts.items() if not count and split not in allowed]
    if empty:
        raise EmptySplitError(
            "the build would write 0 %s to %s (%s); give it input that fills the split, "
            "or add --allow_empty=%s to leave it empty on purpose"
            % (
                what,
                errors.listed(empty),
                ", ".join("%s %d" % item for item in counts.items()),
                ",".join(sorted(set(allow_empty) | set(empty), key=list(counts).index)),
            )
        )
