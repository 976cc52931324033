"""``python tests/launch.py [--eager] MODULE ARGS...`` runs ``python -m MODULE ARGS...``
with Grappler's rewrites of the traced graphs off and each eager op run as its kernel,
as the test process runs them (``conftest.py``, ``tf_runtime.py``), and with ``--eager``
every ``tf.function`` run eagerly (as conftest's ``eager`` marker runs a test's).

For the tests whose child processes are about what a process shows: a signal's clean
stop, a SIGKILL and the resume, two workers of one cluster, a validation left out by a
kill. The command runs as ``python -m`` runs it (the same ``sys.argv``, ``__main__``,
the current folder first on the path, TensorFlow's start-up quieted by ``acvi_tf.quiet``
as the command quiets it); only the rewrites, which take most of a tiny model's first
step, are left out, and with ``--eager`` the tracing too: the kills, the clean stops and
the validation left out are about what surrounds a run's few steps, which run faster
untraced than a launch takes to trace them. The tests of what users run with the
rewrites on start ``python -m`` itself: the learning tests, ``test_determinism.py``, the
served models, the start-up lines of ``test_quiet.py`` and the corpus builders of
``test_first_hour.py``.
"""

import os
import runpy
import sys

import tf_runtime


def main() -> None:
    eager = sys.argv[1] == "--eager"
    if eager:
        del sys.argv[1]
    module = sys.argv[1]
    sys.argv = sys.argv[1:]  # run_module puts the module's file in sys.argv[0]
    sys.path[0] = os.getcwd()  # as ``python -m`` has it, not this file's folder
    import acvi_tf  # noqa: F401  (acvi_tf.quiet reads the command's flags, then quiets)

    # isort: split

    import tensorflow as tf

    tf_runtime.eager_ops_as_kernels()
    tf_runtime.graph_rewrites(False)
    tf.config.run_functions_eagerly(eager)
    runpy.run_module(module, run_name="__main__", alter_sys=True)


if __name__ == "__main__":
    main()
