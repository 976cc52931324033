"""TensorBoard's pictures: attention heat maps (matplotlib PNGs and image summaries) and
the training job's posterior summaries of a fixed validation batch (histograms of sigma,
attention entropy, the per-step KL and p_gen; images of attention and of the noise scale;
the decoded text)."""

import io
from typing import Any, Callable, Dict, NamedTuple, Optional, Sequence, Tuple, Union

import numpy as np
import tensorflow as tf

from acvi_tf.contexts import context as context_lib

# A heat map's cells are 0.35 inches (labels at 10 points) until its longer axis would
# pass 24 inches (2,400 pixels at matplotlib's 100 dpi); a longer sentence gets smaller
# cells and labels instead, down to 3 points. The image stays within 2,550 pixels a side:
# an untrained model's output of a few hundred tokens would otherwise draw one of tens
# of megapixels into every validation's summaries.
_CELL_INCHES = 0.35
_MAX_CELLS_INCHES = 24.0
_MARGIN = 1.5  # inches for the labels and the colour bar


def _cell_size(tokens: int) -> Tuple[float, float]:
    """``(cell inches, label points)`` for a heat map of ``tokens`` on its longer axis."""
    cell = min(_CELL_INCHES, _MAX_CELLS_INCHES / max(tokens, 1))
    return cell, float(np.clip(cell * 72 * 0.8, 3.0, 10.0))


def heat_map_png(
    values: np.ndarray,
    source_tokens: Sequence[str],
    target_tokens: Sequence[str],
    title: Optional[str] = None,
    vmax: Optional[float] = 1.0,
    cmap: str = "viridis",
) -> bytes:
    """Renders a [target, source] array as PNG bytes: target tokens down, source tokens
    across.

    Args:
      values: [len(target_tokens), >= len(source_tokens)] non-negative values (padding
        columns beyond the source are dropped).
      source_tokens, target_tokens: the words labelling the axes (no target token: one
        blank row labelled "(empty)").
      title: optional figure title.
      vmax: the colour scale's top (None: the largest value); its bottom is 0.
      cmap: the matplotlib colour map.

    Returns:
      The PNG file contents.
    """
    values = np.asarray(values)[: len(target_tokens), : len(source_tokens)]
    if not len(target_tokens):  # an empty output: one blank row keeps the axes valid
        target_tokens, values = ["(empty)"], np.zeros([1, len(source_tokens)])
    cell, font = _cell_size(max(len(source_tokens), len(target_tokens)))
    width = max(4.0, cell * len(source_tokens) + _MARGIN)
    height = max(3.0, cell * len(target_tokens) + _MARGIN)
    # imported here: matplotlib takes about half a second to import, which a command
    # that draws no picture need not pay; a Figure of its own (not pyplot's) renders to
    # memory without a display or any global state
    from matplotlib.figure import Figure

    figure = Figure(figsize=(width, height))
    axes = figure.subplots()
    image = axes.imshow(values, cmap=cmap, vmin=0.0, vmax=vmax, aspect="auto")
    axes.set_xticks(range(len(source_tokens)))
    axes.set_xticklabels(source_tokens, rotation=90, fontsize=font)
    axes.set_yticks(range(len(target_tokens)))
    axes.set_yticklabels(target_tokens, fontsize=font)
    figure.colorbar(image, ax=axes)
    if title:
        axes.set_title(title)
    figure.tight_layout()
    buffer = io.BytesIO()
    figure.savefig(buffer, format="png")
    return buffer.getvalue()


def attention_png(
    attention: np.ndarray,
    source_tokens: Sequence[str],
    target_tokens: Sequence[str],
    title: Optional[str] = None,
) -> bytes:
    """Renders an alignment (probabilities, [target, >= source]) as PNG bytes on a 0-1
    colour scale (``heat_map_png``)."""
    return heat_map_png(attention, source_tokens, target_tokens, title)


def _png_image(png: bytes) -> tf.Tensor:
    """PNG bytes as the [1, H, W, 4] batch ``tf.summary.image`` takes."""
    return tf.image.decode_png(png, channels=4)[tf.newaxis]


def write_attention_image(
    name: str,
    attention: np.ndarray,
    source_tokens: Sequence[str],
    target_tokens: Sequence[str],
    step: Union[tf.Tensor, int],
) -> bytes:
    """Writes the heat map as an image summary to the default TensorBoard writer."""
    png = attention_png(attention, source_tokens, target_tokens)
    tf.summary.image(name, _png_image(png), step=step)
    return png


# The posterior of one fixed example and a small batch, from the training job: what
# each host's forward pass gives (``posterior_tensors``), read back as NumPy.
class PosteriorView(NamedTuple):
    """One forward pass's posterior, as NumPy arrays.

    Attributes:
      attention: ``a_t,i``, [B, T, N].
      source_mask: 1 at real source positions, [B, N].
      target_mask: 1 at real decoder steps, [B, T].
      kl: the per-step KL, [B, T] (zeros for soft attention).
      sigma: the per-position scale ``sqrt(mean_d sigma_i,d^2)``, [B, N]; None for a
        context layer without one (soft attention).
      p_gen: the generation probability, [B, T]; None for a host without a copy switch.
    """

    attention: np.ndarray
    source_mask: np.ndarray
    target_mask: np.ndarray
    kl: np.ndarray
    sigma: Optional[np.ndarray] = None
    p_gen: Optional[np.ndarray] = None


def posterior_tensors(
    outputs: Dict[str, Any],
    target_mask: tf.Tensor,
    context_layer: context_lib.ContextLayer,
    p_gen_logit: Optional[tf.Tensor] = None,
) -> Dict[str, tf.Tensor]:
    """The ``PosteriorView`` fields of a host model's outputs, as tensors.

    Args:
      outputs: a host model's ``call`` outputs with ``attn`` [B, T, N], ``kl`` [B, T]
        and ``prepared`` (the context layer's ``PreparedMemory``).
      target_mask: [B, T], nonzero at real decoder steps.
      context_layer: the model's context layer, whose ``report_posterior`` gives the
        posterior's scale per source position where the mechanism has one.
      p_gen_logit: [B, T] logits of ``p_gen`` (the summarizer with ``pointer_gen``).

    Returns:
      The fields by name (``sigma`` and ``p_gen`` only when the model has them); a
      ``tf.function`` can return it and ``PosteriorView(**numpy)`` reads it.
    """
    prepared = outputs["prepared"]
    tensors = dict(
        attention=tf.cast(outputs["attn"], tf.float32),
        source_mask=prepared.mask,
        target_mask=tf.cast(target_mask, tf.float32),
        kl=tf.cast(outputs["kl"], tf.float32),
    )
    sigma = context_layer.report_posterior(tensors["attention"], prepared).get("sigma")
    if sigma is not None:
        tensors["sigma"] = sigma
    if p_gen_logit is not None:
        tensors["p_gen"] = tf.sigmoid(tf.cast(p_gen_logit, tf.float32))
    return tensors


def posterior_forward(
    model: Any,
    batch: Dict[str, tf.Tensor],
    target_mask: tf.Tensor,
    p_gen: bool = False,
) -> Callable[..., PosteriorView]:
    """A compiled inference-mode pass of ``model`` over a fixed ``batch``.

    Inference mode: no dropout, and the context as decoding forms it (ACVI: the
    posterior's mean unless its ``decode`` is ``"sample"``).

    Args:
      model: a host model whose ``call(batch, training=False, **options)`` gives
        ``attn``, ``kl`` and ``prepared`` (and ``p_gen_logit`` with ``p_gen``).
      batch: the fixed batch, as the model's ``call`` takes it.
      target_mask: [B, T], nonzero at the batch's real decoder steps.
      p_gen: read ``p_gen_logit`` from the outputs.

    Returns:
      ``(**options) -> PosteriorView`` under the model's current weights; ``options``
      are Python values of the model's call (one trace each).
    """

    @tf.function(autograph=False)
    def forward(**options):
        outputs = model(batch, training=False, **options)
        p_gen_logit = outputs["p_gen_logit"] if p_gen else None
        return posterior_tensors(outputs, target_mask, model.context_layer, p_gen_logit)

    return lambda **options: PosteriorView(
        **{name: value.numpy() for name, value in forward(**options).items()}
    )


def attention_entropy(attention: np.ndarray) -> np.ndarray:
    """``-sum_i a_t,i log a_t,i`` in nats, [..., T] for attention [..., T, N]."""
    logs = np.log(np.where(attention > 0, attention, 1.0))
    return -np.sum(attention * logs, axis=-1)


def noise_scale(view: PosteriorView, example: int = 0) -> np.ndarray:
    """``a_t,i sigma_i`` [T, N] of one example: the scale of the noise that source
    position i adds to step t's context (approximate sampling draws ``sum_i a_t,i
    sigma_i eps_t,i``, whose scale is the root of a row's sum of squares)."""
    return view.attention[example] * view.sigma[example][np.newaxis]


def write_histograms(view: PosteriorView) -> None:
    """Writes ``posterior/*`` histograms over the real positions and steps of the
    view's batch to the default writer (at its default step)."""
    steps = view.target_mask > 0
    tf.summary.histogram("posterior/attention_entropy", attention_entropy(view.attention)[steps])
    tf.summary.histogram("posterior/kl", view.kl[steps])
    if view.sigma is not None:
        tf.summary.histogram("posterior/sigma", view.sigma[view.source_mask > 0])
    if view.p_gen is not None:
        tf.summary.histogram("posterior/p_gen", view.p_gen[steps])


def write_example_images(
    view: PosteriorView,
    source_tokens: Sequence[str],
    target_tokens: Sequence[str],
    step: Union[tf.Tensor, int],
) -> None:
    """Writes the first example's attention (``example/attention``) and, with a scale,
    its noise scale ``a_t,i sigma_i`` (``example/sigma``) over the same axes."""
    write_attention_image(
        "example/attention", view.attention[0], source_tokens, target_tokens, step
    )
    if view.sigma is not None:
        png = heat_map_png(
            noise_scale(view)[: len(target_tokens), : len(source_tokens)],
            source_tokens,
            target_tokens,
            title="noise scale a_t,i sigma_i",
            vmax=None,
            cmap="magma",
        )
        tf.summary.image("example/sigma", _png_image(png), step=step)


class PosteriorSummaries:
    """The training job's posterior summaries of a fixed validation batch.

    Every ``histogram_steps`` steps: the ``posterior/*`` histograms of the batch
    (``write_histograms``); every ``image_steps``: the first example's images
    (``write_example_images``) and its decoded text (``example/decoded``). Called with
    the global step after each training step (a ``Trainer``'s ``after_step``).

    Args:
      writer: the training job's ``tf.summary`` writer.
      forward: ``() -> PosteriorView`` of the fixed batch under the current weights.
      source_tokens, target_tokens: the first example's axis labels (its reference).
      decode: ``() -> str``, the first example's decoded text in Markdown.
      histogram_steps: histogram cadence (0: none).
      image_steps: image and text cadence (0: none).
    """

    def __init__(
        self,
        writer: tf.summary.SummaryWriter,
        forward: Callable[[], PosteriorView],
        source_tokens: Sequence[str],
        target_tokens: Sequence[str],
        decode: Callable[[], str],
        histogram_steps: int,
        image_steps: int,
    ) -> None:
        self.writer = writer
        self.forward = forward
        self.source_tokens = list(source_tokens)
        self.target_tokens = list(target_tokens)
        self.decode = decode
        self.histogram_steps = histogram_steps
        self.image_steps = image_steps

    def __call__(self, step: int) -> None:
        """Writes what is due at ``step``."""
        histograms = bool(self.histogram_steps) and step % self.histogram_steps == 0
        images = bool(self.image_steps) and step % self.image_steps == 0
        if not (histograms or images):
            return
        view = self.forward()
        with self.writer.as_default(step=step):
            if histograms:
                write_histograms(view)
            if images:
                write_example_images(view, self.source_tokens, self.target_tokens, step)
                tf.summary.text("example/decoded", self.decode())
