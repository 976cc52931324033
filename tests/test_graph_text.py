"""The TensorFlow-op text processing of the exports: the tftext tokeniser's rules, and BPE
segmentation equal to subword-nmt's."""

import os

import pytest
import tensorflow as tf

from acvi_tf import graph_bpe, graph_tokenizer, text
from acvi_tf.formats import bpe

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
EN_DE = os.path.join(ROOT, "data_prep", "samples", "debian_en_de")


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
    assert text.tokenizer("tftext")(raw) == tokens


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
