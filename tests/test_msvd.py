"""The MSVD dataset builder: CSV and mapping readers, filters, split, vocab, features."""

import json
import os

import numpy as np
import pytest

from data_prep import msvd

HEADER = "VideoID,Start,End,WorkerID,Source,AnnotationTime,Language,Description\n"
# vid order differs from line order; E_2_9 has no English caption; F_0_3 is past the
# splits used below (2 / 1 / 2).
MAPPING = "clipA_1_5 vid1\nvidC_3_7 vid3\n-x_y_0_10 vid2\n\nvidD_0_4 vid4\nE_2_9 vid5\nF_0_3 vid6\n"
ROWS = (
    'clipA,1,5,101,clean,10,English,"A man, a plan."\n'
    "clipA,1,5,102,clean,11,German,Ein Mann\n"
    'clipA,1,5,103,clean,12,English,"   "\n'
    "clipA,1,5,104,clean,13,English,  a Man's dog  \n"
    "-x_y,0,10,105,unverified,14,English,The dog runs\n"
    "vidC,3,7,106,clean,15,English,A cat sits.\n"
    "vidC,3,7,107,clean,16,French,Un chat\n"
    'vidD,0,4,108,clean,17,English,"Two dogs, running"\n'
    "vidD,0,4,109,clean,18,English,\n"
    "E,2,9,110,clean,19,German,Ein Hund\n"
    "ghost,0,1,111,clean,20,English,A ghost clip\n"
    "F,0,3,112,clean,21,English,Far away\n"
)
SPLIT_SIZES = dict(train_clips=2, val_clips=1, test_clips=2)


def _write_inputs(tmp_path, rows=ROWS, header=HEADER, mapping=MAPPING):
    corpus = tmp_path / "video_corpus.csv"
    corpus.write_bytes(b"\xef\xbb\xbf" + (header + rows).encode("utf-8"))
    mapping_path = tmp_path / "youtube_mapping.txt"
    mapping_path.write_text(mapping, encoding="utf-8")
    return str(corpus), str(mapping_path)


def _read_jsonl(path):
    with open(path, encoding="utf-8") as f:
        return [json.loads(line) for line in f]


def _build(tmp_path, **kwargs):
    corpus, mapping = _write_inputs(tmp_path)
    out = str(tmp_path / "out")
    stats = msvd.build(corpus, mapping, out, **dict(SPLIT_SIZES, **kwargs))
    return stats, out


def test_read_corpus_csv_keeps_english_non_empty_rows(tmp_path):
    corpus, _ = _write_inputs(tmp_path)
    stats = msvd.Stats()
    descriptions = msvd.read_corpus_csv(corpus, stats)
    assert descriptions == {
        "clipA_1_5": ["A man, a plan.", "a Man's dog"],
        "-x_y_0_10": ["The dog runs"],
        "vidC_3_7": ["A cat sits."],
        "vidD_0_4": ["Two dogs, running"],
        "ghost_0_1": ["A ghost clip"],
        "F_0_3": ["Far away"],
    }
    assert stats.rows_read == 12
    assert stats.rows_dropped == {"not_english": 3, "empty_description": 2}
    assert stats.languages == {"English": 9, "German": 2, "French": 1}


def test_read_mapping(tmp_path):
    _, mapping = _write_inputs(tmp_path)
    assert msvd.read_mapping(mapping) == {
        "clipA_1_5": 1,
        "vidC_3_7": 3,
        "-x_y_0_10": 2,
        "vidD_0_4": 4,
        "E_2_9": 5,
        "F_0_3": 6,
    }


def test_tokenization_is_lowercased_wordpunct():
    assert msvd.tokenize_caption("A man's guitar, playing!") == "a man ' s guitar , playing !"
    assert msvd.tokenize_caption("A Man", lowercase=False) == "A Man"


def test_split_of_vid_uses_the_standard_boundaries():
    assert [msvd.split_of_vid(i) for i in (1, 1200, 1201, 1300, 1301, 1970, 1971)] == [
        "train",
        "train",
        "val",
        "val",
        "test",
        "test",
        None,
    ]
    assert msvd.split_of_vid(3, 2, 1, 2) == "val"
    with pytest.raises(ValueError, match="start at 1"):
        msvd.split_of_vid(0)


def test_build_writes_splits_in_vid_order(tmp_path):
    stats, out = _build(tmp_path)
    train = _read_jsonl(os.path.join(out, "train.jsonl"))
    assert train == [
        {
            "clip": "clipA_1_5",
            "vid": "vid1",
            "captions": ["a man , a plan .", "a man ' s dog"],
            "references": ["A man, a plan.", "a Man's dog"],
        },
        {
            "clip": "-x_y_0_10",
            "vid": "vid2",
            "captions": ["the dog runs"],
            "references": ["The dog runs"],
        },
    ]
    assert _read_jsonl(os.path.join(out, "val.jsonl")) == [
        {
            "clip": "vidC_3_7",
            "vid": "vid3",
            "captions": ["a cat sits ."],
            "references": ["A cat sits."],
        }
    ]
    # vid5 has no English caption; vid6 is past the test split
    assert _read_jsonl(os.path.join(out, "test.jsonl")) == [
        {
            "clip": "vidD_0_4",
            "vid": "vid4",
            "captions": ["two dogs , running"],
            "references": ["Two dogs, running"],
        }
    ]
    with open(os.path.join(out, "stats.json"), encoding="utf-8") as f:
        saved = json.load(f)
    assert saved == stats.to_json()
    assert saved["splits"] == {
        "train": {"clips": 2, "captions": 3},
        "val": {"clips": 1, "captions": 1},
        "test": {"clips": 1, "captions": 1},
    }
    assert saved["rows_dropped"] == {
        "not_english": 3,
        "empty_description": 2,
        "clip_not_in_mapping": 1,
        "no_tokens": 0,
        "clip_beyond_splits": 1,
        "missing_features": 0,
    }
    assert saved["clips_dropped"] == {
        "not_in_mapping": 1,
        "no_english_captions": 1,
        "beyond_splits": 1,
        "missing_features": 0,
    }
    assert saved["not_in_mapping_examples"] == ["ghost_0_1"]
    assert saved["rows_read"] == 12 and saved["rows_kept"] == 5
    assert "train     2 clips" in stats.summary()


def test_vocab_counts_training_tokens_most_frequent_first(tmp_path):
    # train tokens: a a man , a plan . | a man ' s dog | the dog runs
    stats, out = _build(tmp_path)
    with open(os.path.join(out, "vocab.txt"), encoding="utf-8") as f:
        assert f.read() == ("a 3\ndog 2\nman 2\n' 1\n, 1\n. 1\nplan 1\nruns 1\ns 1\nthe 1\n")
    assert stats.vocab_size == 10
    _, out = _build(tmp_path, min_count=2)
    with open(os.path.join(out, "vocab.txt"), encoding="utf-8") as f:
        assert f.read() == "a 3\ndog 2\nman 2\n"


def test_lowercase_can_be_turned_off(tmp_path):
    _, out = _build(tmp_path, lowercase=False)
    assert _read_jsonl(os.path.join(out, "train.jsonl"))[0]["captions"] == [
        "A man , a plan .",
        "a Man ' s dog",
    ]


def test_missing_column_is_named_with_the_file(tmp_path):
    corpus, mapping = _write_inputs(
        tmp_path, header="VideoID,Start,End,WorkerID,Source,AnnotationTime,Language,Text\n"
    )
    with pytest.raises(msvd.CorpusError) as error:
        msvd.build(corpus, mapping, str(tmp_path / "out"), **SPLIT_SIZES)
    message = str(error.value)
    assert corpus in message and "'Description'" in message and "'Text'" in message
    assert not os.path.exists(tmp_path / "out")


@pytest.mark.parametrize(
    "bad_line,match",
    [
        ("clipZ_1_2\n", ":3: expected"),
        ("clipZ_1_2 vid07\n", ":3: expected"),
        ("clipZ_1_2 video7 extra\n", ":3: expected"),
        ("clipZ_1_2 vid1\n", ":3: vid1 is already used on line 1"),
        ("clipA_1_5 vid9\n", ":3: clip clipA_1_5 is already mapped"),
    ],
)
def test_malformed_mapping_line_is_named(tmp_path, bad_line, match):
    _, mapping = _write_inputs(tmp_path, mapping="clipA_1_5 vid1\n\n" + bad_line)
    with pytest.raises(msvd.MappingError, match=match) as error:
        msvd.read_mapping(mapping)
    assert mapping in str(error.value)


def test_strict_refuses_clips_missing_from_the_mapping(tmp_path):
    corpus, mapping = _write_inputs(tmp_path)
    with pytest.raises(msvd.MissingClipsError, match="1 clip.*ghost_0_1"):
        msvd.build(corpus, mapping, str(tmp_path / "out"), strict=True, **SPLIT_SIZES)
    assert not os.path.exists(tmp_path / "out")


def test_features_must_cover_every_clip(tmp_path):
    store = tmp_path / "features"
    store.mkdir()
    # by clip name, and one (vidC_3_7) by its vidN; vidD_0_4 has none
    for key in ("clipA_1_5", "-x_y_0_10", "vid3"):
        np.save(str(store / (key + ".npy")), np.ones((4, 8), np.float32))
    corpus, mapping = _write_inputs(tmp_path)
    with pytest.raises(msvd.FeaturesError, match=r"1 clip\(s\) have no features.*vidD_0_4"):
        msvd.build(corpus, mapping, str(tmp_path / "out"), features=str(store), **SPLIT_SIZES)
    assert not os.path.exists(tmp_path / "out")
    out = str(tmp_path / "out")
    stats = msvd.build(
        corpus, mapping, out, features=str(store), skip_missing_features=True, **SPLIT_SIZES
    )
    assert _read_jsonl(os.path.join(out, "test.jsonl")) == []
    assert [r["clip"] for r in _read_jsonl(os.path.join(out, "val.jsonl"))] == ["vidC_3_7"]
    assert stats.clips_dropped["missing_features"] == 1
    assert stats.missing_features_examples == ["vidD_0_4"]


def test_missing_feature_store_is_an_msvd_error(tmp_path):
    corpus, mapping = _write_inputs(tmp_path)
    with pytest.raises(msvd.FeaturesError, match="does not exist"):
        msvd.build(
            corpus,
            mapping,
            str(tmp_path / "out"),
            features=str(tmp_path / "nowhere"),
            **SPLIT_SIZES,
        )


def test_csv_that_is_not_utf8_names_the_line(tmp_path):
    corpus = tmp_path / "latin1.csv"
    corpus.write_bytes(
        (HEADER + "a,1,2,3,clean,4,English,fine\n").encode("utf-8")
        + b"b,1,2,3,clean,4,English,caf\xe9\n"
    )
    with pytest.raises(msvd.CorpusError, match=r"latin1.csv:3: not UTF-8"):
        msvd.read_corpus_csv(str(corpus))
