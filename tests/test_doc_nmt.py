"""docs/nmt.md's commands, run in this process as the page gives them with only sizes
and paths substituted (``doc_commands.sized``): the IWSLT'15 run on files in IWSLT's
layout made from the shipped En-De sample, its inference from the best checkpoint (the
``$(...)`` expanded by bash) and translations of new sentences; the WMT'16 run on what
docs/data.md's ``data_prep.wmt16`` command builds from raw files; the shipped sample's
run."""

import os

import doc_commands
import pytest
from inputs import EN, RO

pytestmark = pytest.mark.slow

IWSLT, WMT16, DEBIAN, INFERENCE, TRANSLATE = doc_commands.block("docs/nmt.md", 0)
(WMT16_BUILD,) = doc_commands.block("docs/data.md", 6)
SAMPLE = os.path.join(doc_commands.ROOT, "data_prep", "samples", "debian_en_de")


def _run(command, cwd, paths=None):
    return doc_commands.run_in_process(doc_commands.sized(command, paths), str(cwd))


def _lines(path, count=None):
    with open(path, encoding="utf-8") as f:
        return f.read().splitlines()[:count]


def _write(path, lines):
    os.makedirs(os.path.dirname(path), exist_ok=True)
    with open(path, "w", encoding="utf-8") as f:
        f.write("".join(line + "\n" for line in lines))


def _iwslt_layout(cwd):
    """The files IWSLT's command names, from the En-De sample (German as its target)."""
    src, tgt = IWSLT.flag("src"), IWSLT.flag("tgt")
    sizes = dict(train_prefix=("train", 200), dev_prefix=("dev", 20), test_prefix=("test", 20))
    for flag, (split, count) in sizes.items():
        for lang, sample_lang in ((src, "en"), (tgt, "de")):
            lines = _lines(os.path.join(SAMPLE, "%s.%s" % (split, sample_lang)), count)
            _write(os.path.join(cwd, "%s.%s" % (IWSLT.flag(flag), lang)), lines)
    for lang, sample_lang in ((src, "en"), (tgt, "de")):
        lines = _lines(os.path.join(SAMPLE, "vocab." + sample_lang))
        _write(os.path.join(cwd, "%s.%s" % (IWSLT.flag("vocab_prefix"), lang)), lines)


def test_iwslt15_run_inference_and_translations(tmp_path):
    _iwslt_layout(tmp_path)
    _run(IWSLT, tmp_path)
    assert _run(INFERENCE, tmp_path) is not None  # BLEU against the reference
    output = tmp_path / INFERENCE.flag("out_dir") / "output_infer"
    assert len(_lines(output)) == len(_lines(tmp_path / INFERENCE.flag("inference_input_file")))
    new = _lines(os.path.join(SAMPLE, "test.en"))[20:25]
    _write(str(tmp_path / TRANSLATE.flag("input")), new)
    assert _run(TRANSLATE, tmp_path) == _lines(tmp_path / TRANSLATE.flag("output"))
    assert len(_lines(tmp_path / TRANSLATE.flag("output"))) == len(new)


def test_wmt16_build_then_the_bpe_run(tmp_path):
    for flag in ("train_prefix", "dev_prefix", "test_prefix"):
        for lang, lines in (("en", EN), ("ro", RO)):
            _write(str(tmp_path / ("%s.%s" % (WMT16_BUILD.flag(flag), lang))), lines)
    _run(WMT16_BUILD, tmp_path)
    _run(WMT16, tmp_path)
    out = tmp_path / WMT16.flag("out_dir")
    assert (out / "best").is_dir()
    # the translations are written in words, as tensorflow/nmt writes them
    for name, prefix in (("output_dev", "dev_prefix"), ("output_test", "test_prefix")):
        pieces = _lines(tmp_path / ("%s.%s" % (WMT16.flag(prefix), WMT16.flag("tgt"))))
        written = _lines(out / name)
        assert len(written) == len(pieces) and any("@@" in line for line in pieces)
        assert not any("@@" in line for line in written), written


def test_the_shipped_debian_sample_run(tmp_path):
    os.symlink(os.path.join(doc_commands.ROOT, "data_prep"), tmp_path / "data_prep")
    # a size: the first 20 of the dev and test sets' 500 pairs, which every validation
    # translates and scores
    paths = {}
    for flag in ("dev_prefix", "test_prefix"):
        shipped = DEBIAN.flag(flag)
        for lang in (DEBIAN.flag("src"), DEBIAN.flag("tgt")):
            lines = _lines(os.path.join(doc_commands.ROOT, "%s.%s" % (shipped, lang)), 20)
            _write(str(tmp_path / "first_20" / ("%s.%s" % (shipped, lang))), lines)
        paths[shipped] = "first_20/" + shipped
    _run(DEBIAN, tmp_path, paths)
    assert (tmp_path / DEBIAN.flag("out_dir") / "best").is_dir()
