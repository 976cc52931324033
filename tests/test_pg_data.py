"""Pointer-generator data rules: vocab, .bin files, examples, batches, bucketing."""

import struct

import numpy as np
import pytest

from acvi_tf import config as config_lib
from acvi_tf.formats import bin_files
from pointer_generator import batcher as batcher_lib
from pointer_generator import decode as decode_lib
from pointer_generator import lead_baseline
from pointer_generator import vocab as vocab_lib


def _vocab_file(tmp_path, lines):
    path = tmp_path / "vocab"
    path.write_text("".join(line + "\n" for line in lines), encoding="utf-8")
    return str(path)


@pytest.fixture
def vocab(tmp_path):
    words = ["the", "cat", "sat", "on", "mat", "a", "dog", "."]
    return vocab_lib.Vocab(
        _vocab_file(tmp_path, ["%s %d" % (w, 100 - i) for i, w in enumerate(words)]), 0
    )


def test_vocab_reserves_the_first_four_ids_and_counts_them(tmp_path):
    path = _vocab_file(tmp_path, ["the 9", "cat 8", "sat 7", "mat 6"])
    vocab = vocab_lib.Vocab(path, 6)
    assert [vocab.id2word(i) for i in range(4)] == list(vocab_lib.RESERVED)
    assert vocab.word2id("[PAD]") == 1 and vocab.size() == 6
    assert vocab.word2id("cat") == 5 and vocab.word2id("sat") == 0  # cut at 6 -> UNK
    assert vocab_lib.Vocab(path, 0).size() == 8


def test_vocab_skips_malformed_lines_and_rejects_reserved_and_duplicates(tmp_path):
    vocab = vocab_lib.Vocab(_vocab_file(tmp_path, ["the 9", "two words 3", "bad", "cat 2"]), 0)
    assert vocab.size() == 6 and vocab.word2id("cat") == 5
    for bad in ("<s>", "</s>", "[UNK]", "[PAD]", "[START]", "[STOP]"):
        with pytest.raises(vocab_lib.VocabError, match=r"vocab:2: .*reserved"):
            vocab_lib.Vocab(_vocab_file(tmp_path, ["the 9", "%s 5" % bad]), 0)
    with pytest.raises(vocab_lib.VocabError, match=r"vocab:3: duplicated word 'the'"):
        vocab_lib.Vocab(_vocab_file(tmp_path, ["the 9", "cat 5", "the 1"]), 0)
    with pytest.raises(ValueError, match="not in the vocabulary"):
        vocab.id2word(99)


def test_a_vocabulary_with_no_word_is_refused(tmp_path):
    for size in (1, 4):
        with pytest.raises(vocab_lib.VocabError, match="--vocab_size=%d holds only" % size):
            vocab_lib.Vocab(_vocab_file(tmp_path, ["the 9"]), size)
    assert vocab_lib.Vocab(_vocab_file(tmp_path, ["the 9"]), 5).size() == 5
    for lines in ([], ["malformed"]):
        with pytest.raises(vocab_lib.VocabError, match="vocab has no word besides"):
            vocab_lib.Vocab(_vocab_file(tmp_path, lines), 0)


def _vocab_lines(absl_caplog, *args, **kwargs):
    absl_caplog.clear()
    vocab_lib.Vocab(*args, **kwargs)
    return [(r.levelname, r.getMessage()) for r in absl_caplog.records]


def test_a_short_vocabulary_is_a_warning_only_when_its_size_was_given(tmp_path, absl_caplog):
    path = _vocab_file(tmp_path, ["the 9", "cat 8"])
    assert _vocab_lines(absl_caplog, path, 100) == [
        (
            "WARNING",
            "%s has only 2 words; the vocabulary has 6 entries, not the 100 that "
            "--vocab_size asks for" % path,
        )
    ]
    assert _vocab_lines(absl_caplog, path, 100, size_given=False) == [
        ("INFO", "Vocabulary of 6 entries: all 2 words of %s" % path)
    ]
    assert _vocab_lines(absl_caplog, path, 0) == []  # the whole file, as asked: no line
    assert _vocab_lines(absl_caplog, path, 5) == []


def test_a_command_warns_of_a_short_vocabulary_only_when_given_vocab_size(
    tmp_path, absl_caplog, monkeypatch
):
    monkeypatch.setattr(decode_lib, "lead_baseline", lambda *args: None)
    path = _vocab_file(tmp_path, ["the 9", "cat 8"])
    bin_files.write_chunked(str(tmp_path), "test", [("the cat", "<s> cat </s>")], chunk_size=9)
    argv = ["x", "--data_path=%s/test_*" % tmp_path, "--vocab_path=" + path, "--out_dir=out"]
    for given, level in (([], "INFO"), (["--vocab_size=50000"], "WARNING")):
        absl_caplog.clear()
        lead_baseline.run(config_lib.parse(lead_baseline.define_flags, argv + given))
        assert [r.levelname for r in absl_caplog.records if "vocab" in r.getMessage()] == [level]


def test_oov_ids_and_back(vocab):
    article = "the zebra sat on the quokka zebra".split()
    ids, oovs = vocab_lib.article2ids(article, vocab)
    v = vocab.size()
    assert oovs == ["zebra", "quokka"]
    assert ids == [4, v, 6, 7, 4, v + 1, v]
    abstract = "zebra saw the llama".split()
    abs_ids = vocab_lib.abstract2ids(abstract, vocab, oovs)
    assert abs_ids == [v, 0, 4, 0]  # "saw" and "llama" are not in the article: [UNK]
    assert vocab_lib.outputids2words([4, v + 1, v, 0], vocab, oovs) == [
        "the",
        "quokka",
        "zebra",
        "[UNK]",
    ]
    with pytest.raises(ValueError, match="only 2 OOVs"):
        vocab_lib.outputids2words([v + 2], vocab, oovs)
    assert vocab_lib.show_art_oovs("the zebra", vocab) == "the __zebra__"
    assert vocab_lib.show_abs_oovs("zebra saw the", vocab, oovs) == "__zebra__ !!__saw__!! the"


def test_abstract2sents():
    assert vocab_lib.abstract2sents("<s> a b . </s> <s> c d . </s>") == ["a b .", "c d ."]
    assert vocab_lib.abstract2sents("no tags") == []


def test_bin_round_trip_and_chunks(tmp_path):
    pairs = [("article %d" % i, "<s> abstract %d </s>" % i) for i in range(25)]
    paths = bin_files.write_chunked(str(tmp_path), "train", pairs, chunk_size=10)
    assert [p.rsplit("/", 1)[1] for p in paths] == [
        "train_000.bin",
        "train_001.bin",
        "train_002.bin",
    ]
    read = [pair for p in paths for pair in bin_files.read_bin_file(p)]
    assert read == pairs
    assert bin_files.expand_data_path(str(tmp_path / "train_*")) == paths
    with pytest.raises(bin_files.BinFileError, match="matches no file"):
        bin_files.expand_data_path(str(tmp_path / "val_*"))


@pytest.mark.parametrize(
    "damage, match",
    [
        (lambda data: data[:-3], "record 1 claims"),
        (lambda data: data + b"\x01\x02", "record 2: truncated length prefix"),
        (lambda data: data + struct.pack("<q", 4) + b"\xff\xff\xff\xff", "record 2 is not"),
        (lambda data: data.replace(b"d e", b"d \xe9"), "record 1: its 'article' is not UTF-8"),
    ],
)
def test_damaged_bin_files_name_file_and_record(tmp_path, damage, match):
    path = tmp_path / "x.bin"
    bin_files.write_bin_file(str(path), [("a b", "<s> c </s>"), ("d e", "<s> f </s>")])
    path.write_bytes(damage(path.read_bytes()))
    with pytest.raises(bin_files.BinFileError, match=match) as info:
        list(bin_files.read_bin_file(str(path)))
    assert str(path) in str(info.value)


def test_missing_feature_is_named(tmp_path):
    import tensorflow as tf

    example = tf.train.Example()
    example.features.feature["article"].bytes_list.value.append(b"text")
    payload = example.SerializeToString()
    path = tmp_path / "x.bin"
    path.write_bytes(struct.pack("<q", len(payload)) + payload)
    with pytest.raises(bin_files.BinFileError, match="record 0 has no 'abstract'"):
        list(bin_files.read_bin_file(str(path)))


def test_decoder_sequences_follow_see():
    assert batcher_lib.decoder_sequences([5, 6], 5, 2, 3) == ([2, 5, 6], [5, 6, 3])
    assert batcher_lib.decoder_sequences([5, 6, 7, 8], 3, 2, 3) == ([2, 5, 6], [5, 6, 7])
    assert batcher_lib.decoder_sequences([5, 6, 7], 4, 2, 3) == ([2, 5, 6, 7], [5, 6, 7, 3])


def test_example_truncates_and_uses_extended_ids_in_the_target(vocab):
    v = vocab.size()
    ex = batcher_lib.Example(
        "the zebra sat on the mat today",
        ["zebra sat", "on llama"],
        vocab,
        max_enc_steps=5,
        max_dec_steps=10,
    )
    assert ex.enc_len == 5 and ex.enc_input == [4, 0, 6, 7, 4]
    assert ex.article_oovs == ["zebra"] and ex.enc_input_extend_vocab == [4, v, 6, 7, 4]
    assert ex.dec_input == [2, 0, 6, 7, 0]  # decoder inputs: in-vocab ids, OOVs as UNK
    assert ex.target == [v, 6, 7, 0, 3]  # target: article OOVs keep their ids
    baseline = batcher_lib.Example("the zebra", ["zebra"], vocab, 5, 10, pointer_gen=False)
    assert baseline.target == [0, 3] and baseline.article_oovs == []


def test_make_batch_pads_like_the_original(vocab):
    examples = [
        batcher_lib.Example(a, [s], vocab, 10, 6)
        for a, s in [("the cat sat", "cat sat"), ("a zebra", "zebra")]
    ]
    batch = batcher_lib.make_batch(examples, pad_id=1, max_dec_steps=6)
    v = vocab.size()
    np.testing.assert_array_equal(batch["enc_batch"], [[4, 5, 6], [9, 0, 1]])
    np.testing.assert_array_equal(batch["enc_batch_extend_vocab"], [[4, 5, 6], [9, v, 1]])
    np.testing.assert_array_equal(batch["enc_padding_mask"], [[1, 1, 1], [1, 1, 0]])
    assert batch["max_art_oovs"] == 1
    assert batch["art_oovs"].tolist() == [[""], ["zebra"]]
    np.testing.assert_array_equal(batch["dec_batch"], [[2, 5, 6, 1, 1, 1], [2, 0, 1, 1, 1, 1]])
    np.testing.assert_array_equal(batch["target_batch"], [[5, 6, 3, 1, 1, 1], [v, 3, 1, 1, 1, 1]])
    np.testing.assert_array_equal(batch["dec_padding_mask"].sum(1), [3, 2])


def _corpus(tmp_path, n=40, empty=()):
    pairs = []
    for i in range(n):
        article = "" if i in empty else " ".join(["the"] * (1 + i % 13) + ["cat"])
        pairs.append((article, "<s> cat %d </s>" % i))
    bin_files.write_chunked(str(tmp_path), "train", pairs, chunk_size=15)
    return str(tmp_path / "train_*")


def test_single_pass_reads_in_order_once_and_keeps_the_last_partial_batch(tmp_path, vocab):
    batcher = batcher_lib.Batcher(
        _corpus(tmp_path, empty=(3, 20)), vocab, 4, 50, 8, single_pass=True
    )
    batches = list(batcher.batches())
    abstracts = [a for b in batches for a in b["original_abstracts"]]
    assert abstracts == ["cat %d" % i for i in range(40) if i not in (3, 20)]
    assert [len(b["enc_lens"]) for b in batches] == [4] * 9 + [2]
    assert batcher.skipped == 2


def test_bucketing_sorts_a_pool_by_length_and_shuffles_batch_order(tmp_path, vocab, monkeypatch):
    monkeypatch.setattr(batcher_lib, "BUCKET_CACHE_SIZE", 10)
    batcher = batcher_lib.Batcher(_corpus(tmp_path), vocab, 4, 50, 8, seed=3)
    stream = batcher.batches()
    pool = [next(stream) for _ in range(10)]  # one pool: 40 examples, all of them
    for batch in pool:
        assert batch["enc_lens"].max() - batch["enc_lens"].min() <= 1  # similar lengths
    firsts = [int(b["enc_lens"].min()) for b in pool]
    assert firsts != sorted(firsts)  # batch order shuffled
    assert sorted(int(n) for b in pool for n in b["enc_lens"]) == sorted(
        2 + i % 13 for i in range(40)
    )


def test_a_decode_without_single_pass_batches_distinct_articles(tmp_path, vocab):
    # 40 articles, smaller than a pool of 4 x 100 batches: a bucketed pool holds each 10
    # times, sorted together
    batcher = batcher_lib.Batcher(_corpus(tmp_path), vocab, 4, 50, 8, seed=3, bucketing=False)
    stream = batcher.batches()
    batches = [next(stream) for _ in range(12)]
    for batch in batches:
        assert len(set(batch["original_abstracts"])) == 4
    one_pass = sorted(a for b in batches[:10] for a in b["original_abstracts"])
    assert one_pass == sorted("cat %d" % i for i in range(40))  # a pass, then the next


def test_dataset_yields_the_batch_signature(tmp_path, vocab):
    batcher = batcher_lib.Batcher(_corpus(tmp_path), vocab, 4, 50, 8, single_pass=True)
    batch = next(iter(batcher.dataset()))
    assert set(batch) == set(batcher_lib.BATCH_SIGNATURE)
    assert batch["dec_batch"].shape == (4, 8)


@pytest.mark.parametrize(
    "abstract, problem",
    [("<s> cat </s>", "empty article"), ("", "empty abstract"), ("cat", "without <s> </s>")],
)
def test_unusable_data_is_an_error_naming_the_files_not_an_endless_wait(
    tmp_path, vocab, abstract, problem, caplog
):
    article = "" if problem == "empty article" else "the cat"
    bin_files.write_chunked(str(tmp_path), "train", [(article, abstract)] * 30, chunk_size=15)
    batcher = batcher_lib.Batcher(str(tmp_path / "train_*"), vocab, 4, 50, 8)
    with pytest.raises(bin_files.BinFileError, match="train_000.bin, .*no usable example in 2"):
        batcher.dataset()
    assert batcher.skipped == 30
    skips = [r.getMessage() for r in caplog.records if "skipped" in r.getMessage()]
    assert len(skips) == batcher_lib.SKIPS_LOGGED and problem in skips[0]
    # the evaluation and decoding reads (one pass) end quietly instead
    one_pass = batcher_lib.Batcher(str(tmp_path / "train_*"), vocab, 4, 50, 8, single_pass=True)
    assert list(one_pass.dataset()) == []
