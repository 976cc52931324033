"""nmt.translate: translations of raw sentences equal run_nmt's inference on the same
sentences as the builder tokenised and segmented them, both in words and both searching a
beam that the greedy run's record does not hold."""

import json

import pytest

from acvi_tf import config as config_lib
from acvi_tf import files
from acvi_tf import flags as acvi_flags
from acvi_tf.formats import bpe, nmt_text
from data_prep import translation
from nmt import run_nmt, serving, translate

from conftest import command, run_settings

WORDS = [
    ("cat", "gatto"),
    ("dog", "cane"),
    ("sleeps", "dorme"),
    ("runs", "corre"),
    ("Rome", "Roma"),
]


@pytest.mark.eager
def test_raw_sentences_translate_as_the_run_s_inference_does(
    tmp_path, absl_caplog, capsys, monkeypatch
):
    rows = []
    for i in range(60):
        (a, x), (b, y) = WORDS[i % 5], WORDS[(i * 3 + 1) % 5]
        rows.append(("The %s and the %s, %d." % (a, b, i), "Il %s e il %s, %d." % (x, y, i)))
    (tmp_path / "pairs.tsv").write_text("en\tit\n" + "".join("%s\t%s\n" % r for r in rows))
    corpus = tmp_path / "corpus"
    argv = ["x", "--src=en", "--tgt=it", "--input=%s" % (tmp_path / "pairs.tsv")]
    argv += ["--out_dir=%s" % corpus, "--bpe_merges=30", "--tokenizer=ptb"]
    translation.build(config_lib.parse(translation.define_flags, argv))
    out = tmp_path / "model"
    common = [
        "run_nmt",
        "--src=en",
        "--tgt=it",
        "--vocab_prefix=%s" % (corpus / "bpe" / "vocab"),
        "--subword_option=bpe",
        "--out_dir=%s" % out,
        "--num_units=8",
        "--infer_batch_size=3",
    ]
    beam = ["--infer_mode=beam_search", "--beam_width=2"]
    train = [
        "--train_prefix=%s" % (corpus / "bpe" / "train"),
        "--dev_prefix=%s" % (corpus / "bpe" / "dev"),
    ]
    run_nmt.run(
        config_lib.parse(
            run_nmt.define_flags, common + train + ["--num_train_steps=4", "--steps_per_stats=1"]
        )
    )
    # the run's own inference over the builder's segmented test sentences
    infer = [
        "--inference_input_file=%s" % (corpus / "bpe" / "test.en"),
        "--inference_output_file=%s" % (tmp_path / "infer.it"),
        "--inference_ref_file=%s" % (corpus / "bpe" / "test.it"),
    ]
    # the model's flags come from the run's record, the search from the command line
    run_nmt.run(
        config_lib.parse(run_nmt.define_flags, ["run_nmt", "--out_dir=%s" % out, *infer, *beam])
    )
    expected = nmt_text.read_lines(str(tmp_path / "infer.it"))  # in words, as BLEU read them
    assert not any("@@" in line for line in expected)
    # the report lists words and shows each reference in words
    report = (tmp_path / "infer.it.report.html").read_text()
    references = nmt_text.read_lines(str(corpus / "bpe" / "test.it"))
    assert any("@@" in line for line in references)
    for line in references:
        assert (
            json.dumps(bpe.remove_bpe(line))[1:-1] in report
            and json.dumps(line)[1:-1] not in report
        )
    # the same sentences raw, as a user has them
    prepare = serving.preprocessor(run_settings("nmt.translate", "--out_dir=%s" % out))
    raw_by_tokens = {prepare(en): en for en, _ in rows}
    raw = [raw_by_tokens[line] for line in nmt_text.read_lines(str(corpus / "bpe" / "test.en"))]
    (tmp_path / "raw.en").write_text("".join(r + "\n" for r in raw) + "\n")
    argv = [
        "translate",
        "--out_dir=%s" % out,
        "--input=%s" % (tmp_path / "raw.en"),
        "--output=%s" % (tmp_path / "raw.it"),
        *beam,
    ]
    translations = translate.run(config_lib.parse(translate.define_flags, argv))
    assert (
        "Translating with infer_mode=beam_search (given), beam_width=2 (given)" in absl_caplog.text
    )
    assert raw and translations == expected + [""]  # an empty line: ""
    assert nmt_text.read_lines(str(tmp_path / "raw.it")) == translations
    # tensorflow/nmt's sampling, seeded: the same draws again, other draws with another seed
    sample = ["--infer_mode=sample", "--sampling_temperature=5.0", "--output=-"]
    drawn = {}
    for seed in (3, 3, 4):
        drawn.setdefault(seed, []).append(
            translate.run(
                config_lib.parse(translate.define_flags, argv[:3] + sample + ["--seed=%d" % seed])
            )
        )
    assert (
        "infer_mode=sample (given), " in absl_caplog.text and "seed=3 (given)" in absl_caplog.text
    )
    assert drawn[3][0] == drawn[3][1] and len(drawn[3][0]) == len(translations)
    assert drawn[4][0] != drawn[3][0]
    # nor may --output replace a file the command reads (the corpus's record, its codes)
    # or the run trained or validates on
    read = ("corpus.json", "bpe/codes", "bpe/train.it", "bpe/dev.en", "bpe/dev.it")
    for kept in [corpus / name for name in read]:
        before = kept.read_bytes()
        with pytest.raises(files.OutputError, match="or one it reads; write to another file"):
            translate.run(
                config_lib.parse(translate.define_flags, argv[:3] + ["--output=%s" % kept])
            )
        assert kept.read_bytes() == before
        # and the run's own inference neither
        inference = ["run_nmt", "--out_dir=%s" % out, infer[0]]
        inference.append("--inference_output_file=%s" % kept)
        with pytest.raises(files.OutputError, match="or one it reads; write to another file"):
            run_nmt.run(config_lib.parse(run_nmt.define_flags, inference))
        assert kept.read_bytes() == before

    # standard input to standard output
    status, out_text, err = command(
        "nmt.translate",
        ["--out_dir=%s" % out, *beam],
        capsys,
        monkeypatch,
        (raw[0] + "\n").encode(),
    )
    assert status == 0, err[-2000:]
    assert out_text.splitlines() == expected[:1]

    # a vocabulary edited in place (two words swapped: the ids mean other words) is
    # refused in one line whose fix this command takes, and --allow_data_change uses it
    vocab = corpus / "bpe" / "vocab.en"
    words = vocab.read_text(encoding="utf-8").splitlines(True)
    words[4], words[5] = words[5], words[4]
    vocab.write_text("".join(words), encoding="utf-8")
    with pytest.raises(acvi_flags.DataChangeError, match="or --allow_data_change to use") as e:
        translate.run(config_lib.parse(translate.define_flags, argv))
    # it names the file, not --vocab_prefix, which this command does not take
    assert "than the run's vocabulary file %s (" % vocab in str(e.value)
    assert "--vocab_prefix" not in str(e.value)
    allowed = translate.run(
        config_lib.parse(translate.define_flags, argv + ["--allow_data_change"])
    )
    assert len(allowed) == len(translations)
    assert "(--allow_data_change)" in absl_caplog.text
    words[4], words[5] = words[5], words[4]  # back as the run trained with it
    vocab.write_text("".join(words), encoding="utf-8")

    # so are BPE codes cut to half their merges, which split new text into other pieces
    codes = corpus / "bpe" / "codes"
    merges = codes.read_text(encoding="utf-8").splitlines(True)
    codes.write_text("".join(merges[: len(merges) // 2]), encoding="utf-8")
    with pytest.raises(acvi_flags.DataChangeError, match="another set of BPE codes") as e:
        translate.run(config_lib.parse(translate.define_flags, argv))
    assert "than %s (%d merges" % (codes, len(merges) // 2 - 1) in str(e.value)  # "#version"
    # run_nmt's inference reads segmented text, which the codes do not touch: it goes on
    infer[1] = "--inference_output_file=%s" % (tmp_path / "again.it")
    run_nmt.run(
        config_lib.parse(run_nmt.define_flags, ["run_nmt", "--out_dir=%s" % out, *infer, *beam])
    )
    assert nmt_text.read_lines(str(tmp_path / "again.it")) == expected
    # so does a resume of the training, whose record keeps the codes the run trained with
    run_nmt.run(
        config_lib.parse(
            run_nmt.define_flags, common + train + ["--num_train_steps=5", "--steps_per_stats=1"]
        )
    )
    with pytest.raises(acvi_flags.DataChangeError, match="another set of BPE codes"):
        translate.run(config_lib.parse(translate.define_flags, argv))
