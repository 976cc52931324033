"""The commands the docs tell a person to type, read out of README.md and docs/*.md.

A page's ``bash`` blocks hold commands, one per line or continued with a backslash.
``# ...`` starts a comment; a comment line of the form ``#   label: --flag=x ...`` right
under a command names a variant of it (the flags that replace or join the command's
own). ``[--flag ...]`` in a command is an optional part: the command runs without it,
and the flags inside it must still be the command's; ``[words]`` stands for more flags.
The tests (``test_doc_commands.py``) parse every command against its entry point's flags
and run the stranger's paths on tiny data, substituting only sizes and paths.
"""

import dataclasses
import glob
import os
import re
import shlex
from typing import Dict, Iterator, List, Optional, Tuple

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


def pages() -> List[str]:
    """README.md and every docs/*.md, relative to the repository."""
    return ["README.md"] + sorted(
        os.path.relpath(p, ROOT) for p in glob.glob(os.path.join(ROOT, "docs", "*.md"))
    )


def blocks(page: str) -> Iterator[Tuple[int, str]]:
    """``(first line, text)`` of each ``bash`` block of ``page``, indentation removed."""
    with open(os.path.join(ROOT, page), encoding="utf-8") as f:
        source = f.read()
    for match in _FENCE.finditer(source):
        if match.group(2) not in ("bash", "sh"):
            continue
        indent = len(match.group(1))
        first = source.count("\n", 0, match.start(3)) + 1
        lines = [line[indent:] for line in match.group(3).splitlines()]
        yield first, "\n".join(lines)


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
