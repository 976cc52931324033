"""Shared test setup: quiet TensorFlow, two logical CPU devices, Grappler off unless a test
is marked ``optimized``, float32 policy, NumPy references, test videos, the learning tests'
tolerance, entry points run in process."""

import contextlib
import importlib
import io
import json
import math
import os
import sys
from typing import Iterator, List, Optional, Tuple

import acvi_tf.quiet  # noqa: F401  (before TensorFlow loads: its start-up lines stay off)

# isort: split

import imageio_ffmpeg
import numpy as np
import pytest
import scheduling
import tf_runtime
from absl import flags, logging

from acvi_tf import config as config_lib
from acvi_tf import errors, files


def _start_tensorflow() -> None:
    """Imports TensorFlow for the tests: two logical CPU devices, so that a
    MirroredStrategy over two replicas runs inside the test process
    (test_distribute.py; ops without a device still run on the first), each eager op run
    as its kernel, both set before its runtime starts, which the first op does; Grappler's
    rewrites off (``tf_runtime``) for the shared runs' fixtures too, which are built
    before any test's own."""
    import tensorflow as tf

    tf.config.set_logical_device_configuration(
        tf.config.list_physical_devices("CPU")[0], [tf.config.LogicalDeviceConfiguration()] * 2
    )
    tf_runtime.eager_ops_as_kernels()
    tf_runtime.graph_rewrites(False)


def pytest_addoption(parser):
    parser.addoption(
        "--store-durations",
        action="store_true",
        help="write each test's seconds to tests/durations.json (scheduling.py reads them)",
    )


def pytest_configure(config):
    if config.getoption("store_durations"):
        config.pluginmanager.register(scheduling.DurationRecorder(), "acvi-durations")
    if is_xdist_controller(config):
        return  # it runs no test: it starts its workers at once, and TensorFlow prints nothing
    _start_tensorflow()
    import runs  # the shared trained runs' fixtures (it imports this module's helpers)

    config.pluginmanager.register(runs, "acvi-runs")


def is_xdist_controller(config: pytest.Config) -> bool:
    """Whether this process is pytest-xdist's controller, which hands the tests to its
    workers (``-n``) and collects and runs none itself."""
    distributed = config.getoption("dist", "no") != "no" and config.getoption("tx", None)
    collects = config.getoption("collectonly")  # then the controller collects, as xdist runs
    return bool(distributed) and not collects and not hasattr(config, "workerinput")


def pytest_xdist_make_scheduler(config, log):
    """``--dist loadgroup`` (pytest.ini) hands out the longest unit first (scheduling.py)."""
    if config.getvalue("dist") == "loadgroup":
        return scheduling.LongestFirstScheduling(config, log)
    return None


# What the reference lane (tf215: TensorFlow 2.15.1 with tensorflow-addons) runs, marked
# ``reference``: the tests of what differs between the lanes (docs/testing.md says why
# each) and one run of each host from training to a served SavedModel. The current lane
# runs everything.
REFERENCE_LANE = (
    "tests/test_compat.py",  # the one place that chooses Keras
    "tests/test_lane_checkpoints.py",  # checkpoints written on either lane restore
    "tests/test_tfa_parity.py",  # attention and beam search against tensorflow-addons
    "tests/test_peers.py",  # bench/peers.py's tfa.seq2seq peer
    "tests/test_package.py",  # the lane's lock file and declared dependencies
    "tests/test_quiet.py",  # TensorFlow 2.15's own start-up lines
    "tests/test_graph_text.py",  # the lane's tensorflow-text ops against subword-nmt
    "tests/test_export.py::test_the_exported_model_summarises_raw_text_as_decode_does",
    "tests/test_nmt_export.py::test_the_exported_translator_translates_raw_text_as_inference_does",
    "tests/test_caption_export.py::test_the_exported_captioner_captions_frames_as_decode_does",
)


@pytest.hookimpl(tryfirst=True)
def pytest_collection_modifyitems(config, items):
    """Marks the reference lane's tests and the quick ones, groups the tests of a
    module-scoped fixture or a shared run (before xdist reads the groups), and runs
    tests marked ``slow`` first where no scheduler orders them (one process)."""
    scheduling.group_by_shared_fixtures(items)
    quick = scheduling.quick_tests(items)
    for item in items:
        if item.nodeid.startswith(REFERENCE_LANE):
            item.add_marker(pytest.mark.reference)
        if item.nodeid in quick:
            item.add_marker(pytest.mark.quick)
    items.sort(key=lambda item: item.get_closest_marker("slow") is None)


@pytest.fixture(autouse=True)
def _float32_policy():
    """Every test starts and ends with the float32 policy (some switch to mixed)."""
    from acvi_tf.compat import keras

    keras.mixed_precision.set_global_policy("float32")
    yield
    keras.mixed_precision.set_global_policy("float32")


@contextlib.contextmanager
def untraced() -> Iterator[None]:
    """Runs every ``tf.function`` eagerly inside: the ``eager`` marker's mode for the part
    of a test that is about what surrounds a few steps (a resume, say) after a part that
    runs traced."""
    import tensorflow as tf

    tf.config.run_functions_eagerly(True)
    try:
        yield
    finally:
        tf.config.run_functions_eagerly(False)


@pytest.fixture(autouse=True)
def _optimized_graphs(request):
    """Tests marked ``optimized`` run their functions with Grappler's rewrites, as users do;
    the others without (``tf_runtime.graph_rewrites``)."""
    tf_runtime.graph_rewrites(request.node.get_closest_marker("optimized") is not None)
    yield
    tf_runtime.graph_rewrites(False)


@pytest.fixture(autouse=True)
def _eager_functions(request):
    """Tests marked ``eager`` run every ``tf.function`` eagerly: each is about what
    surrounds a few training steps (a record, a checkpoint, a resume), which run faster
    untraced; the same steps run traced in the hosts' other tests (docs/testing.md)."""
    import tensorflow as tf

    eager = request.node.get_closest_marker("eager") is not None
    tf.config.run_functions_eagerly(eager)
    yield
    tf.config.run_functions_eagerly(False)


# Whether the test being set up scores METEOR in its full mode (marked ``full_meteor``).
_FULL_METEOR = {"on": False}


@pytest.hookimpl(tryfirst=True)
def pytest_runtest_setup(item):
    """Reads the test's ``full_meteor`` marker before any of its fixtures is built, so a
    module-scoped fixture that decodes scores as its first test does."""
    _FULL_METEOR["on"] = item.get_closest_marker("full_meteor") is not None


@pytest.fixture(autouse=True, scope="session")
def _exact_meteor():
    """METEOR scores in its exact mode where a command asks for the full one: the same
    jar and protocol without loading the paraphrase tables (about 6 s of wall and two
    cores' worth of Java in each process that scores the full mode). Session-scoped, so
    that it holds in every fixture too. Tests marked ``full_meteor`` keep the full mode:
    ``test_metrics.py`` checks it against pycocoevalcap."""
    from acvi_tf.metrics import meteor

    full = meteor.meteor

    def scored(references, hypotheses, mode="full"):
        return full(references, hypotheses, mode if _FULL_METEOR["on"] else "exact")

    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(meteor, "meteor", scored)
        yield


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


def no_writes_in(monkeypatch, directory):
    """Writes into ``directory`` (``files``' temporary files) fail as in a folder of
    another user: tests run as root, whom permissions do not stop."""
    real = files.tempfile.NamedTemporaryFile

    def refused(*args, **kwargs):
        if os.path.samefile(kwargs["dir"], directory):
            raise PermissionError(13, "Permission denied", kwargs["dir"] + "/.partial-x1y2")
        return real(*args, **kwargs)

    monkeypatch.setattr(files.tempfile, "NamedTemporaryFile", refused)


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


def write_clip_features(root):
    """Writes 13 clips' features and captions to ``root`` as a captions dataset (splits
    of 8, 2 and 3 clips, their ``.jsonl`` files and a vocabulary): each caption names the
    colour and the shape its clip's features encode in their first two columns. Returns
    ``(data folder, features folder)``."""
    words = ["red", "blue", "square", "circle"]
    rng = np.random.default_rng(0)
    features = root / "features"
    features.mkdir()
    splits = {"train": [], "val": [], "test": []}
    for i in range(13):
        colour, shape = words[i % 2], words[2 + (i // 2) % 2]
        rows = rng.normal(size=[5 + i % 2, 6]).astype(np.float32)
        rows[:, 0] += 3.0 * (i % 2)
        rows[:, 1] += 3.0 * ((i // 2) % 2)
        np.save(features / ("clip%d_0_1.npy" % i), rows)
        split = "train" if i < 8 else ("val" if i < 10 else "test")
        splits[split].append(
            dict(
                clip="clip%d_0_1" % i,
                vid="vid%d" % (i + 1),
                captions=["a %s %s" % (colour, shape)],
                references=["A %s %s." % (colour, shape)],
            )
        )
    for name, records in splits.items():
        (root / (name + ".jsonl")).write_text("".join(json.dumps(r) + "\n" for r in records))
    (root / "vocab.txt").write_text("a 8\nred 4\nblue 4\nsquare 4\ncircle 4\n")
    return str(root), str(features)


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


def command(
    module: str,
    argv: List[str],
    capsys: pytest.CaptureFixture,
    monkeypatch: pytest.MonkeyPatch,
    stdin: Optional[bytes] = None,
) -> Tuple[int, str, str]:
    """Runs the entry point ``module`` in this process as ``python -m module *argv`` runs
    it (``config.run_command``): its flags parsed, a refusal reported as ``errors.run``
    reports it, then ``run(config)`` under ``errors.run``, with ``stdin`` as its standard
    input. What a process of its own adds, the import of TensorFlow and its start-up
    lines, ``test_quiet.py`` checks.

    Returns:
      ``(exit status, stdout, stderr)``.
    """
    entry = importlib.import_module(module)

    def main(unused_argv):
        try:
            config = config_lib.parse(entry.define_flags, [module, *argv])
        except flags.Error as e:
            errors.report(flags.Error(errors.flag_error_message(e)))
        entry.run(config)

    monkeypatch.setattr(sys, "argv", [module])
    if stdin is not None:
        monkeypatch.setattr(sys, "stdin", io.TextIOWrapper(io.BytesIO(stdin)))
    capsys.readouterr()
    with pytest.raises(SystemExit) as exit_info:
        errors.run(main)
    out, err = capsys.readouterr()
    return exit_info.value.code or 0, out, err


def run_settings(module: str, *argv: str) -> config_lib.Config:
    """The settings of the trained run that the command ``module`` (``nmt.translate``,
    an export) reads when given ``argv``: its flags parsed, then its Task's
    ``run_settings``."""
    entry = importlib.import_module(module)
    return entry.TASK.run_settings(config_lib.parse(entry.define_flags, [module, *argv]))


LAUNCH = os.path.join(os.path.dirname(os.path.abspath(__file__)), "launch.py")


def python_m(module: str, *argv: str, eager: bool = False) -> List[str]:
    """The command line of ``python -m module *argv`` for a child process that traces its
    graphs as this process does, without Grappler's rewrites, or with ``eager`` runs them
    untraced (``launch.py``): for tests of signals, kills and workers."""
    return [sys.executable, LAUNCH, *(["--eager"] if eager else []), module, *argv]
