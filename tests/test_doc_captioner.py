"""docs/captioner.md's commands, run in this process as the page gives them with only
sizes and paths substituted (``doc_commands.sized``): features of a folder of generated
clips named as MSVD's, the MSVD splits from a corpus CSV and mapping in MSVD's format,
your own clips' corpus, training, the test split's decode and captions of new videos;
the shipped moving-shapes run; and docs/data.md's captions from a feature store
extracted before."""

import json
import os

import doc_commands
import numpy as np
import pytest
from inputs import caffe_tensorflow_dict, clips_in_every_split

from video_caption import cnn

from conftest import write_video

pytestmark = pytest.mark.slow

FEATURES, MSVD, OWN_CLIPS, TRAIN, DECODE, CAPTION, SHAPES = doc_commands.block(
    "docs/captioner.md", 0
)
(MSVD_DATA,) = doc_commands.block("docs/data.md", 5)
# the page's second recipe (test_first_hour.py runs the first)
_, _, _, OWN_FEATURES, FROM_FEATURES, TRAIN_ON_FEATURES = doc_commands.block("docs/data.md", 2)
COLOURS = {"red": (255, 0, 0), "green": (0, 255, 0), "blue": (0, 0, 255)}
# MSVD clips (VideoID, start, end) and their vidN: train 1-1200, val 1201-1300, test on
MSVD_CLIPS = {
    ("aaa", 1, 5): 1,
    ("bbb", 2, 9): 2,
    ("ccc", 0, 4): 3,
    ("ddd", 3, 8): 1201,
    ("eee", 5, 7): 1301,
}
SPLITS = ("train", "val", "test")
CSV_HEADER = "VideoID,Start,End,WorkerID,Source,AnnotationTime,Language,Description\n"


def _run(command, cwd):
    return doc_commands.run_in_process(doc_commands.sized(command), str(cwd))


def _colour(number):
    return sorted(COLOURS)[number % len(COLOURS)]


def _msvd_inputs(cwd):
    """The clips' videos, the corpus CSV and the mapping that MSVD's commands name;
    returns the videos' paths."""
    rows, mapping, videos = [], [], []
    for number, ((video, start, end), vid) in enumerate(sorted(MSVD_CLIPS.items())):
        key = "%s_%d_%d" % (video, start, end)
        name = _colour(number)
        path = cwd / FEATURES.flag("video_dir") / key
        os.makedirs(path.parent, exist_ok=True)
        videos.append(write_video(path, num_frames=12, colour=COLOURS[name]))
        rows += ["%s,%d,%d,1,clean,1,English,a %s square moves" % (video, start, end, name)] * 2
        rows.append("%s,%d,%d,2,clean,1,German,ein Quadrat" % (video, start, end))
        mapping.append("%s vid%d" % (key, vid))
    (cwd / MSVD.flag("corpus_csv")).write_text(CSV_HEADER + "\n".join(rows) + "\n")
    (cwd / MSVD.flag("mapping")).write_text("\n".join(mapping) + "\n")
    return videos


def _own_clips(cwd, videos_flag, captions_flag):
    """Your own clips: a folder of videos and their captions, one clip in each split."""
    os.makedirs(cwd / videos_flag)
    rows = ["clip,caption"]
    for number, clip in enumerate(clips_in_every_split(2, 1, 1)):
        name = _colour(number)
        write_video(cwd / videos_flag / clip, num_frames=12, colour=COLOURS[name])
        rows += ["%s,a %s square moves" % (clip, name)] * 2
    (cwd / captions_flag).write_text("\n".join(rows) + "\n")


def _caffe_googlenet(path):
    """GoogLeNet's weights as the caffe-tensorflow conversion holds them (random ones)."""
    model = cnn.googlenet_network()
    cnn.random_init(model)
    np.save(path, caffe_tensorflow_dict(model), allow_pickle=True)


def test_msvd_features_splits_training_decoding_captions(tmp_path):
    videos = _msvd_inputs(tmp_path)
    _caffe_googlenet(tmp_path / FEATURES.flag("cnn_weights"))
    _run(FEATURES, tmp_path)
    assert MSVD_DATA.text == MSVD.text  # docs/data.md gives the same command
    _run(MSVD_DATA, tmp_path)
    splits = tmp_path / MSVD.flag("output_dir")
    assert [len((splits / (s + ".jsonl")).read_text().splitlines()) for s in SPLITS] == [3, 1, 1]
    _own_clips(tmp_path, OWN_CLIPS.flag("videos"), OWN_CLIPS.flag("captions"))
    _run(OWN_CLIPS, tmp_path)
    assert (tmp_path / OWN_CLIPS.flag("output_dir") / "features").is_dir()
    _run(TRAIN, tmp_path)
    _run(DECODE, tmp_path)
    decoded = tmp_path / DECODE.flag("out_dir") / "decode_test"
    assert len(json.loads((decoded / "captions.json").read_text())) == 1
    (tmp_path / CAPTION.flag("input")).write_text("".join(v + "\n" for v in videos[:2]))
    assert _run(CAPTION, tmp_path) == (tmp_path / CAPTION.flag("output")).read_text().splitlines()


def test_the_shipped_moving_shapes_run(tmp_path):
    os.symlink(os.path.join(doc_commands.ROOT, "data_prep"), tmp_path / "data_prep")
    _run(SHAPES, tmp_path)
    assert (tmp_path / SHAPES.flag("out_dir") / "best" / "best.json").exists()


def test_captions_from_a_feature_store_extracted_before(tmp_path):
    _own_clips(tmp_path, OWN_FEATURES.flag("video_dir"), FROM_FEATURES.flag("captions"))
    for command in (OWN_FEATURES, FROM_FEATURES, TRAIN_ON_FEATURES):
        _run(command, tmp_path)
    assert (tmp_path / TRAIN_ON_FEATURES.flag("out_dir") / "best").is_dir()
