"""How the test process and the children of ``launch.py`` run TensorFlow, set before its
runtime starts (its first op): Grappler's rewrites of traced graphs on or off, and each
eager op run as its own kernel (docs/testing.md says why and what it saves). Importing
it imports no TensorFlow: ``launch.py`` quiets TensorFlow's start-up first."""


def graph_rewrites(on: bool) -> None:
    """Turns Grappler's rewrites of the traced functions' graphs on or off in this process.

    Off, a tiny model's first training step traces several seconds sooner (the rewrites
    of its graph of thousands of nodes take most of the time), and its steps run the same
    ops unfused.
    """
    import tensorflow as tf

    tf.config.optimizer.set_experimental_options({"disable_meta_optimizer": not on})


def eager_ops_as_kernels() -> None:
    """Runs each eager op as its kernel, not wrapped in a function of one op.

    TensorFlow wraps every eager op in a function, which it instantiates at the op's
    first call with each new signature (about a millisecond), and ``tf.random.set_seed``
    (every model's build calls it) drops them all. Traced functions run as before; an
    eager op runs TensorFlow's own kernel, where the wrapped op ran oneDNN's rewrite of
    it, so float32's last bits may differ between an op run eagerly and the same op in a
    traced function. Call it before the runtime starts.
    """
    from tensorflow.python import pywrap_tfe

    set_option = pywrap_tfe.TFE_ContextOptionsSetRunEagerOpAsFunction
    pywrap_tfe.TFE_ContextOptionsSetRunEagerOpAsFunction = lambda options, _: set_option(
        options, False
    )
