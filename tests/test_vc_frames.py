"""Video decoding, equally spaced frame sampling, and resize + centre crop."""

import numpy as np
import pytest

from acvi_tf.inference import report
from data_prep import moving_shapes
from video_caption import data, frames

from conftest import write_video


@pytest.fixture(scope="module")
def video(tmp_path_factory):
    return write_video(tmp_path_factory.mktemp("video") / "clip")


def test_sample_indices_by_hand():
    # range(10) in 4 chunks: [0 1 2] [3 4 5] [6 7] [8 9]
    np.testing.assert_array_equal(frames.sample_indices(10, 4), [0, 3, 6, 8])
    np.testing.assert_array_equal(frames.sample_indices(240, 24), np.arange(0, 240, 10))
    np.testing.assert_array_equal(frames.sample_indices(5, 5), [0, 1, 2, 3, 4])
    np.testing.assert_array_equal(frames.sample_indices(7, 1), [0])


@pytest.mark.parametrize("n", [1, 2, 23, 24, 25, 29, 100, 239, 240])
@pytest.mark.parametrize("k", [1, 3, 24, 26, 28])
def test_sample_indices_are_the_first_of_array_split_chunks(n, k):
    indices = frames.sample_indices(n, k)
    if n >= k:
        expected = [chunk[0] for chunk in np.array_split(np.arange(n), k)]
    else:
        expected = list(range(n))  # too short: every frame, padded later
    np.testing.assert_array_equal(indices, expected)
    assert indices.dtype == np.int64


def test_sample_indices_short_and_bad_arguments():
    assert frames.sample_indices(0, 24).size == 0
    np.testing.assert_array_equal(frames.sample_indices(3, 24), [0, 1, 2])
    with pytest.raises(ValueError, match="num_frames"):
        frames.sample_indices(10, 0)
    with pytest.raises(ValueError, match="num_available"):
        frames.sample_indices(-1, 3)


def test_read_frames_decodes_every_frame(video):
    decoded = frames.read_frames(video)
    assert decoded.shape == (30, 48, 64, 3) and decoded.dtype == np.uint8
    # The red square is where it was drawn (lossless H.264 or near-lossless MJPEG).
    first = decoded[0].astype(int)
    assert first[24, 8, 0] > 200 and first[24, 8, 2] < 60
    assert abs(first[5, 40] - 128).max() < 20
    last = decoded[-1].astype(int)
    assert last[24, 37, 0] > 200 and last[24, 8, 0] < 160


def test_read_frames_stops_at_max_frames(video):
    decoded = frames.read_frames(video, max_frames=7)
    assert decoded.shape == (7, 48, 64, 3)
    np.testing.assert_array_equal(decoded, frames.read_frames(video)[:7])


def test_read_frames_errors_name_the_file(tmp_path):
    missing = str(tmp_path / "missing.mp4")
    with pytest.raises(frames.VideoError, match="missing.mp4"):
        frames.read_frames(missing)
    corrupt = tmp_path / "corrupt.mp4"
    corrupt.write_bytes(b"not a video at all" * 50)
    with pytest.raises(frames.VideoError, match="corrupt.mp4.*cannot decode"):
        frames.read_frames(str(corrupt))
    assert issubclass(frames.VideoError, ValueError)


def test_resize_and_crop_keeps_the_centre():
    # 48 x 64 frame: a vertical band of columns per colour, green in the middle.
    frame = np.zeros((48, 64, 3), np.uint8)
    frame[:, :16] = (255, 0, 0)
    frame[:, 16:48] = (0, 255, 0)
    frame[:, 48:] = (0, 0, 255)
    out = frames.resize_and_crop(np.stack([frame, frame]), 24)
    assert out.shape == (2, 24, 24, 3) and out.dtype == np.float32
    # Shorter side 48 -> 24 scales by 1/2: 32 columns, the middle 24 kept (4 cut a side),
    # so the centre is green and the borders still touch red and blue.
    np.testing.assert_allclose(out[0, 12, 12], (0, 255, 0), atol=1)
    assert out[0, 12, 0, 0] > 200 and out[0, 12, -1, 2] > 200
    assert out.min() >= 0 and out.max() <= 255


def test_resize_and_crop_portrait_float_and_identity():
    rng = np.random.RandomState(0)
    portrait = rng.randint(0, 256, (1, 40, 20, 3)).astype(np.uint8)
    out = frames.resize_and_crop(portrait, 10)
    assert out.shape == (1, 10, 10, 3)
    # Float frames take the same path channel by channel, without rounding to bytes.
    as_float = frames.resize_and_crop(portrait.astype(np.float32), 10)
    np.testing.assert_allclose(as_float, out, atol=1.0)
    square = rng.uniform(0, 255, (3, 16, 16, 3)).astype(np.float32)
    np.testing.assert_array_equal(frames.resize_and_crop(square, 16), square)
    with pytest.raises(ValueError, match=r"\[n, H, W, 3\]"):
        frames.resize_and_crop(np.zeros((16, 16, 3)), 8)


def test_feature_thumbnails_are_the_frames_behind_the_feature_rows(video):
    # the clip's square moves right one pixel a frame: its left edge is the frame number
    decoded = frames.read_frames(video)
    thumbs = frames.feature_thumbnails(video, 4, 4, 240, 24)
    indices = frames.sample_indices(30, 4)  # 0, 8, 16, 23
    assert [t.shape for t in thumbs] == [(24, 32, 3)] * 4
    for j, index in enumerate(indices):
        np.testing.assert_array_equal(thumbs[j], frames.thumbnail(decoded[index], 24))
        red = np.flatnonzero(thumbs[j][12].astype(int)[:, 0] > 200)
        assert abs(red.mean() - (index + 7.5) / 2) <= 1
    # features of 8 frames read as 5 rows: data.clip_features samples the rows again
    store = {"clip": frames.sample_indices(30, 8)[:, None].astype(np.float32)}
    rows, count = data.clip_features(store, dict(clip="clip", vid="vid1"), 5)
    again = frames.feature_thumbnails(video, 8, 5, 240, 24)
    assert len(again) == count == 5
    for thumb, index in zip(again, rows[:, 0].astype(int)):
        np.testing.assert_array_equal(thumb, frames.thumbnail(decoded[index], 24))
    # only the first max_frames are sampled
    short = frames.feature_thumbnails(video, 4, 4, 10, 24)
    for thumb, index in zip(short, frames.sample_indices(10, 4)):
        np.testing.assert_array_equal(thumb, frames.thumbnail(decoded[index], 24))


def test_thumbnail_keeps_the_aspect_and_never_enlarges():
    frame = np.zeros((48, 64, 3), np.uint8)
    assert frames.thumbnail(frame, 24).shape == (24, 32, 3)
    assert frames.thumbnail(frame[:, :30], 24).shape == (38, 24, 3)
    assert frames.thumbnail(np.zeros((240, 320, 3), np.uint8), 64).shape == (64, 85, 3)
    assert frames.thumbnail(frame, 64) is frame


def test_demo_clip_thumbnails_are_small(tmp_path):
    """docs/captioner.md: under 2 KB of page per thumbnail of a 112-px demo clip."""
    attributes = moving_shapes.generate(str(tmp_path), num_clips=2, frames=48, captions_per_clip=1)
    for clip in attributes.values():
        path = str(tmp_path / clip["video"])
        thumbs = frames.feature_thumbnails(path, 24, 24, 240, 64)
        assert len(thumbs) == 24 and thumbs[0].shape == (64, 64, 3)
        sizes = [len(report.image_uri(t)) for t in thumbs]
        assert 1000 < max(sizes) < 2000
