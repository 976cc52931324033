"""Training on several devices and machines with ``tf.distribute``.

``--distribution_strategy`` (the names tf-models-official uses) picks the strategy every
host trains under:

- ``default``: TensorFlow's default strategy, one device (the GPU when there is one);
- ``mirrored``: ``MirroredStrategy`` over the GPUs of this machine (``--num_gpus``; the
  CPU when there is none, split into ``--cpu_devices`` logical devices, one replica
  each);
- ``multi_worker``: ``MultiWorkerMirroredStrategy`` over the machines ``TF_CONFIG``
  names, each with its GPUs (or its CPU).

``--batch_size`` stays the global batch. Every worker reads the same global batch (the
hosts' pipelines are seeded) and each replica trains on its rows of it
(``replica_rows``); ``training.make_train_step`` weights each replica's loss by its share
of the examples and sums the gradients over the replicas before clipping, so one step
equals the single-device step on the same global batch. The chief (worker 0) writes the
checkpoints, the run record and TensorBoard; the other workers save to a scratch folder
of their own that is removed after each save (``checkpoints.Checkpointer``).
"""

import functools
import json
import os
import tempfile
from typing import Any, Dict, Optional, Tuple

import tensorflow as tf
from absl import logging

from acvi_tf import errors

STRATEGIES = ("default", "mirrored", "multi_worker")
# the strategies ``make_strategy`` builds besides TensorFlow's default one, by their public
# names (MultiWorkerMirroredStrategy's class is CollectiveAllReduceStrategy)
BUILT_STRATEGIES = {
    tf.distribute.MirroredStrategy: "MirroredStrategy",
    tf.distribute.MultiWorkerMirroredStrategy: "MultiWorkerMirroredStrategy",
}


class DistributionError(errors.UserError, ValueError):
    """The distribution flags or ``TF_CONFIG`` cannot be used; the message says how."""


def make_strategy(name: str, num_gpus: Optional[int] = None) -> tf.distribute.Strategy:
    """The strategy ``--distribution_strategy`` names.

    Call it before any other TensorFlow op of the process: ``multi_worker`` starts the
    worker's server, which must happen before the runtime is initialised.

    Args:
      name: one of ``STRATEGIES``.
      num_gpus: ``mirrored`` and ``multi_worker``: the GPUs of each machine to use (the
        first ones); None: all the visible GPUs; 0: the CPU.

    Returns:
      The ``tf.distribute.Strategy``.

    Raises:
      DistributionError: an unknown name, more GPUs than visible, or ``multi_worker``
        without a usable ``TF_CONFIG``.
    """
    if name not in STRATEGIES:
        raise DistributionError(
            "--distribution_strategy=%s is not one of %s" % (name, ", ".join(STRATEGIES))
        )
    if name == "default":
        return tf.distribute.get_strategy()
    if name == "multi_worker":
        _check_tf_config()
        return cached_strategy(None)
    return cached_strategy(tuple(local_devices(num_gpus)))


@functools.lru_cache(maxsize=None)
def cached_strategy(devices: Optional[Tuple[str, ...]]) -> tf.distribute.Strategy:
    """One strategy per process and device set (None: the multi-worker one). A second
    strategy over the same devices would number its collective operations from the start
    again, and the runtime, which remembers each number's tensor shapes, would refuse a
    later run of other shapes in the same process (a test's second run, say)."""
    if devices is None:
        return tf.distribute.MultiWorkerMirroredStrategy()
    return tf.distribute.MirroredStrategy(list(devices))


def local_devices(num_gpus: Optional[int] = None) -> list:
    """The devices a mirrored strategy uses on this machine: the first ``num_gpus`` GPUs
    (None: all), or, with none, every logical CPU device."""
    gpus = tf.config.list_logical_devices("GPU")
    if num_gpus is None:
        num_gpus = len(gpus)
    if num_gpus > len(gpus):
        raise DistributionError(
            "--num_gpus=%d, but TensorFlow sees %d GPU(s) on this machine; use "
            "--num_gpus=%d or fewer" % (num_gpus, len(gpus), len(gpus))
        )
    if num_gpus:
        return [device.name for device in gpus[:num_gpus]]
    return [device.name for device in tf.config.list_logical_devices("CPU")]


def _check_tf_config() -> Dict[str, Any]:
    """The parsed ``TF_CONFIG``; a one-line error when it is missing or not a worker's."""
    raw = os.environ.get("TF_CONFIG")
    if not raw:
        raise DistributionError(
            "--distribution_strategy=multi_worker needs TF_CONFIG, e.g. "
            '\'{"cluster": {"worker": ["host1:port", "host2:port"]}, '
            '"task": {"type": "worker", "index": 0}}\' (docs/distributed.md)'
        )
    try:
        config = json.loads(raw)
        workers = config["cluster"]["worker"]
        task = config["task"]
        if task["type"] != "worker" or not 0 <= int(task["index"]) < len(workers):
            raise ValueError("the task is not one of the workers")
    except (ValueError, KeyError, TypeError) as e:
        raise DistributionError(
            "TF_CONFIG is not a worker's configuration (%s): it needs cluster.worker, a "
            "list of host:port, and task {type: worker, index: i}" % e
        ) from e
    return config


def decode_shard(num_shards: Optional[int], shard_index: Optional[int]) -> Tuple[int, int]:
    """``(index, count)`` of this process among the shards of a decode.

    ``--num_shards`` and ``--shard_index`` when given; else, under a ``TF_CONFIG`` that
    names workers, this worker's index among them; else ``(0, 1)``.

    Raises:
      DistributionError: an index outside the shards.
    """
    if num_shards is None and os.environ.get("TF_CONFIG"):
        config = _check_tf_config()
        num_shards = len(config["cluster"]["worker"])
        shard_index = int(config["task"]["index"]) if shard_index is None else shard_index
    num_shards = num_shards or 1
    shard_index = shard_index or 0
    if not 0 <= shard_index < num_shards:
        raise DistributionError(
            "--shard_index=%d is not one of the %d shards; give 0 to %d"
            % (shard_index, num_shards, num_shards - 1)
        )
    return shard_index, num_shards


def is_chief(strategy: tf.distribute.Strategy) -> bool:
    """Whether this process writes the run's files: always, but for a multi-worker
    strategy's workers other than worker 0."""
    resolver = getattr(strategy, "cluster_resolver", None)
    if resolver is None or not resolver.task_type:
        return True
    return resolver.task_type == "chief" or (
        resolver.task_type == "worker" and resolver.task_id == 0
    )


def worker_scratch_dir(directory: str, strategy: tf.distribute.Strategy) -> str:
    """Where this process writes what the chief writes to ``directory``: ``directory``
    itself on the chief, a scratch folder of its own on another worker (its trainer
    removes it at the end)."""
    if is_chief(strategy):
        return directory
    resolver = strategy.cluster_resolver
    return os.path.join(
        tempfile.gettempdir(),
        "acvi_worker_%s_%d_%d" % (resolver.task_type, resolver.task_id, os.getpid()),
    )


def replica_rows(batch: Dict[str, tf.Tensor], context: Any) -> Dict[str, tf.Tensor]:
    """The rows of a global batch that replica ``context.replica_id_in_sync_group``
    trains on: a contiguous, balanced part of every tensor's first axis (sizes differ by
    at most one); scalars are every replica's.

    Args:
      batch: the global batch, a dict of tensors with the examples on the first axis.
      context: what ``experimental_distribute_values_from_function`` passes (a
        ``tf.distribute.experimental.ValueContext``) or a ``ReplicaContext``.

    Returns:
      The replica's batch.
    """
    replicas = context.num_replicas_in_sync
    replica = context.replica_id_in_sync_group
    size = batch_size(batch)
    start = (replica * size) // replicas
    end = ((replica + 1) * size) // replicas
    return {k: v if v.shape.rank == 0 else v[start:end] for k, v in batch.items()}


def batch_size(batch: Dict[str, tf.Tensor]) -> tf.Tensor:
    """The number of examples of a batch: the first axis of its first non-scalar tensor."""
    for value in batch.values():
        if value.shape.rank:
            return tf.shape(value)[0]
    raise ValueError("the batch has no tensor with an example axis")


def use_cpu_devices(count: int) -> None:
    """Splits the CPU into ``count`` logical devices, the replicas ``mirrored`` trains on
    where no GPU is used (``--cpu_devices``).

    Call it before TensorFlow's runtime starts (the first op, or a device listing).

    Raises:
      DistributionError: the runtime already runs with another number of CPU devices.
    """
    cpu = tf.config.list_physical_devices("CPU")[0]
    try:
        tf.config.set_logical_device_configuration(
            cpu, [tf.config.LogicalDeviceConfiguration()] * count
        )
    except RuntimeError as e:
        raise DistributionError(
            "--cpu_devices=%d: TensorFlow's runtime already runs with %d CPU device(s) in "
            "this process; give the flag to a new process"
            % (count, len(tf.config.list_logical_devices("CPU")))
        ) from e


def describe_devices(strategy: Optional[tf.distribute.Strategy] = None) -> str:
    """What a command computes on, for its ``Devices:`` log line.

    Args:
      strategy: the strategy the command trains under; None: the command does not train,
        and its ops run where TensorFlow places them (the first GPU, or the CPU).

    Returns:
      E.g. ``1 CPU (no GPU visible)``, ``1 GPU (of 2 visible)`` or ``2 GPUs
      (MirroredStrategy, 2 replicas)``.
    """
    gpus = len(tf.config.list_logical_devices("GPU"))
    name = BUILT_STRATEGIES.get(type(strategy))
    devices = strategy.extended.worker_devices if name else ["GPU" if gpus else "CPU"]
    count = len(devices)
    if "GPU" in devices[0]:
        what = "%d GPU%s" % (count, "s" if count > 1 else "")
        notes = ["of %d visible" % gpus] if count < gpus else []
    else:
        what = "%d logical CPU devices" % count if count > 1 else "1 CPU"
        notes = ["%d GPU(s) visible, not used" % gpus if gpus else "no GPU visible"]
    if strategy is not None:
        replicas = strategy.num_replicas_in_sync
        if replicas > count:
            what += " on each of %d workers" % (replicas // count)
        notes.append(
            "%s, %d replica%s" % (name or "default strategy", replicas, "s" if replicas > 1 else "")
        )
        if not is_chief(strategy):
            notes.append("this worker writes no files of the run")
    return what + (" (%s)" % "; ".join(notes) if notes else "")


def log_devices(strategy: Optional[tf.distribute.Strategy] = None) -> None:
    """Logs ``Devices: `` and ``describe_devices(strategy)``, once per command."""
    logging.info("Devices: %s", describe_devices(strategy))
