"""The video captioner of the ACVI paper (section 2.2, section 4.2 and appendix B).

* Encoder: a BiLSTM over the K frame features ``f_1..f_K``; its states ``h_i`` (both
  directions concatenated) are the attention memory. Padded frames are masked.
* Initial decoder state: ``relu(W [h_fw; h_bw] + b)`` of the final encoder states, for
  the LSTM's ``h`` and ``c`` alike (the pointer-generator's reduce-state layers; the paper
  does not say).
* Decoder step t: the LSTM reads ``[E y_{t-1}; c_{t-1}]`` (the previous context, zeros at
  t = 0) and the context layer's sentence latent ``z`` (VED's; width 0 for the others),
  giving ``s_t``; additive
  attention (eq. 1, ``W_h`` and ``W_s`` to ``attention_units``) gives ``a_t``; the
  context layer gives ``c_t`` (SA: ``sum_i a_t,i h_i``; ACVI: a sample, or its mean at
  decode time).
* Output (eq. 4): ``P_t = softmax(V' tanh(V [s_t; c_t] + b) + b')``. The context
  layer's ``token_losses`` turn the gold words' log-likelihoods into the per-step loss
  and its ``output_distribution`` gives a decoding step's ``log P_t`` (Deng et al.'s
  variational attention evaluates eq. (4) at the sampled or every frame state ``h_z``
  in place of ``c_t``).
* Dropout (rate ``dropout``, training only) on the non-recurrent connections, as in
  Zaremba et al., which the paper cites: the encoder's input frames, the decoder LSTM's
  input and ``[s_t; c_t]`` before eq. 4.
The vocabulary projection and the ACVI KL run once on all steps after the loop.
"""

from typing import Any, Dict, Optional, Tuple, Union

import tensorflow as tf

from acvi_tf.compat import keras
from acvi_tf.contexts import attention as attention_lib
from acvi_tf.contexts import context as context_lib
from acvi_tf.contexts import kl_schedule
from acvi_tf.contexts.memory import PreparedMemory
from acvi_tf.layers import recurrent
from acvi_tf.training import objective, teacher_forcing
from video_caption import data


class Captioner(keras.Model):
    """BiLSTM encoder over frame features, attentional LSTM decoder, eq. (4) output.

    Args:
      vocab_size: V, reserved ids included.
      encoder_units: LSTM size of each encoder direction (paper: 1000).
      decoder_units: decoder LSTM size (paper: 1000).
      embedding_dim: word embedding size (paper: 256).
      attention_units: size of the additive attention space (paper: 100).
      output_units: size of ``V [s_t; c_t]`` in eq. (4) (default: ``decoder_units``).
      dropout: dropout rate of the non-recurrent connections (paper: 0.5).
      context_layer: an ``acvi_tf.contexts.context`` layer; soft attention when None.
      jit_compile: build the encoder in the form XLA compiles (``acvi_tf.layers.recurrent``).
      alpha_c: the weight of the doubly-stochastic attention penalty in
        ``compute_loss`` (0: off).
      weight_decay: the weight of the L2 penalty on every kernel in ``compute_loss``
        (0: off).
      kl_terms: the ``kl_schedule.KLSchedule`` of ``compute_loss`` (None: every KL as
        it is).
    """

    def __init__(
        self,
        vocab_size: int,
        encoder_units: int = 1000,
        decoder_units: int = 1000,
        embedding_dim: int = 256,
        attention_units: int = 100,
        output_units: Optional[int] = None,
        dropout: float = 0.5,
        context_layer: Optional[context_lib.ContextLayer] = None,
        jit_compile: bool = False,
        alpha_c: float = 0.0,
        weight_decay: float = 0.0,
        kl_terms: Optional[kl_schedule.KLSchedule] = None,
        **kwargs: Any,
    ) -> None:
        super().__init__(**kwargs)
        self.alpha_c = alpha_c
        self.weight_decay = weight_decay
        self.kl_terms = kl_terms
        self.vocab_size = vocab_size
        self.encoder_units = encoder_units
        self.decoder_units = decoder_units
        self.encoder = keras.layers.Bidirectional(
            recurrent.sequence_lstm(encoder_units, xla=jit_compile), name="encoder"
        )
        self.reduce_h = keras.layers.Dense(decoder_units, activation="relu", name="reduce_h")
        self.reduce_c = keras.layers.Dense(decoder_units, activation="relu", name="reduce_c")
        self.embedding = keras.layers.Embedding(vocab_size, embedding_dim, name="embedding")
        self.cell = keras.layers.LSTMCell(decoder_units, name="decoder_cell")
        self.scorer = attention_lib.AdditiveScorer(attention_units, name="attention")
        self.context_layer = context_layer or context_lib.SoftAttentionContext(name="context")
        self.output_hidden = keras.layers.Dense(
            output_units or decoder_units, activation="tanh", name="V"
        )
        self.vocab_projection = keras.layers.Dense(vocab_size, name="V_prime")
        self.dropout = keras.layers.Dropout(dropout)

    # ``decode_step`` gives log-probabilities (``decoding.DecodingModel``)
    probability_scores = False

    def start(
        self, inputs: Dict[str, tf.Tensor], *, training: bool = False
    ) -> Tuple[Dict[str, Any], Dict[str, tf.Tensor]]:
        """Encodes the frames (``decoding.DecodingModel``).

        Args:
          inputs: ``features`` [B, K, D], the frame features (zero rows past
            ``num_frames``), and ``num_frames`` [B], the real frames per clip.
          training: apply dropout.

        Returns:
          ``(constants, state)``: what every step reads (``keys``, ``prepared``, ``mask``,
          the sentence latent ``z`` and its ``kl_z`` [B]) and the initial decoder state
          (``h``, ``c``, previous ``context``).
        """
        features = inputs["features"]
        mask = tf.sequence_mask(inputs["num_frames"], tf.shape(features)[1])
        features = self.dropout(tf.cast(features, self.compute_dtype), training=training)
        memory, fw_h, fw_c, bw_h, bw_c = self.encoder(features, mask=mask, training=training)
        # the sentence latent reads the final encoder states
        z, kl_z = self.context_layer.sentence_latent(
            tf.concat([fw_h, bw_h], axis=-1), training=training
        )
        constants = dict(
            keys=self.scorer.prepare(memory),
            mask=mask,
            prepared=self.context_layer.prepare(memory, mask),
            z=z,
            kl_z=kl_z,
        )
        state = dict(
            h=self.reduce_h(tf.concat([fw_h, bw_h], axis=-1)),
            c=self.reduce_c(tf.concat([fw_c, bw_c], axis=-1)),
            context=tf.zeros([tf.shape(memory)[0], memory.shape[-1]], self.compute_dtype),
        )
        return constants, state

    def step(
        self,
        y_emb: tf.Tensor,
        state: Dict[str, tf.Tensor],
        constants: Dict[str, Any],
        training: bool = False,
        use_gumbel: Optional[Union[bool, tf.Tensor]] = None,
    ) -> Tuple[tf.Tensor, Dict[str, tf.Tensor], tf.Tensor]:
        """One decoder step.

        Args:
          y_emb: embedded previous words [B, E].
          state: dict ``h``, ``c``, ``context`` (``c_{t-1}``).
          constants: from ``start``.
          training: dropout and ACVI sampling.
          use_gumbel: ACVI's Gumbel path switch.

        Returns:
          ``(output, state, attn)``: ``[s_t; c_t]`` [B, H + 2U], the new state and ``a_t``.
        """
        inputs = [y_emb, state["context"], constants["z"]]
        x = self.dropout(tf.concat(inputs, axis=-1), training=training)
        s, (h, c) = self.cell(x, [state["h"], state["c"]])
        attn = self.scorer(
            s, constants["keys"], constants["mask"], normalizer=self.context_layer.normalizer
        )
        context = self.context_layer.draw(
            attn, constants["prepared"], training=training, use_gumbel=use_gumbel
        )
        return tf.concat([s, context], axis=-1), dict(h=h, c=c, context=context), attn

    def logits(self, output: tf.Tensor, training: bool = False) -> tf.Tensor:
        """Eq. (4) before the softmax: ``V' tanh(V [s_t; c_t] + b) + b'`` (any leading dims)."""
        return self.vocab_projection(self.output_hidden(self.dropout(output, training=training)))

    def log_probs(self, output: tf.Tensor, attn: tf.Tensor, prepared: PreparedMemory) -> tf.Tensor:
        """``log P_t`` [B, V] of a decoding step from ``step``'s output and attention."""
        s = output[..., : self.decoder_units]
        return self.context_layer.output_distribution(
            self.logits(output),
            lambda c: self.logits(context_lib.state_context(s, c)),
            attn,
            prepared,
        )

    def decode_step(
        self, tokens: tf.Tensor, state: Dict[str, tf.Tensor], constants: Dict[str, Any]
    ) -> Tuple[tf.Tensor, Dict[str, tf.Tensor], Dict[str, tf.Tensor]]:
        """One search step (``acvi_tf.inference.decoding``'s protocol): the previous words [B] ->
        ``(log P_t [B, V], state, {"attn": a_t})``."""
        output, state, attn = self.step(self.embedding(tokens), state, constants)
        return self.log_probs(output, attn, constants["prepared"]), state, {"attn": attn}

    def call(
        self,
        batch: Dict[str, tf.Tensor],
        training: bool = False,
        use_gumbel: Optional[Union[bool, tf.Tensor]] = None,
    ) -> Dict[str, Any]:
        """Teacher-forced decoding of ``caption_in``.

        Returns:
          dict: ``logits`` [B, T, V], ``attn`` [B, T, K] (float32), ``kl`` [B, T] and
          ``kl_z`` [B] (VED's sentence-latent KL; zeros otherwise), ``prepared`` (the
          context layer's ``PreparedMemory``) and, when the batch holds ``caption_out``,
          ``token_nll`` [B, T] (the per-step loss of the gold words,
          ``ContextLayer.token_losses``).
        """
        constants, state = self.start(batch, training=training)
        emb = self.embedding(batch["caption_in"])

        def step(y_t, state, prepared_t):
            output, state, attn = self.step(
                y_t, state, dict(constants, prepared=prepared_t), training, use_gumbel
            )
            return state, dict(output=output, attn=attn, context=state["context"])

        dtype = self.compute_dtype
        _, steps_out = teacher_forcing.teacher_forced(
            step,
            emb,
            state,
            dict(output=dtype, attn=tf.float32, context=dtype),
            self.context_layer,
            constants["prepared"],
            training,
            use_gumbel,
        )
        outputs, attns, contexts = steps_out["output"], steps_out["attn"], steps_out["context"]
        out = dict(
            logits=self.logits(outputs, training),
            attn=attns,
            kl=self.context_layer.kl_divergence(contexts, attns, constants["prepared"]),
            kl_z=constants["kl_z"],
            prepared=constants["prepared"],
        )
        if "caption_out" in batch:  # the per-step loss of the gold words
            out["token_nll"], out["kl"] = self.context_layer.token_losses(
                self._gold(batch, out["logits"], outputs, contexts, training),
                attns,
                out["kl"],
                constants["prepared"],
                training,
            )
        return out

    def _gold(self, batch, logits, outputs, contexts, training):
        """The gold words as eq. (4) scores them (``context.GoldTarget``)."""
        gold = batch["caption_out"]
        states = outputs[..., : self.decoder_units]
        return context_lib.GoldTarget(
            soft_log_likelihood=context_lib.gold_log_likelihood(logits, gold),
            log_likelihood=lambda c: context_lib.gold_log_likelihood(
                self.logits(context_lib.state_context(states, c), training), gold
            ),
            embedded=lambda: self.embedding(gold),
            mask=tf.sequence_mask(batch["caption_len"], tf.shape(gold)[1]),
            contexts=contexts,
        )

    # what ``training.make_train_step`` reads: the batch it takes, and the total loss
    batch_signature = data.BATCH_SIGNATURE
    loss_key = "loss"

    def compute_loss(
        self, batch: Dict[str, tf.Tensor], outputs: Dict[str, tf.Tensor], step: tf.Tensor
    ) -> Dict[str, tf.Tensor]:
        """arctic-capgen-vid's loss of ``call``'s outputs, with the context terms.

        ``objective.sequence_objective`` (with the model's ``kl_terms``) plus ``alpha_c``
        times the batch mean of ``attention_penalty`` and, when ``weight_decay`` is on,
        ``weight_decay`` times the squared kernels.

        Args:
          batch: the (sample-tiled) batch the outputs are of.
          outputs: ``call``'s training outputs.
          step: the global step (for the KL schedule).

        Returns:
          The scalars to log: the total under ``loss``, ``nll``, ``attention_penalty``,
          ``tokens`` (target tokens of one copy of the batch) and the context terms' logs.
        """
        lengths = batch["caption_len"]
        results = objective.sequence_objective(
            outputs,
            batch["caption_out"],
            lengths,
            step,
            self.context_layer,
            self.kl_terms,
            total_key=self.loss_key,
        )
        penalty = tf.reduce_mean(attention_penalty(outputs["attn"], lengths, batch["num_frames"]))
        loss = results[self.loss_key] + self.alpha_c * penalty
        if self.weight_decay > 0:  # arctic's; no work in the step when off (the paper)
            kernels = [v for v in self.trainable_variables if "kernel" in v.name]
            loss += self.weight_decay * tf.add_n([tf.reduce_sum(tf.square(k)) for k in kernels])
        return dict(results, **{self.loss_key: loss}, attention_penalty=penalty)


def attention_penalty(attn: tf.Tensor, caption_len: tf.Tensor, num_frames: tf.Tensor) -> tf.Tensor:
    """arctic-capgen-vid's doubly-stochastic term ``sum_i (1 - sum_t a_t,i)^2`` per clip.

    Only real caption steps and real frames count. Returns [B] float32.
    """
    steps = tf.sequence_mask(caption_len, tf.shape(attn)[1], dtype=tf.float32)
    frames = tf.sequence_mask(num_frames, tf.shape(attn)[2], dtype=tf.float32)
    total = tf.reduce_sum(attn * steps[:, :, tf.newaxis], axis=1)  # [B, K]
    return tf.reduce_sum(tf.square(1.0 - total) * frames, axis=-1)
