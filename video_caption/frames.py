"""Video frames for captioning: decoding, equally spaced sampling, resize and crop.

The MSVD setting (Yao et al. 2015, and the ACVI paper after it) reads only the first 240
frames of a clip, keeps K equally spaced frames of those and gives each to an ImageNet
CNN at its input size. This module does the video side, without TensorFlow:

* ``read_frames`` decodes a file with the ffmpeg binary bundled in ``imageio-ffmpeg`` (no
  system ffmpeg needed) and stops after ``max_frames`` frames;
* ``sample_indices`` picks the K frames with the rule of yaoli/arctic-capgen-vid;
* ``resize_and_crop`` scales the shorter side to the CNN's size and cuts the centre
  square, deterministically (Pillow's bilinear filter);
* ``feature_thumbnails`` gives small images of the frames behind a clip's feature rows,
  for the captioner's ``report.html``.

Usage::

  frames = read_frames("clip.avi", max_frames=240)       # uint8 [n, H, W, 3]
  frames = frames[sample_indices(len(frames), 24)]        # at most 24 frames
  images = resize_and_crop(frames, 224)                   # float32 [n, 224, 224, 3]
"""

import os
from typing import List

import imageio_ffmpeg
import numpy as np
from PIL import Image

from acvi_tf import errors

# The MSVD setting: only the first frames of a clip are decoded.
MAX_FRAMES = 240


class VideoError(errors.UserError, ValueError):
    """A video cannot be decoded or has no frames; the message names the file."""


def _last_lines(text, count=3):
    """The last non-empty lines of ffmpeg's (long) error text, joined with " | "."""
    lines = [line.strip() for line in str(text).splitlines() if line.strip()]
    return " | ".join(lines[-count:])


def read_frames(path: str, max_frames: int = MAX_FRAMES) -> np.ndarray:
    """Decodes the first frames of a video file.

    Args:
      path: the video file (any container and codec the bundled ffmpeg reads).
      max_frames: the most frames returned; decoding stops there, so a long video costs
        no more than a short one.

    Returns:
      uint8 RGB frames, shape [n, H, W, 3] with 1 <= n <= max_frames.

    Raises:
      VideoError: the file is missing, cannot be decoded, or has no frames.
    """
    if max_frames < 1:
        raise ValueError("max_frames must be >= 1, got %d" % max_frames)
    path = os.fspath(path)
    if not os.path.isfile(path):
        raise VideoError("%s: no such video file" % path)
    # "-frames:v" makes ffmpeg itself stop after max_frames, so it does not decode the rest
    # of the file into a pipe that nobody reads.
    reader = imageio_ffmpeg.read_frames(path, output_params=["-frames:v", str(max_frames)])
    frames = []
    try:
        meta = next(reader)
        width, height = meta["size"]
        for raw in reader:
            frames.append(np.frombuffer(raw, dtype=np.uint8).reshape(height, width, 3))
            if len(frames) >= max_frames:
                break
    except (OSError, RuntimeError, ValueError, KeyError, StopIteration) as e:
        raise VideoError(
            "%s: cannot decode the video (%s); check that the file is "
            "complete and a video format ffmpeg reads" % (path, _last_lines(e))
        ) from e
    finally:
        # Closing the generator terminates the ffmpeg process when we stop early.
        reader.close()
    if not frames:
        raise VideoError(
            "%s: the video has no frames; the file is probably truncated "
            "or has no video stream" % path
        )
    return np.stack(frames)


def sample_indices(num_available: int, num_frames: int) -> np.ndarray:
    """Indices of ``num_frames`` equally spaced frames out of ``num_available``.

    The rule of yaoli/arctic-capgen-vid: ``range(num_available)`` is cut into
    ``num_frames`` consecutive chunks with ``np.array_split`` (the first
    ``num_available % num_frames`` chunks one longer) and the first frame of every chunk
    is taken. For 10 frames and K = 4 the chunks are [0 1 2] [3 4 5] [6 7] [8 9], so the
    indices are 0, 3, 6, 8.

    A clip with fewer than K frames keeps all of them (``0 .. num_available - 1``), with no
    repeated frames; the data pipeline zero-pads the features to K and masks the padding.

    Args:
      num_available: how many frames were decoded (>= 0).
      num_frames: K, how many frames are wanted (>= 1).

    Returns:
      int64 indices, ascending, of length ``min(num_available, num_frames)``.
    """
    if num_frames < 1:
        raise ValueError("num_frames must be >= 1, got %d" % num_frames)
    if num_available < 0:
        raise ValueError("num_available must be >= 0, got %d" % num_available)
    if num_available < num_frames:
        return np.arange(num_available, dtype=np.int64)
    # The first element of chunk i of np.array_split(range(n), k) is
    # i * (n // k) + min(i, n % k); computed directly, no list of n numbers is built.
    chunk = np.arange(num_frames, dtype=np.int64)
    return chunk * (num_available // num_frames) + np.minimum(chunk, num_available % num_frames)


def _resize(image, width, height):
    """Resizes one [H, W, 3] uint8 or float image with Pillow's bilinear filter."""
    if image.dtype == np.uint8:
        return np.asarray(
            Image.fromarray(image, "RGB").resize((width, height), Image.BILINEAR), dtype=np.float32
        )
    # Pillow has no 3-channel float mode: resize each channel as a 32-bit float image,
    # which keeps values outside 0..255 and fractions exact instead of rounding to bytes.
    channels = [
        np.asarray(
            Image.fromarray(np.ascontiguousarray(image[..., c], dtype=np.float32), "F").resize(
                (width, height), Image.BILINEAR
            )
        )
        for c in range(image.shape[-1])
    ]
    return np.stack(channels, axis=-1).astype(np.float32)


def resize_and_crop(frames: np.ndarray, size: int) -> np.ndarray:
    """Scales the shorter side of every frame to ``size`` and cuts the centre square.

    The scale keeps the aspect ratio (the longer side is rounded to whole pixels); the crop
    drops ``(long - size) // 2`` pixels before and the rest after on the longer side. A
    frame already ``size`` x ``size`` is returned unchanged (as float32).

    Args:
      frames: [n, H, W, 3] uint8 (0..255) or float frames (any range, kept).
      size: the side of the output square, e.g. 224 (GoogLeNet) or 299 (Inception v3).

    Returns:
      float32 [n, size, size, 3].
    """
    frames = np.asarray(frames)
    if frames.ndim != 4 or frames.shape[-1] != 3:
        raise ValueError("frames must have shape [n, H, W, 3], got %s" % (frames.shape,))
    if size < 1:
        raise ValueError("size must be >= 1, got %d" % size)
    n, height, width, _ = frames.shape
    if frames.dtype != np.uint8:
        frames = frames.astype(np.float32)
    scale = size / min(height, width)
    new_height = max(size, int(round(height * scale)))
    new_width = max(size, int(round(width * scale)))
    top = (new_height - size) // 2
    left = (new_width - size) // 2
    out = np.empty((n, size, size, 3), dtype=np.float32)
    for i in range(n):
        if (height, width) == (new_height, new_width):
            resized = frames[i].astype(np.float32)
        else:
            resized = _resize(frames[i], new_width, new_height)
        out[i] = resized[top : top + size, left : left + size]
    return out


def feature_frame_indices(num_available: int, store_frames: int, num_frames: int) -> np.ndarray:
    """Indices of the decoded frames behind a clip's feature rows as the captioner reads
    them: ``video_caption.features`` keeps ``sample_indices(num_available, store_frames)``,
    and ``video_caption.data`` samples those rows again with ``sample_indices`` where there
    are more than ``num_frames``. Attention column j is the frame at index j.

    Args:
      num_available: how many frames were decoded (at most the extraction's max_frames).
      store_frames: the K the features were extracted with.
      num_frames: the captioner's K.

    Returns:
      int64 indices, ascending, of length ``min(num_available, store_frames, num_frames)``.
    """
    indices = sample_indices(num_available, store_frames)
    if len(indices) > num_frames:
        indices = indices[sample_indices(len(indices), num_frames)]
    return indices


def thumbnail(frame: np.ndarray, size: int) -> np.ndarray:
    """One uint8 [H, W, 3] frame scaled (Pillow's bilinear filter) so that its shorter side
    is ``size`` pixels, the aspect ratio kept; a frame no larger is returned unchanged.

    Returns:
      uint8 [h, w, 3] with ``min(h, w) == min(size, min(H, W))``.
    """
    height, width = frame.shape[:2]
    scale = size / min(height, width)
    if scale >= 1:
        return frame
    shape = (max(1, int(round(width * scale))), max(1, int(round(height * scale))))
    return np.asarray(Image.fromarray(frame, "RGB").resize(shape, Image.BILINEAR))


def feature_thumbnails(
    path: str, store_frames: int, num_frames: int, max_frames: int, size: int
) -> List[np.ndarray]:
    """Thumbnails of the frames behind a clip's feature rows (``feature_frame_indices``),
    decoded from its video as ``video_caption.features`` decodes it.

    Args:
      path: the clip's video file.
      store_frames: the K the features were extracted with.
      num_frames: the captioner's K.
      max_frames: the extraction's max_frames.
      size: the thumbnails' shorter side in pixels (``thumbnail``).

    Returns:
      uint8 [h, w, 3] images, one per feature row (attention column).

    Raises:
      VideoError: the video cannot be decoded.
    """
    frames = read_frames(path, max_frames)
    indices = feature_frame_indices(len(frames), store_frames, num_frames)
    return [thumbnail(frames[i], size) for i in indices]
