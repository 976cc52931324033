"""The tokenisations of the corpus builders and of the commands that read raw text:
NLTK's Treebank tokenizer sentence by sentence (``tokenize``), a pure-Python port of
CoreNLP's PTBTokenizer (``ptb_tokenize``) and ``tftext``, TensorFlow ops that an exported
model runs in its graph (``acvi_tf.text.graph_tokenizer``); ``tokenizer`` picks one by the
name a corpus records in its ``corpus.json``, and ``batch_tokenizer`` is the same one for
a list of texts (the corpus builders'), ``tftext`` in batched graph calls.
"""

import functools
import os
import re
import string
from typing import Any, Callable, Dict, List, Sequence

from absl import flags, logging

from acvi_tf import files

# A sentence ends at . ! or ? followed by whitespace and anything but a lowercase letter,
# except after abbreviations such as "e.g." or "A.D." (a dot two characters back).
_SENTENCE_BREAK = re.compile(r"(?<=[^\s.][.!?])(?<!\.\S\.)\s+(?=[^a-z\s])")


@functools.lru_cache(maxsize=None)
def _treebank() -> Any:
    """NLTK's Treebank tokenizer, imported at its first use: NLTK takes about a third of a
    second to import, which the commands that tokenise nothing need not pay."""
    from nltk.tokenize import TreebankWordTokenizer

    return TreebankWordTokenizer()


def tokenize(text, lowercase=True):
    """PTB-tokenises ``text`` sentence by sentence (lowercased by default).

    The Treebank tokenizer expects one sentence at a time (it splits only the final
    period off), so the text is cut into sentences first.

    Args:
      text: raw text.
      lowercase: lowercase first (the summarization corpora); translation keeps case.

    Returns:
      The tokens separated by single spaces.
    """
    return " ".join(
        token
        for sentence in _SENTENCE_BREAK.split(text)
        for token in _treebank().tokenize(sentence.lower() if lowercase else sentence)
    )


# Words after which PTBTokenizer 3.4.1 treats an acronym ("U.S.") as sentence-final.
_SENTENCE_STARTERS = frozenset(
    (
        "A About According Additionally After An As At But Earlier He Her Here However If In "
        "It Last Many More Mr. Ms. Now Once One Other Our She Since So Some Such That The "
        "Their Then There These They This We When While What Yet You"
    ).split()
)
# Abbreviations that take an extra "." before a capital letter, two spaces or the end.
_ABBREV_SENTENCE_FINAL = re.compile(
    r"(?i:jan|feb|mar|apr|jun|jul|aug|sept?|oct|nov|dec|mon|tues?|wed|thu(?:rs)?|fri"
    r"|ala|ariz|ark|calif|colo|conn|ct|dak|del|fla|ga|ill|ind|kans?|ky|la|mass|md|mich"
    r"|minn|miss|mo|mont|neb|nev|okla|ore|pa|penn|tenn|tex|va|vt|wash|wisc?|wyo"
    r"|inc|cos?|corp|pp?t[ye]s?|ltd|plc|bancorp|bhd|assn|univ|intl|sys|tel|est|ext|sq"
    r"|rt|jr|sr|bros|blvd|rd|esq|etc|al|seq|bldg|ph\.d|ed\.d)"
)
# Abbreviations that always keep their period and never end a sentence.
_ABBREV_INTERNAL = re.compile(
    r"(?i:mr|mrs|ms|drs?|profs?|sens?|reps?|attys?|lt|col|gen|messrs|govs?|adm|rev|maj"
    r"|sgt|cpl|pvt|mt|capt|ste?|ave|pres|lieut|hon|brig|co?mdr|pfc|spc|supts?|det|m|mme"
    r"|mlle|insp|assoc|asst|msgr|vs|alex|wm|jos|cie|cf|treas|invt|elec|natl|mfg|mtg|dept"
    r"|ph|ft)"
)
# Abbreviations that keep their period only before a number ("No. 5").
_ABBREV_BEFORE_NUMBER = re.compile(r"(?i:nos?|prop|ca|figs?|art|pp|op)")
_STARTER_AFTER = re.compile(r"\s+(Mr\.|Ms\.|[A-Za-z]+)\s")
_DIGIT_AFTER = re.compile(r"\s?\d")

_UNIT = r"\d+(?:[.:,]\d+)+|[^\W_]+"
_URL_END = r"[^\s\"<>|.!?(){},\-]"
# Tried in this order at each position; the first alternative that matches wins (the
# jar's lexer takes the longest match, which the order below reproduces for news text).
_TOKEN_PATTERNS = (
    ("newline", r"\r\n?|[\n\u2028\u2029]"),
    ("space", r"[^\S\r\n\u2028\u2029\x85]+|[\u200b-\u200f\ufeff\U00010000-\U0010ffff]"),
    (
        "url",
        r"https?://[^\s\"<>|()]*"
        + _URL_END
        + r"|www\.(?:[^\s\"<>|.!?(){},]+\.)+[a-zA-Z]{2,4}(?:/[^\s\"<>|()]*"
        + _URL_END
        + r")?|(?:[^\s\"`'<>|.!?(){}\[\],\-_$]+\.)+(?:com|net|org|edu)(?![^\W_])"
        r"(?:/[^\s\"<>|()]*" + _URL_END + r")?",
    ),
    ("email", r"[A-Za-z0-9][^\s\"<>|()]*@(?:[^\s\"<>|().]+\.)*[^\s\"<>|().]+"),
    ("twitter", r"@[A-Za-z_][A-Za-z_0-9]*|#[^\W\d_]+"),
    # gonna -> gon na, cannot -> can not, 'tis -> 't is: the first part, then the rest.
    (
        "split_prefix",
        r"(?i:(?:gon|wan)(?=na(?![\w-]))|got(?=ta(?![\w-]))"
        r"|(?:gim|lem)(?=me(?![\w-]))|can(?=not(?![\w-]))"
        r"|['’]t(?=(?:is|was)(?![\w-])))",
    ),
    # D-N.Y., N.Y.-based; U.S. (".", too, before a sentence starter); a word kept with its
    # period before , ; or : ("R-Ariz.,"); letters and a period (see _abbreviation_tokens).
    (
        "acronym_compound",
        r"(?:[^\W_]+-)+[A-Za-z](?:\.[A-Za-z])+\.(?:-[^\W_]+)*"
        r"|[A-Za-z](?:\.[A-Za-z])+\.(?:-[^\W_]+)+",
    ),
    ("acronym", r"[A-Za-z](?:\.[A-Za-z])+\.(?![^\W\d_])"),
    ("word_period", r"[^\W_]+(?:-[^\W_]+)*\.(?=[,;:])"),
    ("abbreviation", r"(?:[Pp][Hh]|[Ee][Dd])\.[Dd]\.|[^\W\d_]+\.(?![^\W\d_]|\.)"),
    # O'Neil, ma'am, 'em, 'n', '90s, y'; then do|n't and it|'s.
    (
        "apostrophe_word",
        r"[yY]['’](?=[^\W_])|(?i:[a-hj-xz])['’][^\W\d_]{2,}"
        r"|[^\W\d_]*[aeiou]['’][aeiou][^\W\d_]*"
        r"|['’](?i:em|cause|till?)\b|['’]n['’]|['’]n(?![^\W_])"
        r"|['’][0-9]{2}s?\b",
    ),
    ("before_nt", r"[^\W_]+?(?=[nN]['’][tT]\b)"),
    (
        "clitic",
        r"[nN]['’][tT]\b|(?<=[^\W_]|\.)['’](?:[sSmMdD]\b"
        r"|(?:re|RE|ve|VE|ll|LL)(?=[^A-Za-z]))",
    ),
    # bit.ly, and/or, 24/7, US$, AT&T, "5 1/2" and phone numbers, -5 and .45, 10-year-old.
    ("dotted", r"[^\W_]+(?:\.[^\W\d_][^\W_]*)+"),
    ("slashed", r"[^\W_]+(?:-[^\W_]+)*(?:/[^\W_]+(?:-[^\W_]+)*){1,2}"),
    ("dollar", r"[A-Z]+\$"),
    ("caps_amp", r"[A-Z]+(?:&[A-Z]+)+"),
    (
        "spaced_number",
        r"\d{1,4}[- ]\d{1,4}/\d{1,4}(?!\d)"
        r"|(?:\(\d{2,3}\) ?|(?:\+\+?)?(?:\d{2,4}[- ])?\d{2,4}[- ])"
        r"\d{3,4}[- ]?\d{3,5}",
    ),
    ("number", r"[-+]?[.,]\d+(?:[.,]\d+)*|[-+]\d+(?:[.:,]\d+)*"),
    ("word", r"(?:%s)(?:-[^\W_]+)*" % _UNIT),
    ("ellipsis", r"\.{3,5}|\.(?: \.){2,4}|[…\x85]"),
    ("dashes", r"-{2,}|[\u2013\u2014]"),
    ("quote", r"''|``|[\"“”«»'’‘‹›`]"),
    ("bang", r"[?!]+"),
    ("other", r"."),
)
_TOKEN_RE = re.compile("|".join("(?P<%s>%s)" % pattern for pattern in _TOKEN_PATTERNS))
_REPLACEMENTS = {
    "(": "-LRB-",
    ")": "-RRB-",
    "[": "-LSB-",
    "]": "-RSB-",
    "{": "-LCB-",
    "}": "-RCB-",
    "£": "#",
    "€": "$",
    "¤": "$",
    "¢": "cents",
    "½": "1/2",
    "¼": "1/4",
    "¾": "3/4",
}
_DOUBLE_QUOTE_OPENERS = string.ascii_letters + string.digits + "$"
_OPENING_QUOTES = {"``": "``", "“": "``", "«": "``", "‘": "`", "‹": "`", "`": "`"}
_CLOSING_QUOTES = {"''": "''", "”": "''", "»": "''", "’": "'", "›": "'"}


def _starts_sentence(text, end):
    match = _STARTER_AFTER.match(text, end)
    return bool(match) and match.group(1) in _SENTENCE_STARTERS


def _abbreviation_tokens(word, text, end):
    """Tokens for ``word`` (letters, then a period) ending at ``end`` in ``text``."""
    stem = word[:-1]
    if _ABBREV_SENTENCE_FINAL.fullmatch(stem):
        after = text[end : end + 2]
        sentence_end = (
            len(after) < 2 or after[0].isspace() and (after[1].isspace() or after[1].isupper())
        )
        return [word, "."] if sentence_end else [word]
    if _ABBREV_INTERNAL.fullmatch(stem):
        return [word]
    if _ABBREV_BEFORE_NUMBER.fullmatch(stem) and _DIGIT_AFTER.match(text, end):
        return [word]
    if len(stem) == 1 and not _starts_sentence(text, end):
        return [word]
    return [stem, "."]


def _quote_token(mark, text, end):
    if mark in _OPENING_QUOTES:
        return _OPENING_QUOTES[mark]
    if mark in _CLOSING_QUOTES:
        return _CLOSING_QUOTES[mark]
    following = text[end : end + 2]
    if mark == '"':
        return "``" if following[:1] and following[0] in _DOUBLE_QUOTE_OPENERS else "''"
    opening = (
        len(following) == 2 and following[0] in string.ascii_letters and not following[1].isspace()
    )
    return "`" if opening else "'"


def _tokens(kind, value, text, end):
    """The output tokens of one match of ``_TOKEN_RE``."""
    if kind == "space":
        return []
    if kind == "acronym":
        return [value, "."] if _starts_sentence(text, end) else [value]
    if kind == "abbreviation":
        return _abbreviation_tokens(value, text, end)
    if kind == "clitic":
        return [value.replace("’", "'")]
    if kind == "spaced_number":
        return [value.replace(" ", "\xa0").replace("(", "-LRB-").replace(")", "-RRB-")]
    if kind == "ellipsis":
        return ["..."]
    if kind == "dashes":
        return ["--" if len(value) <= 4 else value]
    if kind == "quote":
        return [_quote_token(value, text, end)]
    return [_REPLACEMENTS.get(value, value)]


def ptb_tokenize(text):
    """Tokenises text like ``PTBTokenizer -preserveLines`` (CoreNLP 3.4.1), in Python.

    Args:
      text: the raw text of one file.

    Returns:
      The tokens of each input line joined by single spaces, lines joined by ``\\n``.
    """
    text = text.replace("\xad", "")
    lines, tokens = [], []
    for match in _TOKEN_RE.finditer(text):
        if match.lastgroup == "newline":
            lines.append(" ".join(tokens))
            tokens = []
        else:
            tokens.extend(_tokens(match.lastgroup, match.group(), text, match.end()))
    lines.append(" ".join(tokens))
    return "\n".join(lines)


TOKENIZERS = ("treebank", "ptb", "tftext")


def tokenizer(name: str, lowercase: bool = True) -> Callable[[str], str]:
    """``text -> tokens joined by single spaces``: ``treebank`` (``tokenize``), ``ptb``
    (``ptb_tokenize``, its lines joined) or ``tftext`` (``graph_tokenizer.tokenize_text``),
    lowercased unless ``lowercase`` is False.

    Raises:
      ValueError: an unknown name.
    """
    if name == "treebank":
        return lambda value: tokenize(value, lowercase=lowercase)
    if name == "ptb":
        return lambda value: " ".join(ptb_tokenize(value.lower() if lowercase else value).split())
    if name == "tftext":
        return functools.partial(_graph_tokenizer().tokenize_text, lowercase=lowercase)
    raise ValueError("unknown tokenizer %r; use one of %s" % (name, ", ".join(TOKENIZERS)))


def batch_tokenizer(name: str, lowercase: bool = True) -> Callable[[Sequence[str]], List[str]]:
    """``texts -> their tokens``: ``tokenizer(name, lowercase)`` of each text, ``tftext``
    in one graph call per ``graph_tokenizer.BATCH_SIZE`` texts (its graph traced here).

    Raises:
      ValueError: an unknown name.
    """
    if name == "tftext":
        tokenize_texts = functools.partial(_graph_tokenizer().tokenize_texts, lowercase=lowercase)
        tokenize_texts([""])  # traces the graph now, not in the first batch's time
        return tokenize_texts
    one = tokenizer(name, lowercase)
    return lambda values: [one(value) for value in values]


def _graph_tokenizer():
    """``acvi_tf.text.graph_tokenizer``, imported when asked for: tensorflow-text loads its ops
    library, which the other tokenizers do not need."""
    from acvi_tf.text import graph_tokenizer

    return graph_tokenizer


def define_flags(flag_values: flags.FlagValues) -> None:
    """Defines ``--tokenizer`` and ``--lowercase``, a builder's choice of tokenisation."""
    flags.DEFINE_enum(
        "tokenizer",
        "treebank",
        list(TOKENIZERS),
        "treebank (NLTK's Treebank tokenizer), ptb (CoreNLP's PTBTokenizer, in Python) or "
        "tftext (TensorFlow ops, which an exported model runs in its graph).",
        flag_values=flag_values,
    )
    flags.DEFINE_boolean("lowercase", True, "Lowercase before tokenising.", flag_values=flag_values)


def corpus_settings(record: str, fix: str) -> Dict[str, Any]:
    """The tokenizer settings a corpus builder recorded in ``record`` (its
    ``corpus.json``: ``tokenizer``, ``lowercase`` and what else it wrote); Treebank and
    lowercase, with a warning, where the record is missing (corpora built before it).

    Args:
      record: the record's path.
      fix: what the ``error:`` line tells the user to do about a record that cannot be
        read.

    Raises:
      acvi_tf.files.RecordError: the record cannot be read or is not a JSON object.
    """
    settings = dict(tokenizer="treebank", lowercase=True)
    if os.path.exists(record):
        settings.update(files.read_json(record, fix))
    else:
        logging.warning(
            "%s is missing; tokenising with Treebank, lowercased, as corpora built before "
            "the record were; if the corpus was built with another tokenizer, put the file "
            "back, or the model reads other tokens than it trained on",
            record,
        )
    return settings
