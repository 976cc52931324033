"""Builds what a command's flags select: the context layer, the KL schedule and the
runtime (seed, determinism, precision, distribution strategy).

``acvi_tf.flags`` defines and checks the shared flags; the functions here read the
parsed ``acvi_tf.config.Config``.
"""

import os
from typing import Union

import tensorflow as tf

from acvi_tf import config as config_lib
from acvi_tf import flags as acvi_flags
from acvi_tf.compat import keras
from acvi_tf.contexts import context, registry
from acvi_tf.contexts import kl_schedule as kl_schedule_lib
from acvi_tf.training import distribute


def context_layer(config: config_lib.Config) -> context.ContextLayer:
    """Builds the context layer that ``--context`` and the mechanism's own flags select
    (``registry.layer_from_flags``).

    Args:
      config: a command's ``Config`` with the shared flags (``acvi_tf.flags``).
    """
    return registry.layer_from_flags(config)


def kl_schedule(config: config_lib.Config) -> kl_schedule_lib.KLSchedule:
    """Builds the KL schedule of ``--kl_annealing``, ``--kl_anneal_steps``,
    ``--kl_free_bits`` and ``--kl_free_bits_form``.

    Args:
      config: a command's ``Config`` with the shared flags.

    Returns:
      The ``KLSchedule``.
    """
    return kl_schedule_lib.KLSchedule(
        config.kl_annealing, config.kl_anneal_steps, config.kl_free_bits, config.kl_free_bits_form
    )


def configure_runtime(config: config_lib.Config, trains: bool = False) -> tf.distribute.Strategy:
    """Applies ``--seed``, ``--deterministic`` and ``--mixed_precision`` to TensorFlow,
    makes the ``--distribution_strategy`` a training command trains under, and logs the
    devices the command uses (``distribute.log_devices``).

    Call it once at the start of a command, before any other TensorFlow op (a
    multi-worker strategy starts its server first, ``--cpu_devices`` splits the CPU) and
    before any layer is built.

    Args:
      config: the command's ``acvi_tf.config.Config``.
      trains: the command trains; False: it runs on one device under the default
        strategy, whatever the distribution flags say (a decode, an export).

    Returns:
      The ``tf.distribute.Strategy``.

    Raises:
      distribute.DistributionError: ``--cpu_devices`` where it cannot apply or beyond
        the machine's cores, more replicas than ``--batch_size`` has examples, or
        ``make_strategy``'s refusals.
    """
    strategy = tf.distribute.get_strategy()
    if trains:
        if config.cpu_devices:
            _check_cpu_devices(config)
            distribute.use_cpu_devices(config.cpu_devices)
        strategy = distribute.make_strategy(config.distribution_strategy, config.num_gpus)
        _check_replicas(config, strategy.num_replicas_in_sync)
    distribute.log_devices(strategy if trains else None)
    keras.utils.set_random_seed(config.seed)
    if config.deterministic:
        tf.config.experimental.enable_op_determinism()
    keras.mixed_precision.set_global_policy(precision_policy(config.mixed_precision))
    return strategy


def _check_replicas(config: config_lib.Config, replicas: int) -> None:
    """Refuses a global batch with fewer examples than the strategy has replicas: each
    replica trains on at least one row."""
    batch_size = getattr(config, "batch_size", None)
    if batch_size is not None and batch_size < replicas:
        raise distribute.DistributionError(
            "--batch_size=%d is the global batch, split over the strategy's %d replicas, "
            "which need a row each; give --batch_size=%d or more, or fewer replicas"
            % (batch_size, replicas, replicas)
        )


def _check_cpu_devices(config: config_lib.Config) -> None:
    """Refuses ``--cpu_devices`` unless a ``mirrored`` strategy is to train on the CPU,
    and beyond the machine's cores (each device holds its own copy of the runtime's
    buffers, and more devices than cores run no faster)."""
    cores = os.cpu_count() or 1
    if config.cpu_devices > cores:
        raise distribute.DistributionError(
            "--cpu_devices=%d is more logical devices than this machine's %d CPU cores; "
            "give --cpu_devices=%d or fewer" % (config.cpu_devices, cores, cores)
        )
    if config.distribution_strategy != "mirrored":
        raise distribute.DistributionError(
            "--cpu_devices=%d gives a mirrored strategy's replicas on the CPU, and "
            "--distribution_strategy=%s has none; add --distribution_strategy=mirrored"
            % (config.cpu_devices, config.distribution_strategy)
        )
    gpus = len(tf.config.list_physical_devices("GPU"))
    if config.num_gpus if config.num_gpus is not None else gpus:
        raise distribute.DistributionError(
            "--cpu_devices=%d trains on the CPU, but this command trains on %s GPU(s) "
            "(TensorFlow sees %d); add --num_gpus=0, or leave --cpu_devices out"
            % (config.cpu_devices, config.num_gpus or gpus, gpus)
        )


def precision_policy(mixed_precision: Union[str, bool]) -> str:
    """The Keras policy name of a ``--mixed_precision`` value.

    Args:
      mixed_precision: a key of ``acvi_tf.flags.PRECISION_POLICIES``; a run recorded
        before the flag took a precision holds a boolean (true: float16).

    Returns:
      The policy name, e.g. ``"mixed_bfloat16"``.
    """
    if isinstance(mixed_precision, bool):
        mixed_precision = "float16" if mixed_precision else "none"
    return acvi_flags.PRECISION_POLICIES[mixed_precision]
