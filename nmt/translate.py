"""Batched greedy or beam-search translation with an ``NMTModel`` (no flags: a library)."""
import tensorflow as tf

from acvi_tf import decoding
from nmt import data


class Translator:
    """Batched greedy or beam-search translation with an ``NMTModel``."""

    def __init__(self, model, tgt_vocab, infer_mode, beam_width, length_penalty_weight):
        self.model = model
        self.tgt_vocab = tgt_vocab
        signature = [tf.TensorSpec([None, None], tf.int32), tf.TensorSpec([None], tf.int32)]

        def step_fn(constants):
            """The decoding step: log-probabilities, new state and the attention."""
            def step(tokens, state, t):
                del t
                output, state, attn, context = model.step(model.tgt_embedding(tokens), state,
                                                          constants)
                return (model.log_probs(output, state, attn, context, constants), state,
                        {"attn": attn})
            return step

        @tf.function(input_signature=signature, autograph=False)
        def translate(src, src_len):
            constants, state = model.start(src, src_len)
            max_steps = 2 * tf.reduce_max(src_len)  # tensorflow/nmt's decode limit
            batch = tf.shape(src)[0]
            if infer_mode == "beam_search":
                step = step_fn(decoding.tile_beam(constants, beam_width))
                return decoding.beam_search(
                    step, state, batch, beam_width, max_steps, data.SOS_ID, data.EOS_ID,
                    length_normalization="gnmt", gnmt_alpha=length_penalty_weight)
            return decoding.greedy_search(step_fn(constants), state, batch, max_steps,
                                          data.SOS_ID, data.EOS_ID)

        @tf.function(input_signature=signature, autograph=False)
        def align(src, src_len):
            constants, state = model.start(src, src_len)
            return decoding.beam_search(step_fn(constants), state, tf.shape(src)[0], 1,
                                        2 * tf.reduce_max(src_len), data.SOS_ID, data.EOS_ID,
                                        record_extras=True)

        self._translate = translate
        self._align = align

    def alignment(self, src_line, src_vocab):
        """``(target tokens, attention [T, S])`` of a greedy translation of one sentence."""
        batch = next(iter(data.infer_dataset([src_line], src_vocab, 1)))
        out = self._align(batch["src"], batch["src_len"])
        length = int(out["lengths"][0])
        tokens = self.tgt_vocab.decode(out["ids"][0, :length].numpy().tolist())
        return tokens, out["attn"][0, :length].numpy()

    def translate(self, src_lines, src_vocab, batch_size):
        """Translations (token strings) of ``src_lines``, in order."""
        outputs = []
        for batch in data.infer_dataset(src_lines, src_vocab, batch_size):
            out = self._translate(batch["src"], batch["src_len"])
            for ids, length in zip(out["ids"].numpy(), out["lengths"].numpy()):
                outputs.append(" ".join(self.tgt_vocab.decode(ids[:length].tolist())))
        return outputs
