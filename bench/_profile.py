"""Op times of a function by TensorFlow's profiler, for the benchmark scripts.

``op_times(call, steps)`` runs ``call`` ``steps`` times under ``tf.profiler`` and sums
the duration of every op kernel the executor ran (on every thread), per call, by op
type and by the first name-scope component that names a known part of the model.
Times are op times: on several threads they add up to more than the wall time.
"""

import collections
import glob
import os
import tempfile
from typing import Any, Callable, List, Mapping, Tuple

import tensorflow as tf
from tensorflow.tsl.profiler.protobuf import xplane_pb2

# Parts of a model that op names carry in their scope, in the order they are matched.
PARTS = ("variance_network", "context", "attention", "encoder", "decoder", "output_projection")


def _kernel_events(space):
    """``(op name, op type, seconds)`` of every op kernel in an ``XSpace``."""
    for plane in space.planes:
        for line in plane.lines:
            for event in line.events:
                name = plane.event_metadata[event.metadata_id].name
                if ":" not in name or "::" in name or " " in name:  # "op:Type" is a kernel
                    continue
                op_name, op_type = name.rsplit(":", 1)
                op_type = op_type[len("_Mkl") :] if op_type.startswith("_Mkl") else op_type
                yield op_name, op_type, event.duration_ps * 1e-12


def op_times(
    call: Callable[[], Any], steps: int = 2
) -> Tuple[collections.Counter, collections.Counter]:
    """Profiles ``steps`` calls of ``call``.

    Returns:
      ``(by_type, by_part)``: Counters of seconds per call, by op type and by the part of
      ``PARTS`` the op's name mentions first ("other" for none).
    """
    by_type, by_part = collections.Counter(), collections.Counter()
    with tempfile.TemporaryDirectory() as logdir:
        tf.profiler.experimental.start(logdir)
        try:
            for _ in range(steps):
                call()
        finally:
            tf.profiler.experimental.stop()
        [path] = glob.glob(os.path.join(logdir, "plugins", "profile", "*", "*.xplane.pb"))
        space = xplane_pb2.XSpace()
        with open(path, "rb") as f:
            space.ParseFromString(f.read())
    for op_name, op_type, seconds in _kernel_events(space):
        by_type[op_type] += seconds / steps
        part = next((p for p in PARTS if p in op_name), "other")
        by_part[part] += seconds / steps
    return by_type, by_part


def table(
    profiles: Mapping[str, Tuple[collections.Counter, collections.Counter]], top: int = 12
) -> Tuple[List[str], List[List[str]]]:
    """A table of ``profiles`` (label -> ``op_times``'s result) side by side: the total,
    each part of ``PARTS``, then the ``top`` op types by their largest time, in seconds
    of op time per call.

    Returns:
      ``(header, rows)``.
    """
    labels = list(profiles)
    types = collections.Counter()
    for by_type, _ in profiles.values():
        for op_type, seconds in by_type.items():
            types[op_type] = max(types[op_type], seconds)
    rows = [["all ops"] + ["%.3f" % sum(profiles[k][0].values()) for k in labels]]
    for part in PARTS + ("other",):
        rows.append(["part: " + part] + ["%.3f" % profiles[k][1][part] for k in labels])
    for op_type, _ in types.most_common(top):
        rows.append(["op: " + op_type] + ["%.3f" % profiles[k][0][op_type] for k in labels])
    return ["op time, s / step"] + labels, rows
