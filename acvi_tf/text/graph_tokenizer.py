"""The ``tftext`` tokenisation: TensorFlow and tensorflow-text ops, so that the corpus
builders and an exported model run the same tokeniser: ``tokenize`` is the one
definition, which an export traces into its graph and ``tokenize_texts`` compiles once
and calls on batches of Python strings.

The rules, in order:

1. Unicode NFKC (``tensorflow_text.normalize_utf8``), or NFKC with case folding when
   lowercasing (``tensorflow_text.case_fold_utf8``): full-width forms, ligatures, "…" and
   non-breaking spaces become their plain forms.
2. Control characters become spaces; zero-width (format) characters are removed.
3. Curly and angle quotes become ``'`` and ``"``; dash runs (``--``, en and em dashes)
   become the token ``--``, dot runs the token ``...``.
4. Every character that is not a letter, digit, mark, period, apostrophe, hyphen or
   underscore is a token of its own, except a comma or colon between digits
   ("1,000", "10:30").
5. A period that ends a word is split off ("end." -> "end ."; "3.5", "debian.org"
   and "e.g" keep theirs inside).
6. An apostrophe that opens or closes a word is split off, then the clitics
   ``n't 's 're 've 'll 'd 'm`` at a word's end ("don't" -> "do n't").
7. The text is cut at whitespace (``tensorflow_text.WhitespaceTokenizer``).
"""

import functools
from typing import Callable, List, Sequence

import tensorflow as tf
import tensorflow_text as tf_text

# strings per graph call of ``tokenize_texts``
BATCH_SIZE = 1000

# Stand-ins for characters that rule 4 must not split; control characters are spaces by
# then, so these never occur in the text.
_COMMA, _COLON, _ELLIPSIS = "\x01", "\x02", "\x03"
_SPACE = r"[\s\p{Z}]"
_RULES = (
    (r"\p{Cc}", " "),
    (r"\p{Cf}", ""),
    (r"[‘’‚‛′`]", "'"),
    (r"[“”„‟″«»]", '"'),
    (r"-{2,}|[‒–—―]", " -- "),
    (r"\.{2,}", " %s " % _ELLIPSIS),
    # twice: a match consumes the digit after it, which the next one may need ("1,2,3")
    (r"(\pN),(\pN)", r"\1%s\2" % _COMMA),
    (r"(\pN),(\pN)", r"\1%s\2" % _COMMA),
    (r"(\pN):(\pN)", r"\1%s\2" % _COLON),
    (r"(\pN):(\pN)", r"\1%s\2" % _COLON),
    (r"([^\pL\pN\pM\s\p{Z}.'\-_%s%s%s])" % (_COMMA, _COLON, _ELLIPSIS), r" \1 "),
    (r"\.(%s|$)" % _SPACE, r" .\1"),
    (r"(^|%s)'([^\s\p{Z}])" % _SPACE, r"\1' \2"),
    (r"([^\s\p{Z}])'(%s|$)" % _SPACE, r"\1 '\2"),
    (r"([^\s\p{Z}'])((?i:n't|'s|'re|'ve|'ll|'d|'m))(%s|$)" % _SPACE, r"\1 \2\3"),
    (_COMMA, ","),
    (_COLON, ":"),
    (_ELLIPSIS, "..."),
)
_SPLITTER = tf_text.WhitespaceTokenizer()


def tokenize(texts: tf.Tensor, lowercase: bool = True) -> tf.RaggedTensor:
    """The ``tftext`` tokens of each text.

    Args:
      texts: a string tensor [B] of raw UTF-8 texts.
      lowercase: fold case (Unicode case folding) as well as normalising.

    Returns:
      A string ``tf.RaggedTensor`` [B, (tokens)].
    """
    if lowercase:
        texts = tf_text.case_fold_utf8(texts)
    else:
        texts = tf_text.normalize_utf8(texts, "NFKC")
    for pattern, rewrite in _RULES:
        texts = tf.strings.regex_replace(texts, pattern, rewrite)
    return _SPLITTER.tokenize(texts)


@functools.lru_cache(maxsize=None)
def _joined(lowercase: bool) -> Callable[[tf.Tensor], tf.Tensor]:
    """``tokenize`` compiled for a string batch of any size, each text's tokens joined by
    single spaces."""

    @tf.function(input_signature=[tf.TensorSpec([None], tf.string)])
    def joined(texts):
        return tf.strings.reduce_join(tokenize(texts, lowercase), axis=1, separator=" ")

    return joined


def tokenize_texts(
    texts: Sequence[str], lowercase: bool = True, batch_size: int = BATCH_SIZE
) -> List[str]:
    """``tokenize`` of Python strings, one graph call per ``batch_size`` of them.

    Args:
      texts: raw texts.
      lowercase: fold case as well as normalising.
      batch_size: strings per graph call.

    Returns:
      Each text's tokens joined by single spaces ("" when it has none), in order.
    """
    tokenized = []
    for start in range(0, len(texts), batch_size):
        batch = tf.constant(list(texts[start : start + batch_size]), tf.string)
        tokenized += [text.decode("utf-8") for text in _joined(lowercase)(batch).numpy()]
    return tokenized


def tokenize_text(text: str, lowercase: bool = True) -> str:
    """``tokenize_texts`` of one Python string."""
    return tokenize_texts([text], lowercase)[0]
