"""Calls the signatures of an exported SavedModel from a fresh interpreter that imports
TensorFlow and tensorflow-text only, as a serving system would.

One such interpreter serves every call of a test process (a pytest worker), one
SavedModel after another, as a model server does: it starts on the first call, in an
empty folder and without ``PYTHONPATH``, so that this project cannot be imported from it,
and each call says which of the project's modules it has imported so far.
"""

import atexit
import json
import os
import shutil
import subprocess
import sys
import tempfile

PROJECT_PACKAGES = ("acvi_tf", "pointer_generator", "nmt", "video_caption", "data_prep")
# Runs in the fresh interpreter: reads one request as JSON per line on stdin, writes one
# answer per line.
_SCRIPT = """
import json, sys, traceback
import tensorflow as tf
import tensorflow_text  # noqa: F401, the tokeniser's ops


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


def answer(request):
    served = tf.saved_model.load(request["model"])
    answers = []
    for signature, inputs in request["calls"]:
        out = served.signatures[signature](**{k: tensor(v) for k, v in inputs.items()})
        answers.append({key: plain(value.numpy().tolist()) for key, value in out.items()})
    modules = sorted(m for m in sys.modules if m.split(".")[0] in request["packages"])
    return dict(answers=answers, project_modules=modules)


for line in sys.stdin:
    try:
        reply = answer(json.loads(line))
    except Exception:
        reply = dict(error=traceback.format_exc())
    sys.stdout.write(json.dumps(reply) + "\\n")
    sys.stdout.flush()
"""
_SERVER = {}  # "process" and its "stderr" file, once started


def _server():
    """The serving interpreter, started on first use (again if it has ended)."""
    process = _SERVER.get("process")
    if process is None or process.poll() is not None:
        _stop()  # the folder of one that ended
        folder = tempfile.mkdtemp(prefix="served-")
        stderr = open(os.path.join(folder, "stderr.txt"), "w+b")
        # a model server's environment: not this project's path, nor the Keras choice
        # its package makes for the processes it runs in
        env = {
            k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "TF_USE_LEGACY_KERAS")
        }
        process = subprocess.Popen(
            [sys.executable, "-c", _SCRIPT],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=stderr,
            cwd=folder,
            env=env,
        )
        _SERVER.update(process=process, stderr=stderr, folder=folder)
    return process


def _stop():
    """Ends the serving interpreter and removes its folder."""
    process = _SERVER.pop("process", None)
    if process is not None:
        if process.poll() is None:
            process.stdin.close()
            process.wait(timeout=60)
        _SERVER.pop("stderr").close()
        shutil.rmtree(_SERVER.pop("folder"), ignore_errors=True)


atexit.register(_stop)


def call(export_dir, calls):
    """Answers of ``calls``, ``[(signature, {input name: nested list})]``, in order (the
    lists' leaves, str, float or int, give the dtype: string, float32 or int32).

    Returns:
      ``(answers, project modules imported)``: a dict of outputs per call (strings
      decoded, numbers as lists).
    """
    request = dict(model=os.path.abspath(str(export_dir)), calls=calls, packages=PROJECT_PACKAGES)
    process = _server()
    process.stdin.write((json.dumps(request) + "\n").encode())
    process.stdin.flush()
    line = process.stdout.readline()
    if not line:  # the interpreter ended: its stderr says why
        _SERVER["stderr"].seek(0)
        raise AssertionError(_SERVER["stderr"].read().decode()[-3000:])
    result = json.loads(line)
    assert "error" not in result, result.get("error")
    return result["answers"], result["project_modules"]
