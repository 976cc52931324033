"""video_caption.export: a SavedModel that captions frame features, loaded in a fresh
process without this project, gives --mode=decode's captions of the same clips."""

import json

import numpy as np
import pytest
import served

from acvi_tf import config as config_lib
from acvi_tf.formats import frame_features
from data_prep import captions as captions_builder
from video_caption import experiment, export, run_captioning
from video_caption import features as features_lib

from conftest import write_video

pytestmark = pytest.mark.slow  # scheduled first (conftest.py)

COLOURS = dict(
    red=((255, 0, 0), "train"),
    green=((0, 255, 0), "train"),
    blue=((0, 0, 255), "val"),
    white=((250, 250, 250), "test"),
    yellow=((250, 250, 0), "test"),
    black=((5, 5, 5), "test"),
)


def test_the_exported_captioner_captions_frames_as_decode_does(tmp_path):
    videos = tmp_path / "videos"
    videos.mkdir()
    for name, (colour, _) in COLOURS.items():
        write_video(videos / name, num_frames=12, colour=colour)
    store = tmp_path / "features"
    # 8 frames stored per clip, 3 read by the model: the graph samples them as ClipSet does
    features_lib.extract_features(str(videos), str(store), max_frames=12, num_frames=8)
    rows = [
        "%s,a %s square moves %s,%s" % (name, name, way, split)
        for name, (_, split) in COLOURS.items()
        for way in ("right", "on")
    ]
    (tmp_path / "captions.csv").write_text("clip,caption,split\n" + "\n".join(rows) + "\n")
    data_dir = tmp_path / "data"
    argv = ["x", "--captions=%s" % (tmp_path / "captions.csv"), "--features=%s" % store]
    argv += ["--output_dir=%s" % data_dir, "--split_field=split"]
    captions_builder.build(config_lib.parse(captions_builder.define_flags, argv))
    run = tmp_path / "run"
    common = ["run_captioning", "--data_dir=%s" % data_dir, "--features=%s" % store]
    common += ["--out_dir=%s" % run, "--num_frames=3", "--encoder_units=8", "--decoder_units=8"]
    common += ["--batch_size=2", "--beam_size=2", "--metrics=ROUGE_L", "--best_metric=ROUGE_L"]
    common += ["--feature_norm=standardize", "--context=acvi", "--length_normalization=average"]

    def parse(*argv):
        return config_lib.parse(run_captioning.define_flags, common + list(argv))

    run_captioning.run(
        parse(
            "--mode=train",
            "--max_steps=60",
            "--valid_every=60",
            "--optimizer=adam",
            "--learning_rate=0.01",
        )
    )
    run_captioning.run(parse("--mode=decode", "--decode_split=test"))
    expected = json.loads((run / "decode_test" / "captions.json").read_text())
    test = [name for name, (_, split) in COLOURS.items() if split == "test"]

    argv = ["export", "--out_dir=%s" % run, "--export_dir=%s" % (tmp_path / "served")]
    module = export.run(config_lib.parse(export.define_flags, argv))
    with frame_features.open_features(str(store)) as features:
        frames = [np.asarray(features[name], np.float32) for name in test]
    counts = [len(f) for f in frames] + [0]
    width = max(counts)
    padded = [np.pad(f, [(0, width - len(f)), (0, 0)]).tolist() for f in frames]
    padded.append(np.zeros_like(frames[0]).tolist())  # a clip of no frames
    answers, project_modules = served.call(
        tmp_path / "served",
        [("serving_default", {"frames": padded, "frame_counts": counts})],
    )
    assert project_modules == []
    captions = answers[0]["captions"]
    assert captions[:-1] == [expected[name] for name in test] and captions[-1] == ""
    assert all(captions[:-1])
    # the graph's features are the decode's: sampled, standardised, padded
    exp = experiment.Experiment(parse("--mode=decode"))
    clip_set = exp.split("test")
    got, num_frames = module.features(
        np.asarray(padded[:-1], np.float32), np.asarray(counts[:-1], np.int32)
    )
    order = [test.index(r["clip"]) for r in clip_set.records]
    np.testing.assert_allclose(got.numpy()[order], clip_set.features, rtol=1e-5, atol=1e-5)
    np.testing.assert_array_equal(num_frames.numpy()[order], clip_set.num_frames)
