"""bench/peers.py's tfa.seq2seq peer computes this project's NMT model: the same loss and
the same beam-search translations from the copied weights, on a small batch.

tensorflow-addons runs on the tf215 lane only; elsewhere the test is skipped.
"""

import os
import sys

import numpy as np
import pytest

from acvi_tf import compat
from acvi_tf.training import losses
from nmt import translator as translator_lib

if compat.TF_VERSION >= (2, 16):
    pytest.skip(
        "tensorflow-addons runs on the tf215 lane only (TensorFlow 2.15); this is "
        "TensorFlow %d.%d" % compat.TF_VERSION,
        allow_module_level=True,
    )
import tensorflow_addons as tfa

sys.path.insert(0, os.path.join(os.path.dirname(os.path.dirname(__file__)), "bench"))
import peers  # noqa: E402 (bench/ is not a package)

pytestmark = pytest.mark.filterwarnings("ignore::UserWarning")


def test_the_tfa_model_gives_our_loss_and_translations():
    compat.keras.utils.set_random_seed(0)
    batch = peers.random_batch(3, 6, 5)
    model = peers.our_model(batch)
    peer = peers.TfaNMT(model, tfa, batch)
    out = model(batch)
    ours = losses.sequence_loss(out["logits"], batch["tgt_out"], batch["tgt_len"])[0]
    np.testing.assert_allclose(peer.loss(batch), ours, rtol=1e-6)
    src, src_len = batch["src"], batch["src_len"]
    translations = translator_lib.Translator(model, None, "beam_search", 4, 1.0).search(
        dict(src=src, src_len=src_len)
    )
    assert peers.identical_translations(translations, peer.beam_search(src, src_len, 4, 1.0)) == (
        3,
        3,
    )
