"""Learning test: on the shipped Debian sample, ACVI lowers the validation loss (soft
attention does too; its model is checked against See's own TF1 graph in
test_see_checkpoint.py and kept out of the suite's time budget).

A small pointer-generator (vocab 5,000, hidden 64, emb 32, 60/12 tokens) trains for 200
Adam steps of 16 examples (about 35 s on 2 CPU cores each); the validation NLL on 200
held-out pairs must fall by more than one nat from its value at initialisation.
"""
import os

import numpy as np
import pytest
import tensorflow as tf

from acvi_tf import context as context_lib
from pointer_generator import batcher as batcher_lib
from pointer_generator import losses as losses_lib
from pointer_generator import model as model_lib
from pointer_generator import vocab as vocab_lib

pytestmark = pytest.mark.slow  # scheduled first (conftest.py)

SAMPLE = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))),
                      "data_prep", "samples", "debian_descriptions")
FIELDS = ("enc_batch", "enc_padding_mask", "enc_batch_extend_vocab", "dec_batch",
          "target_batch", "dec_padding_mask")
STEPS = 200


def _batches(pattern, vocab, batch_size, single_pass, seed=1):
    batcher = batcher_lib.Batcher(os.path.join(SAMPLE, "chunked", pattern), vocab,
                                  batch_size, 60, 12, single_pass=single_pass, seed=seed)
    for batch in batcher.batches():
        yield {k: batch[k] for k in FIELDS}


@pytest.mark.parametrize("mode", ["acvi"])
def test_validation_loss_falls_on_real_data(mode):
    tf.keras.utils.set_random_seed(1)
    vocab = vocab_lib.Vocab(os.path.join(SAMPLE, "vocab"), 5000)
    context = context_lib.ACVIContext(seed=1) if mode == "acvi" else None
    model = model_lib.PointerGenerator(vocab.size(), hidden_dim=64, emb_dim=32,
                                       context_layer=context)
    optimizer = tf.keras.optimizers.Adam(3e-3)
    validation = list(_batches("val_*", vocab, 50, single_pass=True))[:4]

    @tf.function(reduce_retracing=True, autograph=False)
    def train_step(batch):
        with tf.GradientTape() as tape:
            losses = losses_lib.compute_losses(model(batch, training=True), batch)
        variables = model.trainable_variables
        grads, _ = tf.clip_by_global_norm(tape.gradient(losses["total_loss"], variables), 2.0)
        optimizer.apply_gradients([(g, v) for g, v in zip(grads, variables) if g is not None])
        return losses

    @tf.function(reduce_retracing=True, autograph=False)
    def validation_nll(batch):
        return losses_lib.compute_losses(model(batch), batch)["loss"]

    def validation_loss():
        return float(np.mean([validation_nll(b) for b in validation]))

    before = validation_loss()
    for step, batch in enumerate(_batches("train_*", vocab, 16, single_pass=False)):
        losses = train_step(batch)
        assert np.isfinite(float(losses["total_loss"])), step
        if step + 1 == STEPS:
            break
    after = validation_loss()
    assert after < before - 1.0, (mode, before, after)
