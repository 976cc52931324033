"""Text rules the corpus builders share: PTB-style tokenisation and See's vocab file.

Flag-free, so any builder (or a test) can import it without pulling another builder's
command-line flags.
"""

import re

from nltk.tokenize import TreebankWordTokenizer

from acvi_tf import files

VOCAB_SIZE = 200000  # See's make_datafiles.py keeps the 200,000 most common words

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


def write_vocab(path, counter, size=VOCAB_SIZE):
    """Writes the ``size`` most common words as See's ``word count`` lines, atomically.

    Args:
      path: the vocab file.
      counter: a ``collections.Counter`` of words.
      size: the most words written (See's 200,000).

    Returns:
      The number of lines written.
    """
    entries = counter.most_common(size)
    files.atomic_write_text(path, "".join("%s %d\n" % entry for entry in entries))
    return len(entries)
