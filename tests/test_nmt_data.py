"""tensorflow/nmt's vocab, reading, example and batching rules; joint BPE round trip."""

import logging

import numpy as np
import pytest

from acvi_tf.formats import bpe, nmt_text
from data_prep import translation
from nmt import data

SPECIALS = "<unk>\n<s>\n</s>\n"


def write(path, text, binary=False):
    if binary:
        path.write_bytes(text)
    else:
        path.write_text(text, encoding="utf-8")
    return str(path)


@pytest.fixture
def vocabs(tmp_path):
    src = data.Vocab(write(tmp_path / "vocab.en", SPECIALS + "the\ncat\nsat\non\nmat\n"))
    tgt = data.Vocab(write(tmp_path / "vocab.vi", SPECIALS + "con\nmèo\nngồi\n"))
    return src, tgt


# ----------------------------------------------------------------------------- vocab


def test_check_vocab_accepts_a_good_file(tmp_path):
    path = write(tmp_path / "vocab.en", SPECIALS + "a\nb\n")
    assert nmt_text.check_vocab(path, str(tmp_path / "out")) == (5, path)
    assert not (tmp_path / "out").exists()


def test_check_vocab_prepends_missing_specials(tmp_path):
    path = write(tmp_path / "vocab.en", "a\nb\n")
    size, new_path = nmt_text.check_vocab(path, str(tmp_path / "out"))
    assert new_path == str(tmp_path / "out" / "vocab.en")
    assert size == 5
    assert (tmp_path / "out" / "vocab.en").read_text() == SPECIALS + "a\nb\n"
    assert (tmp_path / "vocab.en").read_text() == "a\nb\n"


def test_check_vocab_moves_misplaced_specials(tmp_path):
    path = write(tmp_path / "vocab.en", "a\n</s>\nb\n<unk>\n")
    size, new_path = nmt_text.check_vocab(path, str(tmp_path / "out"))
    assert size == 5
    assert open(new_path, encoding="utf-8").read() == SPECIALS + "a\nb\n"
    assert data.Vocab(new_path).words() == ["<unk>", "<s>", "</s>", "a", "b"]


def test_check_vocab_refuses_to_overwrite_the_input(tmp_path):
    path = write(tmp_path / "vocab.en", "a\n")
    with pytest.raises(nmt_text.NmtDataError, match="out_dir other than its folder"):
        nmt_text.check_vocab(path, str(tmp_path))


@pytest.mark.parametrize(
    "text, message",
    [
        (SPECIALS + "a\nb\na\n", r"vocab.en:6: 'a' repeats line 4"),
        (SPECIALS + "a\n\nb\n", r"vocab.en:5: empty line"),
        (SPECIALS + "a 12\n", r"vocab.en:4: 'a 12' holds whitespace.*cut -f1"),
    ],
)
def test_vocab_errors_name_line_and_fix(tmp_path, text, message):
    path = write(tmp_path / "vocab.en", text)
    with pytest.raises(nmt_text.NmtDataError, match=message):
        nmt_text.check_vocab(path, str(tmp_path / "out"))
    with pytest.raises(nmt_text.NmtDataError, match=message):
        data.Vocab(path)


def test_check_vocab_missing_file(tmp_path):
    with pytest.raises(nmt_text.NmtDataError, match="no such file"):
        nmt_text.check_vocab(str(tmp_path / "nope"), str(tmp_path))


def test_vocab_needs_checked_file(tmp_path):
    with pytest.raises(nmt_text.NmtDataError, match="check_vocab"):
        data.Vocab(write(tmp_path / "vocab.en", "a\n" + SPECIALS))


def test_vocab_lookups(vocabs):
    src, _ = vocabs
    assert src.size() == 8
    assert (src.word2id("<unk>"), src.word2id("<s>"), src.word2id("</s>")) == (0, 1, 2)
    assert src.word2id("dog") == nmt_text.UNK_ID
    assert src.encode(["the", "dog", "sat"]) == [3, 0, 5]
    assert src.id2word(4) == "cat"
    with pytest.raises(ValueError, match="not in the vocabulary of 8"):
        src.id2word(8)
    assert src.decode(np.array([3, 4, 0, 2, 5, 2])) == ["the", "cat", "<unk>"]
    assert src.decode([3, 4]) == ["the", "cat"]


# --------------------------------------------------------------------------- reading


def test_read_parallel_keeps_lines_as_they_are(tmp_path):
    src = write(tmp_path / "a.en", b"a  b \r\nc\td\n\nlast", binary=True)
    tgt = write(tmp_path / "a.vi", "x\ny\u2028z\nw\nv\n")
    assert nmt_text.read_parallel(src, tgt) == [
        ("a  b ", "x"),
        ("c\td", "y\u2028z"),
        ("", "w"),
        ("last", "v"),
    ]


def test_a_byte_order_mark_is_not_part_of_the_first_word(tmp_path):
    """Windows tools and Excel start a UTF-8 file with one; vocabularies too."""
    src = write(tmp_path / "a.en", b"\xef\xbb\xbfteacher finds\r\nb\n", binary=True)
    assert nmt_text.read_lines(src) == ["teacher finds", "b"]
    vocab = write(tmp_path / "vocab.en", b"\xef\xbb\xbf<unk>\n<s>\n</s>\nteacher\n", binary=True)
    assert nmt_text.check_vocab(vocab, str(tmp_path / "out")) == (4, vocab)


def test_read_parallel_line_count_mismatch(tmp_path):
    src = write(tmp_path / "a.en", "a\nb\nc\n")
    tgt = write(tmp_path / "a.vi", "x\ny\n")
    with pytest.raises(nmt_text.NmtDataError, match=r"a\.en has 3 lines but .*a\.vi has 2"):
        nmt_text.read_parallel(src, tgt)


def test_read_parallel_non_utf8(tmp_path):
    src = write(tmp_path / "a.en", "a\nb\nc\n")
    tgt = write(tmp_path / "a.vi", b"x\ny\ncaf\xe9\n", binary=True)
    with pytest.raises(
        nmt_text.NmtDataError, match=r"a\.vi:3: byte 0xe9 .*re-encode the file as UTF-8"
    ):
        nmt_text.read_parallel(src, tgt)


def test_tokenize_splits_on_ascii_space_only():
    assert nmt_text.tokenize("  a  b\tc d\u00a0e ") == ["a", "b\tc", "d\u00a0e"]
    assert nmt_text.tokenize("   ") == []


# -------------------------------------------------------------------------- examples


def test_make_examples_rules(vocabs, caplog):
    src, tgt = vocabs
    pairs = [
        ("the cat sat", "con mèo"),
        ("", "con"),
        ("the", "   "),
        ("the cat sat on the mat", "con mèo ngồi con"),
        ("dog", "chó"),
    ]
    with caplog.at_level(logging.INFO):
        examples = data.make_examples(pairs, src, tgt, src_max_len=4, tgt_max_len=3)
    assert "Dropped 2 of 5 sentence pairs" in caplog.text
    assert "3 examples; 1 truncated" in caplog.text
    assert examples == [
        {"src": [3, 4, 5], "tgt_in": [1, 3, 4], "tgt_out": [3, 4, 2]},
        {"src": [3, 4, 5, 6], "tgt_in": [1, 3, 4, 5], "tgt_out": [3, 4, 5, 2]},
        {"src": [0], "tgt_in": [1, 0], "tgt_out": [0, 2]},
    ]


def test_make_examples_without_limits(vocabs, caplog):
    src, tgt = vocabs
    with caplog.at_level(logging.INFO):
        examples = data.make_examples([("the cat sat on the mat", "con mèo ngồi con")], src, tgt)
    assert "truncated" not in caplog.text  # nothing is
    assert examples[0]["src"] == [3, 4, 5, 6, 3, 7]
    assert examples[0]["tgt_out"] == [3, 4, 5, 3, 2]


@pytest.mark.parametrize(
    "src_len, tgt_len, src_max_len, num_buckets, key",
    [
        (0, 1, 50, 5, 0),
        (9, 9, 50, 5, 0),
        (10, 3, 50, 5, 1),
        (3, 10, 50, 5, 1),
        (25, 41, 50, 5, 4),
        (50, 51, 50, 5, 5),
        (120, 3, 50, 5, 5),
        (7, 7, 7, 2, 1),  # width ceil(7 / 2) = 4
        (25, 3, None, 5, 2),  # width 10 without src_max_len
    ],
)
def test_bucket_key(src_len, tgt_len, src_max_len, num_buckets, key):
    assert data.bucket_key(src_len, tgt_len, src_max_len, num_buckets) == key


# -------------------------------------------------------------------------- datasets


def synthetic_examples(count, seed=0):
    """Examples with distinct sources (their first id is their index + 3)."""
    rng = np.random.default_rng(seed)
    examples = []
    for i in range(count):
        src = [i + 3] + rng.integers(3, 50, rng.integers(0, 30)).tolist()
        tgt = rng.integers(3, 50, rng.integers(1, 30)).tolist()
        examples.append({"src": src, "tgt_in": [1] + tgt, "tgt_out": tgt + [2]})
    return examples


def check_batch(batch, examples_by_first):
    """Checks padding and lengths; returns the first source ids of the batch."""
    src, src_len = batch["src"].numpy(), batch["src_len"].numpy()
    tgt_in, tgt_out = batch["tgt_in"].numpy(), batch["tgt_out"].numpy()
    tgt_len = batch["tgt_len"].numpy()
    assert src.dtype == tgt_in.dtype == src_len.dtype == tgt_len.dtype == np.int32
    assert src.shape[1] == src_len.max() and tgt_in.shape[1] == tgt_len.max()
    assert tgt_in.shape == tgt_out.shape
    firsts = []
    for row in range(src.shape[0]):
        example = examples_by_first[src[row, 0]]
        assert src[row, : src_len[row]].tolist() == example["src"]
        assert tgt_in[row, : tgt_len[row]].tolist() == example["tgt_in"]
        assert tgt_out[row, : tgt_len[row]].tolist() == example["tgt_out"]
        assert (src[row, src_len[row] :] == nmt_text.EOS_ID).all()
        assert (tgt_in[row, tgt_len[row] :] == nmt_text.EOS_ID).all()
        assert (tgt_out[row, tgt_len[row] :] == nmt_text.EOS_ID).all()
        firsts.append(int(src[row, 0]))
    return firsts


def test_train_dataset_buckets_and_epochs():
    examples = synthetic_examples(300)
    by_first = {ex["src"][0]: ex for ex in examples}
    dataset = data.train_dataset(examples, batch_size=16, src_max_len=30, num_buckets=3, seed=7)
    assert {k: (v.shape.as_list(), v.dtype) for k, v in dataset.element_spec.items()} == {
        k: (v.shape.as_list(), v.dtype) for k, v in data.BATCH_SIGNATURE.items()
    }
    iterator = iter(dataset)
    epoch_orders = []
    for _ in range(2):
        seen = []
        while len(seen) < len(examples):
            batch = next(iterator)
            firsts = check_batch(batch, by_first)
            assert len(firsts) <= 16
            keys = {
                data.bucket_key(len(by_first[f]["src"]), len(by_first[f]["tgt_in"]), 30, 3)
                for f in firsts
            }
            assert len(keys) == 1
            seen.extend(firsts)
        assert sorted(seen) == sorted(by_first)  # each example exactly once per epoch
        epoch_orders.append(seen)
    assert epoch_orders[0] != epoch_orders[1]  # reshuffled


def test_train_dataset_padded_to_fixed_lengths_keeps_the_batches():
    # --jit_compile: the same batches, padded with </s> to src_max_len / tgt_max_len + 1.
    examples = synthetic_examples(100)
    plain = data.train_dataset(examples, 8, 30, 3, seed=2).take(6)
    fixed = data.train_dataset(examples, 8, 30, 3, seed=2, pad_to=(30, 40)).take(6)
    for a, b in zip(plain, fixed):
        assert b["src"].shape[1] == 30 and b["tgt_in"].shape[1] == b["tgt_out"].shape[1] == 41
        for key in ("src_len", "tgt_len"):
            np.testing.assert_array_equal(a[key], b[key])
        for key in ("src", "tgt_in", "tgt_out"):
            width = a[key].shape[1]
            np.testing.assert_array_equal(b[key][:, :width], a[key])
            assert np.all(b[key][:, width:] == nmt_text.EOS_ID)


def test_train_dataset_is_seeded():
    examples = synthetic_examples(100)

    def first_batches(seed):
        dataset = data.train_dataset(examples, 8, 30, 3, seed)
        return [b["src"].numpy()[:, 0].tolist() for b in dataset.take(5)]

    assert first_batches(3) == first_batches(3)
    assert first_batches(3) != first_batches(4)


def test_train_dataset_without_buckets_gives_full_batches():
    examples = synthetic_examples(40)
    batches = list(data.train_dataset(examples, 8, 30, 1, seed=1).take(5))
    assert [b["src"].shape[0] for b in batches] == [8] * 5
    firsts = [f for b in batches for f in b["src"].numpy()[:, 0]]
    assert sorted(firsts) == sorted(ex["src"][0] for ex in examples)


def test_eval_dataset_in_order():
    examples = synthetic_examples(23)
    by_first = {ex["src"][0]: ex for ex in examples}
    batches = list(data.eval_dataset(examples, 10))
    assert [b["src"].shape[0] for b in batches] == [10, 10, 3]
    firsts = [f for b in batches for f in check_batch(b, by_first)]
    assert firsts == [ex["src"][0] for ex in examples]


def test_infer_dataset_keeps_order_and_empty_lines(vocabs):
    src, _ = vocabs
    lines = ["the cat", "", "the cat sat on the mat", "dog", "", ""]
    batches = list(data.infer_dataset(lines, src, batch_size=4, src_max_len=5))
    assert set(batches[0]) == {"src", "src_len"}
    assert batches[0]["src"].numpy().tolist() == [
        [3, 4, 2, 2, 2],
        [2, 2, 2, 2, 2],
        [3, 4, 5, 6, 3],
        [0, 2, 2, 2, 2],
    ]
    assert batches[0]["src_len"].numpy().tolist() == [2, 0, 5, 1]
    # A batch of empty lines still has one (padding) column.
    assert batches[1]["src"].numpy().tolist() == [[2], [2]]
    assert batches[1]["src_len"].numpy().tolist() == [0, 0]


@pytest.mark.parametrize("line", ["the cat sat on the mat", "dog", ""])
def test_a_sentence_s_batch_is_the_infer_dataset_s(vocabs, line):
    """``infer_batch`` (what ``Translator.inspect`` reads a sentence with) is the one batch
    of ``infer_dataset``: ids, ``</s>`` padding, an empty line's one column."""
    src, _ = vocabs
    batch = data.infer_batch(line, src)
    (expected,) = list(data.infer_dataset([line], src, 1))
    assert {k: (v.dtype, v.numpy().tolist()) for k, v in batch.items()} == {
        k: (v.dtype, v.numpy().tolist()) for k, v in expected.items()
    }


def test_infer_dataset_empty_as_unk(vocabs):
    src, _ = vocabs
    batches = list(data.infer_dataset(["", "cat"], src, 8, empty_as_unk=True))
    assert batches[0]["src"].numpy().tolist() == [[0], [4]]
    assert batches[0]["src_len"].numpy().tolist() == [1, 1]


def test_empty_inputs_are_errors(vocabs):
    with pytest.raises(nmt_text.NmtDataError, match="no training examples"):
        data.train_dataset([], 8, 50, 5, 1)
    with pytest.raises(nmt_text.NmtDataError, match="no source lines"):
        data.infer_dataset([], vocabs[0], 8)


# ------------------------------------------------------------------------------- BPE


CORPUS_EN = [
    "the lower newest widest lowest",
    "newer wider lower",
    "the newest lower",
    "low lower lowest new newer newest",
    "wide wider widest",
]
CORPUS_DE = ["die niedrigste neueste", "neuer niedriger breiter", "die neueste breite"]


def test_bpe_round_trip(tmp_path):
    codes = tmp_path / "bpe.codes"
    codes.write_text(translation.learn_joint_bpe(CORPUS_EN + CORPUS_DE, 30), encoding="utf-8")
    assert codes.read_text(encoding="utf-8").startswith("#version: 0.2")
    segment = bpe.segmenter(str(codes))
    for lines in (CORPUS_EN, CORPUS_DE):
        segmented = "\n".join(segment(line) for line in lines)
        assert "@@ " in segmented
        assert bpe.remove_bpe(segmented) == "\n".join(lines)


def test_remove_bpe_rule():
    assert bpe.remove_bpe("ne@@ west wid@@ est") == "newest widest"
    assert bpe.remove_bpe("a lo@@\nb c@@") == "a lo\nb c"
