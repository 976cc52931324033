"""The vocabulary and the word <-> id rules of See et al.'s ``data.py``.

Ids 0-3 are reserved, in this order: [UNK], [PAD], [START], [STOP]; ``vocab_size`` counts
them, so a vocab of 50,000 reads 49,996 words from the file. PAD is id 1, not 0: never rely
on Keras ``mask_zero``. Article words outside the vocabulary get temporary ids V, V+1, ...
in order of first appearance (the "extended vocabulary" the copy mechanism writes into).
"""

from typing import List, Optional, Sequence, Tuple

from absl import logging

from acvi_tf.formats import vocabulary
from acvi_tf.formats.see_vocab import (
    BUILD_HINT,
    RESERVED,
    SENTENCE_END,
    SENTENCE_START,
    UNKNOWN_TOKEN,
    VocabError,
    read_words,
)


class Vocab:
    """Word <-> id mapping read from See's ``word count`` file, most frequent first
    (``acvi_tf.formats.see_vocab``).

    Args:
      vocab_file: path of the file, one ``word count`` pair per line.
      max_size: total size including the 4 reserved tokens; 0 reads the whole file.
      size_given: ``max_size`` is the user's ``--vocab_size`` (not a default): a file
        with fewer words is worth a warning.

    Raises:
      VocabError: the file holds ``<s>``, ``</s>`` or a reserved token, or a word twice;
        or ``max_size`` leaves no word besides the reserved tokens, or the file has none.
    """

    def __init__(self, vocab_file: str, max_size: int, size_given: bool = True) -> None:
        words = read_words(vocab_file, max(max_size - len(RESERVED), 0))
        vocabulary.require_a_word(
            vocab_file, RESERVED, len(words), VocabError, max_size, BUILD_HINT
        )
        self._word_to_id = {}
        self._id_to_word = []
        for word in RESERVED + tuple(words):
            self._add(word)
        self._log_size(vocab_file, max_size, size_given)

    def _log_size(self, vocab_file, max_size, size_given):
        """A warning when the file is shorter than ``--vocab_size`` asks; an info line
        when it is shorter than a default size; otherwise a line at verbosity 1."""
        size, words = len(self._id_to_word), len(self._id_to_word) - len(RESERVED)
        if max_size and size < max_size and size_given:
            logging.warning(
                "%s has only %d words; the vocabulary has %d entries, not the %d that "
                "--vocab_size asks for",
                vocab_file,
                words,
                size,
                max_size,
            )
        elif max_size and size < max_size:
            logging.info("Vocabulary of %d entries: all %d words of %s", size, words, vocab_file)
        else:
            logging.vlog(
                1,
                "Vocabulary of %d entries from %s; the last word: %s",
                size,
                vocab_file,
                self._id_to_word[-1],
            )

    def _add(self, word):
        self._word_to_id[word] = len(self._id_to_word)
        self._id_to_word.append(word)

    def word2id(self, word: str) -> int:
        """The id of ``word``, or the [UNK] id."""
        return self._word_to_id.get(word, self._word_to_id[UNKNOWN_TOKEN])

    def id2word(self, word_id: int) -> str:
        """The word of an in-vocabulary id; ValueError otherwise."""
        if not 0 <= word_id < len(self._id_to_word):
            raise ValueError(
                "id %d is not in the vocabulary of %d words" % (word_id, len(self._id_to_word))
            )
        return self._id_to_word[word_id]

    def size(self) -> int:
        """Number of ids, reserved tokens included."""
        return len(self._id_to_word)

    def words(self) -> List[str]:
        """All words in id order (for the TensorBoard projector metadata)."""
        return list(self._id_to_word)

    def write_metadata(self, path: str) -> None:
        """Writes the one-word-per-line TSV the TensorBoard embedding projector reads."""
        with open(path, "w", encoding="utf-8") as f:
            f.write("word\n")
            for word in self._id_to_word:
                f.write(word + "\n")


def article2ids(article_words: Sequence[str], vocab: Vocab) -> Tuple[List[int], List[str]]:
    """Ids of article words, with in-article OOVs numbered from ``vocab.size()``.

    Returns:
      ``(ids, oovs)``: the extended-vocabulary ids and the list of distinct article OOVs
      in order of first appearance (OOV ``oovs[k]`` has id ``vocab.size() + k``).
    """
    ids, oovs = [], []
    unk_id = vocab.word2id(UNKNOWN_TOKEN)
    for word in article_words:
        word_id = vocab.word2id(word)
        if word_id == unk_id:
            if word not in oovs:
                oovs.append(word)
            ids.append(vocab.size() + oovs.index(word))
        else:
            ids.append(word_id)
    return ids, oovs


def abstract2ids(
    abstract_words: Sequence[str], vocab: Vocab, article_oovs: Sequence[str]
) -> List[int]:
    """Ids of abstract words: article OOVs get their temporary ids, other OOVs [UNK]."""
    ids = []
    unk_id = vocab.word2id(UNKNOWN_TOKEN)
    for word in abstract_words:
        word_id = vocab.word2id(word)
        if word_id == unk_id and word in article_oovs:
            word_id = vocab.size() + article_oovs.index(word)
        ids.append(word_id)
    return ids


def outputids2words(
    id_list: Sequence[int], vocab: Vocab, article_oovs: Optional[Sequence[str]]
) -> List[str]:
    """Words of extended-vocabulary ids, reading ids >= V from ``article_oovs``."""
    words = []
    for word_id in id_list:
        if word_id < vocab.size():
            words.append(vocab.id2word(word_id))
            continue
        k = word_id - vocab.size()
        if article_oovs is None or k >= len(article_oovs):
            raise ValueError(
                "id %d is the article OOV %d, but this example has only %d "
                "OOVs" % (word_id, k, len(article_oovs or []))
            )
        words.append(article_oovs[k])
    return words


def abstract2sents(abstract: str) -> List[str]:
    """The sentences between ``<s>`` and ``</s>`` tags of a See-format abstract."""
    sentences = []
    start = 0
    while True:
        begin = abstract.find(SENTENCE_START, start)
        if begin < 0:
            return sentences
        end = abstract.find(SENTENCE_END, begin + len(SENTENCE_START))
        if end < 0:
            return sentences
        sentences.append(abstract[begin + len(SENTENCE_START) : end].strip())
        start = end + len(SENTENCE_END)


def show_art_oovs(article: str, vocab: Vocab) -> str:
    """The article with its OOVs marked ``__word__`` (decode logging)."""
    unk_id = vocab.word2id(UNKNOWN_TOKEN)
    return " ".join("__%s__" % w if vocab.word2id(w) == unk_id else w for w in article.split(" "))


def show_abs_oovs(abstract: str, vocab: Vocab, article_oovs: Optional[Sequence[str]]) -> str:
    """The abstract with in-article OOVs ``__w__`` and other OOVs ``!!__w__!!``."""
    unk_id = vocab.word2id(UNKNOWN_TOKEN)
    marked = []
    for word in abstract.split(" "):
        if vocab.word2id(word) != unk_id:
            marked.append(word)
        elif article_oovs is not None and word in article_oovs:
            marked.append("__%s__" % word)
        else:
            marked.append("!!__%s__!!" % word)
    return " ".join(marked)
