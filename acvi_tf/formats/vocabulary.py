"""What every host's vocabulary shares: at least one word besides the special tokens
the host reserves ids for, and a fingerprint of its words that a run records.

A vocabulary of special tokens only maps every word to the unknown token, so a model
trained on it learns nothing and saves a "best" model all the same; the hosts refuse it
when they read the file, whether the file has no word or ``--vocab_size`` cuts them all.
A vocabulary of the same size with other words (built with another tokenizer) gives the
embedding rows other meanings without changing a shape: the fingerprint tells them apart.
"""

import hashlib
from typing import Dict, Sequence, Type, Union


def fingerprint(words: Sequence[str], unit: str = "words") -> Dict[str, Union[int, str]]:
    """``{"words": N, "sha256": hex}`` of a vocabulary's words in id order: what the
    model's embedding rows mean. Files that give the same words the same ids (their
    counts aside) have one fingerprint. With ``unit="merges"``, the same of a BPE codes
    file's lines, which decide how new text splits into the vocabulary's pieces."""
    digest = hashlib.sha256("\n".join(words).encode("utf-8")).hexdigest()
    return {unit: len(words), "sha256": digest}


def require_a_word(
    path: str,
    specials: Sequence[str],
    words: int,
    error: Type[Exception],
    max_size: int = 0,
    fix: str = "",
) -> None:
    """Refuses a vocabulary with fewer entries than the special tokens plus one.

    Args:
      path: the vocabulary file.
      specials: the tokens the host reserves ids for, in id order.
      words: the number of entries besides ``specials`` the vocabulary holds.
      error: the host's error type for a bad vocabulary (an ``errors.UserError``).
      max_size: the ``--vocab_size`` the command was given, specials included (0: the
        whole file).
      fix: how to build a vocabulary with words, for the message.

    Raises:
      error: ``max_size`` leaves no room for a word, or ``words`` is 0.
    """
    reserved = "the %d special tokens %s" % (len(specials), " ".join(specials))
    if 0 < max_size <= len(specials):
        raise error(
            "--vocab_size=%d holds only %s, so every word of %s would be unknown; give "
            "--vocab_size=%d or more, or 0 for the whole file"
            % (max_size, reserved, path, len(specials) + 1)
        )
    if words < 1:
        raise error(
            "%s has no word besides %s, so every word would be unknown%s"
            % (path, reserved, "; " + fix if fix else "")
        )
