"""Training utilities every host shares: the compiled training step and the NaN guard
(the loop that uses them: ``acvi_tf.training.trainer``).

``make_train_step(model, optimizer)`` is every host's step: it runs the model on the
batch and differentiates the model's own ``compute_loss``; ``make_step_from_loss`` is
the engine under it, for any loss function.
"""

import math
from typing import (
    TYPE_CHECKING,
    Any,
    Callable,
    Dict,
    Iterable,
    List,
    Optional,
    Sequence,
    Tuple,
)

import tensorflow as tf
from absl import logging

from acvi_tf import errors
from acvi_tf.training import distribute, objective

if TYPE_CHECKING:
    from acvi_tf.compat import keras


NAN_POLICIES = ("stop", "skip_batch")


class NonFiniteLossError(errors.UserError, RuntimeError):
    """The loss became NaN or infinite; the message names the step and the checkpoint."""


def check_finite(
    value: float, step: int, last_checkpoint: Optional[str], skipping: bool = False
) -> None:
    """Raises ``NonFiniteLossError`` unless ``value`` is finite; ``skipping``: under
    ``--nan_policy=skip_batch``, which the message then does not suggest."""
    if math.isfinite(value):
        return
    if last_checkpoint is None:
        raise NonFiniteLossError(
            "Loss is not finite (%r) at step %d, before the run saved a checkpoint. Stopping. "
            "Rerun with a lower learning rate%s"
            % (
                value,
                step,
                "" if skipping else ", or with --nan_policy=skip_batch to skip such batches",
            )
        )
    raise NonFiniteLossError(
        "Loss is not finite (%r) at step %d. Stopping. The last good checkpoint is %s; "
        "it was not overwritten. Restart from it (perhaps with a lower learning rate)."
        % (value, step, last_checkpoint)
    )


def apply_if_finite(
    optimizer: "keras.optimizers.Optimizer",
    grads_and_vars: Iterable[Tuple[tf.Tensor, tf.Variable]],
    loss: tf.Tensor,
    grad_norm: tf.Tensor,
    summed: bool = False,
) -> tf.Tensor:
    """Applies the update only when ``loss`` and ``grad_norm`` are finite (in a graph).

    A non-finite batch leaves the weights, the optimizer's slots and its iteration count
    untouched, whatever ``--nan_policy`` then does. Returns the finiteness (bool tensor).
    ``summed``: the gradients are already summed over the replicas of a distribution
    strategy (the update then runs in cross-replica context, without a second sum).
    """
    finite = tf.math.logical_and(tf.math.is_finite(loss), tf.math.is_finite(grad_norm))
    grads_and_vars = list(grads_and_vars)

    def update():
        if summed:  # each replica applies its (identical) copy of the summed gradients
            strategy = tf.distribute.get_strategy()
            variables = [v for _, v in grads_and_vars]
            strategy.run(
                lambda *grads: optimizer.apply_gradients(
                    zip(grads, variables), skip_gradients_aggregation=True
                ),
                args=[g for g, _ in grads_and_vars],
            )
        else:
            optimizer.apply_gradients(grads_and_vars)
        return tf.constant(True)

    return tf.cond(finite, update, lambda: tf.constant(False))


def make_train_step(
    model: "keras.Model",
    optimizer: "keras.optimizers.Optimizer",
    max_grad_norm: float = 0.0,
    jit_compile: bool = False,
    norm_key: str = "grad_norm",
    sum_keys: Sequence[str] = (),
    **call_options: Any,
) -> Callable[..., Dict[str, tf.Tensor]]:
    """A host model's training step: its loss, gradients, clipping, guarded update.

    The step repeats the batch for the context layer's ``num_samples`` Monte-Carlo
    samples (``objective.tile_batch``), runs ``model(batch, training=True,
    use_gumbel=use_gumbel, **call_options)``, and differentiates the entry
    ``model.loss_key`` of ``model.compute_loss(batch, outputs, step)``; its input
    signature is ``model.batch_signature`` (``make_step_from_loss`` does the rest).

    Args:
      model: a built host model with ``compute_loss``, ``loss_key``,
        ``batch_signature`` and a ``context_layer`` (which gives ``num_samples``).
      optimizer: a Keras optimizer.
      max_grad_norm: clip the gradients' global norm to this; 0 or less: no clipping.
      jit_compile: compile the forward and backward passes with XLA.
      norm_key: the name of the gradients' (unclipped) global norm in the results.
      sum_keys: results that count (tokens), summed over the replicas unweighted.
      **call_options: further options of the model's call (the summarizer's
        ``coverage_on``).

    Returns:
      ``train_step(batch, use_gumbel, step) -> results``: ``compute_loss``'s dict with
      ``norm_key`` added.
    """

    def loss_fn(batch, use_gumbel, step):
        batch = objective.tile_batch(batch, model.context_layer.num_samples)
        outputs = model(batch, training=True, use_gumbel=use_gumbel, **call_options)
        results = model.compute_loss(batch, outputs, step)
        return results[model.loss_key], results

    return make_step_from_loss(
        loss_fn,
        model.trainable_variables,
        optimizer,
        [model.batch_signature, tf.TensorSpec([], tf.bool), tf.TensorSpec([], tf.int64)],
        max_grad_norm,
        jit_compile,
        norm_key,
        sum_keys,
    )


def make_step_from_loss(
    loss_fn: Callable[..., Tuple[tf.Tensor, Dict[str, tf.Tensor]]],
    variables: Iterable[tf.Variable],
    optimizer: "keras.optimizers.Optimizer",
    input_signature: Sequence[Any],
    max_grad_norm: float = 0.0,
    jit_compile: bool = False,
    norm_key: str = "grad_norm",
    sum_keys: Sequence[str] = (),
) -> Callable[..., Dict[str, tf.Tensor]]:
    """One training step of ``loss_fn`` as a ``tf.function``: loss, gradients, clipping,
    guarded update.

    The forward and backward passes and the clipping run in an inner function that XLA
    compiles with ``jit_compile`` (one program per batch shape); the optimizer's update
    runs after it in the plain graph, behind ``apply_if_finite`` (Keras's optimizers
    compile their own update on a GPU). Both are traced at the step's first call (on one
    device without XLA, after making the optimizer's slots), so a command that stops
    before its first step traces nothing.

    Made under the scope of a ``tf.distribute`` strategy (any but TensorFlow's default
    one, with one replica or several), the step takes the global batch (the first
    input; the others go to every replica as they are), gives each replica its rows
    (``distribute.replica_rows``), weights each replica's loss by its share of the
    examples, sums the gradients over the replicas, then clips and updates once: the
    step of one device on the same global batch, for losses that are means over the
    batch's examples (every host's). The results are summed over the replicas the same
    way, but for ``sum_keys`` (counts), which add up.

    Args:
      loss_fn: ``(*inputs) -> (loss, results)``, run under the gradient tape; ``results``
        a dict of tensors to return.
      variables: the variables to train (all created before the first call).
      optimizer: a Keras optimizer.
      input_signature: ``tf.TensorSpec`` nest of ``inputs`` (not used with
        ``jit_compile``: then each new batch shape is traced and compiled once).
      max_grad_norm: clip the gradients' global norm to this; 0 or less: no clipping.
      jit_compile: compile the forward and backward passes with XLA.
      norm_key: the name of the gradients' (unclipped) global norm in the results.
      sum_keys: results that count (tokens), summed over the replicas unweighted.

    Returns:
      ``train_step(*inputs) -> results``, the results with ``norm_key`` added. A variable
      without a gradient (a feature not yet switched on) is left alone. On one device
      without XLA, ``train_step.function`` is the ``tf.function`` it calls; otherwise
      ``train_step`` is that ``tf.function``.
    """
    variables = list(variables)
    # a strategy's variables are mirrored, even over one replica: they take their
    # gradients and updates in the strategy's replica context
    if tf.distribute.has_strategy():
        return _replicated_train_step(
            tf.distribute.get_strategy(),
            loss_fn,
            variables,
            optimizer,
            input_signature,
            max_grad_norm,
            jit_compile,
            norm_key,
            sum_keys,
        )

    @tf.function(autograph=False, jit_compile=jit_compile or None)
    def gradients(*inputs):
        with tf.GradientTape() as tape:
            loss, results = loss_fn(*inputs)
        grads = tape.gradient(loss, variables)
        norm = tf.linalg.global_norm(grads)
        if max_grad_norm > 0:
            grads, _ = tf.clip_by_global_norm(grads, max_grad_norm, use_norm=norm)
        return loss, grads, dict(results, **{norm_key: norm})

    # Under XLA every batch shape is its own program anyway; tracing per shape makes the
    # shapes static, which XLA needs for the gradient of a decoder loop (a dynamic shape
    # there becomes a transpose whose permutation is not a compile-time constant).
    @tf.function(input_signature=None if jit_compile else input_signature, autograph=False)
    def traced_step(*inputs):
        loss, grads, results = gradients(*inputs)
        apply_if_finite(
            optimizer,
            [(g, v) for g, v in zip(grads, variables) if g is not None],
            loss,
            results[norm_key],
        )
        return results

    if jit_compile:
        return traced_step
    built = []

    def train_step(*inputs):
        # The slots come at the first step, not here: a command that stops before it (a
        # refused lock, bad data, a run already at its last step) traces nothing. Run
        # eagerly (tf.config.run_functions_eagerly), the first update creates the same.
        if not built:
            if not tf.config.functions_run_eagerly():
                signature = gradients.get_concrete_function(*input_signature)
                _build_optimizer(optimizer, variables, signature)
            built.append(True)
        return traced_step(*inputs)

    train_step.function = traced_step
    return train_step


def _build_optimizer(
    optimizer: "keras.optimizers.Optimizer",
    variables: List[tf.Variable],
    gradients: "tf.types.experimental.ConcreteFunction",
) -> None:
    """Creates the optimizer's slots before the step is traced, for the variables that
    have a gradient in ``gradients`` (``(loss, grads, results)``), in their order: what
    its first update would create, so checkpoints keep their layout. A step whose first
    run creates the slots is traced twice (once more without the variables' creation).
    """
    grads = gradients.structured_outputs[1]
    optimizer.build([v for g, v in zip(grads, variables) if g is not None])


def _replicated_train_step(
    strategy,
    loss_fn,
    variables,
    optimizer,
    input_signature,
    max_grad_norm,
    jit_compile,
    norm_key,
    sum_keys,
):
    """``make_step_from_loss`` over the replicas of ``strategy`` (see there)."""

    @tf.function(autograph=False, jit_compile=jit_compile or None)
    def weighted_gradients(share, *inputs):
        with tf.GradientTape() as tape:
            loss, results = loss_fn(*inputs)
            weighted = loss * share
        return loss, tape.gradient(weighted, variables), results

    # which variables have a gradient, found when the replicas' step is traced
    present = []

    def replica_step(batch, global_size, *rest):
        context = tf.distribute.get_replica_context()
        share = tf.cast(distribute.batch_size(batch), tf.float32) / tf.cast(global_size, tf.float32)
        loss, grads, results = weighted_gradients(share, batch, *rest)
        # (the replicas are traced in threads of their own: each keeps its own list)
        with_gradient = [i for i, g in enumerate(grads) if g is not None]
        present[:] = with_gradient
        # an embedding's sparse gradient has as many rows as the replica's batch has
        # distinct words: summed dense, as the replicas' collective needs equal shapes
        summed = context.all_reduce(
            tf.distribute.ReduceOp.SUM, [tf.convert_to_tensor(grads[i]) for i in with_gradient]
        )
        norm = tf.linalg.global_norm(summed)
        if max_grad_norm > 0:
            summed, _ = tf.clip_by_global_norm(summed, max_grad_norm, use_norm=norm)
        weighted = {
            name: tf.cast(value, tf.float32) * (1.0 if name in sum_keys else share)
            for name, value in dict(results, _loss=loss).items()
        }
        return summed, norm, context.all_reduce(tf.distribute.ReduceOp.SUM, weighted)

    @tf.function(input_signature=None if jit_compile else input_signature, autograph=False)
    def train_step(batch, *rest):
        size = distribute.batch_size(batch)
        check = tf.debugging.assert_greater_equal(
            size,
            strategy.num_replicas_in_sync,
            message="a batch has fewer examples than the strategy has replicas",
        )
        with tf.control_dependencies([check]):
            size = tf.identity(size)
        rows = strategy.experimental_distribute_values_from_function(
            lambda context: distribute.replica_rows(batch, context)
        )
        grads, norm, results = strategy.run(replica_step, args=(rows, size, *rest))
        first = strategy.experimental_local_results
        norm = first(norm)[0]
        results = {name: first(value)[0] for name, value in results.items()}
        loss = results.pop("_loss")
        apply_if_finite(
            optimizer, [(g, variables[i]) for i, g in zip(present, grads)], loss, norm, summed=True
        )
        return dict(results, **{norm_key: norm})

    return train_step


class NonFiniteGuard:
    """``--nan_policy`` after each training step (the update itself: ``apply_if_finite``).

    ``stop`` raises ``NonFiniteLossError`` naming the step and the last checkpoint.
    ``skip_batch`` logs the batch, counts it (``train/skipped_batches`` in TensorBoard)
    and goes on without advancing the global step; it stops after
    ``max_consecutive_skips`` skips in a row, since then nothing is learning any more.

    Args:
      policy: one of ``NAN_POLICIES``.
      writer: optional ``tf.summary`` writer for the skip count.
      max_consecutive_skips: the ``skip_batch`` limit.
    """

    def __init__(
        self,
        policy: str = "stop",
        writer: Optional[tf.summary.SummaryWriter] = None,
        max_consecutive_skips: int = 100,
    ) -> None:
        if policy not in NAN_POLICIES:
            raise ValueError("nan_policy must be one of %s, got %r" % (NAN_POLICIES, policy))
        self.policy = policy
        self.writer = writer
        self.max_consecutive_skips = max_consecutive_skips
        self.skipped = 0
        self.consecutive = 0

    def check(
        self,
        loss: float,
        step: int,
        last_checkpoint: Optional[str],
        describe: Optional[Callable[[], str]] = None,
    ) -> bool:
        """True when the step counts; False when a non-finite batch was skipped.

        Args:
          loss: the step's loss (a float).
          step: the global step the batch was meant for.
          last_checkpoint: path of the latest checkpoint (for the message).
          describe: optional callable giving a short description of the batch for the
            log (called only for a skipped batch, so the hot path builds no string).
        """
        if math.isfinite(loss):
            self.consecutive = 0
            return True
        if self.policy == "stop" or self.consecutive + 1 >= self.max_consecutive_skips:
            if self.policy != "stop":
                logging.error("%d non-finite batches in a row", self.consecutive + 1)
            check_finite(loss, step, last_checkpoint, skipping=self.policy != "stop")
        self.skipped += 1
        self.consecutive += 1
        logging.warning(
            "Skipped a batch with a non-finite loss (%r) at step %d (%d skipped so far)%s",
            loss,
            step,
            self.skipped,
            ": " + describe() if describe else "",
        )
        if self.writer is not None:
            with self.writer.as_default(step=step):
                tf.summary.scalar("train/skipped_batches", self.skipped)
        return False
