"""Learning test: on the shipped Pig Latin task, the default ACVI translates as well as
soft attention (whose step is checked against NumPy in test_nmt_model.py).

A small model (64 units, one bidirectional encoder layer, 2 decoder layers, Luong
attention) trains for 400 Adam steps of 64 words with soft attention and with
``ACVIContext()``'s defaults, from the same seed (about 30 s of CPU each); greedy
decoding of 200 held-out words must get more than 60% of them exactly right, and ACVI's
accuracy must be no further behind soft attention's than two single-seed runs of equal
means differ (``conftest.pair_tolerance``). An ACVI whose draw keeps its noise and drops
its mean (the encoder's states) got 0.005 after 200 steps.
"""

import os

import numpy as np
import pytest
import tensorflow as tf

from acvi_tf.compat import keras
from acvi_tf.contexts import acvi as acvi_lib
from acvi_tf.contexts import context as context_lib
from acvi_tf.formats import nmt_text
from acvi_tf.training import losses
from nmt import data, experiment
from nmt import model as model_lib
from nmt import translator as translator_lib

from conftest import pair_tolerance

# scheduled first (conftest.py); trained on graphs Grappler rewrote, as users train
pytestmark = [pytest.mark.slow, pytest.mark.optimized]

SAMPLE = os.path.join(
    os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "data_prep", "samples", "pig_latin"
)
# Standard deviation of soft attention's held-out accuracy over seeds 1-3 after STEPS
# steps on TensorFlow 2.21, the lane this test runs on, on the AMD EPYC (AVX2) of the two
# machines measured whose spread is the larger (0.910, 0.865, 0.805; ACVI's with the
# default KL weight 0.001: 0.870, 0.880, 0.885); the other read 0.895, 0.890, 0.805 and
# ACVI's 0.825, 0.865, 0.855 (0.885, 0.875, 0.845 for soft attention on TensorFlow
# 2.15). After 200 steps the curves are still steep and a machine's float rounding moves
# them as much as a seed: ACVI's 0.690, 0.725, 0.690 on one machine were 0.430, 0.655,
# 0.720 on the other (soft attention's 0.595, 0.600, 0.490 and 0.475, 0.690, 0.470).
SA_SEED_STD = 0.053
STEPS = 400


def _path(name):
    return os.path.join(SAMPLE, name)


def _accuracy(context, seed=1):
    """Greedy exact-match accuracy on 200 held-out words after ``STEPS`` steps."""
    keras.utils.set_random_seed(seed)
    src_vocab, tgt_vocab = data.Vocab(_path("vocab.src")), data.Vocab(_path("vocab.tgt"))
    examples = data.make_examples(
        nmt_text.read_parallel(_path("train.src"), _path("train.tgt")), src_vocab, tgt_vocab, 30, 30
    )
    held_out = nmt_text.read_parallel(_path("dev.src"), _path("dev.tgt"))[:200]
    model = model_lib.NMTModel(
        src_vocab.size(),
        tgt_vocab.size(),
        64,
        encoder_type="bi",
        dropout=0.0,
        context_layer=context,
    )
    optimizer = keras.optimizers.Adam(0.01)
    kl_weight = getattr(context, "kl_weight", 0.0)
    # the weights (from a one-word pair) and the optimizer's slots made before the step is
    # traced: it is traced once (a step that makes them is traced twice)
    model(experiment.dummy_batch())
    optimizer.build(model.trainable_variables)

    @tf.function(input_signature=[data.BATCH_SIGNATURE], autograph=False)
    def train_step(batch):
        with tf.GradientTape() as tape:
            out = model(batch, training=True)
            loss = losses.sequence_loss(out["logits"], batch["tgt_out"], batch["tgt_len"])[
                0
            ] + kl_weight * losses.per_sequence(out["kl"], batch["tgt_len"])
        grads, _ = tf.clip_by_global_norm(tape.gradient(loss, model.trainable_variables), 5.0)
        optimizer.apply_gradients(zip(grads, model.trainable_variables))
        return loss

    for step, batch in enumerate(data.train_dataset(examples, 64, 30, 5, seed=seed)):
        assert np.isfinite(float(train_step(batch)))
        if step + 1 == STEPS:
            break
    translator = translator_lib.Translator(
        model, data.Vocabs(src_vocab, tgt_vocab), "greedy", 0, 0.0
    )
    hypotheses = translator.translate([src for src, _ in held_out], 100)
    return np.mean([h == ref for h, (_, ref) in zip(hypotheses, held_out)])


def test_default_acvi_translates_like_soft_attention():
    sa = _accuracy(context_lib.SoftAttentionContext(name="context"))
    acvi = _accuracy(acvi_lib.ACVIContext(seed=1, name="context"))
    assert acvi > 0.6, acvi
    assert acvi >= sa - pair_tolerance(SA_SEED_STD), (sa, acvi)
