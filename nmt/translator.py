"""Batched greedy, sampled or beam-search translation with an ``NMTModel``."""

from typing import Any, Callable, Dict, List, Optional, Sequence, Tuple

import numpy as np
import tensorflow as tf

from acvi_tf.formats import nmt_text
from acvi_tf.inference import decoding
from nmt import data

# tensorflow/nmt's --infer_mode values and the search strategy each names.
INFER_MODES = {"beam_search": "gnmt_beam", "greedy": "greedy", "sample": "sample"}

# Under XLA, source batches are padded to a multiple of this many tokens: one compiled
# program per multiple (and per batch size) rather than one per longest sentence.
XLA_LENGTH_MULTIPLE = 16


class Translator:
    """Batched greedy, sampled or beam-search translation with an ``NMTModel``.

    Args:
      model: a built ``NMTModel``.
      vocabs: the run's source and target vocabularies (None: only ``search`` is used).
      infer_mode: tensorflow/nmt's: ``"beam_search"`` (its beam search), ``"greedy"``
        or ``"sample"`` (``INFER_MODES``).
      beam_width: hypotheses kept per sentence (beam search).
      length_penalty_weight: alpha of the GNMT length penalty (beam search).
      jit_compile: compile the search with XLA (build the model with ``jit_compile`` too).
        Batches are padded to a multiple of ``XLA_LENGTH_MULTIPLE`` tokens; the step limit
        stays tensorflow/nmt's twice the longest source, so translations do not change.
      sampling_temperature: the softmax temperature of ``"sample"``.
      random_seed: the seed of ``"sample"``'s draws.

    Attributes:
      search: the compiled search, ``{src [B, S] int32, src_len [B]} -> {ids, lengths,
        scores}``.
    """

    def __init__(
        self,
        model: decoding.DecodingModel,
        vocabs: Optional[data.Vocabs],
        infer_mode: str,
        beam_width: int,
        length_penalty_weight: float,
        jit_compile: bool = False,
        sampling_temperature: float = 1.0,
        random_seed: int = 0,
    ) -> None:
        self.model = model
        self.vocabs = vocabs
        self.length_multiple = XLA_LENGTH_MULTIPLE if jit_compile else 1
        signature = dict(
            src=tf.TensorSpec([None, None], tf.int32), src_len=tf.TensorSpec([None], tf.int32)
        )

        def searched(name, record_extras=False):
            def strategy_for(inputs):
                # The output width follows the padded shape (a compile-time constant under
                # XLA); the search stops at tensorflow/nmt's limit, twice the longest source.
                return decoding.STRATEGIES[name](
                    decoding.SearchSettings(
                        2 * tf.shape(inputs["src"])[1],
                        nmt_text.SOS_ID,
                        nmt_text.EOS_ID,
                        beam_size=beam_width if name == "gnmt_beam" else 1,
                        gnmt_alpha=length_penalty_weight,
                        record_extras=record_extras,
                        step_limit=2 * tf.reduce_max(inputs["src_len"]),
                        temperature=sampling_temperature,
                        seed=random_seed,
                    )
                )

            return strategy_for

        self.search = decoding.compile_decode(
            model, searched(INFER_MODES[infer_mode]), signature, jit_compile
        )
        self._align = decoding.compile_decode(
            model, searched("greedy", True), signature, with_posterior=True
        )

        @tf.function(
            input_signature=[signature["src"], signature["src_len"], signature["src"]],
            autograph=False,
        )
        def force(src, src_len, tgt_in):
            out = model(dict(src=src, src_len=src_len, tgt_in=tgt_in), training=False)
            prepared = dict(prepared=out.get("prepared"))
            return dict(attn=out["attn"], **decoding.posterior(model, prepared, out["attn"]))

        self._force = force

    def alignment(
        self, src_line: str, translation: Optional[str] = None
    ) -> Tuple[List[str], np.ndarray]:
        """``(target tokens, attention [T, S])`` of one sentence's ``translation`` (None:
        the greedy one), as ``inspect`` finds them."""
        found = self.inspect(src_line, translation)
        return found["words"], found["attn"]

    def inspect(self, src_line: str, translation: Optional[str] = None) -> Dict[str, Any]:
        """One sentence's translation with what its decoder steps computed (NumPy).

        Args:
          src_line: the source sentence (tokens).
          translation: a translation of it (tokens, e.g. ``translate``'s), whose steps
            are recomputed by one teacher-forced pass: step t's attention depends only on
            the tokens before t, so they equal what the search computed for it. None:
            the greedy translation, with what the search recorded.

        Returns:
          ``words`` (the target tokens), ``attn`` [T, S], what the context mechanism
          shows of its posterior (``decoding.example_posterior``: ``sigma`` [S], ``kl``
          and ``scale`` [T]) and ``labels`` (``report_labels``).
        """
        batch = data.infer_batch(src_line, self.vocabs.src)
        if translation is None:
            out = self._align(dict(src=batch["src"], src_len=batch["src_len"]))
            out = {k: v.numpy()[0] for k, v in out.items()}
            length = int(out["lengths"])
            words = self.vocabs.tgt.decode(out["ids"][:length].tolist())
        else:
            words = translation.split()
            tgt_in = tf.constant([[nmt_text.SOS_ID] + self.vocabs.tgt.encode(words)], tf.int32)
            out = self._force(batch["src"], batch["src_len"], tgt_in)
            out = {k: v.numpy()[0] for k, v in out.items()}
            length = len(words)
        found = dict(words=words, attn=out["attn"][:length])
        found.update(decoding.example_posterior(out, length))
        found["labels"] = decoding.posterior_labels(self.model)
        return found

    def translate(
        self,
        src_lines: Sequence[str],
        batch_size: int,
        progress: Optional[Callable[[int], None]] = None,
    ) -> List[str]:
        """Translations (token strings) of ``src_lines``, in order; ``progress`` (e.g. an
        ``acvi_tf.progress.Progress``) is told the count done after each batch."""
        outputs = []
        for batch in data.infer_dataset(
            src_lines, self.vocabs.src, batch_size, length_multiple=self.length_multiple
        ):
            out = self.search(dict(src=batch["src"], src_len=batch["src_len"]))
            for ids, length in zip(out["ids"].numpy(), out["lengths"].numpy()):
                outputs.append(" ".join(self.vocabs.tgt.decode(ids[:length].tolist())))
            if progress:
                progress(len(outputs))
        return outputs
