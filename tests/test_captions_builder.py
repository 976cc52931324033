"""data_prep.captions: your own captions and a feature store into the captioner's split
files; bad input in one line; the captioner trains on the result."""

import json
import os

import numpy as np
import pytest

from acvi_tf import config as config_lib
from data_prep import captions
from video_caption import run_captioning

CLIPS = ["red_square", "blue_circle", "green_star", "cat_video"]


def _features(root, clips=CLIPS):
    folder = root / "features"
    folder.mkdir(parents=True, exist_ok=True)
    rng = np.random.default_rng(0)
    for clip in clips:
        np.save(folder / ("%s.npy" % clip), rng.normal(size=(3, 5)).astype(np.float32))
    return folder


def _build(tmp_path, captions_path, *argv):
    out = tmp_path / "data"
    config = config_lib.parse(
        captions.define_flags,
        [
            "x",
            "--captions=%s" % captions_path,
            "--features=%s" % _features(tmp_path),
            "--output_dir=%s" % out,
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


def test_json_lines_with_splits_and_the_captioner_trains(tmp_path):
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
    argv = [
        "run_captioning",
        "--mode=train",
        "--data_dir=%s" % out,
        "--features=%s" % (tmp_path / "features"),
        "--out_dir=%s" % (tmp_path / "run"),
        "--num_frames=3",
        "--encoder_units=4",
        "--decoder_units=4",
        "--batch_size=2",
        "--max_steps=2",
        "--valid_every=2",
        "--metrics=ROUGE_L",
        "--best_metric=ROUGE_L",
    ]
    run_captioning.run(config_lib.parse(run_captioning.define_flags, argv))
    assert os.path.exists(tmp_path / "run" / "train" / "checkpoint")


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
