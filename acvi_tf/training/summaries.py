"""Attention heat maps: a matplotlib PNG and a TensorBoard image of one alignment."""

import io
from typing import Optional, Sequence, Union

import matplotlib

matplotlib.use("Agg")  # no display: render to memory
import matplotlib.pyplot as plt
import numpy as np
import tensorflow as tf


def attention_png(
    attention: np.ndarray,
    source_tokens: Sequence[str],
    target_tokens: Sequence[str],
    title: Optional[str] = None,
) -> bytes:
    """Renders an alignment as PNG bytes: target tokens down, source tokens across.

    Args:
      attention: [len(target_tokens), >= len(source_tokens)] attention probabilities
        (padding columns beyond the source are dropped).
      source_tokens, target_tokens: the words labelling the axes.
      title: optional figure title.

    Returns:
      The PNG file contents.
    """
    attention = np.asarray(attention)[: len(target_tokens), : len(source_tokens)]
    width = max(4.0, 0.35 * len(source_tokens) + 1.5)
    height = max(3.0, 0.35 * len(target_tokens) + 1.5)
    figure, axes = plt.subplots(figsize=(width, height))
    try:
        image = axes.imshow(attention, cmap="viridis", vmin=0.0, vmax=1.0, aspect="auto")
        axes.set_xticks(range(len(source_tokens)))
        axes.set_xticklabels(source_tokens, rotation=90)
        axes.set_yticks(range(len(target_tokens)))
        axes.set_yticklabels(target_tokens)
        figure.colorbar(image, ax=axes)
        if title:
            axes.set_title(title)
        figure.tight_layout()
        buffer = io.BytesIO()
        figure.savefig(buffer, format="png")
        return buffer.getvalue()
    finally:
        plt.close(figure)


def write_attention_image(
    name: str,
    attention: np.ndarray,
    source_tokens: Sequence[str],
    target_tokens: Sequence[str],
    step: Union[tf.Tensor, int],
) -> bytes:
    """Writes the heat map as an image summary to the default TensorBoard writer."""
    png = attention_png(attention, source_tokens, target_tokens)
    image = tf.image.decode_png(png, channels=4)[tf.newaxis]
    tf.summary.image(name, image, step=step)
    return png
