"""Luong-style attentional NMT (tensorflow/nmt semantics) with the context from ``acvi_tf``.

* Encoder: ``uni`` stacks ``num_encoder_layers`` LSTMs; ``bi`` (tensorflow/nmt) builds
  ``num_encoder_layers / 2`` LSTM layers in each direction and concatenates the two top
  outputs, so ``num_encoder_layers=2`` is ONE bidirectional layer.
* Decoder: ``num_decoder_layers`` LSTMs with input feeding (the previous attention vector
  is concatenated to the input embedding); attention on top of the whole stack
  ("standard" architecture): ``a_t`` from the Luong score of the top state ``h_t``
  (``general``: ``h_i^T W h_t``, with a learned scale ``g`` for ``scaled_luong``), the
  context ``c_t`` from the context layer (SA: ``sum_i a_t,i h_i``; ACVI: a sample), the
  attention vector ``W_c [h_t; c_t]`` (bias-free, no tanh, as the TF1 and TFA wrappers),
  and, with ``output_attention``, the output projection reads the attention vector.
  The context layer's sentence latent (VED's ``z``; width 0 for the others) joins every
  decoder input; its ``token_losses`` turn the gold words' log-likelihoods into the
  per-step loss and its ``output_distribution`` gives a decoding step's ``log p(y_t)``
  (Deng et al.'s variational attention evaluates the output at the sampled or every
  source state in place of ``c_t``).
* Initial decoder state: with ``pass_hidden_state`` the encoder's final states
  (forward, backward per bidirectional layer) go to the decoder layers in order.
* Every weight is ``uniform(-init_weight, init_weight)``, drawn from its own seed; input
  dropout on every cell in training; LSTM forget-gate bias starts at 1.
The output projection over the vocabulary and the ACVI KL run after the decoder loop.
"""

import random
from typing import Any, Dict, List, Optional, Sequence, Tuple, Union

import tensorflow as tf

from acvi_tf.compat import keras
from acvi_tf.contexts import attention as attention_lib
from acvi_tf.contexts import context as context_lib
from acvi_tf.contexts import kl_schedule
from acvi_tf.layers import recurrent
from acvi_tf.training import objective, teacher_forcing
from nmt import data

ENCODER_TYPES = ("uni", "bi")
ATTENTIONS = ("luong", "scaled_luong")


class LSTMBias(keras.initializers.Initializer):
    """An LSTM bias ``[b_i, b_f, b_c, b_o]``: ``b_f`` at 1, the rest uniform.

    The whole vector is one draw, so no two gates start with the same bias (Keras's
    ``unit_forget_bias`` calls the bias initializer once for ``b_i`` and once for
    ``[b_c, b_o]``, which a seeded initializer fills with the same values).

    Args:
      init_weight: the uniform range is ``(-init_weight, init_weight)``.
      seed: seed of the draw.
    """

    def __init__(self, init_weight: float, seed: int) -> None:
        self.init_weight = init_weight
        self.seed = seed

    def __call__(
        self, shape: Sequence[int], dtype: Optional[tf.dtypes.DType] = None, **kwargs: Any
    ) -> tf.Tensor:
        """The bias of shape ``(4 * units,)``.

        Args:
          shape: ``(4 * units,)``.
          dtype: the bias's dtype (None: Keras's default float).
          **kwargs: what Keras passes an initializer besides; unused.
        """
        bias = keras.initializers.RandomUniform(-self.init_weight, self.init_weight, self.seed)(
            shape, dtype
        )
        gate_i, _, gates_co = tf.split(bias, [shape[0] // 4, shape[0] // 4, -1])
        return tf.concat([gate_i, tf.ones_like(gate_i), gates_co], axis=0)

    def get_config(self) -> Dict[str, Any]:
        return {"init_weight": self.init_weight, "seed": self.seed}


class NMTModel(keras.Model):
    """Encoder, attentional decoder and their step function for decoding.

    Args:
      src_vocab_size, tgt_vocab_size: vocabulary sizes.
      num_units: LSTM size, embedding size and attention size.
      num_encoder_layers, num_decoder_layers: as tensorflow/nmt.
      encoder_type: ``"uni"`` or ``"bi"``.
      attention: ``"luong"`` (general) or ``"scaled_luong"``.
      output_attention: the output projection reads the attention vector (Luong) rather
        than the top decoder state.
      pass_hidden_state: initialise the decoder with the encoder's final states.
      dropout: input dropout rate of every LSTM (training only).
      init_weight: range of the uniform initialiser of every weight.
      context_layer: an ``acvi_tf.contexts.context`` layer (soft attention when None).
      jit_compile: build the encoder in the form XLA compiles (``acvi_tf.layers.recurrent``).
      seed: seed of the initial weights; None draws one from Python's ``random``, which
        ``keras.utils.set_random_seed`` seeds.
      kl_terms: the ``kl_schedule.KLSchedule`` of ``compute_loss`` (None: every KL as
        it is).
    """

    def __init__(
        self,
        src_vocab_size: int,
        tgt_vocab_size: int,
        num_units: int = 256,
        num_encoder_layers: int = 2,
        num_decoder_layers: int = 2,
        encoder_type: str = "bi",
        attention: str = "luong",
        output_attention: bool = True,
        pass_hidden_state: bool = True,
        dropout: float = 0.2,
        init_weight: float = 0.1,
        context_layer: Optional[context_lib.ContextLayer] = None,
        jit_compile: bool = False,
        seed: Optional[int] = None,
        kl_terms: Optional[kl_schedule.KLSchedule] = None,
        **kwargs: Any,
    ) -> None:
        super().__init__(**kwargs)
        self.kl_terms = kl_terms
        if encoder_type not in ENCODER_TYPES:
            raise ValueError("encoder_type must be one of %s" % (ENCODER_TYPES,))
        if attention not in ATTENTIONS:
            raise ValueError("attention must be one of %s" % (ATTENTIONS,))
        if encoder_type == "bi" and num_encoder_layers % 2:
            raise ValueError(
                "encoder_type=bi needs an even num_encoder_layers (tensorflow/"
                "nmt builds num_encoder_layers / 2 layers per direction)"
            )
        self.tgt_vocab_size = tgt_vocab_size
        self.num_units = num_units
        self.encoder_type = encoder_type
        self.output_attention = output_attention
        self.dropout = dropout

        # One initializer, with its own seed, per weight: an initializer called twice
        # repeats its values. The seeds come from one generator rather than a counter, so
        # that models of neighbouring seeds share no weights.
        seeds = random.Random(random.getrandbits(32) if seed is None else seed)

        def init():
            return keras.initializers.RandomUniform(
                -init_weight, init_weight, seed=seeds.getrandbits(31)
            )

        def lstm_initializers():
            return dict(
                kernel_initializer=init(),
                recurrent_initializer=init(),
                bias_initializer=LSTMBias(init_weight, seeds.getrandbits(31)),
                unit_forget_bias=False,  # LSTMBias sets the forget gate's bias
            )

        def lstm():
            return recurrent.sequence_lstm(
                num_units, xla=jit_compile, dropout=dropout, **lstm_initializers()
            )

        self.src_embedding = keras.layers.Embedding(
            src_vocab_size, num_units, embeddings_initializer=init()
        )
        self.tgt_embedding = keras.layers.Embedding(
            tgt_vocab_size, num_units, embeddings_initializer=init()
        )
        per_direction = num_encoder_layers // 2 if encoder_type == "bi" else num_encoder_layers
        self.forward_layers = [lstm() for _ in range(per_direction)]
        self.backward_layers = (
            [lstm() for _ in range(per_direction)] if encoder_type == "bi" else []
        )
        encoder_states = len(self.forward_layers) + len(self.backward_layers)
        self.pass_hidden_state = pass_hidden_state and encoder_states == num_decoder_layers
        self.cells = [
            keras.layers.LSTMCell(num_units, **lstm_initializers())
            for _ in range(num_decoder_layers)
        ]
        self.scorer = attention_lib.MultiplicativeScorer(
            num_units,
            mode="general",
            scale=attention == "scaled_luong",
            kernel_initializer=init(),
            name="attention",
        )
        self.context_layer = context_layer or context_lib.SoftAttentionContext(name="context")
        self.attention_layer = keras.layers.Dense(
            num_units, use_bias=False, kernel_initializer=init(), name="attention_layer"
        )
        self.output_projection = keras.layers.Dense(
            tgt_vocab_size, use_bias=False, kernel_initializer=init(), name="output_projection"
        )
        self._input_dropout = keras.layers.Dropout(dropout)

    def encode(
        self, src: tf.Tensor, src_len: tf.Tensor, training: bool = False
    ) -> Tuple[tf.Tensor, tf.Tensor, List[List[tf.Tensor]]]:
        """Encoder states [B, S, D] and the decoder's initial per-layer ``[h, c]`` states."""
        mask = tf.sequence_mask(src_len, tf.shape(src)[1])
        x = self.src_embedding(src)
        forward, fw_states = _run_stack(self.forward_layers, x, mask, training)
        outputs, states = forward, fw_states
        if self.backward_layers:
            reversed_x = tf.reverse_sequence(x, src_len, seq_axis=1, batch_axis=0)
            backward, bw_states = _run_stack(self.backward_layers, reversed_x, mask, training)
            backward = tf.reverse_sequence(backward, src_len, seq_axis=1, batch_axis=0)
            outputs = tf.concat([forward, backward], axis=-1)
            states = [s for pair in zip(fw_states, bw_states) for s in pair]
        if not self.pass_hidden_state:
            zeros = tf.zeros([tf.shape(src)[0], self.num_units], outputs.dtype)
            states = [[zeros, zeros] for _ in self.cells]
        return outputs, mask, states

    # ``decode_step`` gives log-probabilities (``decoding.DecodingModel``)
    probability_scores = False

    def start(
        self, inputs: Dict[str, tf.Tensor], *, training: bool = False
    ) -> Tuple[Dict[str, Any], Dict[str, Any]]:
        """Runs the encoder on ``inputs`` (``src`` [B, S], ``src_len`` [B]); returns the
        per-batch constants and the initial state (``decoding.DecodingModel``)."""
        src = inputs["src"]
        memory, mask, states = self.encode(src, inputs["src_len"], training)
        # the sentence latent reads the encoder's final h (every layer, both directions)
        z, kl_z = self.context_layer.sentence_latent(
            tf.concat([h for h, _ in states], axis=-1), training=training
        )
        constants = dict(
            keys=self.scorer.prepare(memory),
            mask=mask,
            prepared=self.context_layer.prepare(memory, mask),
            z=z,
            kl_z=kl_z,
        )
        state = dict(
            cells=states, attention=tf.zeros([tf.shape(src)[0], self.num_units], memory.dtype)
        )
        return constants, state

    def step(
        self,
        y_emb: tf.Tensor,
        state: Dict[str, Any],
        constants: Dict[str, Any],
        training: bool = False,
        use_gumbel: Optional[Union[bool, tf.Tensor]] = None,
    ) -> Tuple[tf.Tensor, Dict[str, Any], tf.Tensor, tf.Tensor]:
        """One decoder step: ``(output, state, attn, context)`` for embedded inputs [B, E]."""
        x = tf.concat([y_emb, state["attention"], constants["z"]], axis=-1)  # input feeding
        new_cells = []
        for cell, cell_state in zip(self.cells, state["cells"]):
            x, cell_state = cell(self._input_dropout(x, training=training), cell_state)
            new_cells.append(cell_state)
        attn = self.scorer(
            x, constants["keys"], constants["mask"], normalizer=self.context_layer.normalizer
        )
        context = self.context_layer.draw(
            attn, constants["prepared"], training=training, use_gumbel=use_gumbel
        )
        attention_vector = self.attention_layer(tf.concat([x, context], axis=-1))
        output = attention_vector if self.output_attention else x
        return output, dict(cells=new_cells, attention=attention_vector), attn, context

    def vocab_logits(self, top: tf.Tensor, context: tf.Tensor) -> tf.Tensor:
        """Output logits from the top decoder state and a context (any leading dims).

        ``context`` may carry one more axis than ``top`` (every source position).
        """
        if not self.output_attention:  # the context does not reach the output
            return self.output_projection(top)
        return self.output_projection(self.attention_layer(context_lib.state_context(top, context)))

    def log_probs(
        self,
        output: tf.Tensor,
        state: Dict[str, Any],
        attn: tf.Tensor,
        context: tf.Tensor,
        constants: Dict[str, Any],
    ) -> tf.Tensor:
        """``log p(y_t)`` [B, V] of a decoding step from ``step``'s results."""
        del context
        top = state["cells"][-1][0]
        return self.context_layer.output_distribution(
            self.output_projection(output),
            lambda c: self.vocab_logits(top, c),
            attn,
            constants["prepared"],
        )

    def decode_step(
        self, tokens: tf.Tensor, state: Dict[str, Any], constants: Dict[str, Any]
    ) -> Tuple[tf.Tensor, Dict[str, Any], Dict[str, tf.Tensor]]:
        """One search step (``acvi_tf.inference.decoding``'s protocol): the previous tokens [B] ->
        ``(log p(y_t) [B, V], state, {"attn": a_t})``."""
        output, state, attn, context = self.step(self.tgt_embedding(tokens), state, constants)
        return self.log_probs(output, state, attn, context, constants), state, {"attn": attn}

    def call(
        self,
        batch: Dict[str, tf.Tensor],
        training: bool = False,
        use_gumbel: Optional[Union[bool, tf.Tensor]] = None,
    ) -> Dict[str, Any]:
        """Teacher-forced decoding of ``tgt_in``.

        Returns:
          dict: ``logits`` [B, T, V], ``attn`` [B, T, S], ``kl`` [B, T], ``kl_z`` [B]
          (VED's sentence-latent KL; zeros otherwise), ``prepared`` (the context layer's
          ``PreparedMemory``) and, when the batch holds ``tgt_out``, ``token_nll``
          [B, T] (the per-step loss of the gold words, ``ContextLayer.token_losses``).
        """
        constants, state = self.start(batch, training=training)
        tgt_emb = self.tgt_embedding(batch["tgt_in"])

        def step(y_t, state, prepared_t):
            output, state, attn, context = self.step(
                y_t, state, dict(constants, prepared=prepared_t), training, use_gumbel
            )
            return state, dict(output=output, top=state["cells"][-1][0], attn=attn, context=context)

        dtype = self.compute_dtype
        _, steps_out = teacher_forcing.teacher_forced(
            step,
            tgt_emb,
            state,
            dict(output=dtype, top=dtype, attn=tf.float32, context=dtype),
            self.context_layer,
            constants["prepared"],
            training,
            use_gumbel,
        )
        tops, attns, contexts = steps_out["top"], steps_out["attn"], steps_out["context"]
        out = dict(
            logits=self.output_projection(steps_out["output"]),
            attn=attns,
            kl=self.context_layer.kl_divergence(contexts, attns, constants["prepared"]),
            kl_z=constants["kl_z"],
            prepared=constants["prepared"],
        )
        if "tgt_out" in batch:  # the per-step loss of the gold words
            out["token_nll"], out["kl"] = self.context_layer.token_losses(
                self._gold(batch, out["logits"], tops, contexts),
                attns,
                out["kl"],
                constants["prepared"],
                training,
            )
        return out

    def _gold(self, batch, logits, tops, contexts):
        """The gold words as the output layer scores them (``context.GoldTarget``)."""
        gold = batch["tgt_out"]
        return context_lib.GoldTarget(
            soft_log_likelihood=context_lib.gold_log_likelihood(logits, gold),
            log_likelihood=lambda c: context_lib.gold_log_likelihood(
                self.vocab_logits(tops, c), gold
            ),
            embedded=lambda: self.tgt_embedding(gold),
            mask=tf.sequence_mask(batch["tgt_len"], tf.shape(gold)[1]),
            contexts=contexts,
        )

    # what ``training.make_train_step`` reads: the batch it takes, and the total loss
    batch_signature = data.BATCH_SIGNATURE
    loss_key = "train_loss"

    def compute_loss(
        self, batch: Dict[str, tf.Tensor], outputs: Dict[str, tf.Tensor], step: tf.Tensor
    ) -> Dict[str, tf.Tensor]:
        """tensorflow/nmt's loss of ``call``'s outputs with the context terms
        (``objective.sequence_objective``, with the model's ``kl_terms``).

        Args:
          batch: the (sample-tiled) batch the outputs are of.
          outputs: ``call``'s training outputs.
          step: the global step (for the KL schedule).

        Returns:
          The scalars to log: the total under ``train_loss``, ``nll``, ``predict_count``
          (target tokens of one copy of the batch) and the context terms' logs.
        """
        return objective.sequence_objective(
            outputs,
            batch["tgt_out"],
            batch["tgt_len"],
            step,
            self.context_layer,
            self.kl_terms,
            total_key=self.loss_key,
            count_key="predict_count",
        )


def _run_stack(layers, x, mask, training):
    """Runs stacked LSTM layers; returns the top outputs and each layer's ``[h, c]``."""
    states = []
    for layer in layers:
        x, h, c = layer(x, mask=mask, training=training)
        states.append([h, c])
    return x, states
