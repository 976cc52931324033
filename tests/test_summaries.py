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


def test_a_long_sentence_shrinks_the_cells_not_the_image():
    """An untrained model's output runs to its length limit: 292 tokens over a 118-token
    source stay within 2,550 pixels a side (24 inches of cells and 1.5 of margin at
    100 dpi); a short one keeps 0.35-inch cells."""
    attention = np.ones([292, 118]) / 118
    long = tf.image.decode_png(summaries.attention_png(attention, *_tokens(118, 292)))
    assert long.shape[0] <= 2550 and long.shape[1] <= 2550, long.shape
    short = tf.image.decode_png(summaries.attention_png(np.eye(20), *_tokens(20, 20)))
    assert short.shape[0] == short.shape[1] == int((20 * 0.35 + 1.5) * 100)


def _tokens(source, target):
    return ["s%d" % i for i in range(source)], ["t%d" % i for i in range(target)]
