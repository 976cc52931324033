"""The training job's TensorBoard posterior summaries: a short run of each host writes
the histograms, both images of the fixed example and its decoded text, read back from
the event files; and the summaries' arithmetic on a hand-made view."""

import glob
import os
import shutil

import numpy as np
import pytest
import tensorflow as tf
from absl import app

from acvi_tf import config as config_lib
from acvi_tf.training import summaries
from nmt import run_nmt
from pointer_generator import run_summarization
from video_caption import run_captioning

SAMPLES = os.path.join(os.path.dirname(__file__), "..", "data_prep", "samples")
HISTOGRAMS = ["posterior/attention_entropy", "posterior/kl", "posterior/sigma"]
IMAGES = ["example/attention", "example/sigma"]
# every flag the runs share: 2 steps, histograms at both, images and text at the second
CADENCE = ["--histogram_steps=1", "--image_steps=2"]


def _tags(folder):
    """``{(tag, plugin): [steps]}`` of every event file in ``folder``."""
    tags = {}
    for path in glob.glob(os.path.join(folder, "events.out.tfevents.*")):
        for event in tf.compat.v1.train.summary_iterator(path):
            for value in event.summary.value:
                key = (value.tag, value.metadata.plugin_data.plugin_name)
                tags.setdefault(key, []).append(event.step)
    return tags


def _expected(histograms):
    expected = {(tag, "histograms"): [1, 2] for tag in histograms}
    expected.update({(tag, "images"): [2] for tag in IMAGES})
    expected[("example/decoded", "text")] = [2]
    return expected


def _posterior(tags):
    return {
        key: steps
        for key, steps in tags.items()
        if key[0].split("/")[0] in ("posterior", "example")
    }


def _summarizer(tmp_path):
    data = os.path.join(SAMPLES, "debian_descriptions")
    argv = ["run_summarization", "--mode=train", "--log_root=%s" % tmp_path, "--exp_name=e"]
    argv += ["--data_path=%s/chunked/train_000.bin" % data, "--vocab_path=%s/vocab" % data]
    argv += ["--summary_data_path=%s/chunked/val_000.bin" % data, "--vocab_size=500"]
    argv += ["--hidden_dim=4", "--emb_dim=4", "--batch_size=2", "--max_enc_steps=12"]
    argv += ["--max_dec_steps=5", "--max_steps=2", "--context=acvi", *CADENCE]
    run_summarization.run(config_lib.parse(run_summarization.define_flags, argv))
    return str(tmp_path / "e" / "train"), HISTOGRAMS + ["posterior/p_gen"]


def _nmt(tmp_path):
    corpus = tmp_path / "corpus"
    corpus.mkdir()
    for split, count in (("train", 32), ("dev", 2)):
        for lang in ("en", "de"):
            with open(os.path.join(SAMPLES, "debian_en_de", "%s.%s" % (split, lang))) as f:
                (corpus / ("%s.%s" % (split, lang))).write_text("".join(f.readlines()[:count]))
    for lang in ("en", "de"):
        shutil.copy(os.path.join(SAMPLES, "debian_en_de", "vocab." + lang), corpus)
    argv = ["run_nmt", "--src=en", "--tgt=de", "--out_dir=%s" % (tmp_path / "run")]
    argv += ["--%s_prefix=%s" % (p, corpus / p) for p in ("vocab", "train", "dev")]
    argv += ["--num_units=4", "--batch_size=4", "--num_train_steps=2", "--steps_per_stats=1"]
    argv += ["--src_max_len=12", "--tgt_max_len=12", "--optimizer=adam", "--context=acvi"]
    run_nmt.run(config_lib.parse(run_nmt.define_flags, argv + CADENCE))
    return str(tmp_path / "run" / "train_log"), HISTOGRAMS


def _captioner(tmp_path):
    sample = os.path.join(SAMPLES, "moving_shapes")
    data = tmp_path / "data"
    data.mkdir()
    for split, count in (("train", 8), ("val", 2), ("test", 1)):
        with open(os.path.join(sample, split + ".jsonl")) as f:
            (data / (split + ".jsonl")).write_text("".join(f.readlines()[:count]))
    shutil.copy(os.path.join(sample, "vocab.txt"), data)
    argv = ["run_captioning", "--data_dir=%s" % data, "--out_dir=%s" % (tmp_path / "run")]
    argv += ["--features=%s" % os.path.join(sample, "features.h5"), "--num_frames=3"]
    argv += ["--encoder_units=4", "--decoder_units=4", "--emb_dim=4", "--attention_units=4"]
    argv += ["--batch_size=4", "--max_steps=2", "--summary_steps=1", "--metrics=Bleu_4"]
    argv += ["--best_metric=Bleu_4", "--beam_size=1", "--max_decode_len=5", "--context=acvi"]
    run_captioning.run(config_lib.parse(run_captioning.define_flags, argv + CADENCE))
    return str(tmp_path / "run" / "train_log"), HISTOGRAMS


@pytest.mark.parametrize(
    "run", [_summarizer, _nmt, _captioner], ids=["summarizer", "nmt", "captioner"]
)
def test_a_short_run_writes_the_posterior_summaries(tmp_path, run):
    folder, histograms = run(tmp_path)
    tags = _tags(folder)
    assert _posterior(tags) == _expected(histograms)
    if run is _nmt:  # tensorflow/nmt's stats line, as scalars too
        for name in ("lr", "step_time", "words_per_second", "train_ppl", "grad_norm"):
            assert tags[(name, "scalars")] == [1, 2], name


def test_a_summary_data_path_that_matches_nothing_is_refused(tmp_path):
    data = os.path.join(SAMPLES, "debian_descriptions")
    argv = ["run_summarization", "--mode=train", "--log_root=%s" % tmp_path, "--exp_name=e"]
    argv += ["--data_path=%s/chunked/train_000.bin" % data, "--vocab_path=%s/vocab" % data]
    argv += ["--summary_data_path=%s/none_*" % tmp_path, "--hidden_dim=4", "--emb_dim=4"]
    config = config_lib.parse(run_summarization.define_flags, argv + ["--max_steps=1"])
    with pytest.raises(app.UsageError, match="--summary_data_path=.*none_.* matches no file"):
        run_summarization.run(config)


def _view(sigma=True):
    attention = np.array([[[0.5, 0.5, 0.0], [1.0, 0.0, 0.0]]], np.float32)  # [1, 2, 3]
    return summaries.PosteriorView(
        attention=attention,
        source_mask=np.array([[1.0, 1.0, 0.0]], np.float32),
        target_mask=np.array([[1.0, 0.0]], np.float32),
        kl=np.array([[0.25, 9.0]], np.float32),
        sigma=np.array([[2.0, 4.0, 8.0]], np.float32) if sigma else None,
    )


def test_entropy_and_noise_scale_of_a_hand_made_view():
    view = _view()
    np.testing.assert_allclose(summaries.attention_entropy(view.attention), [[np.log(2), 0.0]])
    np.testing.assert_allclose(summaries.noise_scale(view), [[1.0, 2.0, 0.0], [2.0, 0.0, 0.0]])


def _histogram_counts(folder):
    counts = {}
    for path in glob.glob(os.path.join(folder, "events.out.tfevents.*")):
        for event in tf.compat.v1.train.summary_iterator(path):
            for value in event.summary.value:
                # a histogram tensor holds [left, right, count] per bucket
                counts[value.tag] = float(tf.make_ndarray(value.tensor)[:, 2].sum())
    return counts


@pytest.mark.parametrize("sigma", [True, False], ids=["acvi", "soft_attention"])
def test_histograms_count_real_positions_and_skip_sigma_without_a_scale(tmp_path, sigma):
    writer = tf.summary.create_file_writer(str(tmp_path))
    with writer.as_default(step=1):
        summaries.write_histograms(_view(sigma))
    writer.flush()
    expected = {"posterior/attention_entropy": 1.0, "posterior/kl": 1.0}
    if sigma:
        expected["posterior/sigma"] = 2.0  # the padded position is left out
    assert _histogram_counts(str(tmp_path)) == expected
