"""The install: the lanes' lock files, the declared dependencies, importing the package."""

import ast
import glob
import os
import re
import subprocess
import sys
from importlib import metadata

import pytest
from packaging.requirements import Requirement
from packaging.utils import canonicalize_name

from acvi_tf import compat

DISTRIBUTION = "acvi-tf"
ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
PACKAGES = ["acvi_tf", "pointer_generator", "video_caption", "nmt", "data_prep"]
LANE = "tf215" if compat.TF_VERSION < (2, 16) else "current"
# Declared, never imported by name: tf.summary writes through tensorboard.
USED_WITHOUT_IMPORT = {"tensorboard"}


def _pins(lane):
    """``{canonical name: (extras, version)}`` of ``requirements/<lane>.txt``."""
    pins = {}
    with open(os.path.join(ROOT, "requirements", lane + ".txt"), encoding="utf-8") as f:
        for line in f:
            line = line.split("#", 1)[0].strip()
            if line:
                requirement = Requirement(line)
                specifiers = list(requirement.specifier)
                assert len(specifiers) == 1 and specifiers[0].operator == "==", (
                    "requirements/%s.txt must pin every package: %r" % (lane, line)
                )
                name = canonicalize_name(requirement.name)
                pins[name] = (requirement.extras, specifiers[0].version)
    return pins


def _lock(lane):
    """``{canonical name: version}`` of ``requirements/<lane>.txt``."""
    return {name: version for name, (_, version) in _pins(lane).items()}


def _declared(extra=None):
    """The installed project's requirements: its dependencies, or those of ``extra``."""
    requirements = []
    for line in metadata.requires(DISTRIBUTION):
        requirement = Requirement(line)
        marker = requirement.marker
        in_extra = marker is not None and "extra" in str(marker)
        if extra is None and not in_extra:
            requirements.append(requirement)
        elif extra and in_extra and marker.evaluate({"extra": extra, "python_version": "3.11"}):
            requirements.append(requirement)
    return requirements


def _imported_distributions(dirs):
    """Canonical names of the installed distributions the files under ``dirs`` import."""
    by_module = metadata.packages_distributions()
    names = set()
    for d in dirs:
        for path in glob.glob(os.path.join(ROOT, d, "**", "*.py"), recursive=True):
            with open(path, encoding="utf-8") as f:
                tree = ast.parse(f.read(), path)
            for node in ast.walk(tree):
                if isinstance(node, ast.Import):
                    modules = [alias.name for alias in node.names]
                elif isinstance(node, ast.ImportFrom) and not node.level:
                    modules = [node.module]
                else:
                    continue
                for module in modules:
                    names.update(
                        canonicalize_name(dist) for dist in by_module.get(module.split(".")[0], [])
                    )
    names.discard(DISTRIBUTION)
    return names


def test_the_lanes_pin_their_tensorflow():
    tf215, current = _lock("tf215"), _lock("current")
    assert tf215["tensorflow"] == "2.15.1"
    assert tf215["tensorflow-addons"] == "0.23.0"
    newest = tuple(int(x) for x in current["tensorflow"].split(".")[:2])
    assert newest >= (2, 16), current["tensorflow"]
    # tf-keras and tensorboard are released in step with TensorFlow
    for lock in (tf215, current):
        minor = lock["tensorflow"].rsplit(".", 1)[0]
        assert lock["tf-keras"].startswith(minor + "."), lock["tf-keras"]
        assert lock["tensorboard"].startswith(minor + "."), lock["tensorboard"]


def test_the_gpu_lock_is_the_current_lock_with_tensorflows_cuda_wheels():
    """requirements/gpu.txt is requirements/current.txt with tensorflow[and-cuda] and the
    nvidia-* wheels that extra pulls, so that the two locks cannot drift apart."""
    gpu, current = _pins("gpu"), _pins("current")
    cuda = {name for name in gpu if name.startswith("nvidia-")}
    assert gpu["tensorflow"] == ({"and-cuda"}, current["tensorflow"][1])
    assert {n: pin for n, pin in gpu.items() if n not in cuda | {"tensorflow"}} == {
        n: pin for n, pin in current.items() if n != "tensorflow"
    }
    if metadata.version("tensorflow") != gpu["tensorflow"][1]:
        return  # the tf215 lane: its tensorflow's extra is another one
    extra = [Requirement(r) for r in metadata.requires("tensorflow")]
    extra = [r for r in extra if r.marker and r.marker.evaluate({"extra": "and-cuda"})]
    assert {canonicalize_name(r.name) for r in extra} == cuda
    for requirement in extra:
        name = canonicalize_name(requirement.name)
        assert requirement.specifier.contains(gpu[name][1]), (name, gpu[name][1])


def test_this_environment_is_its_lanes_lock():
    for name, version in _lock(LANE).items():
        assert metadata.version(name) == version, (LANE, name)


@pytest.mark.parametrize("lane", ["current", "tf215"])
def test_the_locks_satisfy_the_declared_ranges(lane):
    pins = _lock(lane)
    declared = _declared() + _declared("test") + (_declared("tfa") if lane == "tf215" else [])
    for requirement in declared:
        name = canonicalize_name(requirement.name)
        assert name in pins, "requirements/%s.txt lacks %s" % (lane, name)
        assert requirement.specifier.contains(pins[name]), (lane, name, pins[name])


def test_every_declared_dependency_is_imported_and_every_import_declared():
    runtime = {canonicalize_name(r.name) for r in _declared()}
    # bench/peers.py's tfa.seq2seq peer is the tfa extra's, imported on its lane only
    peers = {"tensorflow-addons"}
    imported = _imported_distributions(PACKAGES) | (_imported_distributions(["bench"]) - peers)
    assert imported | USED_WITHOUT_IMPORT == runtime
    tests_only = {canonicalize_name(r.name) for r in _declared("test") + _declared("tfa")}
    # pytest-xdist is the Makefile's `-n`, ruff its `lint`; tensorflow-addons is imported
    # on its lane only
    imported_by_tests = _imported_distributions(["tests"]) - runtime
    if LANE == "tf215":
        assert "tensorflow-addons" in imported_by_tests
    assert imported_by_tests | {"pytest-xdist", "ruff", "tensorflow-addons"} == tests_only


def test_the_makefile_installs_the_lock_of_the_lane_it_names():
    with open(os.path.join(ROOT, "Makefile"), encoding="utf-8") as f:
        makefile = f.read()
    lanes = dict(
        re.findall(
            r"^(?:else )?ifeq \(\$\(LANE\),(\w+)\)\n(PY_VERSIONS := .*\nVENV \?= \S+)",
            makefile,
            re.M,
        )
    )
    assert sorted(lanes) == ["current", "gpu", "tf215"]
    assert "LOCK := requirements/$(LANE).txt" in makefile
    # the gpu lane is the current one on the same Pythons, in a venv of its own
    assert lanes["gpu"] == lanes["current"].replace("VENV ?= .venv", "VENV ?= .venv-gpu")
    (clean,) = re.findall(r"^clean:\n\trm -rf (.*)", makefile, re.M)
    for settings in lanes.values():
        assert settings.split("VENV ?= ")[1] in clean.split()


@pytest.mark.parametrize("package", PACKAGES)
def test_packages_import_outside_the_source_tree(package, tmp_path):
    result = subprocess.run(
        [sys.executable, "-c", "import %s; print(%s.__file__)" % (package, package)],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        check=False,
        env=dict(os.environ, PYTHONPATH=""),
    )
    assert result.returncode == 0, result.stderr[-2000:]
    assert result.stdout.strip().startswith(os.path.join(ROOT, package))


def _public_functions(path):
    """``(qualified name, node)`` of the module-level functions and the methods of the
    public classes of a module whose names do not start with ``_`` (dunders kept)."""
    with open(path, encoding="utf-8") as f:
        tree = ast.parse(f.read())

    def walk(body, prefix):
        for node in body:
            if isinstance(node, ast.ClassDef) and not node.name.startswith("_"):
                yield from walk(node.body, prefix + node.name + ".")
            elif isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
                dunder = node.name.startswith("__") and node.name.endswith("__")
                if dunder or not node.name.startswith("_"):
                    yield prefix + node.name, node

    return list(walk(tree.body, ""))


def _unannotated(node):
    """Whether a parameter (but ``self`` and ``cls``) or the return has no type hint
    (``__init__`` returns None whether it says so or not)."""
    arguments = node.args.posonlyargs + node.args.args + node.args.kwonlyargs
    arguments += [a for a in (node.args.vararg, node.args.kwarg) if a]
    bare = [a for a in arguments if a.annotation is None and a.arg not in ("self", "cls")]
    return bool(bare) or (node.returns is None and node.name != "__init__")


def test_every_public_function_of_the_hosts_and_tools_has_type_hints():
    missing = []
    for package in ("pointer_generator", "nmt", "video_caption", "data_prep", "bench"):
        for path in sorted(glob.glob(os.path.join(ROOT, package, "*.py"))):
            relative = os.path.relpath(path, ROOT)
            missing += [
                "%s: %s" % (relative, name)
                for name, node in _public_functions(path)
                if _unannotated(node)
            ]
    assert not missing, "add type hints to:\n" + "\n".join(missing)


def test_the_library_keeps_its_layers_in_sub_packages():
    """At most eight modules at the top of ``acvi_tf`` (docs/library.md's layout); every
    other module lives in a sub-package."""
    library = os.path.join(ROOT, "acvi_tf")
    top = [name for name in os.listdir(library) if name.endswith(".py") and name != "__init__.py"]
    packages = [
        name
        for name in os.listdir(library)
        if os.path.isfile(os.path.join(library, name, "__init__.py"))
    ]
    assert len(top) <= 8, sorted(top)
    assert {"contexts", "inference", "layers", "training", "text", "formats", "metrics"} <= set(
        packages
    )


def _private_reads(path):
    """``(line, "module.name")`` of each private name (``_x``, not a dunder) that the
    file at ``path`` reads, or names to a call such as ``monkeypatch.setattr``, from a
    module of the project it imports: a package module, or a module beside it (a test's
    helper module, a bench script's)."""
    beside = {name[: -len(".py")] for name in os.listdir(os.path.dirname(path))}
    with open(path, encoding="utf-8") as f:
        tree = ast.parse(f.read())
    modules = {}
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom) and node.module and not node.level:
            if node.module.split(".")[0] in PACKAGES:
                for alias in node.names:
                    modules[alias.asname or alias.name] = "%s.%s" % (node.module, alias.name)
        elif isinstance(node, ast.Import):
            for alias in node.names:
                if alias.name.split(".")[0] in PACKAGES or alias.name in beside:
                    modules[alias.asname or alias.name.split(".")[0]] = alias.name
    found = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name):
            module, name = node.value.id, node.attr
        elif (
            isinstance(node, ast.Call)
            and len(node.args) >= 2
            and isinstance(node.args[0], ast.Name)
            and isinstance(node.args[1], ast.Constant)
            and isinstance(node.args[1].value, str)
        ):
            module, name = node.args[0].id, node.args[1].value
        else:
            continue
        if module in modules and name.startswith("_") and not name.startswith("__"):
            found.append((node.lineno, "%s.%s" % (modules[module], name)))
    return found


def test_no_module_reads_another_module_s_private_names():
    """A module's ``_`` names are its own: the packages, the tests and the bench scripts
    reach each other through public names only."""
    found = []
    for folder in PACKAGES + ["tests", "bench"]:
        for path in sorted(glob.glob(os.path.join(ROOT, folder, "**", "*.py"), recursive=True)):
            found += [
                "%s:%d: %s" % (os.path.relpath(path, ROOT), line, name)
                for line, name in _private_reads(path)
            ]
    assert not found, "\n".join(found)


# The training entry points: each is its Task's command line (docs/library.md, the Runner).
ENTRY_POINTS = (
    "pointer_generator.run_summarization",
    "nmt.run_nmt",
    "video_caption.run_captioning",
)


def _imported_modules(path):
    """The dotted names of the project's modules that the file at ``path`` imports."""
    with open(path, encoding="utf-8") as f:
        tree = ast.parse(f.read())
    names = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom) and node.module and not node.level:
            names.add(node.module)
            names.update("%s.%s" % (node.module, alias.name) for alias in node.names)
        elif isinstance(node, ast.Import):
            names.update(alias.name for alias in node.names)
    return names


def test_no_module_imports_a_training_entry_point():
    """The packages and the bench scripts reach a host through its Task
    (``<host>.task``) and the Runner; a training entry point is only a command line."""
    found = [
        "%s imports %s" % (os.path.relpath(path, ROOT), name)
        for folder in PACKAGES + ["bench"]
        for path in sorted(glob.glob(os.path.join(ROOT, folder, "**", "*.py"), recursive=True))
        for name in sorted(_imported_modules(path) & set(ENTRY_POINTS))
    ]
    assert not found, "\n".join(found)
