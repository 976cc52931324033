"""See et al.'s pointer-generator as Keras layers, with the context from ``acvi_tf``.

The layers, their order and their initialisers are the original's (``model.py`` and
``attention_decoder.py``): one embedding shared by encoder and decoder; a bidirectional
LSTM encoder; a ReLU "reduce state" layer; and a decoder step that runs

  1. ``x_t = W_x [y_t; c*_{t-1}] + b_x``        input projection with the previous context
  2. ``(c_t, h_t) = LSTM(x_t, state)``
  3. ``a_t = softmax(v^T tanh(W_h h_i + W_s [c_t; h_t] + w_c cov_i + b_attn))``  masked
  4. ``c*_t`` from the context layer (SA: ``sum_i a_t,i h_i``; ACVI: a sample)
  5. coverage ``cov += a_t``.

Only steps 1-5 feed the recurrence, so they are all the loop does. ``p_gen`` (from
``[c*_t; c_t; h_t; x_t]``), the output projection ``W_o [h_t; c*_t] + b_o``, the 50k-word
vocabulary projection, the copy mixture and the ACVI KL run once over all steps after the
loop. ACVI's sample feeds p_gen, the output projection and the next input projection;
copying and coverage use ``a_t``. The context layer's sentence latent (VED's ``z``;
width 0 for the others) joins the input projection, its ``token_losses`` turn the gold
summary's log-probabilities into the per-step loss, and its ``output_distribution``
gives ``P_vocab`` when decoding (Deng et al.'s variational attention evaluates
``P_vocab`` at the sampled or every encoder state in place of ``c*_t``).
"""

from typing import Any, Dict, List, Optional, Tuple, Union

import tensorflow as tf

from acvi_tf.compat import keras
from acvi_tf.contexts import attention, kl_schedule
from acvi_tf.contexts import context as context_lib
from acvi_tf.contexts.memory import PreparedMemory
from acvi_tf.layers import recurrent
from acvi_tf.training import teacher_forcing
from pointer_generator import batcher as batcher_lib
from pointer_generator import losses as losses_lib


class PointerGenerator(keras.Model):
    """The summarizer: ``call(batch)`` returns per-step tensors; ``losses`` scores them.

    ``w_c`` always exists (512 parameters the original creates only with ``--coverage``)
    and is used only when ``coverage_on``: every checkpoint then holds the same variables,
    so a curriculum or ``convert_to_coverage_model`` switches coverage on by giving ``w_c``
    a fresh initialisation and resetting the optimizer, as the original does.

    Args:
      vocab_size: V, reserved tokens included.
      hidden_dim: LSTM size H (encoder states are 2H).
      emb_dim: embedding size E.
      pointer_gen: the copy mechanism; False gives the seq2seq + attention baseline.
      context_layer: an ``acvi_tf.contexts.context`` layer; soft attention when None.
      rand_unif_init_mag: the LSTMs' uniform initialiser range.
      trunc_norm_init_std: std of the embedding, reduce-state and output projections.
      attention_masking: ``"renormalize"`` (See's mask after softmax) or ``"neg_inf"``.
      jit_compile: build the encoder in the form XLA compiles (``acvi_tf.layers.recurrent``).
      cov_loss_wt: the coverage loss's weight in ``compute_loss``.
      kl_terms: the ``kl_schedule.KLSchedule`` of ``compute_loss`` (None: every KL as
        it is).
    """

    def __init__(
        self,
        vocab_size: int,
        hidden_dim: int = 256,
        emb_dim: int = 128,
        pointer_gen: bool = True,
        context_layer: Optional[context_lib.ContextLayer] = None,
        rand_unif_init_mag: float = 0.02,
        trunc_norm_init_std: float = 1e-4,
        attention_masking: str = "renormalize",
        jit_compile: bool = False,
        cov_loss_wt: float = 1.0,
        kl_terms: Optional[kl_schedule.KLSchedule] = None,
        **kwargs: Any,
    ) -> None:
        super().__init__(**kwargs)
        self.cov_loss_wt = cov_loss_wt
        self.kl_terms = kl_terms
        self.vocab_size = vocab_size
        self.hidden_dim = hidden_dim
        self.pointer_gen = pointer_gen

        # A fresh initializer per weight: Keras gives identical values to every call of one
        # unseeded instance. Reproducibility comes from the run's seed.
        def uniform():
            return keras.initializers.RandomUniform(-rand_unif_init_mag, rand_unif_init_mag)

        def trunc_norm():
            return keras.initializers.TruncatedNormal(stddev=trunc_norm_init_std)

        def lstm_args():
            return dict(
                kernel_initializer=uniform(), recurrent_initializer=uniform(), unit_forget_bias=True
            )

        self.embedding = keras.layers.Embedding(
            vocab_size, emb_dim, embeddings_initializer=trunc_norm(), name="embedding"
        )
        self.encoder = keras.layers.Bidirectional(
            recurrent.sequence_lstm(hidden_dim, xla=jit_compile, **lstm_args()), name="encoder"
        )
        self.reduce_c = keras.layers.Dense(
            hidden_dim,
            activation="relu",
            kernel_initializer=trunc_norm(),
            bias_initializer=trunc_norm(),
            name="reduce_c",
        )
        self.reduce_h = keras.layers.Dense(
            hidden_dim,
            activation="relu",
            kernel_initializer=trunc_norm(),
            bias_initializer=trunc_norm(),
            name="reduce_h",
        )
        self.input_projection = keras.layers.Dense(emb_dim, name="input_projection")
        self.cell = keras.layers.LSTMCell(hidden_dim, name="decoder_cell", **lstm_args())
        self.scorer = attention.AdditiveScorer(
            2 * hidden_dim, use_coverage=True, mask_mode=attention_masking, name="attention"
        )
        self.context_layer = context_layer or context_lib.SoftAttentionContext(name="context")
        self.p_gen_layer = keras.layers.Dense(1, name="calculate_pgen")
        self.output_projection = keras.layers.Dense(hidden_dim, name="attn_output_projection")
        self.vocab_projection = keras.layers.Dense(
            vocab_size,
            kernel_initializer=trunc_norm(),
            bias_initializer=trunc_norm(),
            name="output_projection",
        )

    def encode(
        self, enc_batch: tf.Tensor, enc_padding_mask: tf.Tensor
    ) -> Tuple[tf.Tensor, List[tf.Tensor]]:
        """Encoder states [B, N, 2H] and the reduced initial decoder state ``[h, c]``."""
        memory, state, _ = self.encode_with_summary(enc_batch, enc_padding_mask)
        return memory, state

    def encode_with_summary(
        self, enc_batch: tf.Tensor, enc_padding_mask: tf.Tensor
    ) -> Tuple[tf.Tensor, List[tf.Tensor], tf.Tensor]:
        """``encode`` plus the summary ``[h_fw; h_bw]`` [B, 2H] of the final states."""
        mask = tf.cast(enc_padding_mask, tf.bool)
        memory, fw_h, fw_c, bw_h, bw_c = self.encoder(self.embedding(enc_batch), mask=mask)
        c = self.reduce_c(tf.concat([fw_c, bw_c], axis=-1))
        summary = tf.concat([fw_h, bw_h], axis=-1)
        return memory, [self.reduce_h(summary), c], summary

    def decoder_step(
        self,
        y_t: tf.Tensor,
        prev_context: tf.Tensor,
        state: List[tf.Tensor],
        coverage: Optional[tf.Tensor],
        memory_mask: tf.Tensor,
        keys: tf.Tensor,
        prepared: PreparedMemory,
        z: tf.Tensor,
        training: bool = False,
        use_gumbel: Optional[Union[bool, tf.Tensor]] = None,
    ) -> Tuple[tf.Tensor, List[tf.Tensor], tf.Tensor, Optional[tf.Tensor], tf.Tensor]:
        """One step of the attention decoder in the original order (steps 1-5 above).

        Args:
          y_t: embedded decoder input [B, E].
          prev_context: ``c*_{t-1}`` [B, 2H] (zeros at step 0 in training).
          state: ``[h, c]`` of the decoder LSTM.
          coverage: [B, N] sum of earlier attention, or None (coverage off).
          memory_mask: [B, N] encoder padding mask.
          keys: ``scorer.prepare(memory)``.
          prepared: ``context_layer.prepare(memory, mask)``.
          z: the context layer's sentence latent [B, L], joined to the input (L = 0
            without one).
          training: sample the context (ACVI).
          use_gumbel: ACVI's Gumbel path switch.

        Returns:
          ``(context, state, attn, coverage, x)``: the new context, ``[h, c]``, the
          attention ``a_t``, the updated coverage (None when off) and the projected input.
        """
        x = self.input_projection(tf.concat([y_t, prev_context, z], axis=-1))
        _, state = self.cell(x, state)
        h, c = state
        attn = self.scorer(
            tf.concat([c, h], axis=-1),
            keys,
            memory_mask,
            coverage=coverage,
            normalizer=self.context_layer.normalizer,
        )
        context = self.context_layer.draw(attn, prepared, training=training, use_gumbel=use_gumbel)
        if coverage is not None:
            coverage = coverage + attn
        return context, state, attn, coverage, x

    def call(
        self,
        batch: Dict[str, tf.Tensor],
        training: bool = False,
        coverage_on: bool = False,
        use_gumbel: Optional[Union[bool, tf.Tensor]] = None,
    ) -> Dict[str, Any]:
        """Runs the encoder and the teacher-forced decoder over ``dec_batch``.

        Args:
          batch: a dict with ``enc_batch``, ``enc_padding_mask`` and ``dec_batch``, and
            for ``token_nll`` ``target_batch``, ``dec_padding_mask`` and
            ``enc_batch_extend_vocab`` (see ``batcher.BATCH_SIGNATURE``).
          training: sample the context (ACVI).
          coverage_on: use the coverage feature and compute the coverage loss terms.
          use_gumbel: ACVI's Gumbel path switch (a bool tensor from the schedule).

        Returns:
          A dict of [B, T, ...] tensors: ``attn``, ``context``, ``p_gen_logit``,
          ``vocab_logits``, ``coverage_terms`` (``sum_i min(a_t,i, cov_t,i)``), ``kl``,
          ``kl_z`` [B] (VED's sentence latent; zeros otherwise), the ``prepared``
          memory of the context layer and, when the batch holds ``target_batch``,
          ``token_nll`` (the per-step loss of the gold summary,
          ``ContextLayer.token_losses``).
        """
        mask = batch["enc_padding_mask"]
        memory, state, summary = self.encode_with_summary(batch["enc_batch"], mask)
        keys = self.scorer.prepare(memory)
        prepared = self.context_layer.prepare(memory, mask)
        z, kl_z = self.context_layer.sentence_latent(summary, training=training)
        dec_emb = self.embedding(batch["dec_batch"])
        batch_size = tf.shape(memory)[0]
        context = tf.zeros([batch_size, memory.shape[-1]], self.compute_dtype)
        no_coverage = tf.zeros([batch_size])

        def step(y_t, loop_state, prepared_t):
            context, state, coverage = loop_state
            context, state, attn, new_coverage, x = self.decoder_step(
                y_t,
                context,
                state,
                coverage if coverage_on else None,
                mask,
                keys,
                prepared_t,
                z,
                training=training,
                use_gumbel=use_gumbel,
            )
            covered = no_coverage
            if coverage_on:
                covered = tf.reduce_sum(tf.minimum(attn, coverage), axis=-1)
                coverage = new_coverage
            return (context, state, coverage), dict(
                context=context, h=state[0], c=state[1], x=x, attn=attn, coverage_terms=covered
            )

        dtype = self.compute_dtype
        _, out = teacher_forcing.teacher_forced(
            step,
            dec_emb,
            (context, state, tf.zeros(tf.shape(mask))),
            dict(
                context=dtype, c=dtype, h=dtype, x=dtype, attn=tf.float32, coverage_terms=tf.float32
            ),
            self.context_layer,
            prepared,
            training,
            use_gumbel,
        )
        out["p_gen_logit"], out["vocab_logits"] = self.project(
            out["context"], out["c"], out["h"], out["x"]
        )
        out["kl"] = self.context_layer.kl_divergence(out["context"], out["attn"], prepared)
        out["kl_z"] = kl_z
        out["prepared"] = prepared
        if "target_batch" in batch:  # the per-step loss of the gold summary
            out["token_nll"], out["kl"] = self.context_layer.token_losses(
                self._gold(batch, out), out["attn"], out["kl"], prepared, training
            )
        return out

    def _gold(self, batch, out):
        """The gold summary as the output layer scores it (``context.GoldTarget``): the
        final distribution's log-probability with the copy mechanism, the vocabulary's
        without."""
        target = batch["target_batch"]

        def gold(vocab_logits):
            if not self.pointer_gen:
                return context_lib.gold_log_likelihood(vocab_logits, target)
            return losses_lib.gold_log_probs(
                vocab_logits,
                out["attn"],
                out["p_gen_logit"],
                batch["enc_batch_extend_vocab"],
                target,
            )

        return context_lib.GoldTarget(
            soft_log_likelihood=gold(out["vocab_logits"]),
            log_likelihood=lambda c: gold(self.vocab_at(out["h"], c)),
            embedded=lambda: self.embedding(tf.where(target >= self.vocab_size, 0, target)),
            mask=batch["dec_padding_mask"],
            contexts=out["context"],
        )

    def vocab_at(self, h: tf.Tensor, context: tf.Tensor) -> tf.Tensor:
        """Vocabulary logits ``V' (W_o [h_t; context] + b_o) + b'``; ``context`` may have
        one more axis than ``h`` (every source position)."""
        return self.vocab_projection(self.output_projection(context_lib.state_context(h, context)))

    def project(
        self, context: tf.Tensor, c: tf.Tensor, h: tf.Tensor, x: tf.Tensor
    ) -> Tuple[tf.Tensor, tf.Tensor]:
        """``p_gen`` logit and vocabulary logits from step outputs (any leading dims).

        ``p_gen = sigmoid(w [c*_t; c_t; h_t; x_t] + b)`` and the two linear output layers
        ``V' (W_o [h_t; c*_t] + b_o) + b'`` (no non-linearity between them).
        """
        p_gen_logit = tf.squeeze(self.p_gen_layer(tf.concat([context, c, h, x], axis=-1)), axis=-1)
        return p_gen_logit, self.vocab_at(h, context)

    # ``decode_step`` gives probabilities over the extended vocabulary (see its docstring)
    probability_scores = True

    def start(
        self,
        inputs: Dict[str, tf.Tensor],
        *,
        initial_state_attention: bool = True,
        coverage_on: bool = False,
    ) -> Tuple[Dict[str, Any], Dict[str, tf.Tensor]]:
        """Runs the encoder for decoding (``decoding.DecodingModel``) on ``inputs``, a
        batch's ``enc_batch``, ``enc_padding_mask``, ``enc_batch_extend_vocab`` and
        ``max_art_oovs`` (0 where the batch has none).

        With ``initial_state_attention`` (the original's decode graph) the first step's
        previous context is attention over the reduced encoder state, and that attention
        is added to the coverage at the first step (training uses zeros and adds nothing).
        The original attends with the coverage feature of an all-zero coverage, which adds
        exactly zero, so this attends without it.

        Args:
          inputs: the batch's tensors.
          initial_state_attention: as above.
          coverage_on: decode with the coverage feature: the state then holds the
            ``coverage`` (its presence is what switches ``decode_step``'s coverage on).

        Returns:
          ``(constants, state)``: the per-article tensors every step reads (``keys``,
          ``prepared``, ``mask``, ``enc_batch_extend_vocab``, the sentence latent ``z``,
          ``article_oovs``) and the initial decoder state (``h``, ``c``, the previous
          ``context``, the attention ``attn`` that the first step adds to the coverage,
          and, with ``coverage_on``, a zero ``coverage``).
        """
        mask = inputs["enc_padding_mask"]
        memory, (h, c), summary = self.encode_with_summary(inputs["enc_batch"], mask)
        keys = self.scorer.prepare(memory)
        prepared = self.context_layer.prepare(memory, mask)
        constants = dict(
            keys=keys,
            prepared=prepared,
            mask=mask,
            enc_batch_extend_vocab=inputs["enc_batch_extend_vocab"],
            z=self.context_layer.sentence_latent(summary)[0],
            article_oovs=losses_lib.article_oov_slots(inputs, tf.shape(mask)[0]),
        )
        if initial_state_attention:
            attn = self.scorer(
                tf.concat([c, h], axis=-1), keys, mask, normalizer=self.context_layer.normalizer
            )
            context = self.context_layer.draw(attn, prepared)
        else:
            attn = tf.zeros(tf.shape(mask))
            context = tf.zeros([tf.shape(memory)[0], memory.shape[-1]], self.compute_dtype)
        state = dict(h=h, c=c, context=context, attn=attn)
        if coverage_on:
            state["coverage"] = tf.zeros(tf.shape(mask))
        return constants, state

    def decode_step(
        self, tokens: tf.Tensor, state: Dict[str, tf.Tensor], constants: Dict[str, Any]
    ) -> Tuple[tf.Tensor, Dict[str, tf.Tensor], Dict[str, tf.Tensor]]:
        """One decoding step: the final distribution over the extended vocabulary.

        The original's decode graph runs one step per call, so it recomputes the previous
        context by attending from the incoming state with the incoming coverage, adds that
        attention to the coverage, and attends on the new state with this coverage
        without adding to it. After the first step that re-attention has the same inputs
        as the previous step's attention on its new state, so its result is carried in
        ``state`` (``context``, ``attn``) instead of recomputed: the step adds the
        previous step's attention to the coverage before attending. ``start``
        chooses the first step's (the original's re-attention over the reduced encoder
        state, or training's zeros); from zeros, a step is exactly a training step. With
        ACVI's ``decode="sample"`` the next input gets the sample this step used, as in
        training, where the original's graph would draw a fresh one.

        The scores are probabilities (``probability_scores``): the search takes the log
        of the candidates it keeps only, as See's beam does. A log over the whole
        extended vocabulary would change See's results, not only cost more: float32 log
        maps distinct small probabilities to one value, which reorders ties in top-k.

        Args:
          tokens: [R] previous tokens, extended-vocabulary ids allowed ([UNK] is fed).
          state: dict ``h``, ``c``, ``context``, ``attn`` and, with coverage on,
            ``coverage``.
          constants: from ``start`` (tiled to R rows for beam search).

        Returns:
          ``(probs [R, V + max_art_oovs], state, extras)`` with extras ``attn`` [R, N]
          and ``p_gen`` [R].
        """
        tokens = tf.where(tokens >= self.vocab_size, 0, tokens)  # [UNK] id is 0
        coverage = state["coverage"] + state["attn"] if "coverage" in state else None
        context, (h, c), attn, _, x = self.decoder_step(
            self.embedding(tokens),
            state["context"],
            [state["h"], state["c"]],
            coverage,
            constants["mask"],
            constants["keys"],
            constants["prepared"],
            constants["z"],
        )
        p_gen_logit, vocab_logits = self.project(context, c, h, x)
        p_gen = tf.sigmoid(tf.cast(p_gen_logit, tf.float32))
        vocab_dists = self.context_layer.output_distribution(
            vocab_logits,
            lambda ctx: self.vocab_at(h, ctx),
            attn,
            constants["prepared"],
            log=False,
        )
        final = losses_lib.final_distribution(
            vocab_dists[:, tf.newaxis],
            attn[:, tf.newaxis],
            p_gen[:, tf.newaxis],
            constants["enc_batch_extend_vocab"],
            tf.shape(constants["article_oovs"])[1],
        )[:, 0]
        state = dict(h=h, c=c, context=context, attn=attn)
        if coverage is not None:
            state["coverage"] = coverage
        return final, state, dict(attn=attn, p_gen=p_gen)

    # what ``training.make_train_step`` reads: the batch it takes, and the total loss
    batch_signature = {
        name: spec for name, spec in batcher_lib.BATCH_SIGNATURE.items() if spec.dtype != tf.string
    }
    loss_key = "total_loss"

    def compute_loss(
        self, batch: Dict[str, tf.Tensor], outputs: Dict[str, tf.Tensor], step: tf.Tensor
    ) -> Dict[str, tf.Tensor]:
        """See's training loss of ``call``'s outputs, with the context terms
        (``losses.summarizer_losses`` with the model's ``pointer_gen``, ``cov_loss_wt``,
        context layer and ``kl_terms``).

        Args:
          batch: the (sample-tiled) batch the outputs are of.
          outputs: ``call``'s training outputs.
          step: the global step (for the KL schedule).

        Returns:
          The scalars to log, the total under ``total_loss``.
        """
        return losses_lib.summarizer_losses(
            batch,
            outputs,
            step,
            self.pointer_gen,
            self.cov_loss_wt,
            self.context_layer,
            self.kl_terms,
        )
