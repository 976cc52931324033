"""Checkpoints move between the lanes (docs/install.md).

``tests/data/lane_checkpoints/<lane>/`` holds, for each host, a tiny ACVI model and its
Adam state after one training step, written on that lane, and the model's inference
outputs on a fixed batch. On whichever lane the suite runs, every committed checkpoint
must restore with every variable matched (model and optimizer) and give the same
outputs. Write a lane's files again with ``python tests/test_lane_checkpoints.py`` in
that lane's environment.
"""

import os
import sys

import numpy as np
import pytest
import tensorflow as tf

from acvi_tf import compat
from acvi_tf.compat import keras
from acvi_tf.contexts import acvi as acvi_lib
from nmt import model as nmt_lib
from pointer_generator import model as pg_lib
from video_caption import data as vc_data
from video_caption import model as vc_lib

DATA = os.path.join(os.path.dirname(os.path.abspath(__file__)), "data", "lane_checkpoints")
LANES = ("current", "tf215")


def _summarizer():
    batch = dict(
        enc_batch=[[4, 5, 6, 7], [8, 9, 4, 1]],
        enc_padding_mask=[[1, 1, 1, 1], [1, 1, 1, 0]],
        enc_batch_extend_vocab=[[4, 10, 6, 7], [8, 9, 4, 1]],
        dec_batch=[[2, 5, 6], [2, 7, 8]],
        target_batch=[[5, 10, 3], [7, 8, 3]],
        dec_padding_mask=[[1, 1, 1], [1, 1, 0]],
    )
    batch = {k: np.array(v, np.float32 if "mask" in k else np.int32) for k, v in batch.items()}
    model = pg_lib.PointerGenerator(10, hidden_dim=3, emb_dim=4, context_layer=_acvi())
    return model, batch, lambda out: out["vocab_logits"]


def _translator():
    batch = dict(
        src=np.array([[3, 4, 5, 6, 7], [8, 9, 10, 2, 2]], np.int32),
        src_len=np.array([5, 3], np.int32),
        tgt_in=np.array([[1, 3, 4, 5], [1, 6, 7, 8]], np.int32),
        tgt_out=np.array([[3, 4, 5, 2], [6, 7, 8, 2]], np.int32),
        tgt_len=np.array([4, 4], np.int32),
    )
    model = nmt_lib.NMTModel(11, 9, 4, encoder_type="bi", dropout=0.0, context_layer=_acvi())
    return model, batch, lambda out: out["logits"]


def _captioner():
    rng = np.random.default_rng(2)
    features = [rng.normal(size=[4, 6]).astype(np.float32) for _ in range(2)]
    features[1][2:] = 0.0
    batch = vc_data.make_batch(features, [4, 2], [[5, 6, 7], [8, 9]])
    model = vc_lib.Captioner(
        vocab_size=11,
        encoder_units=4,
        decoder_units=5,
        embedding_dim=3,
        attention_units=3,
        output_units=6,
        dropout=0.0,
        context_layer=_acvi(),
    )
    return model, batch, lambda out: out["logits"]


HOSTS = {"summarizer": _summarizer, "translator": _translator, "captioner": _captioner}


def _acvi():
    return acvi_lib.ACVIContext(seed=1, name="context")


def _build(host):
    """``(checkpoint, model, batch, output)``: the host's model called once, and Adam."""
    keras.utils.set_random_seed(7)
    model, batch, output = HOSTS[host]()
    model(batch, training=False)
    optimizer = keras.optimizers.Adam(0.01)
    optimizer.build(model.trainable_variables)
    return tf.train.Checkpoint(model=model, optimizer=optimizer), model, batch, output


def _lane():
    return "tf215" if compat.TF_VERSION < (2, 16) else "current"


def write(lane_dir):
    """Writes each host's checkpoint after one Adam step, and its outputs, to ``lane_dir``."""
    for host in HOSTS:
        ckpt, model, batch, output = _build(host)
        with tf.GradientTape() as tape:
            loss = tf.reduce_mean(tf.square(output(model(batch, training=False))))
        grads = tape.gradient(loss, model.trainable_variables)
        ckpt.optimizer.apply_gradients(
            [(g, v) for g, v in zip(grads, model.trainable_variables) if g is not None]
        )
        ckpt.write(os.path.join(lane_dir, host))
        np.save(os.path.join(lane_dir, host + ".npy"), output(model(batch, training=False)).numpy())


@pytest.mark.parametrize("host", sorted(HOSTS))
@pytest.mark.parametrize("lane", LANES)
def test_a_checkpoint_of_either_lane_restores_here(lane, host):
    lane_dir = os.path.join(DATA, lane)
    ckpt, model, batch, output = _build(host)
    before = output(model(batch, training=False)).numpy()
    ckpt.read(os.path.join(lane_dir, host)).assert_consumed()
    assert int(ckpt.optimizer.iterations) == 1
    expected = np.load(os.path.join(lane_dir, host + ".npy"))
    after = output(model(batch, training=False)).numpy()
    assert not np.allclose(before, expected, rtol=1e-2, atol=0)  # the restore did the work
    np.testing.assert_allclose(after, expected, rtol=1e-5, atol=1e-6)


if __name__ == "__main__":
    target = os.path.join(DATA, _lane())
    os.makedirs(target, exist_ok=True)
    write(target)
    print("wrote", target, file=sys.stderr)
