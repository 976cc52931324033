"""The PTB-style tokenisation the corpus builders share.

Flag-free, so any builder (or a test) can import it without pulling another builder's
command-line flags.
"""

import re

from nltk.tokenize import TreebankWordTokenizer

# A sentence ends at . ! or ? followed by whitespace and anything but a lowercase letter,
# except after abbreviations such as "e.g." or "A.D." (a dot two characters back).
_SENTENCE_BREAK = re.compile(r"(?<=[^\s.][.!?])(?<!\.\S\.)\s+(?=[^a-z\s])")
_TOKENIZER = TreebankWordTokenizer()


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
        for token in _TOKENIZER.tokenize(sentence.lower() if lowercase else sentence)
    )
