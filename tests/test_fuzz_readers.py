"""Every reader of user files, fed random bytes and random truncations of a good file
(hypothesis), and text close to their formats: only its documented error type comes out,
never a crash of another kind."""

import json
import os
import signal
import tempfile

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from acvi_tf.formats import bin_files, nmt_text
from data_prep import msvd
from nmt import data as nmt_data
from pointer_generator import batcher as batcher_lib
from pointer_generator import vocab as pg_vocab
from video_caption import data as vc_data

FUZZ = settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])


def _good_bin():
    with tempfile.TemporaryDirectory() as root:
        path = os.path.join(root, "x.bin")
        bin_files.write_bin_file(path, [("a b c .", "<s> a . </s>"), ("d e", "<s> e </s>")])
        with open(path, "rb") as f:
            return f.read()


GOOD = {
    "bin": _good_bin(),
    "pg_vocab": b"the 10\ncat 5\n",
    "nmt_vocab": b"<unk>\n<s>\n</s>\nhallo\n",
    "vc_vocab": b"a 3\nman 2\n",
    "split": (
        json.dumps(dict(clip="abc_1_2", vid="vid1", captions=["a man"], references=["A man."]))
        + "\n"
    ).encode(),
    "csv": (
        ",".join(msvd.CSV_COLUMNS) + "\n" + "abc,1,2,1,1,clean,English,A man is cooking.\n"
    ).encode(),
    "mapping": b"abc_1_2 vid1\n",
}


def _read(kind, path):
    """Runs the reader of ``kind`` on ``path`` to the end."""
    if kind == "bin":
        return list(bin_files.read_bin_file(path))
    if kind == "pg_vocab":
        return pg_vocab.Vocab(path, 0)
    if kind == "nmt_vocab":
        return nmt_data.Vocab(path), nmt_text.read_parallel(path, path)
    if kind == "vc_vocab":
        return vc_data.Vocab(path)
    if kind == "split":
        return vc_data.read_split(path)
    if kind == "csv":
        return msvd.read_corpus_csv(path)
    return msvd.read_mapping(path)


ERRORS = {
    "bin": bin_files.BinFileError,
    "pg_vocab": pg_vocab.VocabError,
    "nmt_vocab": nmt_text.NmtDataError,
    "vc_vocab": vc_data.DataError,
    "split": vc_data.DataError,
    "csv": msvd.CorpusError,
    "mapping": msvd.MappingError,
}


def _only_documented_errors(kind, content):
    with tempfile.TemporaryDirectory() as root:
        path = os.path.join(root, "input")
        with open(path, "wb") as f:
            f.write(content)
        try:
            _read(kind, path)
        except ERRORS[kind] as e:
            assert path in str(e), e  # the message names the file


# raw bytes, and text close to the formats (JSON, CSV, 'word count' lines)
CONTENT = st.one_of(
    st.binary(max_size=300),
    st.text(alphabet='{}[]":,. \n\r\t01239abvid_<>sEnglish\x00\u00e9', max_size=200).map(
        lambda t: t.encode("utf-8")
    ),
)


@FUZZ
@given(kind=st.sampled_from(sorted(GOOD)), content=CONTENT)
def test_random_bytes_give_only_documented_errors(kind, content):
    _only_documented_errors(kind, content)


@FUZZ
@given(
    kind=st.sampled_from(sorted(GOOD)),
    cut=st.floats(0.0, 1.0),
    flip=st.one_of(st.none(), st.tuples(st.floats(0.0, 1.0), st.integers(1, 255))),
)
def test_truncated_or_corrupted_good_files_give_only_documented_errors(kind, cut, flip):
    content = bytearray(GOOD[kind][: int(len(GOOD[kind]) * cut)])
    if flip is not None and content:
        position = min(int(len(content) * flip[0]), len(content) - 1)
        content[position] ^= flip[1]
    _only_documented_errors(kind, bytes(content))


def test_the_good_files_read():
    for kind, content in GOOD.items():
        with tempfile.TemporaryDirectory() as root:
            path = os.path.join(root, "input")
            with open(path, "wb") as f:
                f.write(content)
            assert _read(kind, path), kind


def _first_batch(batcher, seconds=5):
    """The batcher's first batch; a hang fails the test after ``seconds``."""

    def hang(*_):
        raise AssertionError("no batch and no error after %d s: the loop hangs" % seconds)

    previous = signal.signal(signal.SIGALRM, hang)
    signal.alarm(seconds)
    try:
        return next(iter(batcher.batches()))
    finally:
        signal.alarm(0)
        signal.signal(signal.SIGALRM, previous)


RECORD = st.tuples(
    st.sampled_from(["", " ", "a b .", "name7 a"]),
    st.sampled_from(["", " ", "<s> a . </s>", "a b", "<s> </s>", "<s> b </s> <s> a </s>"]),
)


@FUZZ
@given(files=st.lists(st.lists(RECORD, max_size=4), min_size=1, max_size=3))
def test_the_training_batcher_gives_a_batch_or_one_error_never_a_hang(files):
    """Any mix of usable and unusable records over several files: the endless training
    loop yields a first batch when one record is usable, else raises BinFileError after
    one pass, naming the files."""
    with tempfile.TemporaryDirectory() as root:
        for number, records in enumerate(files):
            bin_files.write_bin_file(os.path.join(root, "train_%03d.bin" % number), records)
        with open(os.path.join(root, "vocab"), "w", encoding="utf-8") as f:
            f.write("a 3\nb 2\n. 1\n")
        vocab = pg_vocab.Vocab(os.path.join(root, "vocab"), 0)
        usable = [
            (article, abstract)
            for records in files
            for article, abstract in records
            if not batcher_lib.unusable_pair(article, abstract, pg_vocab.abstract2sents(abstract))
        ]
        batcher = batcher_lib.Batcher(os.path.join(root, "train_*"), vocab, 2, 10, 5)
        if usable:
            batch = _first_batch(batcher)
            assert len(batch["original_articles"]) == 2
            assert set(batch["original_articles"]) <= {a for a, _ in usable}
        else:
            with pytest.raises(bin_files.BinFileError, match="no usable example") as e:
                _first_batch(batcher)
            assert os.path.join(root, "train_000.bin") in str(e.value)
