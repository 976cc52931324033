"""Attention heat maps render to PNG and to a TensorBoard image summary."""

import warnings

import numpy as np
import tensorflow as tf

from acvi_tf.training import summaries


def test_attention_png_and_image_summary(tmp_path):
    attention = np.eye(3, 5)
    png = summaries.attention_png(attention, ["a", "b", "c", "d"], ["x", "y", "z"], "t")
    assert png.startswith(b"\x89PNG")
    image = tf.image.decode_png(png)
    assert image.shape[0] > 100 and image.shape[1] > 100
    writer = tf.summary.create_file_writer(str(tmp_path))
    with writer.as_default():
        summaries.write_attention_image("attention", attention, list("abcd"), list("xyz"), 3)
    writer.flush()
    events = list(tmp_path.iterdir())
    assert events and events[0].stat().st_size > len(png) // 2


def test_an_empty_output_draws_one_blank_row_without_warnings():
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        png = summaries.attention_png(np.zeros([0, 4]), ["a", "b", "c", "d"], [])
    assert tf.image.decode_png(png).shape[0] > 100
