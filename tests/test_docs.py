"""The docs name tests that exist: every ``test_<file>.py::test_<name>`` (or a ``*``
prefix) in README.md and docs/ matches a test function, so the reliability table and
the other pages cannot point at a renamed or deleted test."""

import glob
import os
import re

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))

# `test_x.py::test_y`, or `::test_y` continuing the file named just before
REFERENCE = re.compile(r"`(?:(test_\w+\.py))?::(test_\w+)(\*?)`|`(test_\w+\.py)`")


def _references(text):
    """``(file, name, is_prefix)`` of every test a page names."""
    current = None
    for match in REFERENCE.finditer(text):
        if match.group(4):
            current = match.group(4)
            continue
        current = match.group(1) or current
        yield current, match.group(2), bool(match.group(3))


def test_every_test_the_docs_name_exists():
    pages = [os.path.join(ROOT, "README.md")] + glob.glob(os.path.join(ROOT, "docs", "*.md"))
    missing, named = [], 0
    for page in pages:
        with open(page, encoding="utf-8") as f:
            text = f.read()
        for test_file, name, prefix in _references(text):
            path = os.path.join(ROOT, "tests", test_file or "")
            assert test_file and os.path.exists(path), (page, test_file, name)
            with open(path, encoding="utf-8") as f:
                defined = re.findall(r"^def (test_\w+)", f.read(), re.M)
            named += 1
            if not any(d == name or (prefix and d.startswith(name)) for d in defined):
                missing.append("%s: %s::%s" % (os.path.basename(page), test_file, name))
    assert named > 30
    assert not missing, missing


def _project_text_files():
    """The tracked text of the repository: docs, code, build files."""
    for folder, dirs, names in os.walk(ROOT):
        dirs[:] = [d for d in dirs if not d.startswith(".") and d not in ("samples", "results")]
        for name in names:
            if name.endswith((".md", ".py", ".toml", ".txt", ".ini")) or name == "Makefile":
                yield os.path.join(folder, name)


def test_every_link_in_the_docs_resolves():
    pages = [p for p in _project_text_files() if p.endswith(".md")]
    broken = []
    for page in pages:
        with open(page, encoding="utf-8") as f:
            for target in re.findall(r"\]\(([^)#\s]+)(?:#[^)]*)?\)", f.read()):
                if "://" not in target and not os.path.exists(
                    os.path.join(os.path.dirname(page), target)
                ):
                    broken.append((os.path.relpath(page, ROOT), target))
    assert len(pages) > 10 and not broken, broken


def test_no_text_names_this_projects_issue_numbers():
    """History lives in git: the code and docs state facts, not the issues that asked for
    them (another project's issue, named with its repository, is a citation)."""
    own_issue = re.compile(r"\bissues? \(?#?\d|\(issue", re.I)
    citation = re.compile(r"(abisee|github|tensorflow/nmt|OpenNMT)[\w/ .-]*issues? #?\d", re.I)
    found = []
    for path in _project_text_files():
        if path == os.path.abspath(__file__):  # its own patterns
            continue
        with open(path, encoding="utf-8") as f:
            for number, line in enumerate(f, start=1):
                if own_issue.search(line) and not citation.search(line):
                    found.append("%s:%d" % (os.path.relpath(path, ROOT), number))
    assert found == [], found
