"""video_caption.export: a SavedModel that captions frame features, loaded in a fresh
process without this project, gives --mode=decode's captions of the same clips (the
shared ``runs.captioner_run``: 8 frames stored per clip, 3 read by the model, which the
graph samples as ClipSet does)."""

import numpy as np
import pytest
import served

from acvi_tf import config as config_lib
from acvi_tf.formats import frame_features
from video_caption import experiment, export, run_captioning, task

from runs import CLIPS

pytestmark = pytest.mark.slow  # scheduled first (conftest.py)


def test_the_exported_captioner_captions_frames_as_decode_does(captioner_run, tmp_path):
    run, store, expected = captioner_run["run"], captioner_run["store"], captioner_run["captions"]
    test = [name for name, (_, split) in CLIPS.items() if split == "test"]

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
    flags = captioner_run["flags"] + ["--mode=decode"]
    exp = experiment.Experiment(task.TASK, config_lib.parse(run_captioning.define_flags, flags))
    clip_set = exp.split("test")
    got, num_frames = module.features(
        np.asarray(padded[:-1], np.float32), np.asarray(counts[:-1], np.int32)
    )
    order = [test.index(r["clip"]) for r in clip_set.records]
    np.testing.assert_allclose(got.numpy()[order], clip_set.features, rtol=1e-5, atol=1e-5)
    np.testing.assert_array_equal(num_frames.numpy()[order], clip_set.num_frames)
