"""The CNN/DailyMail builder (See's make_datafiles.py) on a small story fixture."""

import collections
import glob
import json
import os
import shutil
import subprocess
import sys

import pytest
from cnn_dailymail_corpus import (
    CAFE_URL,
    MISSING_URL,
    SENATE_URL,
    STORIES,
    make_corpus,
    story_name,
    write_text,
)

from acvi_tf.formats import bin_files
from acvi_tf.formats.bin_files import read_bin_file
from data_prep import cnn_dailymail as cd
from data_prep import summarization

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
needs_java = pytest.mark.skipif(
    shutil.which("java") is None,
    reason="java is not installed (apt-get install default-jre-headless)",
)

SENATE_ARTICLE = (
    "washington -lrb- cnn -rrb- -- the u.s. senate passed the bill on tuesday , officials "
    "said . `` we ca n't wait , '' sen. john smith , r-ariz. , told reporters . image "
    "caption : senators leave the chamber . the vote was 61-37 -- a `` historic '' moment ."
)
SENATE_ABSTRACT = (
    "<s> senate passes the bill 61-37 . </s> <s> `` we ca n't wait , '' says sen. john smith . </s>"
)
WEDDING_ARTICLE = (
    "by . daily mail reporter . published : . 12:30 est , 5 june 2013 . mary jones said : ` "
    "it 's the `` best '' day ever ' the bride -lrb- pictured -rrb- paid # 1,200 for the "
    "dress -lsb- right -rsb- ! ' i was absolutely devastated , ' she told friends ... ` why "
    "me ? '"
)
WEDDING_ABSTRACT = (
    "<s> jones , 23 , paid # 1,200 for a dress . </s> <s> she says it was ` worth it ' </s>"
)
STORM_ARTICLE = (
    "miami , florida -lrb- cnn -rrb- -- at 5 p.m. et , the storm was 100 miles -lrb- 160 "
    "kilometers -rrb- southeast of miami , fla. . the storm was expected to make landfall "
    "monday night ."
)

# The one line of the fixture where the jar and the Python tokenizer differ (see the
# module docstring): the combining accents stay in the word in the jar only.
JAR_ONLY_LINE = "Jose\u0301 Marti\u0301nez opened the cafe in 2010 ."
PYTHON_ONLY_LINE = "Jose \u0301 Marti \u0301 nez opened the cafe in 2010 ."

# PTBTokenizer 3.4.1 conventions, checked on the jar (test_tokenizers_agree repeats it).
TOKENIZER_TABLE = [
    ("He lives in the U.S. He works here.", "He lives in the U.S. . He works here ."),
    ("The U.S. Army and Acme Inc. staff.", "The U.S. Army and Acme Inc. staff ."),
    ("Acme Inc. He left.", "Acme Inc. . He left ."),
    (
        "Mr. Smith met Dr. Jones at 5 p.m. Then left.",
        "Mr. Smith met Dr. Jones at 5 p.m. . Then left .",
    ),
    (
        "Sen. John McCain, R-Ariz., and Sen. Chuck Schumer, D-N.Y., said",
        "Sen. John McCain , R-Ariz. , and Sen. Chuck Schumer , D-N.Y. , said",
    ),
    (
        "Don't, can't, won't, cannot, gonna, I'm, you're, it's.",
        "Do n't , ca n't , wo n't , can not , gon na , I 'm , you 're , it 's .",
    ),
    (
        '\u201cCurly\u201d and \u2018single\u2019 and "straight" quotes',
        "`` Curly '' and ` single ' and `` straight '' quotes",
    ),
    ("'I was there,' she said. 'Why?'", "' I was there , ' she said . ` Why ? '"),
    ("(round) [square] {curly}", "-LRB- round -RRB- -LSB- square -RSB- -LCB- curly -RCB-"),
    (
        "It cost \u00a35, \u20ac5 or $5.50 -- 50% off\u2026 wow!?",
        "It cost # 5 , $ 5 or $ 5.50 -- 50 % off ... wow !?",
    ),
    (
        "Call (555) 123-4567 or visit cnn.com/travel, @CNN or #travel.",
        "Call -LRB-555-RRB-\u00a0123-4567 or visit cnn.com/travel , @CNN or #travel .",
    ),
    (
        "The '90s, rock 'n' roll, O'Neil's 10-year-old boys' club.",
        "The '90s , rock 'n' roll , O'Neil 's 10-year-old boys ' club .",
    ),
    ("Ends with Calif.\nThe next line", "Ends with Calif. .\nThe next line"),
]


def _records(out_dir, split):
    return list(read_bin_file(os.path.join(out_dir, split + ".bin")))


def _chunk_records(out_dir, split):
    records = []
    for path in sorted(glob.glob(os.path.join(out_dir, "chunked", split + "_*.bin"))):
        records.extend(read_bin_file(path))
    return records


def _vocab(out_dir):
    with open(os.path.join(out_dir, "vocab"), encoding="utf-8") as f:
        return [tuple(line.rstrip("\n").split(" ")) for line in f]


@pytest.fixture(scope="module")
def corpus(tmp_path_factory):
    """The fixture's story folders and URL lists."""
    return make_corpus(tmp_path_factory.mktemp("cnn_dm"))


@pytest.fixture(scope="module")
def jar_build(corpus, tmp_path_factory):
    """Runs the real command line once (PTBTokenizer jar, two stories per java run)."""
    if shutil.which("java") is None:
        pytest.skip("java is not installed (apt-get install default-jre-headless)")
    out_dir = str(tmp_path_factory.mktemp("jar_build") / "finished_files")
    command = [
        sys.executable,
        "-m",
        "data_prep.cnn_dailymail",
        "--out_dir=" + out_dir,
        "--tokenizer_batch_size=2",
    ]
    command += ["--%s=%s" % item for item in corpus.items()]
    result = subprocess.run(command, cwd=ROOT, capture_output=True, text=True, check=False)
    assert result.returncode == 0, result.stderr[-3000:]
    return out_dir, result.stdout, result.stderr


@pytest.fixture(scope="module")
def python_build(corpus, tmp_path_factory):
    """The same build in-process with the pure-Python tokenizer."""
    out_dir = str(tmp_path_factory.mktemp("python_build") / "finished_files")
    stats = cd.build(
        corpus["url_lists_dir"],
        out_dir,
        corpus["cnn_stories_dir"],
        corpus["dm_stories_dir"],
        tokenizer=cd.PythonTokenizer(),
    )
    return out_dir, stats


def test_records_hold_the_expected_article_and_abstract(jar_build):
    out_dir, _, _ = jar_build
    train = _records(out_dir, "train")
    assert train[0] == (WEDDING_ARTICLE, WEDDING_ABSTRACT)
    assert train[1] == (SENATE_ARTICLE, SENATE_ABSTRACT)
    test = _records(out_dir, "test")
    assert test[1] == (
        STORM_ARTICLE,
        "<s> storm is 100 miles from miami . </s> <s> landfall expected monday night . </s>",
    )


def test_splits_follow_the_url_lists_and_skip_the_missing_story(jar_build):
    out_dir, _, _ = jar_build
    first_words = {
        split: [article.split(" ")[0] for article, _ in _records(out_dir, split)]
        for split in cd.SPLITS
    }
    assert first_words == {
        "train": ["by", "washington", "manchester"],
        "val": ["new"],
        "test": ["jose\u0301", "miami"],
    }
    for split in cd.SPLITS:
        assert _chunk_records(out_dir, split) == _records(out_dir, split)
    assert sorted(os.listdir(os.path.join(out_dir, "chunked"))) == [
        "test_000.bin",
        "train_000.bin",
        "val_000.bin",
    ]


def test_cli_summary_reports_counts_and_missing_url(jar_build):
    _, stdout, stderr = jar_build
    assert "tokenizer: ptb_jar" in stdout
    assert "train: 3 stories written (1 chunks), 0 of 3 URLs skipped" in stdout
    assert "val  : 1 stories written (1 chunks), 1 of 2 URLs skipped (story missing)" in stdout
    assert "test : 2 stories written (1 chunks), 0 of 2 URLs skipped" in stdout
    assert "vocab: " in stdout
    assert "val: 1 of 2 URLs have no story" in stderr
    assert "%s (%s.story)" % (MISSING_URL, story_name(MISSING_URL)) in stderr
    assert "holds 4 .story files, See's make_datafiles.py expects 92579 (92575 missing)" in stderr
    assert "wrote 6/6 stories" in stderr


def test_vocab_counts_train_only_without_sentence_marks(jar_build):
    out_dir, _, _ = jar_build
    expected = collections.Counter()
    for article, abstract in _records(out_dir, "train"):
        expected.update(
            t for t in article.split(" ") + abstract.split(" ") if t not in ("<s>", "</s>")
        )
    vocab = _vocab(out_dir)
    assert [(word, int(count)) for word, count in vocab] == expected.most_common()
    words = {word for word, _ in vocab}
    assert {"<s>", "</s>"}.isdisjoint(words)
    assert {"encouraging", "landfall", "cafe"}.isdisjoint(words)  # val and test only
    # "the": 3 in the wedding article, 4 in the senate article, 1 in its abstract.
    assert dict(vocab)["the"] == "8" and dict(vocab)["senate"] == "2"


def test_corpus_record_names_the_ptb_tokenizer_lowercased(jar_build):
    with open(os.path.join(jar_build[0], "corpus.json"), encoding="utf-8") as f:
        assert json.load(f) == {"tokenizer": "ptb", "lowercase": True}


def test_story_files_are_named_by_sha1_of_the_url():
    assert cd.hashhex(SENATE_URL) == story_name(SENATE_URL)
    sources = [
        cd.StorySource("cnn", "/c", frozenset({story_name(SENATE_URL) + ".story"})),
        cd.StorySource(
            "dm",
            "/d",
            frozenset({story_name(SENATE_URL) + ".story", story_name(CAFE_URL) + ".story"}),
        ),
    ]
    paths, missing = cd.resolve_stories([CAFE_URL, SENATE_URL, MISSING_URL], sources)
    assert paths == [
        os.path.join("/d", story_name(CAFE_URL) + ".story"),
        os.path.join("/c", story_name(SENATE_URL) + ".story"),
    ]
    assert missing == [MISSING_URL]


@pytest.mark.parametrize("end", cd.END_TOKENS)
def test_fix_missing_period_keeps_lines_ending_in_an_end_token(end):
    assert cd.fix_missing_period("he said " + end) == "he said " + end


@pytest.mark.parametrize(
    "line, fixed",
    [
        ("image caption : a dog", "image caption : a dog ."),
        ("ends in a colon :", "ends in a colon : ."),
        ("ends in an ellipsis \u2026", "ends in an ellipsis \u2026 ."),
        ("@highlight", "@highlight"),
        ("text with @highlight inside", "text with @highlight inside"),
        ("", ""),
    ],
)
def test_fix_missing_period_on_other_lines(line, fixed):
    assert cd.fix_missing_period(line) == fixed


def test_end_tokens_are_sees_list():
    assert cd.END_TOKENS == (".", "!", "?", "...", "'", "`", '"', "\u2019", "\u201d", ")")


def test_get_art_abs_splits_at_the_first_highlight():
    story = "First Line\n\n  second line !  \n@highlight\n\nHigh One\n@highlight\ntwo ?\n\n"
    assert cd.get_art_abs(story) == (
        "first line . second line !",
        "<s> high one . </s> <s> two ? </s>",
    )
    assert cd.get_art_abs("no highlights here") == ("no highlights here .", "")


def test_strict_counts_stops_on_counts_then_on_the_missing_story(corpus, tmp_path, monkeypatch):
    args = (
        corpus["url_lists_dir"],
        str(tmp_path / "out"),
        corpus["cnn_stories_dir"],
        corpus["dm_stories_dir"],
    )
    with pytest.raises(cd.CnnDailymailError, match="holds 4 .story files"):
        cd.build(*args, tokenizer=cd.PythonTokenizer(), strict_counts=True)
    monkeypatch.setattr(cd, "EXPECTED_STORIES", {"cnn": 4, "dm": 3})
    with pytest.raises(cd.CnnDailymailError) as error:
        cd.build(*args, tokenizer=cd.PythonTokenizer(), strict_counts=True)
    assert "val: 1 of 2 URLs have no story in either stories folder" in str(error.value)
    assert "%s (%s.story)" % (MISSING_URL, story_name(MISSING_URL)) in str(error.value)
    assert not (tmp_path / "out").exists()


def test_missing_urls_are_listed_then_counted():
    urls = ["http://example.com/%d" % i for i in range(cd.MISSING_LISTED + 2)]
    with pytest.raises(cd.CnnDailymailError) as error:
        cd.report_missing("train", urls, 10, strict=True)
    message = str(error.value)
    assert "train: 7 of 10 URLs have no story" in message
    assert "%s (%s.story)" % (urls[4], story_name(urls[4])) in message
    assert urls[5] not in message and "... and 2 more" in message
    cd.report_missing("train", urls, 10, strict=False)  # a warning only


def test_story_counts_warn_or_fail(corpus, monkeypatch):
    sources = [
        cd.read_story_source("cnn", corpus["cnn_stories_dir"]),
        cd.read_story_source("dm", None),
    ]
    problems = cd.check_story_counts(sources, strict=False)
    assert problems == [
        "cnn stories: %s holds 4 .story files, See's make_datafiles.py expects 92579 "
        "(92575 missing)" % corpus["cnn_stories_dir"],
        "dm stories: (--dm_stories_dir not given) holds 0 .story files, See's "
        "make_datafiles.py expects 219506 (219506 missing)",
    ]
    with pytest.raises(cd.CnnDailymailError, match="--strict_counts is set"):
        cd.check_story_counts(sources, strict=True)
    monkeypatch.setattr(cd, "EXPECTED_STORIES", {"cnn": 4, "dm": 0})
    assert cd.check_story_counts(sources, strict=True) == []


def test_missing_folders_and_lists_are_clear_errors(corpus, tmp_path):
    with pytest.raises(cd.CnnDailymailError, match="give --cnn_stories_dir"):
        cd.build(corpus["url_lists_dir"], str(tmp_path), tokenizer=cd.PythonTokenizer())
    with pytest.raises(cd.CnnDailymailError, match="is not a directory"):
        cd.build(
            corpus["url_lists_dir"],
            str(tmp_path),
            str(tmp_path / "nope"),
            tokenizer=cd.PythonTokenizer(),
        )
    with pytest.raises(cd.CnnDailymailError, match="all_test.txt"):
        cd.build(
            str(tmp_path), str(tmp_path), corpus["cnn_stories_dir"], tokenizer=cd.PythonTokenizer()
        )


def test_missing_java_is_a_clear_error(corpus, tmp_path, monkeypatch):
    monkeypatch.setattr(cd.shutil, "which", lambda name: None)
    with pytest.raises(cd.CnnDailymailError) as error:
        cd.build(
            corpus["url_lists_dir"],
            str(tmp_path / "out"),
            corpus["cnn_stories_dir"],
            corpus["dm_stories_dir"],
        )
    assert "java is not on PATH" in str(error.value)
    assert "apt-get install default-jre-headless" in str(error.value)
    assert "--tokenizer=python" in str(error.value)
    assert not (tmp_path / "out").exists()


def test_corenlp_jar_is_found_in_pycocoevalcap():
    path = cd.find_corenlp_jar()
    assert os.path.basename(path) == "stanford-corenlp-3.4.1.jar" and os.path.isfile(path)


@pytest.mark.parametrize("text, tokens", TOKENIZER_TABLE)
def test_python_tokenizer_follows_ptb_conventions(text, tokens):
    assert cd.ptb_tokenize(text) == tokens


@needs_java
def test_tokenizers_agree_on_the_fixture_except_the_documented_difference(tmp_path):
    paths = []
    for index, text in enumerate(list(STORIES.values()) + [text for text, _ in TOKENIZER_TABLE]):
        path = tmp_path / ("%d.story" % index)
        write_text(path, text)
        paths.append(str(path))
    jar_texts = cd.JarTokenizer().tokenize_files(paths)
    python_texts = cd.PythonTokenizer().tokenize_files(paths)
    differences = []
    for jar_text, python_text in zip(jar_texts, python_texts):
        jar_lines, python_lines = jar_text.split("\n"), python_text.split("\n")
        assert len(jar_lines) == len(python_lines)
        differences += [(j, p) for j, p in zip(jar_lines, python_lines) if j != p]
    assert differences == [(JAR_ONLY_LINE, PYTHON_ONLY_LINE)]
    assert [text.split("\n") for text in jar_texts[len(STORIES) :]] == [
        tokens.split("\n") for _, tokens in TOKENIZER_TABLE
    ]


def test_python_build_matches_the_jar_build_but_for_the_accents(jar_build, python_build):
    jar_dir = jar_build[0]
    python_dir, stats = python_build
    for split in ("train", "val"):
        assert _records(python_dir, split) == _records(jar_dir, split)
    jar_test, python_test = _records(jar_dir, "test"), _records(python_dir, "test")
    assert python_test[1:] == jar_test[1:]
    assert python_test[0][0] == jar_test[0][0].replace(
        JAR_ONLY_LINE.lower(), PYTHON_ONLY_LINE.lower()
    )
    assert _vocab(python_dir) == _vocab(jar_dir)  # the test split never enters the vocab
    assert stats.written == {"test": 2, "val": 1, "train": 3}
    assert stats.missing == {"test": [], "val": [MISSING_URL], "train": []}


def test_vocab_size_keeps_the_most_common_words(corpus, python_build, tmp_path):
    out_dir = str(tmp_path / "out")
    stats = cd.build(
        corpus["url_lists_dir"],
        out_dir,
        corpus["cnn_stories_dir"],
        corpus["dm_stories_dir"],
        tokenizer=cd.PythonTokenizer(),
        vocab_size=3,
    )
    assert stats.vocab_size == 3
    assert _vocab(out_dir) == _vocab(python_build[0])[:3]
    assert [word for word, _ in _vocab(out_dir)] == [".", ",", "the"]


def test_chunks_stream_with_write_chunked_names_and_drop_stale_ones(python_build, tmp_path):
    out_dir, _ = python_build
    full_path = os.path.join(out_dir, "train.bin")
    chunk_dir = tmp_path / "chunked"
    write_text(chunk_dir / "train_007.bin", "stale")
    write_text(chunk_dir / "val_000.bin", "other split")
    paths = summarization.write_chunks(
        read_bin_file(full_path), str(chunk_dir), "train", chunk_size=2
    )
    reference = bin_files.write_chunked(
        str(tmp_path / "reference"), "train", read_bin_file(full_path), chunk_size=2
    )
    assert [os.path.basename(p) for p in paths] == ["train_000.bin", "train_001.bin"]
    assert [os.path.basename(p) for p in paths] == [os.path.basename(p) for p in reference]
    for path, expected in zip(paths, reference):
        with open(path, "rb") as f, open(expected, "rb") as g:
            assert f.read() == g.read()
    assert sorted(os.listdir(chunk_dir)) == ["train_000.bin", "train_001.bin", "val_000.bin"]
    assert [len(list(read_bin_file(p))) for p in paths] == [2, 1]


def test_finished_files_with_chunks_is_accepted(python_build, tmp_path):
    finished = str(tmp_path / "finished_files")
    shutil.copytree(python_build[0], finished)
    summary = cd.accept_finished_files(finished)
    assert summary.splitlines() == [
        "test : 2 records in 1 chunks",
        "val  : 1 records in 1 chunks",
        "train: 3 records in 1 chunks",
        "vocab: %d words" % len(_vocab(finished)),
    ]


def test_finished_files_without_chunks_gets_them_from_the_full_bins(python_build, tmp_path):
    finished = str(tmp_path / "finished_files")
    shutil.copytree(python_build[0], finished)
    shutil.rmtree(os.path.join(finished, "chunked"))
    summary = cd.accept_finished_files(finished)
    assert "train: 3 records in 1 chunks (chunked/ written from train.bin)" in summary
    for split in cd.SPLITS:
        assert _chunk_records(finished, split) == _records(python_build[0], split)


def test_finished_files_problems_are_clear_errors(python_build, tmp_path):
    finished = tmp_path / "finished_files"
    shutil.copytree(python_build[0], finished)
    os.remove(finished / "chunked" / "val_000.bin")
    os.remove(finished / "val.bin")
    with pytest.raises(cd.CnnDailymailError, match=r"neither chunked/val_\*.bin nor val.bin"):
        cd.accept_finished_files(str(finished))
    shutil.copy(python_build[0] + "/val.bin", finished / "val.bin")
    shutil.copy(python_build[0] + "/train.bin", finished / "chunked" / "val_000.bin")
    with pytest.raises(cd.CnnDailymailError, match="holds 1 records but"):
        cd.accept_finished_files(str(finished))
    os.remove(finished / "chunked" / "val_000.bin")
    with open(finished / "val.bin", "r+b") as f:
        f.truncate(20)
    with pytest.raises(bin_files.BinFileError, match="cut short"):
        cd.accept_finished_files(str(finished))
    os.remove(finished / "vocab")
    with pytest.raises(cd.CnnDailymailError, match="has no vocab file"):
        cd.accept_finished_files(str(finished))


def test_cli_accepts_finished_files(python_build, tmp_path):
    finished = str(tmp_path / "finished_files")
    shutil.copytree(python_build[0], finished)
    shutil.rmtree(os.path.join(finished, "chunked"))
    result = subprocess.run(
        [sys.executable, "-m", "data_prep.cnn_dailymail", "--finished_files=" + finished],
        cwd=ROOT,
        capture_output=True,
        text=True,
        check=False,
    )
    assert result.returncode == 0, result.stderr[-3000:]
    assert "Accepted %s" % finished in result.stdout
    assert "val  : 1 records in 1 chunks (chunked/ written from val.bin)" in result.stdout
