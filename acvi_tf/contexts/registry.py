"""The context mechanisms that ``--context`` chooses from: one entry per mechanism.

A mechanism is a ``context.ContextLayer`` subclass in a module of its own plus one entry
in ``CONTEXTS``: its ``--context`` name, a builder that makes the layer from the
``ContextOptions`` the flags give and a one-line description. The hosts build whatever
``make_context_layer`` returns and talk to it only through the ``ContextLayer`` contract,
so a new mechanism needs no host change; ``--context``'s choices and help, the docs' list
and the tests' mechanisms all come from ``CONTEXTS``.
"""

import dataclasses
from typing import Any, Callable, Dict, Optional, Tuple

from acvi_tf.contexts import acvi as acvi_lib
from acvi_tf.contexts import context, structured, variational, ved


@dataclasses.dataclass(frozen=True)
class ContextOptions:
    """The options of every mechanism; each builder reads its own.

    Attributes:
      structured_scale: ``lambda`` of structured attention.
      structured_penalty: weight of structured attention's L2 penalty on its CRF.
      ved: ``ved.VEDContext`` arguments.
      variational: ``variational.VariationalAttentionContext`` arguments.
      acvi: ``acvi.ACVIContext`` arguments; ``kl_weight`` and ``seed`` among them also
        serve the other mechanisms that draw a sample.
    """

    structured_scale: float = 2.0
    structured_penalty: float = 0.005
    ved: Optional[dict] = None
    variational: Optional[dict] = None
    acvi: Optional[dict] = None

    def sampling(self) -> dict:
        """The options of ``acvi`` that every sampling mechanism reads, where given:
        ``kl_weight`` (absent: the mechanism's own default) and ``seed``."""
        return {k: v for k, v in (self.acvi or {}).items() if k in ("kl_weight", "seed")}


def _soft_attention(options: ContextOptions) -> context.ContextLayer:
    del options
    return context.SoftAttentionContext(name="context")


def _acvi(options: ContextOptions) -> context.ContextLayer:
    return acvi_lib.ACVIContext(name="context", **(options.acvi or {}))


def _structured(options: ContextOptions) -> context.ContextLayer:
    return structured.StructuredAttentionContext(
        scale=options.structured_scale, penalty=options.structured_penalty, name="context"
    )


def _ved(options: ContextOptions) -> context.ContextLayer:
    return ved.VEDContext(name="context", **options.sampling(), **(options.ved or {}))


def _variational(options: ContextOptions) -> context.ContextLayer:
    return variational.VariationalAttentionContext(
        name="context", **options.sampling(), **(options.variational or {})
    )


@dataclasses.dataclass(frozen=True)
class Mechanism:
    """One ``--context`` choice.

    Attributes:
      build: makes the layer, named ``context``, from the flags' ``ContextOptions``.
      description: what the mechanism does, in one line (``--context``'s help).
    """

    build: Callable[[ContextOptions], context.ContextLayer]
    description: str


# --context name -> mechanism.
CONTEXTS: Dict[str, Mechanism] = {
    "sa": Mechanism(_soft_attention, "soft attention (the original models)"),
    "acvi": Mechanism(_acvi, "amortized context vector inference (the paper)"),
    "structured": Mechanism(
        _structured,
        "structured attention (Kim et al. 2017: linear-chain CRF marginals over the source, "
        "the paper's eq. 20)",
    ),
    "ved": Mechanism(
        _ved,
        "the variational encoder-decoder with variational attention (Bahuleyan et al. "
        "2018: a Gaussian sentence latent fed to every decoder step and a Gaussian context "
        "around the soft-attention one)",
    ),
    "variational": Mechanism(
        _variational,
        "Deng et al.'s categorical variational attention (an inference network over source "
        "and target, KL(q || attention), the output layer at the sampled or every source "
        "state)",
    ),
}


def context_names() -> Tuple[str, ...]:
    """The registered ``--context`` names, in registration order."""
    return tuple(CONTEXTS)


def describe_contexts() -> str:
    """``'name' description, ...`` for every registered mechanism (``--context``'s help)."""
    return ", ".join("'%s' %s" % (name, m.description) for name, m in CONTEXTS.items())


def make_context_layer(
    mode: str,
    structured_scale: float = 2.0,
    structured_penalty: float = 0.005,
    ved_options: Optional[dict] = None,
    variational_options: Optional[dict] = None,
    **acvi_options: Any,
) -> context.ContextLayer:
    """Builds the context layer for ``--context=mode``.

    Args:
      mode: a registered name (``context_names``).
      structured_scale: ``lambda`` of structured attention.
      structured_penalty: weight of structured attention's L2 penalty on its CRF.
      ved_options: ``VEDContext`` arguments (``kl_weight`` and ``seed`` come from
        ``acvi_options``).
      variational_options: ``VariationalAttentionContext`` arguments (``kl_weight`` and
        ``seed`` come from ``acvi_options``).
      **acvi_options: ``ACVIContext`` arguments.

    Returns:
      The mechanism's ``context.ContextLayer``, named ``context``.

    Raises:
      ValueError: ``mode`` is not a registered mechanism.
    """
    if mode not in CONTEXTS:
        raise ValueError("context must be one of %s, got %r" % (context_names(), mode))
    options = ContextOptions(
        structured_scale=structured_scale,
        structured_penalty=structured_penalty,
        ved=ved_options,
        variational=variational_options,
        acvi=acvi_options,
    )
    return CONTEXTS[mode].build(options)
