"""Learning test: on the shipped Pig Latin task, ACVI learns to translate (soft attention,
its special case, is learned by the same model; its step is checked against NumPy in
test_nmt_model.py and kept out of this budget).

A small model (64 units, one bidirectional encoder layer, 2 decoder layers, Luong
attention) trains for 400 Adam steps of 64 words (about a minute on 2 CPU cores each);
greedy decoding of 200 held-out words must get more than 60% of them exactly right (SA and
ACVI both reach 70-90%).
ACVI runs with the closed-form KL bound at weight 0.01: with weight 1 the N(0, I) prior
pulls the encoder states to zero and nothing is learned in this budget (README).
"""
import os

import numpy as np
import pytest
import tensorflow as tf

from acvi_tf import context as context_lib
from acvi_tf import losses
from nmt import data
from nmt import model as model_lib
from nmt import translate

pytestmark = pytest.mark.slow  # scheduled first (conftest.py)

SAMPLE = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))),
                      "data_prep", "samples", "pig_latin")
KL_WEIGHT = 0.01


def _path(name):
    return os.path.join(SAMPLE, name)


@pytest.mark.parametrize("mode", ["acvi"])
def test_pig_latin_is_learned(mode):
    tf.keras.utils.set_random_seed(1)
    src_vocab, tgt_vocab = data.Vocab(_path("vocab.src")), data.Vocab(_path("vocab.tgt"))
    examples = data.make_examples(data.read_parallel(_path("train.src"), _path("train.tgt")),
                                  src_vocab, tgt_vocab, 30, 30)
    held_out = data.read_parallel(_path("dev.src"), _path("dev.tgt"))[:200]
    context = (context_lib.ACVIContext(kl="bound", kl_weight=KL_WEIGHT, seed=1)
               if mode == "acvi" else None)
    model = model_lib.NMTModel(src_vocab.size(), tgt_vocab.size(), 64, encoder_type="bi",
                               dropout=0.0, context_layer=context)
    optimizer = tf.keras.optimizers.Adam(0.01)
    kl_weight = KL_WEIGHT if mode == "acvi" else 0.0

    @tf.function(input_signature=[data.BATCH_SIGNATURE], autograph=False)
    def train_step(batch):
        with tf.GradientTape() as tape:
            out = model(batch, training=True)
            loss = (losses.sequence_loss(out["logits"], batch["tgt_out"], batch["tgt_len"])[0]
                    + kl_weight * losses.per_sequence(out["kl"], batch["tgt_len"]))
        grads, _ = tf.clip_by_global_norm(tape.gradient(loss, model.trainable_variables), 5.0)
        optimizer.apply_gradients(zip(grads, model.trainable_variables))
        return loss

    for step, batch in enumerate(data.train_dataset(examples, 64, 30, 5, seed=1)):
        assert np.isfinite(float(train_step(batch)))
        if step + 1 == 400:
            break
    translator = translate.Translator(model, tgt_vocab, "greedy", 0, 0.0)
    hypotheses = translator.translate([src for src, _ in held_out], src_vocab, 100)
    accuracy = np.mean([h == ref for h, (_, ref) in zip(hypotheses, held_out)])
    assert accuracy > 0.6, (mode, accuracy)
