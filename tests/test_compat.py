"""acvi_tf.compat: the one place that chooses Keras, on either lane."""

import glob
import os
import re
from importlib import metadata

import tensorflow as tf

from acvi_tf import compat

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
DIRS = ["acvi_tf", "pointer_generator", "video_caption", "nmt", "data_prep", "bench", "tests"]
# Ways to reach a Keras other than through acvi_tf.compat.
BYPASS = re.compile(r"tf\.keras\b|TF_USE_LEGACY_\w+|^\s*(import|from) (tf_)?keras\b", re.M)
# The lines past the compat module that name the switch, reaching no Keras: the package's
# __init__ keeps TensorFlow from loading Keras 3 beside the Keras 2 the project uses, and
# the served models' interpreter (tests/served.py) runs without that setting.
SWITCH_LINES = {
    'os.environ.setdefault("TF_USE_LEGACY_KERAS", "1")',
    'k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "TF_USE_LEGACY_KERAS")',
}


def test_keras_is_the_keras_2_api_of_this_tensorflow():
    major, minor = (int(x) for x in tf.__version__.split(".")[:2])
    assert compat.TF_VERSION == (major, minor)
    if compat.TF_VERSION < (2, 16):
        assert compat.keras.layers.Dense is tf.keras.layers.Dense
        assert metadata.version("keras").startswith("2.%d." % minor)
    else:  # tf.keras is Keras 3 here
        assert compat.keras.__name__ == "tf_keras"
        assert compat.keras.__version__.startswith("2.%d." % minor)
    layer = compat.keras.layers.Dense(2)
    assert isinstance(layer, tf.Module)  # tracked by tf.train.Checkpoint


def test_no_file_reaches_keras_past_the_compat_module():
    offenders = []
    for d in DIRS:
        for path in glob.glob(os.path.join(ROOT, d, "**", "*.py"), recursive=True):
            if path in (os.path.join(ROOT, "acvi_tf", "compat.py"), os.path.abspath(__file__)):
                continue
            with open(path, encoding="utf-8") as f:
                for number, line in enumerate(f, 1):
                    if BYPASS.search(line) and line.strip() not in SWITCH_LINES:
                        offenders.append("%s:%d" % (os.path.relpath(path, ROOT), number))
    assert not offenders, offenders
