"""docs/summarizer.md's commands, run in this process as the page gives them on a tiny
corpus with only sizes and paths substituted (``doc_commands.sized``): training on the
curriculum and the eval job, the decode, lead-3 and the results table; on the same run,
the sharded decode of docs/distributed.md and the DUC 2004 chain of docs/data.md; and See
et al.'s checkpoint imported and decoded on the CNN/DailyMail build of docs/data.md. The
page's summaries of new text, its export and its Python that loads the export are
docs/data.md's commands on another run's name: ``test_first_hour.py`` runs them.
"""

import glob
import json
import os
import shutil

import cnn_dailymail_corpus
import doc_commands
import duc2004_corpus
import pytest
import see_tf1
from tensorboard.backend.event_processing import event_multiplexer

from acvi_tf.formats.bin_files import read_bin_file
from pointer_generator import vocab as vocab_lib

from conftest import untraced

pytestmark = pytest.mark.slow

TRAIN, EVALUATE, TENSORBOARD = doc_commands.block("docs/summarizer.md", 0)
DECODE, LEAD, TABLE = doc_commands.block("docs/summarizer.md", 1)
IMPORT, SEE_DECODE = doc_commands.block("docs/summarizer.md", 4)
(SHARDED_DECODE,) = doc_commands.block("docs/distributed.md", 3)
(CNN_DAILYMAIL,) = doc_commands.block("docs/data.md", 3)
DUC_BUILD, DUC_DECODE, DUC_EVAL = doc_commands.block("docs/data.md", 4)
# the corpus the page's finished_files/ stands for: your own pairs (docs/data.md)
OWN_PAIRS = doc_commands.block("docs/data.md", 0)[0]


def _run(command, cwd, paths=None, flags=()):
    """Runs ``command`` sized (and with ``flags``) in ``cwd``; returns its result."""
    text = doc_commands.with_flags(doc_commands.sized(command, paths), list(flags))
    return doc_commands.run_in_process(text, str(cwd))


def _one(pattern):
    (found,) = glob.glob(str(pattern))
    return found


def _own_corpus(cwd):
    """``finished_files/`` from 100 pairs of the shipped sample, built for an export."""
    doc_commands.write_sample_pairs(str(cwd / "pairs.jsonl"), 100)
    _run(OWN_PAIRS, cwd)
    return [a for a, _ in read_bin_file(str(cwd / "finished_files" / "test.bin"))]


def _tensorboard_tags(logdir):
    """What ``tensorboard --logdir`` shows: ``{run: scalar tags}``."""
    runs = event_multiplexer.EventMultiplexer().AddRunsFromDirectory(str(logdir)).Reload()
    return {run: set(tags["tensors"]) for run, tags in runs.Runs().items()}


def test_the_summarizer_page_trains_scores_tabulates_and_shards(tmp_path, capsys):
    articles = _own_corpus(tmp_path)
    _run(TRAIN, tmp_path)
    best = _run(EVALUATE, tmp_path)
    assert best > 0 and (tmp_path / "logs" / "acvi" / "best" / "best.json").exists()
    assert doc_commands.not_run(TENSORBOARD)
    tags = _tensorboard_tags(tmp_path / TENSORBOARD.words[-1])
    assert "loss" in tags["train"] and "running_avg_loss/decay=0.990000" in tags["eval"]

    assert _run(DECODE, tmp_path)["num_summaries"] == len(articles)
    decoded = os.path.relpath(_one(tmp_path / "logs" / "acvi" / "decode_test_*"), tmp_path)
    _run(LEAD, tmp_path)
    capsys.readouterr()
    _run(TABLE, tmp_path, {"logs/acvi/decode_test_...": decoded})
    table = capsys.readouterr().out.splitlines()
    assert table[0].split() == ["ACVI", "lead-3"]
    assert table[-2].split() == ["summaries", str(len(articles)), str(len(articles))]

    # the same run's other decodes search untraced: DECODE's search ran traced above
    with untraced():
        # a size: batches of 2 articles, so that each of the three shards has one
        for flags in [[]] + list(SHARDED_DECODE.variants.values()):
            _run(SHARDED_DECODE, tmp_path, flags=["--decode_batch_size=2"] + flags)
        metrics = tmp_path / "logs" / "acvi" / "*4beam*" / "metrics.json"
        assert json.loads(open(_one(metrics)).read())["num_summaries"] == len(articles)

        _duc2004_chain(tmp_path, tmp_path / "duc")


def _duc2004_chain(trained, cwd):
    """docs/data.md's DUC 2004 chain in ``cwd`` with the run trained in ``trained``.

    The run is copied without its decodes: the DUC decode's folder name (split, lengths,
    beam) is that of the page's CNN/DM test decode, which it would refuse to overwrite.
    """
    shutil.copytree(
        trained / "logs" / "acvi",
        cwd / "logs" / "acvi",
        ignore=shutil.ignore_patterns("decode_*"),
    )
    os.symlink(trained / "finished_files", cwd / "finished_files")
    duc2004_corpus.write_tree(cwd / DUC_BUILD.flag("docs_dir"), duc2004_corpus.DOCUMENTS)
    duc2004_corpus.write_tree(cwd / DUC_BUILD.flag("models_dir"), duc2004_corpus.MODELS)
    _run(DUC_BUILD, cwd)
    assert _run(DUC_DECODE, cwd)["num_summaries"] == 3
    decoded = os.path.relpath(_one(cwd / "logs" / "acvi" / "decode_test_*"), cwd)
    _run(DUC_EVAL, cwd, {"logs/acvi/decode_test_..._ckpt-N": decoded})
    assert (cwd / decoded / "duc2004_metrics.json").exists()


def test_see_et_al_checkpoint_decodes_a_cnn_dailymail_build(tmp_path, monkeypatch):
    raw = cnn_dailymail_corpus.make_corpus(tmp_path)
    os.renames(raw["url_lists_dir"], tmp_path / CNN_DAILYMAIL.flag("url_lists_dir"))
    _run(CNN_DAILYMAIL, tmp_path)
    vocab = vocab_lib.Vocab(
        str(tmp_path / IMPORT.flag("vocab_path")), int(IMPORT.flag("vocab_size"))
    )
    # See et al.'s model at the sizes the command gives, over this vocabulary
    monkeypatch.setattr(see_tf1, "V", vocab.size())
    monkeypatch.setattr(see_tf1, "H", int(IMPORT.flag("hidden_dim")))
    monkeypatch.setattr(see_tf1, "E", int(IMPORT.flag("emb_dim")))
    tf1_checkpoint = IMPORT.flag("tf1_checkpoint")
    os.makedirs(tmp_path / os.path.dirname(tf1_checkpoint))
    see_tf1.write_tf1_checkpoint(
        tmp_path / tf1_checkpoint,
        see_tf1.original_arrays("1.2.1", coverage=True),
        step=int(tf1_checkpoint.rsplit("-", 1)[1]),
    )
    _run(IMPORT, tmp_path)
    test_split = list(read_bin_file(str(tmp_path / "finished_files" / "test.bin")))
    assert _run(SEE_DECODE, tmp_path)["num_summaries"] == len(test_split)
