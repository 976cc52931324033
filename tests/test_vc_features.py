"""The per-frame CNNs (GoogLeNet, Inception v3), the extraction command and open_features.

One randomly initialised GoogLeNet extractor (batch 4) is shared by the module: building
one costs about 1.5 s and a frame about 40 ms on two CPU cores.
"""

import json
import logging
import os
import pickle
import signal

import h5py
import numpy as np
import pytest
from inputs import caffe_tensorflow_dict

from acvi_tf import config as config_lib
from acvi_tf.formats import frame_features
from acvi_tf.process import stops
from video_caption import cnn, extraction, features, frames

from conftest import write_video

NUM_FRAMES = 4


class _Records(logging.Handler):
    """Collects the text of absl log records (caplog cannot serve a module fixture)."""

    def __init__(self):
        super().__init__(logging.WARNING)
        self.text = ""

    def emit(self, record):
        self.text += record.getMessage() + "\n"


@pytest.fixture(scope="module")
def gnet():
    """The shared random GoogLeNet extractor, and the warnings its build logged."""
    records = _Records()
    logging.getLogger("absl").addHandler(records)
    try:
        extractor = cnn.build_extractor("googlenet", None, batch_size=NUM_FRAMES)
    finally:
        logging.getLogger("absl").removeHandler(records)
    extractor.build_log = records.text
    return extractor


@pytest.fixture(scope="module")
def blank():
    """A second GoogLeNet; each test using it first sets all its weights."""
    return cnn.googlenet_network()


def _zero(model):
    model.set_weights([np.zeros_like(w) for w in model.get_weights()])


def _images(seed, count=2):
    """Preprocessed 224x224 inputs from random frames."""
    raw = np.random.RandomState(seed).randint(0, 256, (count, 30, 40, 3)).astype(np.uint8)
    return cnn.caffe_preprocess(frames.resize_and_crop(raw, 224))


@pytest.fixture(scope="module")
def video_dir(tmp_path_factory):
    """Two good clips (12 frames; 3 frames, fewer than K) and a corrupt one."""
    directory = tmp_path_factory.mktemp("videos")
    write_video(directory / "-4wsuPCjDBc_5_15", 12)
    write_video(directory / "short_clip", 3, colour=(0, 0, 255))
    (directory / "broken.avi").write_bytes(b"\x00garbage" * 100)
    (directory / "notes.txt").write_text("not a video")
    return str(directory)


def test_googlenet_layer_sizes(gnet):
    model = gnet.model
    spatial = {
        "conv1_7x7_s2": 112,
        "pool1_3x3_s2": 56,
        "pool1_norm1": 56,
        "conv2_3x3": 56,
        "pool2_3x3_s2": 28,
        "inception_3a_output": 28,
        "pool3_3x3_s2": 14,
        "inception_4e_output": 14,
        "pool4_3x3_s2": 7,
        "inception_5b_output": 7,
        "pool5_7x7_s1": 1,
    }
    for name, size in spatial.items():
        assert model.get_layer(name).output.shape[1:3] == (size, size), name
    channels = [
        model.get_layer(name + "_output").output.shape[-1] for name in cnn.INCEPTION_MODULES
    ]
    assert channels == [256, 480, 512, 512, 512, 528, 832, 832, 1024]
    assert model.output.shape.as_list() == [None, 1024]
    assert model.get_layer("inception_4d_5x5_reduce").kernel.shape == (1, 1, 512, 32)
    assert (gnet.input_size, gnet.dim) == (224, 1024)


def test_caffe_pooling_and_lrn():
    # Caffe rounds pooled sizes up; padding never wins a max even for negative inputs.
    x = -np.arange(1, 26, dtype=np.float32).reshape(1, 5, 5, 1)
    pooled = cnn.CaffeMaxPool2D(3, 2)(x).numpy()[0, ..., 0]
    np.testing.assert_array_equal(pooled, [[-1, -3], [-11, -13]])
    assert cnn.CaffeMaxPool2D(3, 2).compute_output_shape((1, 112, 112, 8))[1] == 56
    # LRN: x / (1 + alpha / 5 * sum of squares over 5 channels)^0.75
    v = np.arange(1, 8, dtype=np.float32).reshape(1, 1, 1, 7) * 30
    out = cnn.CaffeLRN(5, 1e-4, 0.75)(v).numpy().ravel()
    sq = v.ravel() ** 2
    expected = [
        v.ravel()[c] / (1 + 1e-4 / 5 * sq[max(0, c - 2) : c + 3].sum()) ** 0.75 for c in range(7)
    ]
    np.testing.assert_allclose(out, expected, rtol=1e-5)


def test_extract_shape_and_preprocessing(gnet):
    frame_batch = np.random.RandomState(0).randint(0, 256, (5, 48, 64, 3)).astype(np.uint8)
    out = gnet.extract(frame_batch)  # 5 frames: a full pass of 4, then a pass of 1
    assert out.shape == (5, 1024) and out.dtype == np.float32
    assert np.isfinite(out).all() and out.std() > 0
    np.testing.assert_allclose(gnet.extract(frame_batch[3:]), out[3:], rtol=1e-4, atol=1e-3)
    assert gnet.forward.experimental_get_tracing_count() == 1  # one trace for every count
    bgr = cnn.caffe_preprocess(np.array([[[10.0, 20.0, 30.0]]])).numpy()
    np.testing.assert_allclose(bgr, [[[30 - 104, 20 - 117, 10 - 123]]])


def test_random_init_is_reproducible_and_warns(gnet, blank):
    assert "RANDOM WEIGHTS" in gnet.build_log and "--cnn_weights" in gnet.build_log
    _zero(blank)
    cnn.random_init(blank)  # what a second googlenet(None) build does
    for a, b in zip(gnet.model.get_weights(), blank.get_weights()):
        np.testing.assert_array_equal(a, b)
    images = _images(1)
    np.testing.assert_array_equal(gnet.model(images).numpy(), blank(images).numpy())


def test_caffe_tensorflow_npy_round_trip(gnet, blank, tmp_path, caplog):
    data = caffe_tensorflow_dict(gnet.model)
    path = str(tmp_path / "bvlc_googlenet.npy")
    np.save(path, data, allow_pickle=True)
    _zero(blank)
    with caplog.at_level(logging.INFO):
        cnn.load_weights(blank, path)
    assert "ignored 1 layers not in the network: loss3_classifier" in caplog.text
    kernel = blank.get_layer("inception_3a_1x1").kernel.numpy()
    np.testing.assert_array_equal(kernel, data["inception_3a/1x1"]["weights"])
    # Loaded into another model, the dict gives the same features as its source.
    images = _images(2)
    np.testing.assert_array_equal(blank(images).numpy(), gnet.model(images).numpy())


def test_npy_weights_that_do_not_fit_name_the_layer(blank, tmp_path):
    data = caffe_tensorflow_dict(blank)
    data["inception_4c_3x3"]["weights"] = np.zeros((3, 3, 128, 255), np.float32)
    path = str(tmp_path / "wrong.npy")
    np.save(path, data, allow_pickle=True)
    before = [w.copy() for w in blank.get_weights()]
    with pytest.raises(
        cnn.WeightsError,
        match=r"wrong.npy: layer inception_4c_3x3 "
        r"'weights' has shape \(3, 3, 128, 255\), expected "
        r"\(3, 3, 128, 256\)",
    ):
        cnn.load_weights(blank, path)
    # Nothing was set: every layer is checked before any is assigned.
    for a, b in zip(before, blank.get_weights()):
        np.testing.assert_array_equal(a, b)
    data = caffe_tensorflow_dict(blank)
    del data["inception_5b_pool_proj"]
    np.save(path, data, allow_pickle=True)
    with pytest.raises(cnn.WeightsError, match="no weights for layer inception_5b_pool_proj"):
        cnn.load_weights(blank, path)
    np.save(path, [1, 2, 3])
    with pytest.raises(cnn.WeightsError, match="expected a pickled dict"):
        cnn.load_weights(blank, path)
    with pytest.raises(cnn.WeightsError, match="absent.npy does not exist"):
        cnn.googlenet(str(tmp_path / "absent.npy"))
    other = tmp_path / "weights.caffemodel"
    other.write_bytes(b"")
    with pytest.raises(cnn.WeightsError, match="unknown weights file type"):
        cnn.load_weights(blank, str(other))


def test_keras_h5_weights_round_trip(gnet, blank, tmp_path):
    path = str(tmp_path / "googlenet.weights.h5")
    gnet.model.save_weights(path)
    _zero(blank)
    cnn.load_weights(blank, path)
    for a, b in zip(gnet.model.get_weights(), blank.get_weights()):
        np.testing.assert_array_equal(a, b)


def test_registry():
    assert set(cnn.CNNS) == {"googlenet", "inception_v3"}
    assert (cnn.CNNS["inception_v3"].input_size, cnn.CNNS["inception_v3"].dim) == (299, 2048)
    scaled = cnn.inception_preprocess(np.array([0.0, 127.5, 255.0])).numpy()
    np.testing.assert_allclose(scaled, [-1, 0, 1])
    with pytest.raises(ValueError, match="unknown CNN 'vgg'"):
        cnn.build_extractor("vgg")


def test_inception_v3_features():  # about 7 s: the network is large
    extractor = cnn.build_extractor("inception_v3", None, batch_size=1)
    out = extractor.extract(np.zeros((1, 299, 299, 3), np.uint8))
    assert out.shape == (1, 2048) and np.isfinite(out).all()


# ------------------------------------------------------------------ extraction command


def test_extract_npy_resume_and_failures(gnet, video_dir, tmp_path, caplog):
    output = str(tmp_path / "feats")
    with caplog.at_level(logging.ERROR):
        stats = extraction.extract_features(
            video_dir, output, num_frames=NUM_FRAMES, max_frames=10, log_every=1, extractor=gnet
        )
    assert (stats.videos, stats.extracted, stats.skipped) == (3, 2, 0)
    assert [clip for clip, _, _ in stats.failed] == ["broken"]
    assert "broken.avi" in caplog.text
    failed = open(os.path.join(output, "failed.txt")).read()
    assert failed.startswith("broken\t") and "broken.avi" in failed
    meta = json.load(open(os.path.join(output, "features.json")))
    assert meta == {
        "cnn": "googlenet",
        "weights": "random",
        "num_frames": NUM_FRAMES,
        "max_frames": 10,
        "dim": 1024,
        "dtype": "float32",
    }
    long_clip = np.load(os.path.join(output, "-4wsuPCjDBc_5_15.npy"))
    short_clip = np.load(os.path.join(output, "short_clip.npy"))
    assert long_clip.shape == (NUM_FRAMES, 1024) and long_clip.dtype == np.float32
    assert short_clip.shape == (3, 1024)  # fewer frames than K: all of them
    # Frames 0, 3, 6, 8 of the first 10 (max_frames cuts the 12-frame clip).
    decoded = frames.read_frames(_video(video_dir, "-4wsuPCjDBc_5_15"))
    np.testing.assert_allclose(long_clip, gnet.extract(decoded[[0, 3, 6, 8]]), rtol=1e-5, atol=1e-4)

    # Resume: the stored clips are skipped (files untouched), the broken one retried.
    mtimes = {
        name: os.stat(os.path.join(output, name)).st_mtime_ns
        for name in os.listdir(output)
        if name.endswith(".npy")
    }
    stats = extraction.extract_features(
        video_dir, output, num_frames=NUM_FRAMES, max_frames=10, extractor=gnet
    )
    assert (stats.skipped, stats.extracted, len(stats.failed)) == (2, 0, 1)
    assert mtimes == {name: os.stat(os.path.join(output, name)).st_mtime_ns for name in mtimes}
    # Other settings are refused instead of mixing features.
    with pytest.raises(frame_features.FeaturesError, match="num_frames 4, now 8"):
        extraction.extract_features(video_dir, output, num_frames=8, max_frames=10, extractor=gnet)


def _video(video_dir, clip):
    return next(
        os.path.join(video_dir, name)
        for name in os.listdir(video_dir)
        if os.path.splitext(name)[0] == clip
    )


def test_command_line_hdf5_and_clip_list(
    gnet, video_dir, tmp_path, monkeypatch, capsys, absl_caplog
):
    # The command builds its extractor; hand it the shared one to save a build.
    monkeypatch.setattr(cnn, "build_extractor", lambda *args, **kwargs: gnet)
    clips = tmp_path / "clips.txt"
    clips.write_text("# clip list\n-4wsuPCjDBc_5_15 vid1\nshort_clip vid2\nabsent vid3\n")
    output = str(tmp_path / "feats.h5")
    config = config_lib.parse(
        features.define_flags,
        [
            "features",
            "--video_dir=" + video_dir,
            "--output=" + output,
            "--format=hdf5",
            "--num_frames=%d" % NUM_FRAMES,
            "--max_frames=10",
            "--clips=" + str(clips),
            "--batch_size=%d" % NUM_FRAMES,
            "--dtype=float16",
        ],
    )
    # SIGTERM as the first clip is read (its reader starts a process): the stop comes
    # after that clip, whose features are kept, with no "Exception ignored" on stderr
    read_frames = frames.read_frames

    def stop_while_reading(*args):
        signal.raise_signal(signal.SIGTERM)
        return read_frames(*args)

    monkeypatch.setattr(frames, "read_frames", stop_while_reading)
    with pytest.raises(stops.Stopped):
        features.run(config)
    assert absl_caplog.messages[-1] == (
        "Stopped by SIGTERM; rerun the same command to resume: the clips extracted are kept"
    )
    assert "Exception ignored" not in capsys.readouterr().err
    monkeypatch.setattr(frames, "read_frames", read_frames)
    assert features.exit_status(features.run(config)) == 0
    assert "1 already done, 1 extracted" in capsys.readouterr().out
    video = extraction.find_videos(video_dir)["-4wsuPCjDBc_5_15"]
    direct = extraction.clip_features(gnet, frames.read_frames(video, 10), NUM_FRAMES)
    with h5py.File(output, "r") as f:
        assert sorted(f.keys()) == ["-4wsuPCjDBc_5_15", "short_clip"]
        assert f["short_clip"].shape == (3, 1024)
        assert f.attrs["cnn"] == "googlenet" and f.attrs["dim"] == 1024
        first = f["-4wsuPCjDBc_5_15"][()]
        assert first.dtype == np.float16 and f.attrs["dtype"] == "float16"
    np.testing.assert_allclose(first, direct, rtol=2e-3, atol=1e-2)
    assert not os.path.exists(output + ".failed.txt")
    # Run again: everything is already there.
    assert features.exit_status(features.run(config)) == 0
    assert "2 already done, 0 extracted" in capsys.readouterr().out
    store = frame_features.open_features(output)
    assert store["-4wsuPCjDBc_5_15"].dtype == np.float32
    np.testing.assert_array_equal(store["-4wsuPCjDBc_5_15"], first)
    store.close()


def test_extract_errors(tmp_path):
    with pytest.raises(frame_features.FeaturesError, match="is not a folder"):
        extraction.extract_features(str(tmp_path / "nowhere"), str(tmp_path / "out"))
    with pytest.raises(frame_features.FeaturesError, match="no video files"):
        extraction.extract_features(str(tmp_path), str(tmp_path / "out"))
    with pytest.raises(frame_features.FeaturesError, match="unknown --format"):
        extraction.extract_features(str(tmp_path), str(tmp_path / "out"), fmt="csv")


def test_read_clip_list(tmp_path):
    path = tmp_path / "youtube_mapping.txt"
    path.write_text("a_1_2 vid1\n\n# comment\nb_3_4 vid2\na_1_2 vid1\n")
    assert extraction.read_clip_list(str(path)) == ["a_1_2", "b_3_4"]
    with pytest.raises(frame_features.FeaturesError, match="missing.txt"):
        extraction.read_clip_list(str(tmp_path / "missing.txt"))


# ------------------------------------------------------------------------ open_features


def test_open_features_npy_and_npz_folders(tmp_path):
    rng = np.random.RandomState(3)
    a, b = rng.rand(4, 6), rng.rand(2, 6).astype(np.float32)
    npy = tmp_path / "npy"
    npy.mkdir()
    np.save(npy / "clip_a.npy", a)
    np.save(npy / "clip_b.npy", b)
    (npy / "features.json").write_text("{}")
    store = frame_features.open_features(str(npy))
    assert sorted(store) == ["clip_a", "clip_b"] and len(store) == 2
    assert "clip_a" in store and "clip_c" not in store and store.dim == 6
    assert store["clip_a"].dtype == np.float32
    np.testing.assert_allclose(store["clip_a"], a, rtol=1e-6)
    with pytest.raises(KeyError):
        store["clip_c"]

    npz = tmp_path / "npz"
    npz.mkdir()
    np.savez(npz / "named.npz", features=a, other=b)
    np.savez(npz / "single.npz", b)
    np.savez(npz / "zz_ambiguous.npz", x=a, y=b)
    store = frame_features.open_features(str(npz))
    np.testing.assert_allclose(store["named"], a, rtol=1e-6)
    np.testing.assert_array_equal(store["single"], b)
    assert store.dim == 6
    with pytest.raises(frame_features.FeaturesError, match="zz_ambiguous.npz holds the arrays"):
        store["zz_ambiguous"]


def test_open_features_hdf5_and_arctic_pickle(tmp_path):
    rng = np.random.RandomState(4)
    path = str(tmp_path / "feats.h5")
    with h5py.File(path, "w") as f:
        f.create_dataset("vid1", data=rng.rand(3, 5))
        f.create_dataset("vid2", data=rng.rand(28, 5))
        f.create_group("not_a_clip")
    with frame_features.open_features(path) as store:
        assert list(store) == ["vid1", "vid2"] and store.dim == 5
        assert store["vid2"].shape == (28, 5) and store["vid2"].dtype == np.float32

    pkl = str(tmp_path / "FEAT_key_vidID_value_features.pkl")
    data = {"vid%d" % i: rng.rand(26 + i, 1024).astype(np.float32) for i in (1, 2, 3)}
    with open(pkl, "wb") as f:
        pickle.dump(data, f, protocol=2)
    store = frame_features.open_features(pkl)
    assert len(store) == 3 and "vid2" in store and store.dim == 1024
    np.testing.assert_array_equal(store["vid3"], data["vid3"])


def test_open_features_errors(tmp_path):
    with pytest.raises(frame_features.FeaturesError, match="does not exist"):
        frame_features.open_features(str(tmp_path / "absent"))
    empty = tmp_path / "empty"
    empty.mkdir()
    with pytest.raises(frame_features.FeaturesError, match="holds no features"):
        frame_features.open_features(str(empty))
    other = tmp_path / "table.csv"
    other.write_text("a,b\n")
    with pytest.raises(frame_features.FeaturesError, match="not a feature store"):
        frame_features.open_features(str(other))
    bad = tmp_path / "bad"
    bad.mkdir()
    np.save(bad / "flat.npy", np.zeros(7))
    store = frame_features.open_features(str(bad))
    with pytest.raises(frame_features.FeaturesError, match=r"clip flat in .*flat.npy: .*2-D"):
        store["flat"]
    with pytest.raises(frame_features.FeaturesError, match="clip flat"):
        store.dim
    np.savez(bad / "flat.npz", np.zeros((2, 2)))
    with pytest.raises(frame_features.FeaturesError, match="clip flat is stored twice"):
        frame_features.open_features(str(bad))
    # a clip's file replaced by text (an output written over it) says how to get it back
    os.remove(bad / "flat.npz")
    (bad / "flat.npy").write_text("a caption\n")
    with pytest.raises(frame_features.FeaturesError, match="remove it and run video_caption"):
        frame_features.open_features(str(bad))["flat"]
    with pytest.raises(frame_features.FeaturesError, match="remove it and run video_caption"):
        frame_features.open_features(str(bad)).dim  # the first clip's file gives the size
