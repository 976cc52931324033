"""Calls the signatures of an exported SavedModel from a fresh interpreter that imports
TensorFlow and tensorflow-text only, as a serving system would."""

import json
import os
import subprocess
import sys

PROJECT_PACKAGES = ("acvi_tf", "pointer_generator", "nmt", "video_caption", "data_prep")
# Runs in the fresh interpreter: reads the calls as JSON on stdin, writes the answers.
_SCRIPT = """
import json, sys
import tensorflow as tf
import tensorflow_text  # noqa: F401, the tokeniser's ops
request = json.load(sys.stdin)
served = tf.saved_model.load(request["model"])


def plain(value):
    if isinstance(value, bytes):
        return value.decode("utf-8")
    if isinstance(value, list):
        return [plain(v) for v in value]
    return value


def leaf(values):
    while isinstance(values, list) and values:
        values = values[0]
    return values


def tensor(values):
    dtype = {str: tf.string, float: tf.float32, int: tf.int32}[type(leaf(values))]
    return tf.constant(values, dtype)


answers = []
for signature, inputs in request["calls"]:
    out = served.signatures[signature](**{k: tensor(v) for k, v in inputs.items()})
    answers.append({key: plain(value.numpy().tolist()) for key, value in out.items()})
modules = sorted(m for m in sys.modules if m.split(".")[0] in request["packages"])
json.dump(dict(answers=answers, project_modules=modules), sys.stdout)
"""


def call(export_dir, calls):
    """Answers of ``calls``, ``[(signature, {input name: nested list})]``, in order (the
    lists' leaves, str, float or int, give the dtype: string, float32 or int32).

    Returns:
      ``(answers, project modules imported)``: a dict of outputs per call (strings
      decoded, numbers as lists).
    """
    request = dict(model=str(export_dir), calls=calls, packages=PROJECT_PACKAGES)
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    done = subprocess.run(
        [sys.executable, "-c", _SCRIPT],
        input=json.dumps(request).encode(),
        capture_output=True,
        cwd=os.path.dirname(os.path.abspath(str(export_dir))),
        env=env,
        check=False,
    )
    assert done.returncode == 0, done.stderr.decode()[-3000:]
    result = json.loads(done.stdout)
    return result["answers"], result["project_modules"]
