"""Batched beam-search captioning with a ``Captioner`` (no flags: a library).

arctic-capgen-vid decodes with beam 5 up to 50 words and keeps the finished hypothesis of
lowest total negative log-likelihood, with no length normalisation; that is the default
here (``length_normalization="none"``). The beam itself is ``acvi_tf.inference.beam_search``'s.
"""

from typing import Any, Callable, Dict, List, Optional, Tuple

import numpy as np
import tensorflow as tf

from acvi_tf.inference import decoding
from video_caption import data


class CaptionDecoder:
    """Captions clips with beam search (``beam_size`` 1 is greedy).

    Args:
      model: a built ``Captioner``.
      vocab: its ``data.Vocab``.
      beam_size: hypotheses kept per clip.
      max_length: most words per caption.
      length_normalization: ``"none"`` (arctic-capgen-vid), ``"average"`` or ``"gnmt"``.
      jit_compile: compile the search with XLA (build the model with ``jit_compile`` too);
        one program per batch size, as every clip has the same number of frames. Without
        it, the clips whose search has ended leave the loop (``SearchSettings.shrink``).

    Attributes:
      search: the compiled beam search, ``{features [B, K, D], num_frames [B]} ->
        decoding.decode's dict`` with the attention.
    """

    def __init__(
        self,
        model: decoding.DecodingModel,
        vocab: data.Vocab,
        beam_size: int = 5,
        max_length: int = 50,
        length_normalization: str = "none",
        jit_compile: bool = False,
    ) -> None:
        self.model = model
        self.vocab = vocab
        settings = decoding.SearchSettings(
            max_length,
            data.BOS_ID,
            data.EOS_ID,
            beam_size=beam_size,
            length_normalization=length_normalization,
            probabilities=model.probability_scores,
            record_extras=True,
            shrink=not jit_compile,
        )
        self.search = decoding.compile_decode(
            model,
            lambda inputs: decoding.STRATEGIES["see_beam"](settings),
            dict(
                features=tf.TensorSpec([None, None, None], tf.float32),
                num_frames=tf.TensorSpec([None], tf.int32),
            ),
            jit_compile,
        )

    def caption(
        self, features: tf.Tensor, num_frames: tf.Tensor
    ) -> List[Tuple[List[str], np.ndarray]]:
        """Captions of a batch.

        Args:
          features: [B, K, D] float32; num_frames: [B] int32.

        Returns:
          A list of ``(words, attention [len(words), K])`` per clip: row t is the
          attention of the step that produced word t.
        """
        out = self.search(dict(features=features, num_frames=num_frames))
        results = []
        for ids, length, attn in zip(
            out["ids"].numpy(), out["lengths"].numpy(), out["attn"].numpy()
        ):
            words = self.vocab.decode(ids[:length].tolist())
            results.append((words, attn[:length]))
        return results

    def caption_set(
        self, clip_set: Any, batch_size: int, progress: Optional[Callable[[int], None]] = None
    ) -> Tuple[Dict[str, str], Dict[str, np.ndarray]]:
        """``{clip: caption}`` and ``{clip: attention}`` for every clip of a ``ClipSet``;
        ``progress`` (e.g. an ``acvi_tf.progress.Progress``) is told the count done after
        each batch."""
        captions, attentions = {}, {}
        for records, batch in clip_set.clip_batches(batch_size):
            for record, (words, attn) in zip(
                records, self.caption(batch["features"], batch["num_frames"])
            ):
                captions[record["clip"]] = " ".join(words)
                attentions[record["clip"]] = attn
            if progress:
                progress(len(captions))
        return captions, attentions
