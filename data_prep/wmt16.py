"""WMT'16 English-Romanian (or any raw parallel text) -> tokenized, joint-BPE NMT files.

``python -m data_prep.wmt16 --src=en --tgt=ro --train_prefix=raw/train
--dev_prefix=raw/newsdev2016 --test_prefix=raw/newstest2016 --out_dir=wmt16`` reads the raw
parallel files ``PREFIX.en`` / ``PREFIX.ro`` (one sentence per line, UTF-8, equal line
counts; errors name the file and line), tokenizes them keeping case (the shared PTB-style
``acvi_tf.text.tokenize``; the WMT16 recipe uses the Moses tokenizer, so tokens can
differ in details), learns a joint BPE with subword-nmt on the tokenized training source
and target (``--num_merges``, 32K as the recipe), applies it to every split and writes,
in ``out_dir``:

* ``tok/<name>.<lang>``: tokenized text (the references BLEU is computed against);
* ``bpe/<name>.<lang>``, ``bpe/codes`` and ``bpe/vocab.<lang>`` (tensorflow/nmt format).

Train on them with ``--subword_option=bpe`` (``@@ `` is removed before BLEU).
"""

import os

from absl import flags, logging

from acvi_tf import config as config_lib
from acvi_tf import files, text
from acvi_tf.formats import bpe, nmt_text


def prepare(src, tgt, prefixes, out_dir, num_merges):
    """Tokenizes every split, learns and applies a joint BPE, writes the vocabularies.

    Args:
      src, tgt: language suffixes.
      prefixes: ``{name: path prefix}``; ``"train"`` must be one of them (BPE source).
      out_dir: output folder.
      num_merges: BPE merge operations.

    Returns:
      ``{name: number of sentence pairs}``.
    """
    counts = {}
    for name, prefix in prefixes.items():
        pairs = nmt_text.read_parallel("%s.%s" % (prefix, src), "%s.%s" % (prefix, tgt))
        base = os.path.basename(prefix)
        for index, lang in ((0, src), (1, tgt)):
            files.atomic_write_text(
                os.path.join(out_dir, "tok", "%s.%s" % (base, lang)),
                "".join(text.tokenize(pair[index], lowercase=False) + "\n" for pair in pairs),
            )
        counts[name] = len(pairs)
        logging.info("%s: %d sentence pairs", name, len(pairs))
    train = os.path.basename(prefixes["train"])
    codes = os.path.join(out_dir, "bpe", "codes")
    os.makedirs(os.path.dirname(codes), exist_ok=True)
    bpe.learn_joint_bpe(
        [os.path.join(out_dir, "tok", "%s.%s" % (train, lang)) for lang in (src, tgt)],
        num_merges,
        codes,
    )
    for prefix in prefixes.values():
        for lang in (src, tgt):
            name = "%s.%s" % (os.path.basename(prefix), lang)
            bpe.apply_bpe(
                codes, os.path.join(out_dir, "tok", name), os.path.join(out_dir, "bpe", name)
            )
    for lang in (src, tgt):
        bpe.build_vocab(
            [os.path.join(out_dir, "bpe", "%s.%s" % (train, lang))],
            os.path.join(out_dir, "bpe", "vocab." + lang),
        )
    return counts


def define_flags(fv=flags.FLAGS):
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
    flags.mark_flags_as_required(["train_prefix", "out_dir"], flag_values=fv)


def run(config):
    prefixes = {
        name: getattr(config, name + "_prefix")
        for name in ("train", "dev", "test")
        if getattr(config, name + "_prefix")
    }
    counts = prepare(config.src, config.tgt, prefixes, config.out_dir, config.num_merges)
    print("Wrote %s: %s" % (config.out_dir, ", ".join("%s %d pairs" % kv for kv in counts.items())))


if __name__ == "__main__":
    config_lib.run_command(define_flags, run)
