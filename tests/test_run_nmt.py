"""The NMT entry point end to end on a slice of the shipped En-De sample, in process on
its own flags (``run_nmt.define_flags``): train with evaluation and best/, resume,
then translate a file with BLEU and attention images; and once as a command, for its
one-line errors."""

import json
import os
import re
import shutil

import browser
import pytest
import sacrebleu
import tensorflow as tf

from acvi_tf import config as config_lib
from acvi_tf import files
from acvi_tf import flags as acvi_flags
from acvi_tf.formats import nmt_text
from acvi_tf.training import checkpoints
from acvi_tf.training import trainer as trainer_lib
from nmt import experiment, hparams, run_nmt, schedule
from nmt import jobs as nmt_jobs
from nmt import task as nmt_task

from conftest import command, untraced

pytestmark = pytest.mark.slow  # scheduled first (conftest.py)

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
SAMPLE = os.path.join(ROOT, "data_prep", "samples", "debian_en_de")


@pytest.fixture(scope="module")
def corpus(tmp_path_factory):
    root = tmp_path_factory.mktemp("en_de")
    for split, count in (("train", 200), ("dev", 10)):
        for lang in ("en", "de"):
            with open(os.path.join(SAMPLE, "%s.%s" % (split, lang)), encoding="utf-8") as f:
                lines = f.readlines()[:count]
            (root / ("%s.%s" % (split, lang))).write_text("".join(lines), encoding="utf-8")
    for lang in ("en", "de"):
        with open(os.path.join(SAMPLE, "vocab." + lang), encoding="utf-8") as f:
            (root / ("vocab." + lang)).write_text(f.read(), encoding="utf-8")
    return root


def _args(corpus, out_dir, *extra):
    return [
        "--src=en",
        "--tgt=de",
        "--vocab_prefix=%s" % (corpus / "vocab"),
        "--train_prefix=%s" % (corpus / "train"),
        "--dev_prefix=%s" % (corpus / "dev"),
        "--out_dir=%s" % out_dir,
        "--num_units=16",
        "--encoder_type=bi",
        "--batch_size=16",
        "--num_train_steps=10",
        "--steps_per_stats=5",
        "--steps_per_external_eval=10",
        "--optimizer=adam",
        "--learning_rate=0.01",
        "--infer_batch_size=8",
        "--context=acvi",
        "--acvi_kl=bound",
        "--kl_weight=0.01",
        "--seed=3",
    ] + list(extra)


def _run(corpus, out_dir, *extra):
    """Runs the entry point in this process; returns its result (best dev BLEU, or the
    inference BLEU)."""
    argv = ["run_nmt"] + _args(corpus, out_dir, *extra)
    return run_nmt.run(config_lib.parse(run_nmt.define_flags, argv))


def _with_record(out_dir, *argv):
    """The entry point given the run's folder and ``argv`` only: the rest is the run's
    record."""
    config = config_lib.parse(run_nmt.define_flags, ["run_nmt", "--out_dir=%s" % out_dir, *argv])
    return run_nmt.run(config)


def test_train_evaluate_and_translate(corpus, tmp_path, absl_caplog, capsys, monkeypatch):
    """Training, validation, inference and its refusals, then a resume. NMT's loop under
    a strategy of two replicas is test_multi_worker.py's (killed, resumed, and equal to
    one device); its steps on two replicas test_distribute.py's; that a resume's strategy
    is its own command's, test_flags.py's."""
    out = tmp_path / "out"
    assert _run(corpus, out) >= 0.0
    record = json.loads((out / "hparams.json").read_text())
    assert record["num_units"] == 16
    assert tf.train.latest_checkpoint(str(out)).endswith("translate.ckpt-10")
    assert tf.train.latest_checkpoint(str(out / "best")) is not None
    assert len((out / "output_dev").read_text().splitlines()) == 10
    assert any(f.startswith("events") for f in os.listdir(out / "train_log"))
    inference = [
        "--inference_input_file=%s" % (corpus / "dev.en"),
        "--inference_ref_file=%s" % (corpus / "dev.de"),
        "--infer_mode=beam_search",
        "--beam_width=3",
        "--length_penalty_weight=1.0",  # so that the 10-step model's beams are not empty
    ]
    absl_caplog.clear()
    output = "--inference_output_file=%s" % (tmp_path / "dev.hyp")
    score = _with_record(out, *inference, output, "--attention_images=1")
    assert score >= 0.0
    # tensorflow/nmt's inference restores the newest checkpoint, not the best model
    newest = "Restored %s (step 10): the newest checkpoint" % (out / "translate.ckpt-10")
    assert newest in absl_caplog.messages
    assert len((tmp_path / "dev.hyp").read_text().splitlines()) == 10
    # the heat maps and the report go beside the output file
    assert os.listdir(tmp_path / "dev.hyp.attention") == ["000000.png"]
    assert (tmp_path / "dev.hyp.report.html").exists()
    assert not (out / "output_infer.attention").exists()
    assert (
        "Translating with infer_mode=beam_search (given), beam_width=3 (given), "
        "length_penalty_weight=1.0 (given), infer_batch_size=8 (the run's)"
    ) in absl_caplog.text
    # the same with the model's flags repeated
    repeated = _run(corpus, out, *inference, "--attention_images=2")
    assert repeated == score
    assert (out / "output_infer").read_text() == (tmp_path / "dev.hyp").read_text()
    assert sorted(os.listdir(out / "output_infer.attention")) == ["000000.png", "000001.png"]
    _check_report(out / "output_infer.report.html", corpus, tmp_path / "browser")
    assert (tmp_path / "dev.hyp.report.html").exists()  # another output's page stays
    # translating leaves the training run's record as it was
    assert json.loads((out / "hparams.json").read_text())["inference_input_file"] is None
    # a flag that would change the model is refused, naming it: by a resume, and by an
    # inference as a command, in one line with status 2
    with pytest.raises(acvi_flags.FlagChangeError, match="--num_units=16, this command gives"):
        _run(corpus, out, "--num_units=32", "--num_train_steps=12")
    status, _, err = command(
        "nmt.run_nmt", ["--out_dir=%s" % out, "--num_units=32", *inference], capsys, monkeypatch
    )
    assert status == 2, err[-3000:]
    assert err.splitlines()[-1] == (
        "error: %s: the run was trained with --num_units=16, this command gives "
        "--num_units=32, which changes the model; leave --num_units out to use the run's "
        "value, or use a new folder for a new run" % (out / "hparams.json")
    )
    # target words in another order, the same size: refused by a resume and an inference
    (tmp_path / "other").mkdir()
    shutil.copy(corpus / "vocab.en", tmp_path / "other" / "vocab.en")
    words = (corpus / "vocab.de").read_text(encoding="utf-8").splitlines(True)
    words[5], words[6] = words[6], words[5]
    (tmp_path / "other" / "vocab.de").write_text("".join(words), encoding="utf-8")
    other = "--vocab_prefix=%s" % (tmp_path / "other" / "vocab")
    record = (out / "hparams.json").read_text()
    refused = "the run trained with another vocabulary (%d words, sha256 " % len(words)
    for argv in (["--num_train_steps=12"], inference):
        with pytest.raises(acvi_flags.DataChangeError, match=re.escape(refused)) as e:
            _run(corpus, out, other, *argv)
        assert "than %s.de (%d words" % (other, len(words)) in str(e.value)
    assert (out / "hparams.json").read_text() == record  # as the refused resume found it
    absl_caplog.clear()  # a deliberate change: a warning, and the inference runs
    with untraced():  # its search ran traced in the first inference
        assert _run(corpus, out, other, *inference, "--allow_data_change") >= 0.0
    assert "so the same ids would mean other words; using it (--allow_data_change)" in (
        absl_caplog.text
    )
    # a target vocabulary one word shorter: the checkpoint's tables refuse the inference
    # before the record is read, whatever --allow_data_change says
    (tmp_path / "other" / "vocab.de").write_text("".join(words[:-1]), encoding="utf-8")
    shorter = "gives %d" % (len(words) - 1)
    for allow in ([], ["--allow_data_change"]):
        with pytest.raises(checkpoints.CheckpointMismatchError, match=shorter):
            _run(corpus, out, other, *inference, *allow)
    # a reference file of another length is refused before anything is translated
    (tmp_path / "short.de").write_text(
        "".join((corpus / "dev.de").read_text().splitlines(True)[:9])
    )
    short = "--inference_ref_file=%s" % (tmp_path / "short.de")
    refused = "--inference_output_file=%s" % (tmp_path / "refused.hyp")
    with pytest.raises(nmt_text.NmtDataError, match="short.de has 9 lines, but .*dev.en has 10"):
        _with_record(out, *inference[:1], short, *inference[2:], refused)
    assert not (tmp_path / "refused.hyp").exists()
    # a folder that holds only the record names the run too (--ckpt the checkpoint)
    shutil.copy(out / "hparams.json", tmp_path / "hparams.json")
    ckpt = "--ckpt=%s" % tf.train.latest_checkpoint(str(out))
    with pytest.raises(acvi_flags.DecodeSettingError, match="needs --beam_width > 0, got"):
        _with_record(tmp_path, ckpt, *inference[:3], "--beam_width=0")
    # a second trainer of a run in training is refused before it restores or writes
    # anything: the run's record, events and checkpoints stay as they were
    held = trainer_lib.lock_folder(str(out))
    folder = {p.name: p.read_bytes() for p in out.rglob("*") if p.is_file()}
    with pytest.raises(files.FolderInUseError, match="being written by another trainer"):
        _with_record(out, "--num_train_steps=15", "--learning_rate=0.5")
    held.close()
    assert {p.name: p.read_bytes() for p in out.rglob("*") if p.is_file()} == folder
    # the resume names only the folder and the new steps: the rest is the run's record
    with untraced():  # its steps, validation and search ran traced in the first run
        _with_record(out, "--num_train_steps=15", "--steps_per_external_eval=15")
    assert tf.train.latest_checkpoint(str(out)).endswith("translate.ckpt-15")


def _check_report(path, corpus, tmp_path):
    """The inference's report.html: every translation with its sentence BLEU, in a browser."""
    tmp_path.mkdir()
    result, data, example, _ = browser.check_page(str(path), tmp_path)
    hypotheses = (path.parent / "output_infer").read_text(encoding="utf-8").splitlines()
    references = (corpus / "dev.de").read_text(encoding="utf-8").splitlines()
    assert [r["text"] for r in data["rows"]] == hypotheses
    for row, ref, hyp in zip(data["rows"], references, hypotheses):
        bleu = sacrebleu.sentence_bleu(hyp, [ref], tokenize="none").score
        assert row["s"]["sentence BLEU"] == pytest.approx(bleu, abs=6e-4)
    sources = (corpus / "dev.en").read_text(encoding="utf-8").splitlines()
    assert data["details"][str(example)]["source"] == sources[example].split()
    detail = data["details"][str(example)]
    assert detail["output"] == hypotheses[example].split()  # the beam's, not a greedy one
    assert data["title"] == str(path.parent / "output_infer")  # the output file's page
    assert data["missing_note"].endswith(nmt_jobs.REPORT_ELSEWHERE)
    assert result["sigmaBars"] == len(sources[example].split())  # ACVI
    assert result["klBars"] == len(detail["output"]) == len(detail["kl"])  # --acvi_kl=bound
    assert result["titles"] == [detail["labels"]["sigma"], None, detail["labels"]["kl"]]
    assert detail["labels"]["kl"].startswith("KL per step: bound")


# what surrounds the steps; test_transformer.py trains and searches the Transformer traced
@pytest.mark.eager
def test_transformer_model_type_trains_and_resumes_keeping_a_better_best(corpus, tmp_path):
    out = tmp_path / "transformer"
    model = ["--model_type=transformer", "--num_layers=1", "--num_heads=2"]
    assert _run(corpus, out, *model, "--num_train_steps=5", "--steps_per_external_eval=5") >= 0.0
    assert tf.train.latest_checkpoint(str(out / "best")).endswith("translate.ckpt-5")
    assert len((out / "output_dev").read_text().splitlines()) == 10
    # a run trained before kept its best model in best_bleu/: a resume keeps it there, and
    # replaces it only with a better one
    (out / "best").rename(out / "best_bleu")
    record = out / "best_bleu" / "best.json"
    best = json.loads(record.read_text())
    record.write_text(json.dumps(dict(best, value=1000.0)))
    best = _run(corpus, out, *model, "--num_train_steps=10", "--steps_per_external_eval=5")
    assert best == 1000.0
    assert tf.train.latest_checkpoint(str(out)).endswith("translate.ckpt-10")
    assert tf.train.latest_checkpoint(str(out / "best_bleu")).endswith("translate.ckpt-5")
    assert json.loads(record.read_text())["stale"] == 1 and not (out / "best").exists()


def test_preset_fills_the_flags_not_given():
    values = hparams.preset_values("acvi_paper", {"num_units"})
    assert "num_units" not in values
    assert (
        values["encoder_type"],
        values["num_encoder_layers"],
        values["decay_scheme"],
        values["beam_width"],
        values["optimizer"],
    ) == ("bi", 2, "luong234", 10, "sgd")
    assert hparams.preset_values("", set()) == {}


def test_apply_preset_fills_a_new_config_and_keeps_the_given_flags():
    config = config_lib.parse(
        run_nmt.define_flags, ["run_nmt", "--hparams_preset=acvi_paper", "--num_units=32"]
    )
    applied = nmt_task.apply_preset(config)
    assert (applied.num_units, applied.encoder_type, applied.beam_width) == (32, "bi", 10)
    assert config.encoder_type == "uni"  # the parsed config stays as it was


def test_luong234_is_tensorflow_nmt_staircase():
    lr = schedule.decay_schedule(1.0, "luong234", 12000)
    # exponential_decay(lr, step - 8000, 1000, 0.5, staircase=True) from step 8000
    assert [float(lr(s)) for s in (7999, 8000, 8999, 9000, 10000, 11999)] == [
        1.0,
        1.0,
        1.0,
        0.5,
        0.25,
        0.125,
    ]
    assert schedule.decay_schedule(0.5, "", 100) == 0.5


@pytest.mark.eager  # the choice of the best model around four steps
def test_a_bleu_tie_keeps_the_model_with_the_lower_dev_perplexity(corpus, tmp_path):
    out = tmp_path / "tie"
    # two validations of an untrained model: BLEU 0.0 both times, the NLL falling
    assert _run(corpus, out, "--num_train_steps=4", "--steps_per_external_eval=2") == 0.0
    best = json.loads((out / "best" / "best.json").read_text())
    assert (best["value"], best["step"]) == (0.0, 4) and best["dev_nll"] > 0.0
    assert tf.train.latest_checkpoint(str(out / "best")).endswith("translate.ckpt-4")


@pytest.mark.parametrize(
    "mode, given, unused",
    [
        ("greedy", "beam_width", "--beam_width=4 is unused: infer_mode is greedy; add "),
        ("sample", "beam_width", "--beam_width=4 is unused: infer_mode is sample; add "),
        ("greedy", None, None),
        ("beam_search", "beam_width", None),
        ("beam_search", "sampling_temperature", "--sampling_temperature=0.7 is unused: "),
        ("sample", "sampling_temperature", None),
    ],
)
def test_a_search_flag_the_mode_does_not_read_is_said_to_be_unused(
    absl_caplog, mode, given, unused
):
    values = dict(
        infer_mode=mode,
        beam_width=4,
        length_penalty_weight=0.0,
        sampling_temperature=0.7,
        seed=5,
        infer_batch_size=8,
    )
    experiment.log_search(config_lib.Config(values, [given] if given else []))
    said = [r.getMessage() for r in absl_caplog.records if r.levelname == "WARNING"]
    assert said == ([] if unused is None else [said[0]])
    assert unused is None or said[0].startswith(unused)
    # the sampling settings are told only where they are used
    told = [r.getMessage() for r in absl_caplog.records if r.levelname == "INFO"][0]
    assert ("sampling_temperature=0.7" in told and "seed=5" in told) == (mode == "sample")


def test_sampling_at_no_temperature_is_refused_as_tensorflow_nmt_refuses_it():
    values = dict(infer_mode="sample", beam_width=0, sampling_temperature=0.0)
    with pytest.raises(acvi_flags.DecodeSettingError, match="--sampling_temperature > 0"):
        experiment.check_search(config_lib.Config(values, []))
    experiment.check_search(config_lib.Config(dict(values, sampling_temperature=0.5), []))
