"""The commands the docs tell a person to type, read out of README.md and docs/*.md.

A page's ``bash`` blocks hold commands, one per line or continued with a backslash.
``# ...`` starts a comment; a comment line of the form ``#   label: --flag=x ...`` right
under a command names a variant of it (the flags that replace or join the command's
own). ``[--flag ...]`` in a command is an optional part: the command runs without it,
and the flags inside it must still be the command's; ``[words]`` stands for more flags.
``test_doc_commands.py`` parses every command against its entry point's flags; the
tests that ``RUN_BY`` names run them on tiny data, substituting only sizes and paths
(``sized``), and ``NOT_RUN`` gives the reason for each command that no test runs.
"""

import dataclasses
import glob
import importlib
import json
import os
import re
import shlex
import subprocess
from typing import Any, Dict, Iterator, List, Optional, Set, Tuple

from acvi_tf import config as config_lib
from acvi_tf.formats.bin_files import read_bin_file

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))

_FENCE = re.compile(r"^( *)```(\w*)\n(.*?)^\1```", re.M | re.S)
_SUBSTITUTION = re.compile(r"\$\([^()]*\)")
_VARIANT = re.compile(r"^#\s+([^:]+):\s+(--.*)$")


@dataclasses.dataclass
class Command:
    """One command of a page.

    Attributes:
      page: the page's path, relative to the repository.
      line: the line of the page the command starts on.
      text: the command as a shell would get it (continuations joined, comment and
        optional parts removed).
      block: the number of its ``bash`` block on the page, from 0.
      optional: the flags of its ``[--flag ...]`` parts.
      placeholders: its ``[words]`` parts that stand for more flags (``[the run's
        other flags]``): such a command is an example to adapt, not one to run.
      variants: ``label -> flags`` of the variant comments under it.
    """

    page: str
    line: int
    text: str
    block: int = 0
    optional: List[str] = dataclasses.field(default_factory=list)
    placeholders: List[str] = dataclasses.field(default_factory=list)
    variants: Dict[str, List[str]] = dataclasses.field(default_factory=dict)

    @property
    def where(self) -> str:
        """``page:line``, for messages."""
        return "%s:%d" % (self.page, self.line)

    @property
    def words(self) -> List[str]:
        """The command's words, as the shell splits them, with each ``$(...)`` left
        unexpanded as one word ``$(...)``."""
        return shlex.split(_SUBSTITUTION.sub("'$(...)'", self.text))

    def python_module(self) -> Optional[Tuple[str, List[str]]]:
        """``(module, arguments)`` of a ``python -m module ...`` command (after any
        ``VAR=value`` assignments and before a pipe's end), else None."""
        words = self.words
        while words and re.match(r"^\w+=", words[0]):
            words = words[1:]
        if "|" in words:
            words = words[words.index("|") + 1 :]
        if len(words) >= 3 and words[0] == "python" and words[1] == "-m":
            end = words.index("|") if "|" in words else len(words)
            end = min([end] + [i for i, w in enumerate(words) if w in (">", "<")])
            return words[2], words[3:end]
        return None

    def flag(self, name: str) -> Optional[str]:
        """The value the command gives ``--name``, else None."""
        prefix = "--%s=" % name
        return next((w[len(prefix) :] for w in self.words if w.startswith(prefix)), None)


def pages() -> List[str]:
    """README.md and every docs/*.md, relative to the repository."""
    return ["README.md"] + sorted(
        os.path.relpath(p, ROOT) for p in glob.glob(os.path.join(ROOT, "docs", "*.md"))
    )


def blocks(page: str, languages: Tuple[str, ...] = ("bash", "sh")) -> Iterator[Tuple[int, str]]:
    """``(first line, text)`` of each block of ``page`` in one of ``languages``,
    indentation removed."""
    with open(os.path.join(ROOT, page), encoding="utf-8") as f:
        source = f.read()
    for match in _FENCE.finditer(source):
        if match.group(2) not in languages:
            continue
        indent = len(match.group(1))
        first = source.count("\n", 0, match.start(3)) + 1
        lines = [line[indent:] for line in match.group(3).splitlines()]
        yield first, "\n".join(lines)


def snippets(page: str) -> List[str]:
    """The ``python`` blocks of ``page``, in order."""
    return [text for _, text in blocks(page, ("python",))]


def commands(page: str) -> List[Command]:
    """The commands of ``page``'s ``bash`` blocks, in order."""
    found = []
    for block, (first, text) in enumerate(blocks(page)):
        current, start, joined = None, 0, ""
        for number, line in enumerate(text.splitlines(), start=first):
            stripped = line.strip()
            if not joined and stripped.startswith("#"):
                variant = _VARIANT.match(stripped)
                if variant and found and current is None:
                    flags = [w for w in shlex.split(variant.group(2)) if w.startswith("--")]
                    found[-1].variants[variant.group(1).strip()] = flags
                continue
            if not joined:
                start = number
            code = _strip_comment(line)
            if code.rstrip().endswith("\\"):
                joined += code.rstrip()[:-1] + " "
                current = True
                continue
            joined += code
            if _open_quote(joined):  # a quoted word goes on to the next line
                joined += " "
                current = True
                continue
            current = None
            if joined.strip():
                found.append(_command(page, start, joined.strip(), block))
            joined = ""
        if joined:
            raise ValueError("%s:%d: the command does not end in its block" % (page, start))
    return found


def block(page: str, number: int) -> List[Command]:
    """The commands of ``page``'s ``bash`` block ``number`` (from 0)."""
    return [command for command in commands(page) if command.block == number]


def differing_flags(a: Command, b: Command) -> Set[str]:
    """The flags that two ``python -m`` commands of one module give different values, or
    that one of them gives only: ``{"exp_name", "input"}`` for the same command on
    another run's name and another input file.

    Raises:
      AssertionError: the commands run different modules.
    """
    (module_a, args_a), (module_b, args_b) = a.python_module(), b.python_module()
    assert module_a == module_b, (a.where, module_a, b.where, module_b)

    def given(args):
        return dict((arg[2:].split("=", 1) + [""])[:2] for arg in args if arg.startswith("--"))

    flags_a, flags_b = given(args_a), given(args_b)
    return {name for name in set(flags_a) | set(flags_b) if flags_a.get(name) != flags_b.get(name)}


def all_commands() -> List[Command]:
    """Every command of every page."""
    return [command for page in pages() for command in commands(page)]


def _command(page: str, line: int, text: str, block: int) -> Command:
    text, parts = _without_optional(text)
    optional, placeholders = [], []
    for part in parts:
        if part.startswith("--"):
            optional += shlex.split(part)
        else:
            placeholders.append(part)
    return Command(page, line, " ".join(text.split()), block, optional, placeholders)


def _without_optional(text: str) -> Tuple[str, List[str]]:
    """``text`` without its ``[...]`` parts that stand outside quotes after a space (a
    ``[`` inside a quoted word, as in JSON, stays), and those parts' insides."""
    kept, parts, quote, i = [], [], None, 0
    while i < len(text):
        char = text[i]
        if quote:
            quote = None if char == quote else quote
        elif char in "'\"":
            quote = char
        elif char == "[" and (i == 0 or text[i - 1].isspace()) and "]" in text[i:]:
            end = text.index("]", i)
            parts.append(text[i + 1 : end].strip())
            i = end + 1
            continue
        kept.append(char)
        i += 1
    return "".join(kept), parts


def _open_quote(text: str) -> bool:
    """Whether ``text`` ends inside a quoted word (an apostrophe of a ``[...]`` part
    opens none)."""
    try:
        shlex.split(_SUBSTITUTION.sub("x", _without_optional(text)[0]))
    except ValueError:
        return True
    return False


def _strip_comment(line: str) -> str:
    """``line`` without a ``#`` comment (a ``#`` inside quotes or a word stays)."""
    quote = None
    for i, char in enumerate(line):
        if quote:
            quote = None if char == quote else quote
        elif char in "'\"":
            quote = char
        elif char == "#" and (i == 0 or line[i - 1].isspace()):
            return line[:i].rstrip()
    return line


# ---- which test runs each command ---------------------------------------------------

# (page, bash block) -> the tests that run its commands (each unpacks the whole block, so
# that a command added to it fails until a test runs it). A block's commands in
# NOT_RUN are the exceptions.
_FIRST_HOUR_SUMMARIZER = "test_first_hour.py::test_own_summarization_pairs_to_a_served_model"
RUN_BY = {
    ("docs/data.md", 0): (_FIRST_HOUR_SUMMARIZER,),
    ("docs/data.md", 1): ("test_first_hour.py::test_own_parallel_text_with_bpe_to_a_served_model",),
    ("docs/data.md", 2): (
        "test_first_hour.py::test_own_captioned_videos_to_captions_of_new_videos",
        "test_doc_captioner.py::test_captions_from_a_feature_store_extracted_before",
    ),
    ("docs/data.md", 3): (
        "test_doc_summarizer.py::test_see_et_al_checkpoint_decodes_a_cnn_dailymail_build",
    ),
    ("docs/data.md", 4): (
        "test_doc_summarizer.py::test_the_summarizer_page_trains_scores_tabulates_and_shards",
    ),
    ("docs/data.md", 5): (
        "test_doc_captioner.py::test_msvd_features_splits_training_decoding_captions",
    ),
    ("docs/data.md", 6): ("test_doc_nmt.py::test_wmt16_build_then_the_bpe_run",),
    ("docs/compare.md", 0): (
        "test_compare.py::test_the_pages_commands_compare_each_kind_of_decode",
    ),
    ("docs/summarizer.md", 0): (
        "test_doc_summarizer.py::test_the_summarizer_page_trains_scores_tabulates_and_shards",
    ),
    ("docs/summarizer.md", 1): (
        "test_doc_summarizer.py::test_the_summarizer_page_trains_scores_tabulates_and_shards",
    ),
    # the same commands as docs/data.md's on another run's name (test_first_hour.py says so)
    ("docs/summarizer.md", 2): (_FIRST_HOUR_SUMMARIZER,),
    ("docs/summarizer.md", 3): (_FIRST_HOUR_SUMMARIZER,),
    ("docs/summarizer.md", 4): (
        "test_doc_summarizer.py::test_see_et_al_checkpoint_decodes_a_cnn_dailymail_build",
    ),
    ("docs/nmt.md", 0): (
        "test_doc_nmt.py::test_iwslt15_run_inference_and_translations",
        "test_doc_nmt.py::test_wmt16_build_then_the_bpe_run",
        "test_doc_nmt.py::test_the_shipped_debian_sample_run",
    ),
    ("docs/captioner.md", 0): (
        "test_doc_captioner.py::test_msvd_features_splits_training_decoding_captions",
        "test_doc_captioner.py::test_the_shipped_moving_shapes_run",
    ),
    ("docs/distributed.md", 0): (
        "test_distribute.py::test_the_documented_cpu_try_trains_mirrored_on_two_cpu_devices",
    ),
    ("docs/distributed.md", 3): (
        "test_doc_summarizer.py::test_the_summarizer_page_trains_scores_tabulates_and_shards",
    ),
}
# (page, python block) -> the test that runs it
SNIPPETS_RUN_BY = {
    ("docs/summarizer.md", 0): _FIRST_HOUR_SUMMARIZER,
}
_MAKE = "builds the lane's environment and runs %s; the tests parse its commands"
# The start of each command that no test runs -> the reason, and the test that checks
# the same behaviour where one does.
NOT_RUN = {
    "make demo": _MAKE % "the demo (minutes; test_the_makefile_runs_commands_that_parse)",
    "make test": _MAKE % "the whole suite, this test among them",
    "make LANE=tf215 test": _MAKE % "the reference lane's tests on TensorFlow 2.15",
    "make PYTHON=": _MAKE % "the demo with a chosen interpreter",
    "make LANE=gpu": "needs a Linux machine with an NVIDIA GPU (the gpu lane)",
    ".venv-gpu/bin/python": "asks TensorFlow for the GPUs of a GPU machine's gpu lane",
    "python3.10 -m venv /tmp/lock": "creates the environment a lock is regenerated from",
    "/tmp/lock/bin/pip freeze": "regenerates a lock file from a fresh environment",
    "grep -v '^tensorflow==' requirements/current.txt": "regenerates the gpu lock",
    "pip install --dry-run": "resolves the gpu lock on the network (make check-gpu-lock runs it)",
    "python -c \"import json; print('\\n'.join(sorted(": "reads the gpu lock's resolution",
    "python -m acvi_tf.runner --task=translation --command=serve": (
        "nmt.translate's command through the generic command; test_runner_command.py "
        "checks that the two have the same flags, test_fourth_host.py runs each command "
        "of the generic one"
    ),
    "python bench/compare_contexts.py": (
        "the context study: hours on 2 cores (its flags are checked; bench/ keeps the results)"
    ),
    "tensorboard --logdir": (
        "starts a server that runs until stopped; test_doc_summarizer.py reads the same "
        "logdir with TensorBoard's event reader"
    ),
    "python -m nmt.run_nmt --distribution_strategy=mirrored --num_gpus=4": (
        "needs 4 GPUs; test_distribute.py trains every host mirrored over 2 CPU devices"
    ),
    "TF_CONFIG=": (
        "needs two machines; test_multi_worker.py runs multi_worker with two workers on "
        "this machine's loopback"
    ),
}


def not_run(command: Command) -> Optional[str]:
    """Why no test runs ``command``, or None when one does."""
    return next((why for start, why in NOT_RUN.items() if command.text.startswith(start)), None)


# ---- the substitutions: sizes and paths only ----------------------------------------

# The sizes every command gets in place of its own, and those a command that trains,
# learns BPE or extracts features gets in place of the defaults: a tiny model that
# trains for a few steps on few frames and decodes a few words.
SIZES = {
    "max_steps": "6",
    "num_train_steps": "6",
    "phases": "0-4:30:8",
    "max_dec_steps": "8",
    "min_dec_steps": "2",
    "bpe_merges": "100",
    "num_frames": "4",
    "max_frames": "8",
}
_FRAMES = {"num_frames": "4", "max_frames": "8"}
TRAIN_SIZES = {
    "data_prep.captions": _FRAMES,
    "video_caption.features": _FRAMES,
    "data_prep.wmt16": {"num_merges": "100"},
    "pointer_generator.run_summarization": {
        "hidden_dim": "16",
        "emb_dim": "8",
        "batch_size": "4",
        "max_enc_steps": "30",
        "max_dec_steps": "8",
        "checkpoint_steps": "3",
        "coverage_steps": "2",
    },
    "nmt.run_nmt": {
        "num_train_steps": "6",
        "num_units": "16",
        "batch_size": "8",
        "steps_per_stats": "3",
        "steps_per_external_eval": "6",
    },
    "video_caption.run_captioning": {
        "encoder_units": "16",
        "decoder_units": "16",
        "emb_dim": "8",
        "attention_units": "8",
        "batch_size": "8",
        "max_steps": "6",
        "valid_every": "6",
        "num_frames": "4",
    },
}


def trains(module: str, args: List[str]) -> bool:
    """Whether the command trains a model, learns BPE or extracts features (and so gets
    the tiny sizes of ``TRAIN_SIZES`` in place of the defaults)."""
    if module in ("video_caption.features", "data_prep.wmt16"):
        return True
    if module == "data_prep.captions":
        return any(a.startswith("--videos") for a in args)
    if module in ("pointer_generator.run_summarization", "video_caption.run_captioning"):
        return not any(a.startswith("--mode=") and a != "--mode=train" for a in args)
    if module == "nmt.run_nmt":
        return not any(a.startswith(("--inference_input_file", "--ckpt")) for a in args)
    return False


def sized(command: Command, paths: Optional[Dict[str, str]] = None) -> str:
    """The command's text with the tiny sizes, and ``paths`` (old -> new) swapped.

    Raises:
      AssertionError: the command trains the summarizer without an end (``--max_steps``
        or ``--phases``), which would train until it is stopped.
    """
    module, args = command.python_module()
    text = command.text
    for old, new in (paths or {}).items():
        text = text.replace(old, new)
    sizes = dict(SIZES)
    if trains(module, args):
        if module == "pointer_generator.run_summarization":
            assert any(a.startswith(("--max_steps", "--phases")) for a in args), (
                "%s trains without end: give --max_steps" % command.where
            )
        sizes.update(TRAIN_SIZES[module])
    for flag, value in sizes.items():
        text, count = re.subn(r"--%s=\S+" % flag, "--%s=%s" % (flag, value), text)
        if not count and flag in TRAIN_SIZES.get(module, {}) and trains(module, args):
            text = text.replace(module, "%s --%s=%s" % (module, flag, value), 1)
    return text


def with_flags(text: str, flags: List[str]) -> str:
    """``text`` with each of ``flags`` replacing the flag of its name, or added."""
    for flag in flags:
        name = flag.split("=")[0]
        text, count = re.subn(r"%s(=\S+)?(?=\s|$)" % re.escape(name), flag, text)
        text = text if count else text + " " + flag
    return text


# ---- running a command in this process ----------------------------------------------


def expand(text: str, cwd: str) -> str:
    """``text`` with each ``$(...)`` replaced by its output, run by bash in ``cwd``.

    Raises:
      AssertionError: a substitution fails or prints nothing (a wrong path in it).
    """

    def output(match: re.Match) -> str:
        done = subprocess.run(
            ["bash", "-o", "pipefail", "-c", match.group(0)[2:-1]],
            cwd=cwd,
            capture_output=True,
            text=True,
        )
        assert done.returncode == 0 and done.stdout.strip(), (match.group(0), done.stderr)
        return done.stdout.strip()

    return _SUBSTITUTION.sub(output, text)


def run_in_process(text: str, cwd: str) -> Any:
    """Runs the ``python -m module ...`` command ``text`` in ``cwd`` in this process, as
    its ``__main__`` does: its flags parsed, ``run(config)``, and exit status 0 where the
    module maps the result to one (``main(argv)`` for a command of positional arguments).

    Returns:
      What the entry point returns.
    """
    words = shlex.split(expand(text, cwd))
    assert words[:2] == ["python", "-m"], text
    assert not {"|", "<", ">"} & set(words), "%s needs a shell" % text
    name, args = words[2], words[3:]
    module = importlib.import_module(name)
    here = os.getcwd()
    os.chdir(cwd)
    try:
        if not hasattr(module, "define_flags"):
            return module.main([name, *args])
        assert all(a.startswith("--") for a in args), "stray arguments in %s" % text
        result = module.run(config_lib.parse(module.define_flags, [name, *args]))
        if hasattr(module, "exit_status"):
            assert module.exit_status(result) == 0, text
        return result
    finally:
        os.chdir(here)


def write_sample_pairs(path: str, count: int) -> None:
    """The first ``count`` pairs of the shipped Debian descriptions sample as the JSON
    lines (``article``, ``abstract``) that docs/data.md's summarization builder reads."""
    chunk = os.path.join(
        ROOT, "data_prep", "samples", "debian_descriptions", "chunked", "train_000.bin"
    )
    with open(path, "w", encoding="utf-8") as f:
        for number, (article, abstract) in enumerate(read_bin_file(chunk)):
            if number == count:
                break
            abstract = abstract.replace("<s>", "").replace("</s>", "\n").strip()
            f.write(json.dumps(dict(article=article, abstract=abstract)) + "\n")
