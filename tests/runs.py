"""Trained runs that tests of several files share (conftest.py registers this module's
fixtures).

Each fixture is session-scoped: built once in a worker, in a folder of its own, and only
read by its tests (a test that changes a run works on a copy). ``scheduling.py`` sends
the tests of one such fixture to one worker together, so that it is built once in all.
"""

import json

import pytest

from acvi_tf import config as config_lib
from data_prep import captions as captions_builder
from video_caption import extraction, run_captioning

from conftest import write_video

# Clips of a square of one colour each: (colour, split).
CLIPS = dict(
    red=((255, 0, 0), "train"),
    green=((0, 255, 0), "train"),
    blue=((0, 0, 255), "val"),
    white=((250, 250, 250), "test"),
    yellow=((250, 250, 0), "test"),
    black=((5, 5, 5), "test"),
)


@pytest.fixture(scope="session")
def captioner_run(tmp_path_factory):
    """A captioner trained from video files, as a user builds one: six 12-frame clips
    (``CLIPS``), their features extracted (8 frames stored per clip; the model reads 3,
    sampled), two captions per clip in a CSV with a split column, 60 steps of ACVI on
    standardised features, and the decode of the test split with the model's flags read
    from the run's record.

    Returns:
      A dict: ``videos`` (the clip files by name), ``store`` (the features),
      ``run`` (the run's folder), ``flags`` (the training command's flags but
      ``--mode``), ``captions`` (the decode's caption per test clip).
    """
    root = tmp_path_factory.mktemp("captioner_run")
    (root / "videos").mkdir()
    videos = {
        name: write_video(root / "videos" / name, num_frames=12, colour=colour)
        for name, (colour, _) in CLIPS.items()
    }
    store = root / "features"
    extraction.extract_features(str(root / "videos"), str(store), max_frames=12, num_frames=8)
    rows = [
        "%s,a %s square moves %s,%s" % (name, name, way, split)
        for name, (_, split) in CLIPS.items()
        for way in ("right", "on")
    ]
    (root / "captions.csv").write_text("clip,caption,split\n" + "\n".join(rows) + "\n")
    data_dir = root / "data"
    argv = ["x", "--captions=%s" % (root / "captions.csv"), "--features=%s" % store]
    argv += ["--output_dir=%s" % data_dir, "--split_field=split"]
    captions_builder.build(config_lib.parse(captions_builder.define_flags, argv))
    run = root / "run"
    flags = ["run_captioning", "--data_dir=%s" % data_dir, "--features=%s" % store]
    flags += ["--out_dir=%s" % run, "--num_frames=3", "--encoder_units=8", "--decoder_units=8"]
    flags += ["--batch_size=2", "--beam_size=2", "--metrics=ROUGE_L", "--best_metric=ROUGE_L"]
    flags += ["--feature_norm=standardize", "--context=acvi", "--length_normalization=average"]
    train = ["--mode=train", "--max_steps=60", "--valid_every=60", "--optimizer=adam"]
    train.append("--learning_rate=0.01")
    run_captioning.run(config_lib.parse(run_captioning.define_flags, flags + train))
    # the model's flags come from the run's record
    decode = ["run_captioning", "--out_dir=%s" % run, "--mode=decode", "--decode_split=test"]
    run_captioning.run(config_lib.parse(run_captioning.define_flags, decode))
    captions = json.loads((run / "decode_test" / "captions.json").read_text())
    return dict(videos=videos, store=store, run=run, flags=flags, captions=captions)
