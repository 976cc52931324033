"""The training job's TensorBoard posterior summaries: the summaries' arithmetic on a
hand-made view, and a ``--summary_data_path`` that matches nothing (the training runs of
each host write theirs in test_loss_wiring.py)."""

import glob
import os

import numpy as np
import pytest
import tensorflow as tf
from absl import app

from acvi_tf import config as config_lib
from acvi_tf.training import summaries
from pointer_generator import run_summarization

SAMPLES = os.path.join(os.path.dirname(__file__), "..", "data_prep", "samples")


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
