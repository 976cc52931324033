"""A stranger's first hour, from docs/data.md's own commands: their own summarization
pairs, parallel text and captioned videos taken from raw files to a trained model, its
scores, outputs for new input and a served SavedModel.

Each command runs as the page gives it, in a fresh folder, with only sizes (model, steps,
frames, merges: ``doc_commands.sized``) and the inputs' contents put in. Each test runs
its block's first command, the corpus builder, in a shell as a person types it: it must
exit 0 with no traceback and no line of TensorFlow's C++ start-up on its output. The
block's other ``python -m`` commands run in this process (``doc_commands.run_in_process``:
the entry point's own flags parsed, its ``run(config)`` called), which saves each one's
start of an interpreter and import of TensorFlow: each must return normally, with no
traceback and no C++ log line on what it prints. What only a process of its own shows,
its exit status and the start-up lines of its import, ``test_quiet.py`` checks for every
host's commands; a command that needs a shell (a pipe, a redirection, ``&&``) would run
in one. The ways of decoding one input must agree: ``--mode=decode``, ``summarize`` and
the served model (called from a bare interpreter, ``served.call``) for the summarizer;
``translate`` and the served model for the translator.

The in-process commands share TensorFlow's global state: each one sets its own seed and
mixed-precision policy (``builders.configure_runtime``), and the checkpoints and records
a command reads are on disk, written by the commands before it.
"""

import json
import os
import re
import subprocess
import sys

import doc_commands
import pytest
import served
from inputs import clips_in_every_split

from acvi_tf.formats.bin_files import read_bin_file
from nmt import serving as nmt_serving

from conftest import run_settings, write_video

pytestmark = pytest.mark.slow  # scheduled first (conftest.py)

ROOT = doc_commands.ROOT
PAGE = "docs/data.md"
SAMPLES = os.path.join(ROOT, "data_prep", "samples")
(PAGE_SUMMARIZE,) = doc_commands.block("docs/summarizer.md", 2)
(PAGE_EXPORT,) = doc_commands.block("docs/summarizer.md", 3)
(PAGE_SERVE,) = doc_commands.snippets("docs/summarizer.md")

# A line of TensorFlow's C++ logging (TensorFlow 2.21 and 2.15 formats) or its start-up.
CPP_LOG = re.compile(r"\.cc:\d+\]|absl::InitializeLog|cuInit")


def _check(output, text, where):
    """``output`` of the command ``text`` has no traceback and no C++ log line."""
    assert "Traceback" not in output, "%s: %s\n%s" % (where, text, output[-3000:])
    noise = [line for line in output.splitlines() if CPP_LOG.search(line)]
    assert not noise, (where, noise[:5])


def _shell(cwd, text, where):
    """Runs ``text`` in bash in ``cwd`` as a person would; returns its output."""
    env = dict(
        os.environ,
        PATH=os.path.dirname(sys.executable) + os.pathsep + os.environ["PATH"],
        PYTHONPATH=ROOT,
    )
    env.pop("TF_CPP_MIN_LOG_LEVEL", None)  # the commands' own default decides
    done = subprocess.run(
        ["bash", "-c", text], cwd=cwd, env=env, capture_output=True, text=True, timeout=600
    )
    output = done.stdout + done.stderr
    assert done.returncode == 0, "%s: %s\n%s" % (where, text, output[-3000:])
    _check(output, text, where)
    return output


def _in_process(capfd, cwd, command):
    """Runs ``command``, sized, in ``cwd`` in this process; returns its result."""
    text = doc_commands.sized(command)
    capfd.readouterr()
    try:
        result = doc_commands.run_in_process(text, str(cwd))
    except Exception as error:  # which command, with the error's own traceback chained
        raise AssertionError("%s: %s raised %r" % (command.where, text, error)) from error
    _check("".join(capfd.readouterr()), text, command.where)
    return result


def _folder(tmp_path):
    """A fresh folder with the shipped samples where the docs' paths expect them."""
    os.symlink(os.path.join(ROOT, "data_prep"), tmp_path / "data_prep")
    return tmp_path


def _lines(path):
    with open(path, encoding="utf-8") as f:
        return [line.rstrip("\n") for line in f]


def test_own_summarization_pairs_to_a_served_model(tmp_path, capfd, monkeypatch):
    cwd = _folder(tmp_path)
    doc_commands.write_sample_pairs(str(cwd / "pairs.jsonl"), 160)
    # tag-like text in every abstract, which ROUGE-1.5.5's reader stops at
    records = [json.loads(line) for line in _lines(cwd / "pairs.jsonl")]
    for record in records:
        record["abstract"] = "<tool> for " + record["abstract"]
    (cwd / "pairs.jsonl").write_text("".join(json.dumps(r) + "\n" for r in records))
    build, train, evaluate, decode, summarize, export, lead, compare = doc_commands.block(PAGE, 0)
    treebank = build.variants["Treebank tokens (no raw-text export)"]
    _shell(cwd, doc_commands.with_flags(build.text, treebank), build.where)
    os.rename(cwd / "finished_files", cwd / "treebank_files")
    for command in (build, train, evaluate, decode):
        _in_process(capfd, cwd, command)
    [decoded] = [d for d in os.listdir(cwd / "logs" / "mine") if d.startswith("decode_test")]
    decode_dir = cwd / "logs" / "mine" / decoded
    assert json.loads((decode_dir / "metrics.json").read_text())["num_summaries"] > 0
    # the test split's articles, as new text
    articles = [a for a, _ in read_bin_file(str(cwd / "finished_files" / "test.bin"))]
    (cwd / "new_articles.txt").write_text("".join(a + "\n" for a in articles))
    returned = _in_process(capfd, cwd, summarize)
    _in_process(capfd, cwd, export)
    # docs/summarizer.md's summarize and export are these commands on its run's name, so
    # they run here, once (test_doc_summarizer.py runs the rest of its page), and so does
    # its Python that loads the export
    assert doc_commands.differing_flags(PAGE_SUMMARIZE, summarize) == {"exp_name", "input"}
    assert doc_commands.differing_flags(PAGE_EXPORT, export) == {"exp_name"}
    monkeypatch.chdir(cwd)  # the snippet's path is relative
    loaded = {}
    exec(PAGE_SERVE, loaded)
    assert loaded["out"]["summaries"].shape == (2,)
    by_decode = [
        " ".join((decode_dir / "decoded" / ("%06d_decoded.txt" % i)).read_text().split())
        for i in range(len(articles))
    ]
    by_summarize = _lines(cwd / "summaries.txt")
    assert returned == by_summarize  # the command returns what it wrote
    [answer], modules = served.call(
        cwd / "served" / "1", [("serving_default", {"documents": articles})]
    )
    assert by_summarize == by_decode
    assert answer["summaries"] == by_decode and modules == []
    assert any(by_decode)
    assert (cwd / "treebank_files" / "chunked" / "train_000.bin").exists()
    # the references' tags are words to ROUGE-1.5.5, in the decode and the comparison
    assert json.loads((decode_dir / "metrics.json").read_text())["rouge_tool"] == "ROUGE-1.5.5"
    _in_process(capfd, cwd, lead)
    compared = _in_process(capfd, cwd, compare)
    assert compared["scorer"] == "ROUGE-1.5.5" and compared["examples"] == len(articles)
    assert all(e["reference"][0].startswith("< tool >") for e in compared["per_example"])


def test_own_parallel_text_with_bpe_to_a_served_model(tmp_path, capfd):
    cwd = _folder(tmp_path)
    sample = os.path.join(SAMPLES, "debian_en_de")
    english, german = (
        _lines(os.path.join(sample, "train.en")),
        _lines(os.path.join(sample, "train.de")),
    )
    rows = ["en\tit"] + ["%s\t%s" % pair for pair in list(zip(english, german))[:300]]
    (cwd / "pairs.tsv").write_text("\n".join(rows) + "\n")
    build, train, infer, translate, export = doc_commands.block(PAGE, 1)
    _shell(cwd, doc_commands.sized(build), build.where)
    _in_process(capfd, cwd, train)
    _in_process(capfd, cwd, infer)
    # the test split's raw sentences, as new text: translate and the served model read
    # them raw, the inference tokenised and segmented by the builder
    run = run_settings("nmt.translate", "--out_dir=%s" % (cwd / "models" / "en_it"))
    prepare = nmt_serving.preprocessor(run.replace(vocab_prefix=str(cwd / run.vocab_prefix)))
    raw = {prepare(en): en for en in english[:300]}
    segmented = _lines(cwd / "en_it" / "bpe" / "test.en")
    sentences = [raw[line] for line in segmented]
    (cwd / "new.en").write_text("".join(s + "\n" for s in sentences))
    _in_process(capfd, cwd, translate)
    _in_process(capfd, cwd, export)
    by_inference, by_translate = _lines(cwd / "test.it"), _lines(cwd / "new.it")
    [answer], modules = served.call(
        cwd / "served_en_it" / "1", [("serving_default", {"sentences": sentences})]
    )
    assert len(by_translate) == len(sentences) > 0 and modules == []
    assert answer["translations"] == by_translate == by_inference  # one beam search, three ways
    assert any("@@" in line for line in segmented)
    assert not any("@@" in line for line in by_inference + by_translate)


def test_own_captioned_videos_to_captions_of_new_videos(tmp_path, capfd):
    cwd = _folder(tmp_path)
    os.mkdir(cwd / "my_videos")
    colours = {"red": (255, 0, 0), "blue": (0, 0, 255), "green": (0, 255, 0)}
    rows = ["clip,caption"]
    for number, clip in enumerate(clips_in_every_split(10, 1, 1)):
        name = sorted(colours)[number % 3]
        write_video(cwd / "my_videos" / clip, num_frames=12, colour=colours[name])
        rows += ["%s,a %s square moves" % (clip, name)] * 2
    (cwd / "captions.csv").write_text("\n".join(rows) + "\n")
    # the block's second recipe, from a feature store: test_doc_captioner.py
    build, train, caption, _, _, _ = doc_commands.block(PAGE, 2)
    _shell(cwd, doc_commands.sized(build), build.where)
    _in_process(capfd, cwd, train)
    videos = sorted(str(cwd / "my_videos" / name) for name in os.listdir(cwd / "my_videos"))
    (cwd / "new_videos.txt").write_text("".join(v + "\n" for v in videos[:2]))
    _in_process(capfd, cwd, caption)
    assert len(_lines(cwd / "captions.txt")) == 2
