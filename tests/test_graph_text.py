"""The TensorFlow-op text processing of the exports: the tftext tokeniser's rules, its
batched form (the builders') equal to one string at a time, and BPE segmentation equal to
subword-nmt's."""

import itertools
import os

import pytest
import tensorflow as tf

from acvi_tf.formats import bin_files, bpe
from acvi_tf.text import graph_bpe, graph_tokenizer, tokenizers

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
EN_DE = os.path.join(ROOT, "data_prep", "samples", "debian_en_de")
DESCRIPTIONS = os.path.join(ROOT, "data_prep", "samples", "debian_descriptions", "chunked")
TRICKY = [
    "",
    " \t\n ",
    "...!?;",
    "Don't stop: it's 10:30:15, ok. -3.5 +7 1/2 50% $4.99 #1 1,000.50 a,b 2,",
    "“Quoted” ‘single’ «angle» „low“ — dash -- –en ... end… ''twice'' ``tex``",
    "'tis the dogs' bones; he said \"hi\" (loudly) [sic] {x} <y> rock'n'roll CAN'T",
    "Straße ﬁne ０１２ zero\u200bwidth\u00a0nbsp\ttab\x00nul\x7fdel",
    "naïve e\u0301 ΣΊΣΥΦΟΣ İstanbul 東京は晴れ。北京、上海！ مرحبا 👍🏽 👨\u200d👩\u200d👧",
    "debian.org e.g. U.S.A. www.debian.org/doc. foo@bar.com end.",
    "x" * 100000 + " end.",
    "The quick brown fox, 1,234 times. " * 3000,
]


def _one_at_a_time(texts, lowercase):
    """The tokens of each text by an eager call on it alone, joined by single spaces."""
    joined = []
    for x in texts:
        tokens = graph_tokenizer.tokenize(tf.constant([x]), lowercase)[0].numpy()
        joined.append(" ".join(t.decode("utf-8") for t in tokens))
    return joined


def _sample_lines():
    lines = []
    for name in ("train.en", "train.de"):
        with open(os.path.join(EN_DE, name), encoding="utf-8") as f:
            lines += [line.rstrip("\n") for line in f][:600]
    records = bin_files.read_bin_file(os.path.join(DESCRIPTIONS, "train_000.bin"))
    return lines + [text for record in itertools.islice(records, 300) for text in record]


@pytest.mark.parametrize(
    "raw, tokens",
    [
        ("Don't stop: it's 10:30, ok.", "do n't stop : it 's 10:30 , ok ."),
        ("1,000,000 items; 1,2,3 and a,b", "1,000,000 items ; 1,2,3 and a , b"),
        ("See www.debian.org/doc. 3.5% (est.)", "see www.debian.org / doc . 3.5 % ( est . )"),
        ("“Quoted” ‘single’ — dash... end", "\" quoted \" ' single ' -- dash ... end"),
        ("The dogs' bones 'tis", "the dogs ' bones ' tis"),
        ("Straße ﬁne ０１２ zero\u200bwidth\u00a0nbsp\ttab", "strasse fine 012 zerowidth nbsp tab"),
        ("", ""),
    ],
)
def test_the_tftext_rules(raw, tokens):
    assert graph_tokenizer.tokenize_text(raw) == tokens
    assert tokenizers.tokenizer("tftext")(raw) == tokens


@pytest.mark.parametrize("lowercase", [True, False])
def test_batches_tokenise_as_one_string_at_a_time(lowercase):
    expected = _one_at_a_time(TRICKY, lowercase)
    assert graph_tokenizer.tokenize_texts(TRICKY, lowercase, batch_size=4) == expected
    assert tokenizers.batch_tokenizer("tftext", lowercase)(TRICKY) == expected
    assert [tokenizers.tokenizer("tftext", lowercase)(x) for x in TRICKY] == expected
    assert expected[-2] == "x" * 100000 + " end ." and expected[-1].count("1,234") == 3000


def test_batches_tokenise_the_shipped_samples_as_one_string_at_a_time():
    lines = _sample_lines()
    batched = graph_tokenizer.tokenize_texts(lines, batch_size=700)
    # eager, all in one call, and one at a time for every 25th
    joined = tf.strings.reduce_join(graph_tokenizer.tokenize(tf.constant(lines)), 1, separator=" ")
    assert batched == [line.decode("utf-8") for line in joined.numpy()]
    assert batched[::25] == _one_at_a_time(lines[::25], True)
    assert len(lines) == 1800 and sum(a != b for a, b in zip(lines, batched)) > 100


def test_tftext_keeps_case_when_asked():
    assert graph_tokenizer.tokenize_text("Don't GO, Straße.", lowercase=False) == (
        "Do n't GO , Straße ."
    )


def _graph_segmenter(codes):
    ranks = graph_bpe.read_ranks(codes)

    @tf.function(input_signature=[tf.TensorSpec([None], tf.string)])
    def segment(lines):
        return tf.strings.reduce_join(
            graph_bpe.segment(tf.strings.split(lines), ranks), axis=1, separator=" "
        )

    return lambda lines: [line.decode("utf-8") for line in segment(tf.constant(lines)).numpy()]


def test_graph_bpe_merges_as_subword_nmt_does(tmp_path):
    codes = tmp_path / "codes"
    # overlapping runs ("x x x"), merges after a merge, word-final merges, a repeated pair
    codes.write_text("#version: 0.2\na a\nt h\nth e</w>\nc a\naa a\nx x\nxx x</w>\ne r\na a\n")
    lines = ["the cat aaaaa", "aaa a xxxx x xxx", "é th theater", "x", ""]
    assert _graph_segmenter(str(codes))(lines) == [
        bpe.segmenter(str(codes))(line) for line in lines
    ]


def test_graph_bpe_equals_subword_nmt_on_the_shipped_corpus():
    codes = os.path.join(EN_DE, "bpe", "codes")
    segment = bpe.segmenter(codes)
    lines = []
    for name in ("train.en", "train.de"):
        with open(os.path.join(EN_DE, name), encoding="utf-8") as f:
            lines += [line.rstrip("\n") for line in f][:500]
    assert _graph_segmenter(codes)(lines) == [segment(line) for line in lines]


def test_graph_bpe_refuses_other_code_versions(tmp_path):
    (tmp_path / "codes").write_text("#version: 0.1\na b\n")
    with pytest.raises(ValueError, match="version 0.2"):
        graph_bpe.read_ranks(str(tmp_path / "codes"))
