"""How much a summarizer copies: the ACVI paper's Table 2 measures, and lead-N.

The paper reports a "rate of novel words" and a "rate of OOV words adoption" without
formulas; these are the definitions used here (documented in docs/summarizer.md too):

* ``novel_word_rate``: over the whole corpus, the number of generated summary tokens that
  do not occur anywhere in their source article, divided by the number of generated
  tokens. Tokens are compared as strings, punctuation included; 0 for pure copying.
* ``oov_adoption_rate``: the number of generated tokens that are out-of-vocabulary
  article words (copied through the pointer), divided by the number of such tokens in
  the reference summaries of the same articles. 1 means the model brings as many article
  OOVs into its summaries as the human references do; the paper's values are 1.16-1.25.
"""

from typing import Callable, Iterable, List, Optional, Sequence, Union

SENTENCE_END = (".", "!", "?")


def _tokens(text):
    return text.split() if isinstance(text, str) else list(text)


def novel_word_rate(
    articles: Iterable[Union[str, Sequence[str]]], summaries: Iterable[Union[str, Sequence[str]]]
) -> float:
    """Generated tokens absent from their article, over all generated tokens.

    Args:
      articles: source texts (strings of space-separated tokens, or token lists).
      summaries: generated summaries, same form, one per article.
    """
    novel = total = 0
    for article, summary in zip(articles, summaries):
        source = set(_tokens(article))
        words = _tokens(summary)
        novel += sum(1 for w in words if w not in source)
        total += len(words)
    return novel / total if total else 0.0


def oov_adoption_rate(
    articles: Iterable[Union[str, Sequence[str]]],
    summaries: Iterable[Union[str, Sequence[str]]],
    references: Iterable[Union[str, Sequence[str]]],
    in_vocab: Callable[[str], bool],
) -> Optional[float]:
    """Article-OOV tokens in the generated summaries over those in the references.

    Args:
      articles, summaries, references: texts or token lists, aligned.
      in_vocab: ``word -> bool``, the model's vocabulary membership.

    Returns:
      The ratio, or None (undefined: ``null`` in ``metrics.json``) when the references
      hold no article OOV.
    """
    generated = reference = 0
    for article, summary, ref in zip(articles, summaries, references):
        generated += oov_count(article, summary, in_vocab)
        reference += oov_count(article, ref, in_vocab)
    return generated / reference if reference else None


def oov_count(
    article: Union[str, Sequence[str]],
    text: Union[str, Sequence[str]],
    in_vocab: Callable[[str], bool],
) -> int:
    """How many tokens of ``text`` are article words outside the vocabulary (copied)."""
    oovs = {w for w in _tokens(article) if not in_vocab(w)}
    return sum(1 for w in _tokens(text) if w in oovs)


def lead_sentences(article: Union[str, Sequence[str]], n: int) -> List[str]:
    """The first ``n`` sentences of a tokenised article (a sentence ends at . ! or ?)."""
    sentences, current = [], []
    for word in _tokens(article):
        current.append(word)
        if word in SENTENCE_END:
            sentences.append(" ".join(current))
            current = []
            if len(sentences) == n:
                return sentences
    if current:
        sentences.append(" ".join(current))
    return sentences[:n]
