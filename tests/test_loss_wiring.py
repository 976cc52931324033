"""The KL schedule's step and the Gumbel phase reach every host's loss, and the training
job writes its TensorBoard posterior summaries, through each host's training entry point
(``run(config)`` on a shipped sample, a tiny model, 8 steps).

Each host trains once with ACVI's ``mc`` KL, a linear warm-up over 4 steps, the
Gumbel-softmax phase in the last half of the run (temperature 0.1) and log sigma^2 pinned
to [4.9, 5] at every source position. The step function's results (what the loss
computed, step by step) are recorded where the trainer receives them: NMT writes its
perplexity to TensorBoard, not its NLL.

* The step: at step s the loss is ``nll + other terms + kl_weight * min(1, s / 4) * kl``;
  a loss given another step (0) has another factor, and the identity fails.
* The Gumbel phase: ``mc``'s KL is ``log q(c) - log p(c)`` at the sample c in D
  dimensions, ``p = N(0, I)``, ``q = sum_i a_i N(h_i, s^2 I)`` with ``s^2 ~ e^5``. So
  ``log p(c) = -D/2 log(2 pi) - |c|^2 / 2`` and, for c within a few s of the h_i,
  ``log q(c) ~ -D/2 log(2 pi) - 5 D / 2 - |c - h_k|^2 / (2 s^2)`` (h_k the nearest
  mean). Eq. 25's sample ``sum_i a_i h_i + s |a| eps`` has ``|c|^2 ~ e^5 D |a|^2`` and
  lies near the means: KL ~ ``D (e^5 |a|^2 - 5) / 2``, about ``4.9 D`` for uniform
  attention over 10 positions (|a|^2 = 1/N). A near one-hot Gumbel sample ``h_k + s eps``
  has ``|c|^2 ~ e^5 D`` and ``|c - h_k|^2 / s^2 ~ D``: KL ~ ``D (e^5 - 6) / 2``, about
  ``71 D``. Every Gumbel step's KL is then several times every eq. 25 step's, while the
  attention stays spread (sources of at most 10 positions, 8 steps of training); a run
  whose forward pass never samples with Gumbel weights shows no jump.
* The summaries: histograms every 4 steps, both images of the fixed example and its
  decoded text every 8, read back from the event files (NMT's stats line as scalars too).
"""

import glob
import os
import sys

import numpy as np
import pytest
import tensorflow as tf

from acvi_tf import config as config_lib
from acvi_tf.training import step as training_lib
from nmt import run_nmt
from pointer_generator import run_summarization
from video_caption import run_captioning

from conftest import write_parallel_slices

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(ROOT, "bench"))
import compare_contexts  # noqa: E402 (bench/ is not a package)

SAMPLES = os.path.join(ROOT, "data_prep", "samples")
STEPS, ANNEAL_STEPS, KL_WEIGHT = 8, 4, 0.5
GUMBEL_FROM = 4  # --acvi_gumbel_fraction=0.5 of 8 steps: steps 4 to 7
ACVI_FLAGS = [
    "--context=acvi",
    "--acvi_kl=mc",
    "--kl_weight=%g" % KL_WEIGHT,
    "--kl_annealing=linear",
    "--kl_anneal_steps=%d" % ANNEAL_STEPS,
    "--acvi_sampling=approx",
    "--acvi_gumbel_fraction=0.5",
    "--acvi_gumbel_temperature=0.1",
    "--acvi_log_var_min=4.9",
    "--acvi_log_var_max=5",
]
# The posterior summaries: histograms at steps 4 and 8, images and text at step 8.
HISTOGRAM_STEPS, IMAGE_STEPS = 4, 8
CADENCE = ["--histogram_steps=%d" % HISTOGRAM_STEPS, "--image_steps=%d" % IMAGE_STEPS]
HISTOGRAMS = ["posterior/attention_entropy", "posterior/kl", "posterior/sigma"]
IMAGES = ["example/attention", "example/sigma"]


def _summarizer(root):
    """Trains the summarizer; returns ``(config, nll key, total key, other terms)``."""
    data = os.path.join(SAMPLES, "debian_descriptions")
    argv = [
        "--mode=train",
        "--data_path=" + os.path.join(data, "chunked", "train_000.bin"),
        "--vocab_path=" + os.path.join(data, "vocab"),
        "--vocab_size=200",
        "--log_root=%s" % root,
        "--exp_name=exp",
        "--hidden_dim=4",
        "--emb_dim=4",
        "--batch_size=4",
        "--max_enc_steps=10",
        "--max_dec_steps=6",
        "--max_steps=%d" % STEPS,
        "--checkpoint_steps=%d" % STEPS,
        "--summary_data_path=" + os.path.join(data, "chunked", "val_000.bin"),
    ]
    config = config_lib.parse(run_summarization.define_flags, ["x", *argv, *ACVI_FLAGS, *CADENCE])
    run_summarization.run(config)
    events = (str(root / "exp" / "train"), HISTOGRAMS + ["posterior/p_gen"])
    return config, "loss", "total_loss", {"coverage_loss": config.cov_loss_wt}, events


def _nmt(root):
    data = os.path.join(SAMPLES, "pig_latin")
    write_parallel_slices(data, str(root), dict(train=64, dev=4), ("src", "tgt"))
    argv = [
        "--src=src",
        "--tgt=tgt",
        "--vocab_prefix=" + os.path.join(data, "vocab"),
        "--train_prefix=%s" % (root / "train"),
        "--dev_prefix=%s" % (root / "dev"),
        "--out_dir=%s" % (root / "run"),
        "--num_units=4",
        "--batch_size=4",
        "--num_train_steps=%d" % STEPS,
        "--steps_per_external_eval=%d" % STEPS,
        "--steps_per_stats=%d" % HISTOGRAM_STEPS,
    ]
    config = config_lib.parse(run_nmt.define_flags, ["x", *argv, *ACVI_FLAGS, *CADENCE])
    run_nmt.run(config)
    return config, "nll", "train_loss", {}, (str(root / "run" / "train_log"), HISTOGRAMS)


def _captioner(root):
    data = os.path.join(SAMPLES, "moving_shapes")
    argv = [
        "--mode=train",
        "--data_dir=" + data,
        "--features=" + os.path.join(data, "features.h5"),
        "--out_dir=%s" % root,
        "--num_frames=8",
        "--encoder_units=4",
        "--decoder_units=4",
        "--emb_dim=4",
        "--attention_units=4",
        "--batch_size=4",
        "--max_steps=%d" % STEPS,
        "--valid_every=%d" % STEPS,
        "--metrics=Bleu_4",
        "--best_metric=Bleu_4",
        "--beam_size=1",
        "--max_decode_len=2",
        "--summary_steps=%d" % HISTOGRAM_STEPS,
    ]
    config = config_lib.parse(run_captioning.define_flags, ["x", *argv, *ACVI_FLAGS, *CADENCE])
    run_captioning.run(config)
    events = (str(root / "train_log"), HISTOGRAMS)
    return config, "nll", "loss", {"attention_penalty": config.alpha_c}, events


HOSTS = dict(summarizer=_summarizer, nmt=_nmt, captioner=_captioner)


@pytest.fixture(scope="module", params=sorted(HOSTS))
def run(request, tmp_path_factory):
    """One host's training run: ``(results, nll key, total key, other terms, events)``,
    where ``results[s]`` is the step function's results at step s as floats, ``other
    terms`` maps the host's further logged terms to their weights in the loss and
    ``events`` is ``(the training job's event folder, its histogram tags)``."""
    recorded = []
    make_train_step = training_lib.make_train_step

    def recording(*args, **kwargs):
        train_step = make_train_step(*args, **kwargs)

        def step(*inputs):
            results = train_step(*inputs)
            recorded.append({name: float(value) for name, value in results.items()})
            return results

        return step

    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(training_lib, "make_train_step", recording)
        _, nll, total, others, events = HOSTS[request.param](tmp_path_factory.mktemp(request.param))
    assert len(recorded) == STEPS
    return recorded, nll, total, others, events


def test_the_loss_warms_the_kl_up_with_the_training_step(run):
    """``total - nll - others == kl_weight * min(1, s / S) * kl`` at every step s."""
    results, nll, total, others, _ = run
    factors = np.minimum(1.0, np.arange(STEPS) / ANNEAL_STEPS)
    kl = np.array([r["kl"] for r in results])
    assert np.all(kl > 1.0), kl  # every step's factor shows in its total
    rest = [r[total] - r[nll] - sum(w * r[name] for name, w in others.items()) for r in results]
    np.testing.assert_allclose(rest, KL_WEIGHT * factors * kl, rtol=1e-4, atol=1e-3)
    np.testing.assert_allclose([r["kl_factor"] for r in results], factors, rtol=1e-6)


def test_the_last_half_samples_with_gumbel_softmax_weights(run):
    """Every Gumbel step's KL is more than twice every eq. 25 step's."""
    results = run[0]
    kl = np.array([r["kl"] for r in results])
    assert np.min(kl[GUMBEL_FROM:]) > 2.0 * np.max(kl[:GUMBEL_FROM]) > 0, kl


def _tags(folder):
    """``{(tag, plugin): [steps]}`` of every event file in ``folder``."""
    tags = {}
    for path in glob.glob(os.path.join(folder, "events.out.tfevents.*")):
        for event in tf.compat.v1.train.summary_iterator(path):
            for value in event.summary.value:
                key = (value.tag, value.metadata.plugin_data.plugin_name)
                tags.setdefault(key, []).append(event.step)
    return tags


def test_the_run_writes_the_posterior_summaries(run, request):
    folder, histograms = run[4]
    tags = _tags(folder)
    expected = {(tag, "histograms"): [HISTOGRAM_STEPS, STEPS] for tag in histograms}
    expected.update({(tag, "images"): [IMAGE_STEPS] for tag in IMAGES})
    expected[("example/decoded", "text")] = [IMAGE_STEPS]
    posterior = {k: v for k, v in tags.items() if k[0].split("/")[0] in ("posterior", "example")}
    assert posterior == expected
    if "nmt" in request.node.callspec.id:  # tensorflow/nmt's stats line, as scalars too
        for name in ("lr", "step_time", "words_per_second", "train_ppl", "grad_norm"):
            assert tags[(name, "scalars")] == [HISTOGRAM_STEPS, STEPS], name


@pytest.mark.parametrize(
    "tag, kept", [("kl_per_token",) * 2, ("nll_per_token", "train_nll_per_token")]
)
def test_the_study_reads_what_the_run_wrote_per_token(run, tag, kept):
    """Every host writes the step's ``kl_per_token`` and ``nll_per_token`` to
    TensorBoard, and compare_contexts keeps the mean of the values from the run's last
    quarter."""
    results, _, _, _, (folder, _) = run
    written = {}
    for path in glob.glob(os.path.join(folder, "events.out.tfevents.*")):
        for event in tf.compat.v1.train.summary_iterator(path):
            for value in event.summary.value:
                if value.tag == tag:
                    written[event.step] = float(tf.make_ndarray(value.tensor))
    assert max(written) == STEPS
    for step, value in written.items():  # step s's results are the s-th recorded
        assert value == pytest.approx(results[step - 1][tag], rel=1e-6), step
    last = [value for step, value in written.items() if 4 * step >= 3 * STEPS]
    means = compare_contexts.training_means(folder, STEPS)
    assert means[kept] == pytest.approx(np.mean(last))
