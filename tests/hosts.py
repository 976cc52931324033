"""Tiny models of the three hosts with a fixed batch each, for tests that run one
mechanism through every host: ``HOST_SETUPS[host]`` is ``(build, batch, outputs)`` where
``build(context_layer, seed)`` makes the model (``context_layer`` None: soft attention),
``batch()`` the batch and ``outputs(model, batch)`` a dict of training-mode outputs with
the NLL."""

import numpy as np
import tensorflow as tf

from acvi_tf.compat import keras
from acvi_tf.training import losses as seq_losses
from nmt import model as nmt_lib
from pointer_generator import losses as pg_losses
from pointer_generator import model as pg_lib
from video_caption import data as vc_data
from video_caption import model as vc_lib

HOSTS = ("summarizer", "nmt", "captioner")

# Summarizer sizes: vocabulary, LSTM units, embedding; batch, article, summary length.
PG_V, PG_H, PG_E = 10, 3, 4
PG_B, PG_N, PG_T = 2, 5, 4


# ----------------------------------------------------------------------------------------
# Summarizer (pointer-generator)


def pg_batch():
    rng = np.random.default_rng(0)
    mask = np.array([[1, 1, 1, 1, 1], [1, 1, 1, 0, 0]], np.float32)
    enc = np.where(mask > 0, rng.integers(4, PG_V, size=(PG_B, PG_N)), 1).astype(np.int32)
    ext = enc.copy()
    ext[0, 2] = PG_V  # one article OOV, copied into the target below
    enc[0, 2] = 0
    target = rng.integers(4, PG_V, size=(PG_B, PG_T)).astype(np.int32)
    target[0, 1] = PG_V
    return dict(
        enc_batch=enc,
        enc_padding_mask=mask,
        enc_batch_extend_vocab=ext,
        dec_batch=rng.integers(2, PG_V, size=(PG_B, PG_T)).astype(np.int32),
        target_batch=target,
        dec_padding_mask=np.array([[1, 1, 1, 1], [1, 1, 1, 0]], np.float32),
    )


def pg_model(context_layer, seed):
    # Large initial weights, so that every path carries a clearly non-zero signal.
    keras.utils.set_random_seed(seed)
    return pg_lib.PointerGenerator(
        PG_V,
        hidden_dim=PG_H,
        emb_dim=PG_E,
        context_layer=context_layer,
        rand_unif_init_mag=0.5,
        trunc_norm_init_std=0.5,
    )


def pg_outputs(model, batch):
    out = model(batch, training=True, coverage_on=True)
    final = pg_losses.final_distribution(
        tf.nn.softmax(out["vocab_logits"]),
        out["attn"],
        tf.sigmoid(out["p_gen_logit"]),
        batch["enc_batch_extend_vocab"],
        1,
    )
    nll = pg_losses.compute_losses(out, batch, coverage_on=True)["loss"]
    return dict(
        vocab_logits=out["vocab_logits"],
        p_gen_logit=out["p_gen_logit"],
        attn=out["attn"],
        final=final,
        nll=nll,
    )


# ----------------------------------------------------------------------------------------
# NMT

NMT_SRC_V, NMT_TGT_V, NMT_U = 11, 9, 4


def nmt_batch():
    rng = np.random.default_rng(1)
    src_len = np.array([5, 3], np.int32)
    src = np.where(
        np.arange(5)[None] < src_len[:, None], rng.integers(3, NMT_SRC_V, (2, 5)), 2
    ).astype(np.int32)
    return dict(
        src=src,
        src_len=src_len,
        tgt_in=rng.integers(3, NMT_TGT_V, (2, 4)).astype(np.int32),
        tgt_out=rng.integers(3, NMT_TGT_V, (2, 4)).astype(np.int32),
        tgt_len=np.array([4, 3], np.int32),
    )


def nmt_model(context_layer, seed):
    keras.utils.set_random_seed(seed)
    return nmt_lib.NMTModel(
        NMT_SRC_V, NMT_TGT_V, NMT_U, dropout=0.0, init_weight=0.5, context_layer=context_layer
    )


def nmt_outputs(model, batch):
    out = model(batch, training=True)
    nll = seq_losses.sequence_loss(out["logits"], batch["tgt_out"], batch["tgt_len"])[0]
    return dict(logits=out["logits"], attn=out["attn"], nll=nll)


# ----------------------------------------------------------------------------------------
# Captioner

VC_VOCAB, VC_FEATURES = 11, 6


def vc_batch():
    rng = np.random.default_rng(2)
    frames = [4, 2]
    features = [rng.normal(size=[4, VC_FEATURES]).astype(np.float32) for _ in frames]
    for clip, count in zip(features, frames):
        clip[count:] = 0.0
    return vc_data.make_batch(features, frames, [[5, 6, 7], [8, 9]])


def vc_model(context_layer, seed):
    keras.utils.set_random_seed(seed)
    return vc_lib.Captioner(
        vocab_size=VC_VOCAB,
        encoder_units=4,
        decoder_units=5,
        embedding_dim=3,
        attention_units=3,
        output_units=6,
        dropout=0.0,
        context_layer=context_layer,
    )


def vc_outputs(model, batch):
    out = model(batch, training=True)
    nll = seq_losses.sequence_loss(out["logits"], batch["caption_out"], batch["caption_len"])[0]
    return dict(logits=out["logits"], attn=out["attn"], nll=nll)


HOST_SETUPS = dict(
    summarizer=(pg_model, pg_batch, pg_outputs),
    nmt=(nmt_model, nmt_batch, nmt_outputs),
    captioner=(vc_model, vc_batch, vc_outputs),
)
