"""acvi_tf.quiet: TensorFlow's start-up lines stay off every command's stderr unless the
command asks for them, and nothing else is lost with them."""

import ast
import importlib
import json
import os
import re
import subprocess
import sys

import pytest

from acvi_tf import quiet

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))

# TensorFlow's C++ log lines (not absl's Python ones, "I1126 10:39:09.885596 ... x.py:1]"),
# in 2.21's format and 2.15's, and the notice every import prints
TF_LINE = re.compile(
    r"^[IWEF]\d{4} [\d:.]+ +\d+ \S+\.(?:cc|h):\d+\]"
    r"|^\d{4}-\d\d-\d\d \d\d:\d\d:\d\d\.\d+: [IWEF] "
    r"|absl::InitializeLog|cuInit",
    re.M,
)

# lines TensorFlow 2.21 and 2.15 print while they load, as measured
STARTUP_LINES = [
    "WARNING: All log messages before absl::InitializeLog() is called are written to STDERR",
    "I0000 00:00:1795687360.039301    4965 port.cc:153] oneDNN custom operations are on.",
    "I0000 00:00:1795687360.039581    4965 cudart_stub.cc:31] Could not find cuda drivers "
    "on your machine, GPU will not be used.",
    "I0000 00:00:1795687360.128849    4965 cpu_feature_guard.cc:227] This TensorFlow binary "
    "is optimized to use available CPU instructions in performance-critical operations.",
    "To enable the following instructions: AVX2 AVX512F FMA, in other operations, rebuild "
    "TensorFlow with the appropriate compiler flags.",
    "E0000 00:00:1795687395.860085    5824 cuda_platform.cc:52] failed call to cuInit: "
    "INTERNAL: CUDA error: Failed call to cuInit: UNKNOWN ERROR (303)",
    "2026-11-26 10:03:06.902897: I tensorflow/core/util/port.cc:113] oneDNN custom "
    "operations are on.",
    "2026-11-26 10:03:06.950866: E external/local_xla/xla/stream_executor/cuda/"
    "cuda_dnn.cc:9261] Unable to register cuDNN factory: Attempting to register factory "
    "for plugin cuDNN when one has already been registered",
    "2026-11-26 10:03:08.297008: W tensorflow/compiler/tf2tensorrt/utils/py_utils.cc:38] "
    "TF-TRT Warning: Could not find TensorRT",
]
# lines that must survive: errors TensorFlow did not print at every start, Python's own
KEPT_LINES = [
    "E0000 00:00:1795687395.860085    5824 op_kernel.cc:1] a real failure",
    "F0000 00:00:1795687395.860085    5824 cpu_feature_guard.cc:1] fatal: no AVX",
    "Traceback (most recent call last):",
    "error: /data/vocab: No such file or directory",
    "/lib/numpy/core.py:12: DeprecationWarning: a warning",
    "I1126 10:39:09.885596 139947340667968 distribute.py:197] absl's Python line",
]


@pytest.mark.parametrize(
    "package", ["acvi_tf", "pointer_generator", "nmt", "video_caption", "data_prep"]
)
def test_every_package_imports_quiet_before_anything_else(package):
    """A command (``python -m package.module``) imports its package first: the package
    must install the quieting before any of its modules imports TensorFlow."""
    with open(os.path.join(ROOT, package, "__init__.py"), encoding="utf-8") as f:
        tree = ast.parse(f.read())
    imports = [
        (getattr(node, "module", None), [alias.name for alias in node.names])
        for node in tree.body
        if isinstance(node, (ast.Import, ast.ImportFrom))
        # the standard library's, which import no TensorFlow
        and node.names[0].name not in ("importlib", "importlib.metadata", "os")
    ]
    assert imports[0] == ("acvi_tf", ["quiet"])


def test_startup_noise_is_told_from_real_errors():
    assert [line for line in STARTUP_LINES if not quiet.is_noise(line)] == []
    assert [line for line in KEPT_LINES if quiet.is_noise(line)] == []


@pytest.mark.parametrize(
    "argv, verbose",
    [
        ([], False),
        (["--verbosity=1"], True),
        (["--verbosity", "2"], True),
        (["-v=1"], True),
        (["-v", "1"], True),
        (["--v=1"], True),
        (["--verbosity=0"], False),
        (["--verbosity=-1"], False),
        (["--verbosity=1", "--verbosity=0"], False),
        (["--verbosity=x"], False),
        (["--debug"], True),
        (["-debug"], True),
        (["--debug=false"], False),
        (["--nodebug"], False),
        (["--debug", "--nodebug"], False),
        (["--", "--debug"], False),
        (["--debugger"], False),
    ],
)
def test_the_command_line_asks_for_tensorflow_s_lines(argv, verbose):
    assert quiet.verbose_requested(argv) is verbose


def test_install_quiets_unless_asked_and_leaves_the_user_s_level(monkeypatch):
    monkeypatch.setattr(sys, "meta_path", list(sys.meta_path))
    environ = {}
    assert quiet.install([], environ)
    assert environ == {quiet.LEVEL: "3", quiet.MARK: "3"}
    assert quiet.install([], environ)  # a child of a quieted command quiets too
    assert not quiet.install(["--verbosity=1"], environ)
    assert environ == {}  # a verbose child gets TensorFlow's default
    environ = {quiet.LEVEL: "1"}
    assert not quiet.install([], environ)
    assert not quiet.install(["--verbosity=1"], environ)
    assert environ == {quiet.LEVEL: "1"}  # the user's level stays
    environ = {quiet.LEVEL: "0", quiet.MARK: "3"}  # the user changed a parent's level
    assert not quiet.install([], environ)
    assert environ[quiet.LEVEL] == "0"


@pytest.fixture
def quieted_module(tmp_path, monkeypatch):
    """``noisy_start(text, fail)``: imports a fresh module, with the import quieted,
    that writes ``text`` on file descriptor 2 and then raises if ``fail``."""
    monkeypatch.syspath_prepend(str(tmp_path))
    monkeypatch.setattr(sys, "meta_path", [quiet.QuietFinder()] + sys.meta_path)
    monkeypatch.setattr(quiet, "QUIETED", ("noisy_start",))

    def load(text, fail=False):
        source = "import os\nos.write(2, %r)\n" % text.encode()
        if fail:
            source += "raise ValueError('broken start')\n"
        (tmp_path / "noisy_start.py").write_text(source)
        sys.modules.pop("noisy_start", None)
        importlib.invalidate_caches()
        try:
            return importlib.import_module("noisy_start")
        finally:
            monkeypatch.delitem(sys.modules, "noisy_start", raising=False)

    return load


def test_a_quieted_import_drops_the_noise_and_keeps_every_other_line(quieted_module, capfd):
    module = quieted_module("".join(line + "\n" for line in STARTUP_LINES + KEPT_LINES))
    err = capfd.readouterr().err
    assert err == "".join(line + "\n" for line in KEPT_LINES)
    # the module keeps its own loader, not the quieting one
    assert type(module.__loader__).__name__ == "SourceFileLoader"
    assert module.__spec__.loader is module.__loader__


def test_a_failed_import_raises_and_gives_stderr_back(quieted_module, capfd):
    with pytest.raises(ValueError, match="broken start"):
        quieted_module(STARTUP_LINES[0] + "\nerror: what went wrong\n", fail=True)
    os.write(2, b"after\n")
    assert capfd.readouterr().err == "error: what went wrong\nafter\n"


def _command(tmp_path, name, record, argv):
    """A command that starts TensorFlow's runtime and then stops at a missing file:
    ``tmp_path/name`` holds the run's ``record`` (``hparams.json``)."""
    run = tmp_path / name
    run.mkdir()
    (run / "hparams.json").write_text(json.dumps(record))
    return [sys.executable, "-m"] + [a.format(run=run, tmp=tmp_path) for a in argv]


@pytest.fixture(scope="module")
def command_errors(tmp_path_factory):
    """stderr and exit status of one command of each host, and of one with
    ``--verbosity=1``, run side by side: every command imports TensorFlow (about 4 s)."""
    tmp = tmp_path_factory.mktemp("quiet")
    (tmp / "in.txt").write_text("a document\n")
    missing = str(tmp / "missing")
    commands = {
        "summarizer": _command(
            tmp,
            "pg",
            {"vocab_path": missing + "/vocab"},
            ["pointer_generator.summarize", "--log_root={tmp}", "--exp_name=pg"],
        ),
        "nmt": _command(
            tmp,
            "nmt",
            {"src": "en", "tgt": "de", "vocab_prefix": missing + "/vocab"},
            ["nmt.translate", "--out_dir={run}"],
        ),
        "captioner": _command(
            tmp,
            "vc",
            {"data_dir": missing, "features": missing + "/features.h5"},
            ["video_caption.caption", "--out_dir={run}"],
        ),
    }
    commands["summarizer"] += ["--input=%s" % (tmp / "in.txt")]
    commands["nmt"] += ["--input=%s" % (tmp / "in.txt")]
    commands["captioner"] += ["--input=%s" % (tmp / "in.txt")]
    commands["summarizer, verbose"] = commands["summarizer"] + ["--verbosity=1"]
    env = {k: v for k, v in os.environ.items() if k not in (quiet.LEVEL, quiet.MARK)}
    processes = {
        name: subprocess.Popen(
            command, cwd=ROOT, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True
        )
        for name, command in commands.items()
    }
    results = {name: (p.communicate()[1], p.returncode) for name, p in processes.items()}
    return dict(results, missing=missing)


@pytest.mark.parametrize("family", ["summarizer", "nmt", "captioner"])
def test_a_command_s_stderr_has_no_tensorflow_start_up_line(command_errors, family):
    err, status = command_errors[family]
    assert status == 2, err
    assert [line for line in err.splitlines() if TF_LINE.search(line)] == []
    assert "Traceback" not in err
    assert err.splitlines()[-1].startswith("error: %s" % command_errors["missing"])


def test_verbosity_1_brings_tensorflow_s_lines_back(command_errors):
    quiet_err, _ = command_errors["summarizer"]
    err, status = command_errors["summarizer, verbose"]
    assert status == 2, err
    assert TF_LINE.search(err), err
    assert err.splitlines()[-1] == quiet_err.splitlines()[-1]
