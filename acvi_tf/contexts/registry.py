"""The context mechanisms that ``--context`` chooses from: one entry per mechanism.

A mechanism is a ``context.ContextLayer`` subclass in a module of its own, which also
defines the mechanism's flags and reads its options from them, plus one entry in
``CONTEXTS``: its ``--context`` name, the layer, a one-line description, and the
module's ``define_flags``, ``options`` and model flags. The hosts build whatever
``make_context_layer`` returns and talk to it only through the ``ContextLayer`` contract,
so a new mechanism needs no host change; ``--context``'s choices and help, the docs' list
and the tests' mechanisms all come from ``CONTEXTS``.
"""

import dataclasses
from typing import Any, Callable, Dict, Tuple

from absl import flags

from acvi_tf.contexts import acvi as acvi_lib
from acvi_tf.contexts import context, structured, variational, ved


def _no_flags(fv: flags.FlagValues) -> None:
    del fv


def _no_options(config: Any) -> Dict[str, Any]:
    del config
    return {}


@dataclasses.dataclass(frozen=True)
class Mechanism:
    """One ``--context`` choice.

    Attributes:
      layer: the ``context.ContextLayer`` subclass (or a function making one), called
        with ``name="context"`` and the mechanism's options as keyword arguments.
      description: what the mechanism does, in one line (``--context``'s help).
      define_flags: defines the mechanism's own flags on a ``FlagValues`` (the shared
        ones, ``acvi_tf.flags``, are there already); none by default.
      check_flags: registers its flags' checks, after every float flag's finiteness
        check (so a NaN is named as such first); none by default.
      options: a command's ``acvi_tf.config.Config`` -> the ``layer``'s keyword
        arguments; none by default.
      model_flags: those of its flags that decide the layer's variables (a resume
        refuses a changed one).
    """

    layer: Callable[..., context.ContextLayer]
    description: str
    define_flags: Callable[[flags.FlagValues], None] = _no_flags
    check_flags: Callable[[flags.FlagValues], None] = _no_flags
    options: Callable[[Any], Dict[str, Any]] = _no_options
    model_flags: Tuple[str, ...] = ()


# --context name -> mechanism.
CONTEXTS: Dict[str, Mechanism] = {
    "sa": Mechanism(context.SoftAttentionContext, "soft attention (the original models)"),
    "acvi": Mechanism(
        acvi_lib.ACVIContext,
        "amortized context vector inference (the paper)",
        acvi_lib.define_flags,
        acvi_lib.check_flags,
        acvi_lib.options,
        acvi_lib.MODEL_FLAGS,
    ),
    "structured": Mechanism(
        structured.StructuredAttentionContext,
        "structured attention (Kim et al. 2017: linear-chain CRF marginals over the source, "
        "the paper's eq. 20)",
        structured.define_flags,
        options=structured.options,
    ),
    "ved": Mechanism(
        ved.VEDContext,
        "the variational encoder-decoder with variational attention (Bahuleyan et al. "
        "2018: a Gaussian sentence latent fed to every decoder step and a Gaussian context "
        "around the soft-attention one)",
        ved.define_flags,
        options=ved.options,
        model_flags=ved.MODEL_FLAGS,
    ),
    "variational": Mechanism(
        variational.VariationalAttentionContext,
        "Deng et al.'s categorical variational attention (an inference network over source "
        "and target, KL(q || attention), the output layer at the sampled or every source "
        "state)",
        variational.define_flags,
        options=variational.options,
        model_flags=variational.MODEL_FLAGS,
    ),
}


def context_names() -> Tuple[str, ...]:
    """The registered ``--context`` names, in registration order."""
    return tuple(CONTEXTS)


def describe_contexts() -> str:
    """``'name' description, ...`` for every registered mechanism (``--context``'s help)."""
    return ", ".join("'%s' %s" % (name, m.description) for name, m in CONTEXTS.items())


def model_flags() -> Tuple[str, ...]:
    """The registered mechanisms' flags that decide a layer's variables."""
    return tuple(name for m in CONTEXTS.values() for name in m.model_flags)


def make_context_layer(name: str, /, **options: Any) -> context.ContextLayer:
    """Builds the context layer for ``--context=name``.

    Args:
      name: a registered name (``context_names``).
      **options: the mechanism's own options (its layer's keyword arguments; a command
        gets them from its flags with ``Mechanism.options``).

    Returns:
      The mechanism's ``context.ContextLayer``, named ``context``.

    Raises:
      ValueError: ``name`` is not a registered mechanism.
    """
    if name not in CONTEXTS:
        raise ValueError("context must be one of %s, got %r" % (context_names(), name))
    return CONTEXTS[name].layer(name="context", **options)


def layer_from_flags(config: Any) -> context.ContextLayer:
    """The layer that ``--context`` and the mechanism's own flags select.

    Args:
      config: a command's ``acvi_tf.config.Config`` with the shared flags.
    """
    return make_context_layer(config.context, **CONTEXTS[config.context].options(config))
