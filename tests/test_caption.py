"""video_caption.caption: captions of new video files equal --mode=decode's captions of
the same clips, their features extracted as the training features were."""

import json
import os
import subprocess
import sys

from acvi_tf import config as config_lib
from data_prep import captions as captions_builder
from video_caption import caption, run_captioning
from video_caption import features as features_lib

from conftest import write_video

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
COLOURS = {"red": (255, 0, 0), "green": (0, 255, 0), "blue": (0, 0, 255), "white": (250, 250, 250)}


def test_new_videos_are_captioned_as_decode_captions_them(tmp_path):
    videos = tmp_path / "videos"
    videos.mkdir()
    paths = {
        name: write_video(videos / name, num_frames=12, colour=colour)
        for name, colour in COLOURS.items()
    }
    store = tmp_path / "features"
    features_lib.extract_features(str(videos), str(store), max_frames=12, num_frames=3)
    splits = dict(red="train", green="train", blue="val", white="test")
    rows = [
        "%s,a %s square moves right,%s" % (name, name, splits[name])
        for name in COLOURS
        for _ in range(2)
    ]
    (tmp_path / "captions.csv").write_text("clip,caption,split\n" + "\n".join(rows) + "\n")
    data_dir = tmp_path / "data"
    argv = ["x", "--captions=%s" % (tmp_path / "captions.csv"), "--features=%s" % store]
    argv += ["--output_dir=%s" % data_dir, "--split_field=split"]
    captions_builder.build(config_lib.parse(captions_builder.define_flags, argv))
    run = tmp_path / "run"
    common = [
        "run_captioning",
        "--data_dir=%s" % data_dir,
        "--features=%s" % store,
        "--out_dir=%s" % run,
        "--num_frames=3",
        "--encoder_units=8",
        "--decoder_units=8",
        "--batch_size=2",
        "--beam_size=2",
        "--metrics=ROUGE_L",
        "--best_metric=ROUGE_L",
    ]
    parse = lambda *argv: config_lib.parse(run_captioning.define_flags, common + list(argv))  # noqa: E731
    run_captioning.run(parse("--mode=train", "--max_steps=3", "--valid_every=3"))
    # the model's flags come from the run's record
    decode = ["run_captioning", "--out_dir=%s" % run, "--mode=decode", "--decode_split=test"]
    run_captioning.run(config_lib.parse(run_captioning.define_flags, decode))
    expected = json.loads((run / "decode_test" / "captions.json").read_text())["white"]

    (tmp_path / "in.txt").write_text("%s\n\n%s\n" % (paths["white"], paths["red"]))
    argv = ["caption", "--out_dir=%s" % run, "--input=%s" % (tmp_path / "in.txt")]
    argv += ["--output=%s" % (tmp_path / "out.txt")]
    got = caption.run(config_lib.parse(caption.define_flags, argv))
    assert got[0] == expected and got[1] == "" and got[2]
    assert (tmp_path / "out.txt").read_text().splitlines() == got

    done = subprocess.run(
        [sys.executable, "-m", "video_caption.caption", "--out_dir=%s" % run],
        input=str(tmp_path / "missing.mp4") + "\n",
        capture_output=True,
        text=True,
        cwd=ROOT,
        check=False,
    )
    assert done.returncode == 2 and "Traceback" not in done.stderr
    assert done.stderr.strip().splitlines()[-1].startswith("error: video 1 of the input, ")
