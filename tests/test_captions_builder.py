"""data_prep.captions: your own captions and a feature store or a folder of videos into
the captioner's split files; bad input in one line; the captioner trains on the result."""

import json
import os
import re
import signal
import subprocess
import sys
import time
from unittest import mock

import numpy as np
import pytest

from acvi_tf import config as config_lib
from acvi_tf.formats import frame_features
from data_prep import captions, moving_shapes, splits
from video_caption import cnn, extraction

from conftest import no_writes_in, write_video

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
CLIPS = ["red_square", "blue_circle", "green_star", "cat_video"]


def _features(root, clips=CLIPS):
    folder = root / "features"
    folder.mkdir(parents=True, exist_ok=True)
    rng = np.random.default_rng(0)
    for clip in clips:
        np.save(folder / ("%s.npy" % clip), rng.normal(size=(3, 5)).astype(np.float32))
    return folder


def _build(tmp_path, captions_path, *argv):
    """Builds with ``argv``; these few clips may leave val and test empty."""
    out = tmp_path / "data"
    config = config_lib.parse(
        captions.define_flags,
        [
            "x",
            "--captions=%s" % captions_path,
            "--features=%s" % _features(tmp_path),
            "--output_dir=%s" % out,
            "--allow_empty=val,test",
            *argv,
        ],
    )
    return captions.build(config), out


def _records(out, split):
    return [json.loads(line) for line in (out / ("%s.jsonl" % split)).read_text().splitlines()]


def test_csv_rows_become_clips_with_their_captions(tmp_path):
    path = tmp_path / "captions.csv"
    rows = [
        (clip, "A %s moves, slowly!" % clip.replace("_", " ")) for clip in CLIPS for _ in range(2)
    ]
    rows.append(("cat_video", "The cat sleeps."))
    path.write_text("clip,caption\n" + "".join('%s,"%s"\n' % row for row in rows))
    stats, out = _build(tmp_path, path)
    assert stats.rows_read == 9 and sum(stats.clips.values()) == 4
    records = {r["clip"]: r for split in captions.SPLITS for r in _records(out, split)}
    assert records["cat_video"]["captions"] == ["a cat video moves , slowly !"] * 2 + [
        "the cat sleeps ."
    ]
    assert records["cat_video"]["references"][2] == "The cat sleeps."
    assert records["cat_video"]["vid"] == "cat_video"
    words = [line.split()[0] for line in (out / "vocab.txt").read_text().splitlines()]
    train = " ".join(c for r in _records(out, "train") for c in r["captions"]).split()
    assert sorted(words) == sorted(set(train))
    assert json.loads((out / "stats.json").read_text())["rows_read"] == 9


def test_json_lines_name_their_fields_and_splits(tmp_path):
    """Fields and splits named by flags; a captioner trains on a build as
    ``runs.captioner_run`` shows."""
    path = tmp_path / "captions.jsonl"
    lines = []
    for i, clip in enumerate(CLIPS):
        split = ["train", "train", "val", "test"][i]
        for caption in ("a shape moves", "the %s" % clip.replace("_", " ")):
            lines.append(json.dumps(dict(id=clip, text=caption, part=split)))
    path.write_text("\n".join(lines) + "\n")
    argv = ["--clip_field=id", "--caption_field=text", "--split_field=part"]
    stats, out = _build(tmp_path, path, *argv)
    assert stats.clips == dict(train=2, val=1, test=1)
    parts = {split: [r["clip"] for r in _records(out, split)] for split in captions.SPLITS}
    assert parts == dict(train=CLIPS[:2], val=CLIPS[2:3], test=CLIPS[3:])
    assert _records(out, "val")[0]["captions"] == [
        "a shape moves",
        "the %s" % CLIPS[2].replace("_", " "),
    ]


def test_a_built_dataset_is_replaced_only_with_overwrite(tmp_path):
    path = tmp_path / "captions.csv"
    path.write_text("clip,caption\nred_square,a red square\n")
    _, out = _build(tmp_path, path)
    built = {p.name: p.read_bytes() for p in out.iterdir()}
    path.write_text("clip,caption\nred_square,another caption\n")
    with pytest.raises(
        splits.CorpusExistsError,
        match=r"data holds a corpus already \(.*stats.json\); give another --output_dir, "
        "or --overwrite to replace it",
    ):
        _build(tmp_path, path)
    assert {p.name: p.read_bytes() for p in out.iterdir()} == built
    _build(tmp_path, path, "--overwrite")
    assert _records(out, "train")[0]["references"] == ["another caption"]


@pytest.mark.parametrize(
    "content, argv, message",
    [
        (
            "clip,text\na,b\n",
            [],
            r"captions.csv:2: no field 'caption' \(the record has 'clip', 'text'\)",
        ),
        ("clip,caption\na,b,c\n", [], r"captions.csv:2: 3 cells, but the header has 2"),
        ('clip,caption\nred_square," "\n', [], r"captions.csv:2: caption with no token"),
        (
            'clip,caption\nred_square,"x"\nmissing,y\n',
            [],
            r"1 clip\(s\) have no features .*: missing",
        ),
        ("clip,caption,s\nred_square,x,dev\n", ["--split_field=s"], r"captions.csv:2: split 'dev'"),
    ],
)
def test_bad_input_is_one_line_naming_the_file_and_line(tmp_path, content, argv, message):
    path = tmp_path / "captions.csv"
    path.write_text(content)
    with pytest.raises(captions.CaptionsError, match=message):
        _build(tmp_path, path, *argv)


def test_skips_are_counted(tmp_path):
    path = tmp_path / "captions.csv"
    path.write_text("clip,caption\nred_square,x\n,y\nmissing,z\n")
    stats, _ = _build(tmp_path, path, "--skip_empty", "--skip_missing_features")
    assert dict(stats.rows_dropped) == {"empty clip id": 1}
    assert stats.clips_dropped_missing_features == 1 and sum(stats.clips.values()) == 1


def _video_build(tmp_path, name, out, *argv):
    argv = ["x", "--captions=%s" % (tmp_path / name), "--output_dir=%s" % out, *argv]
    argv.append("--allow_empty=val,test")
    return captions.build(config_lib.parse(captions.define_flags, argv + ["--split_field=split"]))


def test_a_folder_of_videos_builds_what_its_extracted_store_builds(
    tmp_path, monkeypatch, absl_caplog, capfd
):
    """--videos extracts the captioned clips' features into <output_dir>/features with
    the settings it is given and builds the splits that a store extracted by
    video_caption.features gives; --skip_missing_features drops a clip without a video
    and one whose video cannot be decoded. (A captioner trained on such a build captions
    new videos in test_first_hour.py, from a store's settings in test_caption.py.)"""
    shapes = moving_shapes.generate(
        str(tmp_path / "shapes"), num_clips=4, frames=4, size=32, captions_per_clip=1
    )
    videos = tmp_path / "shapes" / moving_shapes.CLIPS_DIR
    (videos / "broken.mp4").write_bytes(b"not a video")
    lines = ["clip,caption,split"]
    for (name, a), split in zip(shapes.items(), ["train", "train", "val", "test"]):
        lines += ["%s,A %s %s %s.,%s" % (name, a["colour"], a["shape"], a["motion"], split)] * 2
    (tmp_path / "good.csv").write_text("\n".join(lines) + "\n")
    (tmp_path / "all.csv").write_text("\n".join(lines + ["broken,x,train", "ghost,y,val"]) + "\n")
    out = tmp_path / "data"
    argv = ["--videos=%s" % videos, "--skip_missing_features", "--max_frames=4", "--num_frames=2"]
    stats = _video_build(tmp_path, "all.csv", out, *argv, "--batch_size=2")
    assert stats.clips_dropped_missing_features == 2 and stats.clips == dict(train=2, val=1, test=1)
    store = out / captions.FEATURES_DIR
    # the extraction is announced, and its command's progress lines come through
    assert "extracting the features of 5 videos into %s" % store in absl_caplog.text
    assert "features: 5/5 clips (1 failed" in capfd.readouterr().err
    settings = extraction.read_settings(str(store))
    assert settings["cnn"] == "googlenet" and settings["weights"] == "random"
    assert (settings["num_frames"], settings["max_frames"]) == (2, 4)

    # the reference store is extracted in batches of 2, as the build's was
    extractor = cnn.build_extractor("googlenet", None, batch_size=2)
    monkeypatch.setattr(cnn, "build_extractor", lambda *args, **kwargs: extractor)
    reference = tmp_path / "reference"
    extraction.extract_features(str(videos), str(reference), max_frames=4, num_frames=2)
    _video_build(tmp_path, "good.csv", tmp_path / "from_store", "--features=%s" % reference)
    for name in ("train.jsonl", "val.jsonl", "test.jsonl", "vocab.txt"):
        assert (out / name).read_text() == (tmp_path / "from_store" / name).read_text()
    with frame_features.open_features(str(store)) as got:
        with frame_features.open_features(str(reference)) as want:
            for name in shapes:
                np.testing.assert_allclose(got[name], want[name], rtol=1e-5, atol=1e-5)


def test_a_clip_without_a_video_or_an_undecodable_video_is_one_line(tmp_path):
    videos = tmp_path / "videos"
    videos.mkdir()
    (videos / "broken.mp4").write_bytes(b"not a video")
    (tmp_path / "ghost.csv").write_text("clip,caption,split\nbroken,x,train\nghost,y,val\n")
    (tmp_path / "broken.csv").write_text("clip,caption,split\nbroken,x,train\n")
    argv = ["--videos=%s" % videos, "--max_frames=2", "--num_frames=1", "--batch_size=1"]
    with pytest.raises(captions.CaptionsError, match=r"ghost.csv:3: clip ghost has no video in"):
        _video_build(tmp_path, "ghost.csv", tmp_path / "data", *argv)
    broken = re.escape("%s: cannot decode the video" % (videos / "broken.mp4"))
    with pytest.raises(captions.CaptionsError, match=broken):
        _video_build(tmp_path, "broken.csv", tmp_path / "data", *argv)
    with pytest.raises(captions.CaptionsError, match=r"--cnn applies only with --videos"):
        _video_build(tmp_path, "broken.csv", tmp_path / "data", "--features=x", "--cnn=googlenet")


def test_an_output_folder_that_cannot_be_written_is_refused_before_the_extraction(
    tmp_path, monkeypatch
):
    (tmp_path / "c.csv").write_text("clip,caption,split\nred,a red square,train\n")
    (tmp_path / "videos").mkdir()
    write_video(tmp_path / "videos" / "red.mp4", num_frames=4)
    out = tmp_path / "data"
    out.mkdir()
    no_writes_in(monkeypatch, out)
    monkeypatch.setattr(captions.subprocess, "run", mock.Mock(side_effect=AssertionError))
    with pytest.raises(PermissionError) as refused:
        _video_build(tmp_path, "c.csv", out, "--videos=%s" % (tmp_path / "videos"))
    assert refused.value.filename == str(out / "stats.json")


def test_the_extractor_ends_with_a_build_that_is_killed(tmp_path):
    """The build's child (the feature extractor) gets SIGTERM when the build dies, a
    SIGKILL included, instead of writing on into the folder alone."""
    pid_file = tmp_path / "child.pid"
    child_code = (
        "import os, sys, time; open(sys.argv[1], 'w').write(str(os.getpid())); time.sleep(60)"
    )
    (tmp_path / "build.py").write_text(
        "import subprocess, sys\n"
        "from data_prep import captions\n"
        "subprocess.run([sys.executable, '-c', %r, %r], preexec_fn=captions.ends_with_parent)\n"
        % (child_code, str(pid_file))
    )
    parent = subprocess.Popen([sys.executable, str(tmp_path / "build.py")], cwd=ROOT)
    deadline = time.monotonic() + 60
    while not (pid_file.exists() and pid_file.read_text()) and time.monotonic() < deadline:
        time.sleep(0.05)
    child = int(pid_file.read_text())
    parent.send_signal(signal.SIGKILL)
    parent.wait()
    deadline = time.monotonic() + 10
    while _alive(child) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert not _alive(child)


def _alive(pid):
    """Whether process ``pid`` runs (a zombie, which its new parent reaps, does not)."""
    try:
        with open("/proc/%d/stat" % pid) as f:
            return f.read().split(")")[-1].split()[0] != "Z"
    except FileNotFoundError:
        return False
