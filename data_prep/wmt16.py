"""WMT'16 English-Romanian (or any raw parallel text) -> tokenized, joint-BPE NMT files.

``python -m data_prep.wmt16 --src=en --tgt=ro --train_prefix=raw/train
--dev_prefix=raw/newsdev2016 --test_prefix=raw/newstest2016 --out_dir=wmt16`` reads the raw
parallel files ``PREFIX.en`` / ``PREFIX.ro`` (one sentence per line, UTF-8, equal line
counts; errors name the file and line) and builds the corpus with
``data_prep.translation``, set as the WMT'16 recipe: NLTK Treebank tokens keeping case
(the recipe uses the Moses tokenizer, so tokens can differ in details) and one joint BPE
learned with subword-nmt on the tokenized training source and target (``--num_merges``,
32K as the recipe), applied to every split. In ``out_dir`` it writes:

* ``{train,dev,test}.<lang>``: tokenized text (dev and test are the references BLEU is
  computed against, once ``@@`` is removed from the BPE'd hypotheses) and
  ``vocab.<lang>``, the word-level vocabularies of the train files (``--min_count``);
* ``bpe/{train,dev,test}.<lang>``, ``bpe/codes`` and ``bpe/vocab.<lang>``
  (tensorflow/nmt format);
* ``corpus.json``: the languages, the tokenizer, the case and the BPE, which
  ``nmt.translate`` reads.

The generic builder's rules apply to the training pairs: a pair with an empty side is
dropped and counted, one pair is kept per distinct tokenized pair, and the pairs are
written in ascending hash order (training shuffles them anyway). The dev and test
sets are official ones and stay whole: every line, in file order, so line k of
``dev.<lang>`` and ``test.<lang>`` is line k of the raw file (the builder's
``keep_splits``). Train on them with ``--subword_option=bpe`` (``@@ `` is removed before
BLEU).
"""

import dataclasses
import itertools
from typing import Iterator, Mapping, Sequence

from absl import flags

from acvi_tf import config as config_lib
from acvi_tf.text import tokenizers
from data_prep import splits as splits_lib
from data_prep import translation

TOKENIZER = "treebank"


def sources(src: str, tgt: str, prefixes: Mapping[str, str]) -> Iterator[translation.Source]:
    """The raw pairs of every ``PREFIX.src`` / ``PREFIX.tgt``, each with its split.

    Args:
      src, tgt: language suffixes.
      prefixes: ``{split: path prefix}`` for ``train``, ``dev`` and ``test``.

    Returns:
      An iterator of ``translation.Source`` in split, then file order.
    """
    return itertools.chain.from_iterable(
        (
            dataclasses.replace(source, split=split)
            for source in translation.read_aligned(prefix, src, tgt)
        )
        for split, prefix in prefixes.items()
    )


def prepare(
    src: str,
    tgt: str,
    prefixes: Mapping[str, str],
    out_dir: str,
    num_merges: int,
    min_count: int = 1,
    allow_empty: Sequence[str] = (),
) -> translation.Stats:
    """Tokenizes every split, learns and applies a joint BPE, writes the vocabularies.

    Args:
      src, tgt: language suffixes.
      prefixes: ``{split: path prefix}``; ``"train"`` must be one of them (BPE source),
        ``"dev"`` and ``"test"`` may be.
      out_dir: output folder.
      num_merges: BPE merge operations.
      min_count: the fewest train occurrences of a word-level vocab entry.
      allow_empty: the splits of ``prefixes`` that may get no pair (a split without a
        prefix is left empty).

    Returns:
      The ``translation.Stats`` of the build.

    Raises:
      translation.ParallelError: a pair of files has other numbers of lines.
      data_prep.splits.EmptySplitError: a split of ``prefixes`` not in ``allow_empty``
        would get no pair; nothing is written then.
    """
    stats = translation.Stats()
    pairs = translation.make_pairs(
        sources(src, tgt, prefixes),
        tokenizers.batch_tokenizer(TOKENIZER, lowercase=False),
        0,
        stats,
        skip_empty=True,
        keep_splits=translation.EVAL_SPLITS,
    )
    languages = (src, tgt)
    translation.write_corpus(
        pairs,
        out_dir,
        languages,
        stats,
        min_count=min_count,
        bpe_merges=num_merges,
        keep_splits=translation.EVAL_SPLITS,
        allow_empty=set(allow_empty) | set(translation.SPLITS) - set(prefixes),
    )
    translation.write_corpus_record(out_dir, languages, TOKENIZER, False, num_merges)
    return stats


def define_flags(fv: flags.FlagValues = flags.FLAGS) -> None:
    """Defines the command-line flags (only when run as a program)."""
    flags.DEFINE_string("src", "en", "Source language suffix.", flag_values=fv)
    flags.DEFINE_string("tgt", "ro", "Target language suffix.", flag_values=fv)
    flags.DEFINE_string(
        "train_prefix", None, "Raw training files: PREFIX.src, PREFIX.tgt.", flag_values=fv
    )
    flags.DEFINE_string("dev_prefix", None, "Raw dev files (newsdev2016).", flag_values=fv)
    flags.DEFINE_string("test_prefix", None, "Raw test files (newstest2016).", flag_values=fv)
    flags.DEFINE_string("out_dir", None, "Output folder.", flag_values=fv)
    flags.DEFINE_integer(
        "num_merges", 32000, "Joint BPE merge operations.", lower_bound=1, flag_values=fv
    )
    flags.DEFINE_integer(
        "min_count",
        1,
        "Word-level vocab: keep train tokens seen at least this often.",
        lower_bound=1,
        flag_values=fv,
    )
    splits_lib.define_allow_empty(translation.SPLITS, fv)
    flags.mark_flags_as_required(["train_prefix", "out_dir"], flag_values=fv)


def run(config: config_lib.Config) -> None:
    """Builds the corpus from the flags and prints the summary."""
    prefixes = {
        split: config[split + "_prefix"]
        for split in translation.SPLITS
        if config[split + "_prefix"]
    }
    stats = prepare(
        config.src,
        config.tgt,
        prefixes,
        config.out_dir,
        config.num_merges,
        config.min_count,
        config.allow_empty,
    )
    print("Built %s\n%s" % (config.out_dir, stats.summary()))


if __name__ == "__main__":
    config_lib.run_command(define_flags, run)
