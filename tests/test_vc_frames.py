"""Video decoding, equally spaced frame sampling, and resize + centre crop."""

import numpy as np
import pytest

from video_caption import frames

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
