"""The generated captioning demo corpus: videos, MSVD-form CSV and mapping, motions."""

import json
import os
import subprocess
import sys

import imageio_ffmpeg
import numpy as np
import pytest

from data_prep import moving_shapes as ms
from data_prep import msvd

NUM_CLIPS, FRAMES, SIZE, CAPTIONS = 4, 8, 32, 3
SEED = 5
ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
SATURATED = 120  # max - min channel of the shape's pixels (the background stays < 40)


def _generate(directory, seed=SEED):
    return ms.generate(
        str(directory),
        num_clips=NUM_CLIPS,
        frames=FRAMES,
        size=SIZE,
        captions_per_clip=CAPTIONS,
        seed=seed,
    )


@pytest.fixture(scope="module")
def corpus(tmp_path_factory):
    directory = tmp_path_factory.mktemp("moving_shapes")
    return str(directory), _generate(directory)


def _decode(path):
    reader = imageio_ffmpeg.read_frames(path)
    meta = next(reader)
    width, height = meta["size"]
    frames = [np.frombuffer(raw, np.uint8).reshape(height, width, 3) for raw in reader]
    return meta, np.stack(frames)


def _read(directory, name, mode="r"):
    with open(os.path.join(directory, name), mode) as f:
        return f.read()


def _shape_pixels(frame):
    frame = frame.astype(np.int32)
    return (frame.max(axis=-1) - frame.min(axis=-1)) > SATURATED


def _area_and_x(frame):
    mask = _shape_pixels(frame)
    return mask.sum(), np.nonzero(mask)[1].mean()


def _check_motion(motion, video):
    (first_area, first_x), (last_area, last_x) = _area_and_x(video[0]), _area_and_x(video[-1])
    if motion == "grows":
        assert last_area > 2 * first_area
    elif motion == "shrinks":
        assert first_area > 2 * last_area
    elif motion == "moves left":
        assert last_x < first_x - 0.25 * video.shape[2]
    else:
        assert motion == "moves right"
        assert last_x > first_x + 0.25 * video.shape[2]


def test_clip_names_follow_the_msvd_form():
    assert ms.clip_name(7, 48) == "shapes0007_0_2"
    assert ms.clip_name(1, 8) == "shapes0001_0_1"
    assert ms.clip_name(12345, 48, num_clips=20000) == "shapes12345_0_2"


def test_every_combination_is_dealt_once_per_round():
    specs = ms.deal_specs(96, seed=1)
    combinations = len(ms.COLOURS) * len(ms.SHAPES) * len(ms.MOTIONS)
    assert len(set(specs[:combinations])) == len(set(specs[combinations:])) == combinations


def test_videos_decode_to_the_right_frames(corpus):
    directory, attributes = corpus
    assert list(attributes) == [ms.clip_name(i, FRAMES) for i in range(1, NUM_CLIPS + 1)]
    assert sorted(os.listdir(os.path.join(directory, "clips"))) == sorted(
        os.path.basename(a["video"]) for a in attributes.values()
    )
    for name, attribute in attributes.items():
        meta, video = _decode(os.path.join(directory, attribute["video"]))
        assert video.shape == (FRAMES, SIZE, SIZE, 3)
        assert meta["fps"] == ms.FPS
        _check_motion(attribute["motion"], video)
    assert json.loads(_read(directory, "attributes.json")) == attributes


def test_mapping_and_csv_are_in_msvd_form(corpus):
    directory, attributes = corpus
    assert _read(directory, "youtube_mapping.txt") == "".join(
        "%s vid%d\n" % (name, i) for i, name in enumerate(attributes, start=1)
    )
    stats = msvd.Stats()
    descriptions = msvd.read_corpus_csv(os.path.join(directory, "video_corpus.csv"), stats)
    assert list(descriptions) == list(attributes)
    assert stats.rows_read == NUM_CLIPS * (CAPTIONS + 2)
    assert stats.rows_dropped == {"not_english": NUM_CLIPS, "empty_description": NUM_CLIPS}
    for name, texts in descriptions.items():
        assert len(texts) == len(set(texts)) == CAPTIONS
        spec = attributes[name]
        for text in texts:
            words = msvd.tokenize_caption(text).split()
            assert spec["colour"] in words
            assert set(words) & set(ms.SHAPE_WORDS[spec["shape"]])
    assert _read(directory, "video_corpus.csv").startswith(",".join(ms.CSV_COLUMNS) + "\n")


def test_msvd_build_takes_every_clip(corpus, tmp_path):
    directory, attributes = corpus
    out = str(tmp_path / "dataset")
    stats = msvd.build(
        os.path.join(directory, "video_corpus.csv"),
        os.path.join(directory, "youtube_mapping.txt"),
        out,
        train_clips=2,
        val_clips=1,
        test_clips=1,
    )
    records = []
    for split in msvd.SPLITS:
        with open(os.path.join(out, split + ".jsonl"), encoding="utf-8") as f:
            records += [json.loads(line) for line in f]
    assert [r["clip"] for r in records] == list(attributes)
    assert [r["vid"] for r in records] == [a["vid"] for a in attributes.values()]
    assert all(len(r["captions"]) == CAPTIONS for r in records)
    assert stats.clips == {"train": 2, "val": 1, "test": 1}


def test_msvd_command_line_builds_the_demo_dataset(corpus, tmp_path):
    directory, attributes = corpus
    out = str(tmp_path / "dataset")
    result = subprocess.run(
        [
            sys.executable,
            "-m",
            "data_prep.msvd",
            "--corpus_csv=" + os.path.join(directory, "video_corpus.csv"),
            "--mapping=" + os.path.join(directory, "youtube_mapping.txt"),
            "--output_dir=" + out,
            "--train_clips=2",
            "--val_clips=1",
            "--test_clips=1",
            "--min_count=2",
        ],
        cwd=ROOT,
        capture_output=True,
        text=True,
        check=False,
    )
    assert result.returncode == 0, result.stderr[-3000:]
    assert "train     2 clips       %d captions" % (2 * CAPTIONS) in result.stdout
    with open(os.path.join(out, "stats.json"), encoding="utf-8") as f:
        stats = json.load(f)
    assert stats["min_count"] == 2
    assert sum(split["clips"] for split in stats["splits"].values()) == len(attributes)


def test_same_seed_same_corpus(corpus, tmp_path):
    directory, attributes = corpus
    again = _generate(tmp_path / "again")
    assert again == attributes
    for name in ("video_corpus.csv", "youtube_mapping.txt", "attributes.json"):
        assert _read(directory, name, "rb") == _read(str(tmp_path / "again"), name, "rb")
    first = next(iter(attributes.values()))["video"]
    np.testing.assert_array_equal(
        _decode(os.path.join(directory, first))[1][0],
        _decode(os.path.join(str(tmp_path / "again"), first))[1][0],
    )
    _generate(tmp_path / "other", seed=SEED + 1)
    assert _read(directory, "video_corpus.csv") != _read(
        str(tmp_path / "other"), "video_corpus.csv"
    )


@pytest.mark.parametrize("motion", ms.MOTIONS)
@pytest.mark.parametrize("shape", ms.SHAPES)
def test_motion_is_visible_in_the_pixels(shape, motion):
    video = ms.render_frames(ms.ClipSpec("blue", shape, motion), 6, 48, np.random.default_rng(0))
    assert video.shape == (6, 48, 48, 3) and video.dtype == np.uint8
    _check_motion(motion, video)
    if motion.startswith("moves"):
        # the motion-blur trail (half-saturated pixels) lies behind the shape
        saturation = video[2].astype(int).max(-1) - video[2].astype(int).min(-1)
        trail_x = np.nonzero((saturation > 40) & (saturation <= SATURATED))[1].mean()
        shape_x = np.nonzero(saturation > SATURATED)[1].mean()
        assert (trail_x > shape_x) == (motion == "moves left")


def test_a_smaller_run_removes_stale_clips(tmp_path, absl_caplog):
    ms.generate(str(tmp_path), num_clips=3, frames=2, size=16, captions_per_clip=1)
    assert "wrote 1/3 clips" in absl_caplog.text and "wrote 3/3 clips" in absl_caplog.text
    ms.generate(str(tmp_path), num_clips=2, frames=2, size=16, captions_per_clip=1)
    extension = ms.video_format()[2]
    assert sorted(os.listdir(tmp_path / "clips")) == [
        "shapes0001_0_1" + extension,
        "shapes0002_0_1" + extension,
    ]


def test_bad_arguments_are_refused(tmp_path):
    with pytest.raises(ValueError, match="even"):
        ms.generate(str(tmp_path), num_clips=1, size=33)
    with pytest.raises(ValueError, match="frames"):
        ms.generate(str(tmp_path), num_clips=1, frames=1)
