"""video_caption.caption: captions of new video files equal --mode=decode's captions of
the same clips, their features extracted as the training features were (8 frames
stored, 3 sampled, standardised: the shared ``runs.captioner_run``), and the generic
command's ``serve`` captions them alike."""

import json
import os
import shutil

import pytest

from acvi_tf import config as config_lib
from acvi_tf import files
from acvi_tf.runner import command as runner_command
from video_caption import caption, extraction

from conftest import command


def _hparams(run):
    with open(os.path.join(run, "hparams.json"), encoding="utf-8") as f:
        return json.load(f)


def test_new_videos_are_captioned_as_decode_captions_them(
    captioner_run, tmp_path, capsys, monkeypatch
):
    run, videos = captioner_run["run"], captioner_run["videos"]
    (tmp_path / "in.txt").write_text("%s\n\n%s\n" % (videos["white"], videos["red"]))
    argv = ["caption", "--out_dir=%s" % run, "--input=%s" % (tmp_path / "in.txt")]
    argv += ["--output=%s" % (tmp_path / "out.txt")]
    got = caption.run(config_lib.parse(caption.define_flags, argv))
    assert got[0] == captioner_run["captions"]["white"] and got[1] == "" and got[2]
    assert (tmp_path / "out.txt").read_text().splitlines() == got
    # the generic command serves the run as the captioner's own command does
    generic = ["acvi_tf.runner", "--task=captioning", "--command=serve", *argv[1:3]]
    generic.append("--output=%s" % (tmp_path / "generic.txt"))
    assert runner_command.run(*runner_command.parse(generic)) == got
    # nor may --output replace one of the videos the input names
    shutil.copy(videos["white"], tmp_path / "white.mp4")
    (tmp_path / "mine.txt").write_text("%s\n" % (tmp_path / "white.mp4"))
    video = (tmp_path / "white.mp4").read_bytes()
    refused = [argv[1], "--input=%s" % (tmp_path / "mine.txt")]
    refused.append("--output=%s" % (tmp_path / "white.mp4"))
    with pytest.raises(files.OutputError, match="or one it reads; write to another file"):
        caption.run(config_lib.parse(caption.define_flags, ["caption", *refused]))
    assert (tmp_path / "white.mp4").read_bytes() == video
    # nor a file of the run's feature store: its settings, which the command reads, a
    # training clip's features, or a new file there, which would be read as a clip's
    store = _hparams(run)["features"]
    for kept in (os.path.join(store, extraction.METADATA_FILE), os.path.join(store, "red.npy")):
        before = open(kept, "rb").read()
        with pytest.raises(files.OutputError, match="or one it reads; write to another file"):
            caption.run(config_lib.parse(caption.define_flags, argv[:3] + ["--output=" + kept]))
        assert open(kept, "rb").read() == before
    new = os.path.join(store, "new.npy")
    with pytest.raises(files.OutputError, match="is in %s, a folder" % store):
        caption.run(config_lib.parse(caption.define_flags, argv[:3] + ["--output=" + new]))
    assert not os.path.exists(new)
    # nor a file of the run's corpus: the split it validates on, its statistics
    data_dir = _hparams(run)["data_dir"]
    for name in ("val.jsonl", "stats.json"):
        kept = os.path.join(data_dir, name)
        before = open(kept, "rb").read()
        with pytest.raises(files.OutputError, match="or one it reads; write to another file"):
            caption.run(config_lib.parse(caption.define_flags, argv[:3] + ["--output=" + kept]))
        assert open(kept, "rb").read() == before

    status, _, err = command(
        "video_caption.caption",
        ["--out_dir=%s" % run],
        capsys,
        monkeypatch,
        (str(tmp_path / "missing.mp4") + "\n").encode(),
    )
    assert status == 2 and "Traceback" not in err
    assert err.strip().splitlines()[-1] == (
        "error: standard input:1: %s is not a file; give one video a line (its path, absolute "
        "or from the folder the command runs in), or a blank line for none"
        % (tmp_path / "missing.mp4")
    )
