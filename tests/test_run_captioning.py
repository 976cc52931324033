"""run_captioning's input checks on a tiny dataset the test writes (the whole command,
train, resume, eval and decode, runs in test_vc_learning.py on the shipped clips)."""

import json
import os
import shutil
from unittest import mock

import browser
import numpy as np
import pytest
import tensorflow as tf
from absl import app, flags

from acvi_tf import config as config_lib
from acvi_tf import files
from acvi_tf import flags as acvi_flags
from acvi_tf.inference import folders
from acvi_tf.metrics import captions as caption_metrics
from acvi_tf.runner import restoring
from acvi_tf.training import checkpoints
from video_caption import data as vc_data
from video_caption import jobs as vc_jobs
from video_caption import run_captioning

from conftest import no_writes_in, untraced, write_clip_features, write_video


def _flags(*args):
    return config_lib.parse(run_captioning.define_flags, ["run_captioning", *args])


def test_missing_features_name_the_clip(tmp_path):
    data_dir, features = write_clip_features(tmp_path)
    os.remove(os.path.join(features, "clip3_0_1.npy"))
    fv = _flags(
        "--mode=train",
        "--data_dir=" + data_dir,
        "--features=" + features,
        "--out_dir=" + str(tmp_path / "run"),
        "--encoder_units=4",
        "--decoder_units=4",
    )
    with pytest.raises(ValueError, match="clip3_0_1"):
        run_captioning.run(fv)


def test_best_metric_must_be_computed(tmp_path):
    data_dir, features = write_clip_features(tmp_path)
    fv = _flags(
        "--data_dir=" + data_dir,
        "--features=" + features,
        "--out_dir=" + str(tmp_path / "run"),
        "--metrics=ROUGE_L",
        "--best_metric=CIDEr",
    )
    with pytest.raises(app.UsageError, match="--best_metric=CIDEr"):
        run_captioning.run(fv)
    # a decode scores what --metrics asks for, whatever picked the best model: here it
    # gets as far as the missing checkpoint
    with pytest.raises(checkpoints.CheckpointError, match="no checkpoint in"):
        run_captioning.run(fv.replace(mode="decode"))


def test_a_split_without_clips_is_refused_with_its_fix(tmp_path):
    """A corpus built with --allow_empty=val cannot validate: the refusal says how to
    rebuild it."""
    (tmp_path / "val.jsonl").write_text("\n")
    with pytest.raises(vc_data.DataError) as refused:
        vc_data.read_split(str(tmp_path / "val.jsonl"))
    assert str(refused.value) == (
        "%s holds no clips; rebuild the corpus with clips in this split (the captioner "
        "validates on val.jsonl and decodes test.jsonl; a builder's --allow_empty leaves a "
        "split empty)" % (tmp_path / "val.jsonl")
    )


def test_gumbel_fraction_needs_a_known_end_of_training():
    _flags("--acvi_gumbel_fraction=0.1", "--max_steps=500")
    with pytest.raises(flags.IllegalFlagValueError, match="set --patience=0"):
        _flags("--acvi_gumbel_fraction=0.1", "--patience=3")


def test_non_finite_float_flags_are_rejected():
    _flags("--learning_rate=0.01", "--alpha_c=1")
    for flag in ("--learning_rate=nan", "--alpha_c=inf", "--kl_weight=nan"):
        name = flag[2:].split("=")[0]
        with pytest.raises(flags.IllegalFlagValueError, match="--%s must be a finite" % name):
            _flags(flag)


def test_most_common_caption_breaks_ties_alphabetically():
    records = [dict(captions=["b c", "a b"]), dict(captions=["a b", "b c", "z"])]
    assert vc_jobs.most_common_caption(records) == "a b"


@pytest.mark.eager
def test_decode_and_a_resume_read_the_model_from_the_record(tmp_path, absl_caplog, monkeypatch):
    data_dir, features = write_clip_features(tmp_path)
    run = "--out_dir=" + str(tmp_path / "run")
    model = ["--encoder_units=4", "--decoder_units=3", "--emb_dim=5", "--attention_units=3"]
    common = ["--data_dir=" + data_dir, "--features=" + features, run, "--metrics=ROUGE_L"]
    common += ["--best_metric=ROUGE_L", "--beam_size=2", "--num_frames=5", *model]
    # a short --max_decode_len: two steps' captions run to it, one untraced step at a time
    run_captioning.run(_flags(*common, "--batch_size=4", "--max_steps=2", "--max_decode_len=6"))
    folder = tmp_path / "run" / "decode_test"
    videos = _videos(tmp_path / "videos", clip10_0_1=12, clip11_0_1=16, clip12_0_1=5)
    broken = _videos(tmp_path / "broken", clip11_0_1=0, clip12_0_1=3)
    captions, pages = [], []
    # the run's folder only, then every flag repeated (videos: one missing, one unreadable,
    # one shorter than the features)
    for argv in ([run], [*common, "--video_dir=" + broken, "--decode_overwrite"]):
        absl_caplog.clear()
        report = run_captioning.run(_flags("--mode=decode", *argv))
        captions.append(json.loads((folder / "captions.json").read_text()))
        pages.append(browser.page_data(folder / "report.html")[1])
        assert report["split"] == "test" and set(report["model"]) == {"ROUGE_L"}
        if len(captions) == 1:
            # a finished decode is kept: refused without --decode_overwrite, whose
            # decode starts from an empty folder
            finished = sorted(p.name for p in folder.iterdir())
            with pytest.raises(folders.DecodeFolderError, match="finished decode.*overwrite"):
                run_captioning.run(_flags("--mode=decode", run))
            assert sorted(p.name for p in folder.iterdir()) == finished
            (folder / "stale.png").write_bytes(b"")
    assert not (folder / "stale.png").exists()
    assert captions[0] == captions[1] and len(captions[0]) == 3

    # a decode cut short before its last file (a full disk, a kill) is not a finished one
    def no_room(*args):
        raise OSError(28, "No space left on device", str(folder / "report.html"))

    with monkeypatch.context() as patch:
        patch.setattr(vc_jobs, "write_decode_report", no_room)
        with pytest.raises(OSError, match="No space left"):
            run_captioning.run(_flags("--mode=decode", run, "--decode_overwrite"))
    assert (folder / "captions.json").exists() and not (folder / "metrics.json").exists()
    assert "Frames: indices (no --video_dir); f1 is the first sampled frame." in pages[0]["notes"]
    assert (
        "Frames: indices for 1 clip(s) with no video in --video_dir (clip10_0_1)."
        in (pages[1]["notes"])
    )
    assert any(n.startswith("Frames: indices for clip clip11_0_1: ") for n in pages[1]["notes"])
    assert (
        "Frames: indices for clip clip12_0_1: its video gives 3 sampled frames, its features 5."
        in pages[1]["notes"]
    )
    for page in pages:
        assert not any("frames" in detail for detail in page["details"].values())
    # the extraction's settings as video_caption.features records them
    settings = json.dumps(dict(num_frames=6, max_frames=14))
    (tmp_path / "features" / "features.json").write_text(settings)
    run_captioning.run(_flags("--mode=decode", run, "--video_dir=" + videos))  # resumed afresh
    _check_report(folder, captions[0], tmp_path / "browser")
    not_a_folder = str(folder / "captions.json")
    with pytest.raises(app.UsageError, match="--video_dir=%s is not a folder" % not_a_folder):
        run_captioning.run(_flags("--mode=decode", run, "--video_dir=" + not_a_folder))
    assert (
        "Captioning with beam_size=2 (given), max_decode_len=6 (the run's), "
        "length_normalization=none (the run's), decode_batch_size=100 (the run's)"
    ) in absl_caplog.text
    # refused before any checkpoint is looked for: a folder with only the record will do
    (tmp_path / "copy").mkdir()
    shutil.copy(tmp_path / "run" / "hparams.json", tmp_path / "copy")
    with pytest.raises(acvi_flags.FlagChangeError, match="--emb_dim=5, this command gives"):
        run_captioning.run(
            _flags("--mode=decode", "--out_dir=%s" % (tmp_path / "copy"), "--emb_dim=6")
        )
    with pytest.raises(
        acvi_flags.FlagChangeError, match="--encoder_units=4, this command gives --encoder_units=6"
    ):
        run_captioning.run(_flags(*common, "--encoder_units=6", "--max_steps=4"))
    # a decode of the folder in progress (its lock held): a second one stops in one line
    held = files.lock_beside(str(folder), "decode")
    with pytest.raises(files.FolderInUseError, match="being written by another decode"):
        run_captioning.run(_flags("--mode=decode", run))
    held.close()
    # the run's words in another order, the same size: refused
    other = shutil.copytree(data_dir, tmp_path / "other_data")
    (other / "vocab.txt").write_text("a 8\nblue 4\nred 4\nsquare 4\ncircle 4\n")
    with pytest.raises(acvi_flags.DataChangeError, match="another vocabulary"):
        run_captioning.run(
            _flags("--mode=decode", run, "--data_dir=%s" % other, "--decode_overwrite")
        )
    assert (folder / "metrics.json").exists()  # a refused overwrite removes nothing
    # an eval whose results could not be written is refused before it restores anything
    with monkeypatch.context() as patch:
        no_writes_in(patch, tmp_path / "run")
        patch.setattr(restoring, "restore", mock.Mock(side_effect=AssertionError))
        with pytest.raises(PermissionError) as refused:
            run_captioning.run(_flags("--mode=eval", run, "--eval_splits=val"))
    assert refused.value.filename == str(tmp_path / "run" / "eval_metrics.json")
    # a resume given the folder only builds the run's model (a model of the defaults'
    # sizes would not restore) and keeps the record's values
    run_captioning.run(_flags(run, "--max_steps=2"))
    record = json.loads((tmp_path / "run" / "hparams.json").read_text())
    assert (record["encoder_units"], record["num_frames"], record["batch_size"]) == (4, 5, 4)


def _check_report(folder, captions, tmp_path):
    """The decode's report.html: every caption with its CIDEr-D, in a browser."""
    tmp_path.mkdir()
    result, data, example, _ = browser.check_page(str(folder / "report.html"), tmp_path)
    clips = [row["name"] for row in data["rows"]]
    assert sorted(clips) == sorted(captions)
    assert [row["text"] for row in data["rows"]] == [captions[c] for c in clips]
    lines = (folder.parent.parent / "test.jsonl").read_text().splitlines()
    references = {r["clip"]: r["references"] for r in map(json.loads, lines)}
    cider = caption_metrics.caption_metrics(references, captions, names=["CIDEr"])["CIDEr"]
    scores = [row["s"]["CIDEr-D"] for row in data["rows"]]
    assert np.mean(scores) == pytest.approx(cider, abs=1e-3)
    detail = data["details"][str(example)]
    assert detail["source"] == ["f1", "f2", "f3", "f4", "f5"]
    assert result["sigmaBars"] == 5  # ACVI, the default
    assert result["klBars"] == len(detail["output"])
    # the strip: a thumbnail per frame, the selected word's top weights outlined on them
    assert result["frames"] == [0, 1, 2, 3, 4] and set(result["top"]) <= set(result["frames"])
    assert result["images"] == detail["frames"]
    assert all(uri.startswith("data:image/jpeg;base64,") for uri in detail["frames"])
    assert data["notes"][0].startswith(
        "Frames: thumbnails (64 px on the shorter side) of the frames the features were "
        "computed from: 6 equally spaced of the first 14 of each video in --video_dir="
    )
    assert data["notes"][0].endswith("videos, sampled again to --num_frames=5.")
    assert data["missing_note"].endswith(vc_jobs.REPORT_ELSEWHERE % "test")


def _videos(folder, **frame_counts):
    """Writes ``<clip>.mp4`` (or .avi) of each clip with that many frames (0: a file that
    is no video) into ``folder``; returns its path."""
    folder.mkdir()
    for clip, count in frame_counts.items():
        if count:
            write_video(folder / clip, num_frames=count)
        else:
            (folder / (clip + ".mp4")).write_bytes(b"not a video" * 50)
    return str(folder)


def test_a_mirrored_run_trains_validates_and_resumes(tmp_path):
    """Two replicas (the two logical CPUs of conftest): validation and the best model work
    as on one device, and a resume on one device reads its checkpoints (a resume on two
    replicas is test_run_summarization.py's)."""
    data_dir, features = write_clip_features(tmp_path)
    common = [
        "--mode=train",
        "--data_dir=" + data_dir,
        "--features=" + features,
        "--out_dir=" + str(tmp_path / "run"),
        "--encoder_units=4",
        "--decoder_units=4",
        "--metrics=ROUGE_L",
        "--best_metric=ROUGE_L",
        "--batch_size=4",
        "--valid_every=2",
    ]
    mirrored = ["--distribution_strategy=mirrored", "--num_gpus=0"]
    run_captioning.run(_flags(*common, *mirrored, "--max_steps=2"))
    with untraced():  # the strategy's traced steps and validation ran above
        run_captioning.run(_flags(*common, "--max_steps=4"))
    assert tf.train.latest_checkpoint(str(tmp_path / "run" / "train")).endswith("ckpt-4")
    steps = [json.loads(line)["step"] for line in open(tmp_path / "run" / "validation.jsonl")]
    assert steps == [2, 4] and os.path.exists(tmp_path / "run" / "best" / "best.json")
