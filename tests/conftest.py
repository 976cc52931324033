"""Shared test setup: quiet TensorFlow, two logical CPU devices, float32 policy, NumPy
references, test videos, the learning tests' tolerance."""

import math
import os

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")

import imageio_ffmpeg
import numpy as np
import pytest
import tensorflow as tf
from absl import logging

from acvi_tf.compat import keras

# Two logical CPU devices, so that a MirroredStrategy over two replicas runs inside the
# test process (test_distribute.py); ops without a device still run on the first. Set
# before TensorFlow's runtime starts, which the first op does.
tf.config.set_logical_device_configuration(
    tf.config.list_physical_devices("CPU")[0], [tf.config.LogicalDeviceConfiguration()] * 2
)


def pytest_collection_modifyitems(items):
    """Tests marked ``slow`` run first (stable order otherwise): with two xdist workers the
    minute-long ones then start early, instead of one keeping a worker busy at the end
    while the other has nothing left. ``pytest -m "not slow"`` skips them."""
    items.sort(key=lambda item: item.get_closest_marker("slow") is None)


@pytest.fixture(autouse=True)
def _float32_policy():
    """Every test starts and ends with the float32 policy (some switch to mixed)."""
    keras.mixed_precision.set_global_policy("float32")
    yield
    keras.mixed_precision.set_global_policy("float32")


@pytest.fixture(autouse=True)
def _absl_logger_level():
    """Every test starts with absl's logger at its import-time level (NOTSET): saving a
    SavedModel sets it to WARNING (the default ``--verbosity``), which hid INFO records
    from a later test's ``caplog`` in the same worker (an export run in process)."""
    logging.get_absl_logger().setLevel(0)


@pytest.fixture
def absl_caplog(caplog):
    """``caplog`` that sees absl's INFO records, whatever verbosity an earlier test in the
    process left (absl's logger does not propagate otherwise)."""
    logger = logging.get_absl_logger()
    propagate, logger.propagate = logger.propagate, True
    caplog.set_level("INFO", logger=logger.name)
    yield caplog
    logger.propagate = propagate


def write_parallel_slices(sample, root, counts, langs):
    """The first ``counts[split]`` lines of each ``sample/split.lang`` file, written to
    ``root/split.lang``: a small corpus cut from a shipped one."""
    os.makedirs(root, exist_ok=True)
    for split, count in counts.items():
        for lang in langs:
            with open(os.path.join(sample, "%s.%s" % (split, lang)), encoding="utf-8") as f:
                lines = f.readlines()[:count]
            with open(os.path.join(root, "%s.%s" % (split, lang)), "w", encoding="utf-8") as f:
                f.writelines(lines)


def write_video(path, num_frames=30, width=64, height=48, colour=(255, 0, 0)):
    """Writes a clip of a coloured square moving right on grey; returns the path used.

    H.264 when the bundled ffmpeg has it, otherwise Motion JPEG in an .avi; best quality
    (10: crf 0 for H.264, qscale 1 for MJPEG, which needs the full-range "j" format).
    """
    encoders = ("libx264", ".mp4", "yuv420p"), ("mjpeg", ".avi", "yuvj420p")
    for codec, extension, pix_fmt in encoders:
        target = str(path) + extension
        try:
            writer = imageio_ffmpeg.write_frames(
                target,
                (width, height),
                fps=10,
                codec=codec,
                pix_fmt_out=pix_fmt,
                quality=10,
                macro_block_size=16,
            )
            writer.send(None)
            for i in range(num_frames):
                frame = np.full((height, width, 3), 128, np.uint8)
                frame[16:32, i : i + 16] = colour
                writer.send(frame)
            writer.close()
            return target
        except (OSError, RuntimeError):
            continue
    pytest.skip("the bundled ffmpeg can write neither H.264 nor MJPEG")


def pair_tolerance(seed_std):
    """How far one run of a model may fall behind one run of another with equal means:
    the difference of two single-seed results has standard deviation ``sqrt(2) *
    seed_std``, and two of those cover 95% of it. The learning tests compare one run of
    ACVI with one of soft attention; their means over seeds 1-3 are compared in the
    study (docs/acvi.md)."""
    return 2.0 * math.sqrt(2.0) * seed_std
