"""Learning test on the shipped moving-shapes clips, through run_captioning end to end.

ACVI with its default objective and Deng et al.'s variational attention (REINFORCE,
decoding with the prior marginal; its loop is the soft-attention model's) train a small
captioner for a short while on the 160 training clips (features of the shipped sample,
from the randomly initialised GoogLeNet), decode the 20 test clips with beam search, and
must beat the constant caption (the most common training caption) clearly on CIDEr-D:
by more than three standard deviations of soft attention's score over seeds (they reach
1.09-1.39 against 0.56 after 200 steps over seeds 7-9, 1.29 and more with seed 7, on a
machine with AVX-512; variational attention's 1.02 with seed 7 on one without). ACVI must
also be no further behind soft attention trained the same way than two single-seed runs
of equal means differ (``conftest.pair_tolerance``). That a captioner's run resumes
where it stopped, validation included, ``test_run_captioning.py`` checks.
"""

import collections
import json
import math
import os

import pytest

from acvi_tf import config as config_lib
from video_caption import data, run_captioning

from conftest import pair_tolerance

# scheduled first (conftest.py); trained on graphs Grappler rewrote, as users train
pytestmark = [pytest.mark.slow, pytest.mark.optimized]

SAMPLE = os.path.join(os.path.dirname(__file__), "..", "data_prep", "samples", "moving_shapes")
STEPS = 200
# Standard deviation of soft attention's test CIDEr-D over seeds 7-9 on TensorFlow 2.21
# (1.390, 1.362, 1.194). ACVI with the default KL weight 0.001: 1.411, 1.375, 1.286 in one
# run (1.286, 1.230, 1.360 when it stopped and resumed halfway); variational attention:
# 1.345, 1.089, 1.202. After 400 steps soft attention's were 1.448, 1.433, 1.202 and
# ACVI's 1.177, 1.370, 1.309.
SA_SEED_STD = 0.106


def _run(*args):
    # the posterior summaries are tests/test_loss_wiring.py's; off here, they cost no time
    argv = ["run_captioning", "--histogram_steps=0", "--image_steps=0", *args]
    return run_captioning.run(config_lib.parse(run_captioning.define_flags, argv))


def _unigram_perplexity():
    """Validation perplexity of the training captions' add-one unigram model (with </s>)."""
    vocab = data.Vocab(os.path.join(SAMPLE, "vocab.txt"))

    def tokens(split):
        return [
            token
            for line in open(os.path.join(SAMPLE, split + ".jsonl"))
            for caption in json.loads(line)["captions"]
            for token in vocab.encode(caption) + [data.EOS_ID]
        ]

    counts = collections.Counter(tokens("train"))
    total = sum(counts.values())
    val = tokens("val")
    nll = -sum(math.log((counts[t] + 1) / (total + vocab.size())) for t in val)
    return math.exp(nll / len(val))


@pytest.mark.parametrize("context", ["acvi", "variational"])
def test_captions_beat_the_constant_caption(context, tmp_path):
    out = str(tmp_path / context)
    common = [
        "--data_dir=" + SAMPLE,
        "--features=" + os.path.join(SAMPLE, "features.h5"),
        "--out_dir=" + out,
        "--context=" + context,
        "--num_frames=8",
        "--feature_norm=standardize",
        "--encoder_units=48",
        "--decoder_units=64",
        "--emb_dim=32",
        "--attention_units=32",
        "--dropout=0.2",
        "--learning_rate=0.005",
        "--batch_size=32",
        "--beam_size=3",
        "--max_decode_len=12",
        "--seed=7",
        # METEOR's start-up is slow; test_caption_metrics covers it
        "--metrics=Bleu_4",
        "--metrics=ROUGE_L",
        "--metrics=CIDEr",
        "--variational_inference_units=32",
    ]
    _run(
        "--mode=train",
        "--max_steps=%d" % STEPS,
        "--valid_every=%d" % (STEPS // 2),
        "--checkpoint_steps=%d" % (STEPS // 2),
        *common,
    )
    validations = [json.loads(line)["step"] for line in open(os.path.join(out, "validation.jsonl"))]
    assert validations == [STEPS // 2, STEPS]
    best = json.load(open(os.path.join(out, "best", "best.json")))
    assert best["step"] in validations and "CIDEr" in best
    if context == "variational":  # the exact marginal perplexity, against a unigram model
        evaluation = _run("--mode=eval", "--eval_splits=val", *common)
        # 34.3; the model's is 2.95-3.56 over seeds 7-9 (2.8-3.2 after 400 steps)
        unigram = _unigram_perplexity()
        assert evaluation["val"]["perplexity"] < unigram / 8, (evaluation, unigram)
    report = _run("--mode=decode", "--decode_split=test", *common)
    model, constant = report["model"]["CIDEr"], report["constant_caption"]["CIDEr"]
    assert model > constant + 3 * SA_SEED_STD, report  # 1.02-1.35 against 0.56 + 0.32
    assert json.load(open(os.path.join(out, "hparams.json")))["context"] == context
    if context == "acvi":
        sa = _soft_attention_cider(common, tmp_path)
        assert model >= sa - pair_tolerance(SA_SEED_STD), (sa, report)


def _soft_attention_cider(common, tmp_path, seed=7):
    """Test CIDEr-D of soft attention trained like the test's runs."""
    sa = [flag for flag in common if not flag.startswith(("--out_dir", "--context", "--seed"))]
    sa += ["--out_dir=" + str(tmp_path / "sa"), "--context=sa", "--seed=%d" % seed]
    _run(
        "--mode=train",
        "--max_steps=%d" % STEPS,
        "--valid_every=%d" % STEPS,
        "--checkpoint_steps=%d" % STEPS,
        *sa,
    )
    return _run("--mode=decode", "--decode_split=test", *sa)["model"]["CIDEr"]
