"""acvi_tf.contexts.registry: every ``--context`` name builds its layer with its own options, the
project's modules import without cycles, and a new mechanism registered in one place runs
in all three hosts."""

import ast
import inspect
import os
import re

import hosts
import numpy as np
import pytest
import tensorflow as tf

from acvi_tf import config as config_lib
from acvi_tf import flags as acvi_flags
from acvi_tf.contexts import acvi as acvi_lib
from acvi_tf.contexts import context, registry, structured, variational, ved

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
PACKAGES = ("acvi_tf", "nmt", "pointer_generator", "video_caption", "data_prep")
MODULES = dict(
    acvi=acvi_lib, context=context, structured=structured, variational=variational, ved=ved
)


def _documented_mechanisms():
    """``--context`` name -> layer class path of docs/library.md's table of mechanisms."""
    with open(os.path.join(ROOT, "docs", "library.md"), encoding="utf-8") as f:
        text = f.read()
    table = text.split("| `--context` | layer |\n|---|---|\n", 1)[1].split("\n\n", 1)[0]
    return dict(re.findall(r"^\| `([^`]+)` \| `([^`]+)` \|$", table, re.M))


def test_the_docs_list_every_registered_mechanism_and_its_layer():
    documented = _documented_mechanisms()
    assert tuple(documented) == registry.context_names()
    for name, path in documented.items():
        module, cls = path.split(".")
        layer = registry.make_context_layer(name)
        assert type(layer) is getattr(MODULES[module], cls) and layer.name == "context"


def test_the_base_class_names_none_of_the_mechanisms():
    source = inspect.getsource(context.ContextLayer)
    for name in registry.context_names():
        cls = type(registry.make_context_layer(name))
        assert cls is context.SoftAttentionContext or cls.__name__ not in source, cls


def _sources():
    """``(path, parsed tree)`` of every module of the project's packages."""
    for package in PACKAGES:
        for folder, _, names in os.walk(os.path.join(ROOT, package)):
            for name in sorted(names):
                if name.endswith(".py"):
                    path = os.path.join(folder, name)
                    with open(path, encoding="utf-8") as f:
                        yield os.path.relpath(path, ROOT), ast.parse(f.read())


def _is_context_layer(node):
    """Whether an expression names a context layer: ``context_layer`` or
    ``<anything>.context_layer``."""
    name = node.attr if isinstance(node, ast.Attribute) else getattr(node, "id", None)
    return name == "context_layer"


def test_the_code_reads_a_context_layer_only_through_its_contract():
    """Every attribute the project reads from a context layer is declared on
    ``ContextLayer``, and nothing asks an object whether it has a part of the contract
    (a ``getattr`` or ``hasattr`` with a default stands for a capability the base class
    does not declare)."""
    contract = {name for name in dir(context.ContextLayer) if not name.startswith("_")}
    undeclared, probes = [], []
    for path, tree in _sources():
        for node in ast.walk(tree):
            if isinstance(node, ast.Attribute) and _is_context_layer(node.value):
                if node.attr not in contract:
                    undeclared.append((path, node.lineno, node.attr))
            if (
                isinstance(node, ast.Call)
                and getattr(node.func, "id", None) in ("getattr", "hasattr")
                and len(node.args) >= 2
                and isinstance(node.args[1], ast.Constant)
                and node.args[1].value in contract | {"context_layer"}
            ):
                probes.append((path, node.lineno, node.args[1].value))
    assert not undeclared, undeclared
    assert not probes, probes


def test_the_context_help_lists_every_mechanism():
    help_text = registry.describe_contexts()
    assert [m for m in re.findall(r"'(\w+)' ", help_text)] == list(registry.context_names())
    assert "'ved' the variational encoder-decoder" in help_text


def test_options_reach_their_mechanism():
    acvi = registry.make_context_layer("acvi", kl="exact", kl_weight=0.5, seed=3)
    assert (acvi.kl, acvi.kl_weight, acvi.seed) == ("exact", 0.5, 3)
    assert registry.make_context_layer("acvi").kl_weight == acvi_lib.ACVI_KL_WEIGHT
    layer = registry.make_context_layer("structured", scale=3.0, penalty=0.1)
    assert (layer.scale, layer.penalty) == (3.0, 0.1)
    vae = registry.make_context_layer("ved", latent_dim=7)
    assert (vae.latent_dim, vae.kl_weight) == (7, 0.1)
    assert registry.make_context_layer("ved", kl_weight=0.3, seed=5).kl_weight == 0.3
    assert registry.make_context_layer("variational").kl_weight == 1.0
    attention = registry.make_context_layer("variational", mode="enum", kl_weight=0.2)
    assert (attention.mode, attention.kl_weight) == ("enum", 0.2)
    with pytest.raises(TypeError):  # an option of another mechanism's
        registry.make_context_layer("structured", latent_dim=7)


def test_each_mechanism_reads_its_options_from_its_own_flags():
    """A command's flags reach the layer through the mechanism's ``options``: its own
    flags, and the shared ``--kl_weight`` (where given) and ``--seed`` for the
    mechanisms that draw; unset, each keeps its own KL weight."""
    argv = ["x", "--seed=4", "--structured_lambda=3", "--ved_latent_dim=7"]
    argv += ["--variational_mode=enum", "--acvi_kl=exact", "--acvi_variance_net=relu"]
    config = config_lib.parse(acvi_flags.define_flags, argv)

    def layer(name, **given):
        return registry.layer_from_flags(config.replace(context=name, **given))

    acvi = layer("acvi")
    assert (acvi.kl, acvi.seed, acvi.kl_weight) == ("exact", 4, acvi_lib.ACVI_KL_WEIGHT)
    assert acvi.variance_net == "relu"
    assert (layer("structured").scale, layer("structured").penalty) == (3.0, 0.005)
    ved = layer("ved", kl_weight=0.3)
    assert (ved.latent_dim, ved.seed, ved.kl_weight) == (7, 4, 0.3)
    variational = layer("variational")
    assert (variational.mode, variational.seed, variational.kl_weight) == ("enum", 4, 1.0)
    assert type(layer("sa")) is context.SoftAttentionContext
    # the mechanisms' flags that decide variables are model flags, and recorded
    assert {"acvi_variance_net", "ved_latent_dim", "variational_inference_units"} <= set(
        acvi_flags.MODEL_FLAGS
    )
    assert {"acvi_kl", "structured_lambda", "ved_prior", "variational_mode"} <= config.recorded


def test_an_unknown_name_lists_the_registered_ones():
    with pytest.raises(ValueError, match="context must be one of .*'sa'.*got 'hard'"):
        registry.make_context_layer("hard")


def _runtime_nodes(tree):
    """Every node of ``tree`` outside ``if TYPE_CHECKING:`` blocks (annotations only)."""
    stack = [tree]
    while stack:
        node = stack.pop()
        if isinstance(node, ast.If) and getattr(node.test, "id", None) == "TYPE_CHECKING":
            stack.extend(node.orelse)
            continue
        yield node
        stack.extend(ast.iter_child_nodes(node))


def _import_graph():
    """Module -> the project modules it imports anywhere in its source (also inside
    functions, where an import cycle hides until the function runs), except imports for
    type annotations only."""
    trees = {
        path[: -len(".py")].replace(os.sep, ".").removesuffix(".__init__"): tree
        for path, tree in _sources()
    }
    graph = {}
    for module, tree in trees.items():
        imported = set()
        for node in _runtime_nodes(tree):
            if isinstance(node, ast.Import):
                imported.update(alias.name for alias in node.names)
            elif isinstance(node, ast.ImportFrom) and node.module and not node.level:
                for alias in node.names:
                    child = "%s.%s" % (node.module, alias.name)
                    imported.add(child if child in trees else node.module)
        graph[module] = sorted(imported & set(trees) - {module})
    return graph


def _cycles(graph):
    """Every back edge of a depth-first search, as the cycle it closes."""
    found, state, path = [], {}, []

    def visit(module):
        state[module] = "open"
        path.append(module)
        for target in graph[module]:
            if state.get(target) == "open":
                found.append(path[path.index(target) :] + [target])
            elif target not in state:
                visit(target)
        path.pop()
        state[module] = "done"

    for module in sorted(graph):
        if module not in state:
            visit(module)
    return found


def test_no_import_cycles():
    graph = _import_graph()
    assert (
        "acvi_tf.contexts.structured" in graph["acvi_tf.contexts.registry"]
    )  # the graph sees imports
    assert _cycles(graph) == []
    assert _cycles({"a": ["b"], "b": ["c"], "c": ["a"]}) == [["a", "b", "c", "a"]]


def _library_layers():
    """docs/library.md's layers of ``acvi_tf``: sub-package or top-level module -> its
    place in the numbered list under "Layers"."""
    with open(os.path.join(ROOT, "docs", "library.md"), encoding="utf-8") as f:
        section = f.read().split("### Layers", 1)[1].split("\n#", 1)[0]
    layers = {}
    for line in section.splitlines():
        numbered = re.match(r"(\d+)\. (.+)$", line)
        if numbered:
            for name in re.findall(r"`([a-z_]+)`", numbered.group(2)):
                layers[name] = int(numbered.group(1))
    return layers


def _upward_imports(graph, layers):
    """``(module, target)`` for each import in ``graph`` of an ``acvi_tf`` module from a
    later layer than the importing module's (the package's own ``__init__`` aside)."""

    def layer(module):
        return layers[module.split(".")[1]]

    return [
        (module, target)
        for module, targets in sorted(graph.items())
        if module.startswith("acvi_tf.")
        for target in targets
        if target.startswith("acvi_tf.") and layer(target) > layer(module)
    ]


def test_the_library_imports_only_downward():
    layers = _library_layers()
    library = os.path.join(ROOT, "acvi_tf")
    parts = {
        name[: -len(".py")] if name.endswith(".py") else name
        for name in os.listdir(library)
        if (name.endswith(".py") and name != "__init__.py")
        or os.path.isfile(os.path.join(library, name, "__init__.py"))
    }
    assert set(layers) == parts  # every sub-package and top-level module has its place
    assert _upward_imports(_import_graph(), layers) == []
    # an import from a later layer is one
    toy = {"acvi_tf.contexts.a": ["acvi_tf.training.b"], "acvi_tf.training.b": []}
    assert _upward_imports(toy, layers) == [("acvi_tf.contexts.a", "acvi_tf.training.b")]


def _is_main_block(node):
    """Whether ``node`` is ``if __name__ == "__main__":``."""
    test = getattr(node, "test", None)
    return (
        isinstance(node, ast.If)
        and isinstance(test, ast.Compare)
        and getattr(test.left, "id", None) == "__name__"
    )


def _host_commands():
    """``module name -> its length in lines`` of every host module that runs as a command
    (``if __name__ == "__main__":``)."""
    hosts = ("pointer_generator", "nmt", "video_caption")
    return {
        path[: -len(".py")].replace(os.sep, "."): tree.body[-1].end_lineno
        for path, tree in _sources()
        if path.split(os.sep)[0] in hosts and any(_is_main_block(n) for n in tree.body)
    }


COMMAND_LINES = 150


def test_every_host_command_is_short():
    """A command parses its flags and hands the Task to the Runner (or calls its
    library); what it runs lives in the host's modules and ``acvi_tf``."""
    commands = _host_commands()
    assert len(commands) >= 14, sorted(commands)
    assert {name: n for name, n in commands.items() if n >= COMMAND_LINES} == {}


def test_no_module_imports_a_host_command():
    """A host's commands (training, raw text, export, the tools) are entry points: they
    parse flags and hand the Task to the Runner, and no module imports one."""
    commands = set(_host_commands())
    assert {
        "nmt.translate",
        "video_caption.export",
        "pointer_generator.run_summarization",
    } <= commands
    importing = [
        (module, target)
        for module, targets in _import_graph().items()
        for target in targets
        if target in commands
    ]
    assert importing == []


# what each package may import of the project: the library nothing else, the corpus
# builders the library, each host the library only
ALLOWED_IMPORTS = {
    "acvi_tf": {"acvi_tf"},
    "data_prep": {"acvi_tf", "data_prep"},
    "pointer_generator": {"acvi_tf", "pointer_generator"},
    "nmt": {"acvi_tf", "nmt"},
    "video_caption": {"acvi_tf", "video_caption"},
}


def test_packages_import_only_the_library_and_themselves():
    """The corpus builders and the hosts share file formats through ``acvi_tf.formats``,
    not by importing each other."""
    crossing = [
        (module, target)
        for module, targets in _import_graph().items()
        for target in targets
        if target.split(".")[0] not in ALLOWED_IMPORTS[module.split(".")[0]]
    ]
    assert crossing == []


def test_no_host_imports_a_particular_mechanism():
    """The hosts reach every mechanism through the ``ContextLayer`` contract alone."""
    mechanisms = {
        "acvi_tf.contexts.structured",
        "acvi_tf.contexts.variational",
        "acvi_tf.contexts.ved",
    }
    importing = [
        (module, sorted(mechanisms & set(targets)))
        for module, targets in _import_graph().items()
        if module.split(".")[0] in ("pointer_generator", "nmt", "video_caption")
        and mechanisms & set(targets)
    ]
    assert importing == []


class ScaledContext(context.ContextLayer):
    """A mechanism outside the library: ``c_t = scale * sum_i a_t,i h_i`` with the KL
    ``|c_t|^2 / 2``. It only draws a context and a KL."""

    def __init__(self, scale, **kwargs):
        super().__init__(**kwargs)
        self.scale = scale

    def draw_steps(self, probs, prepared, training, use_gumbel, seed):
        del training, use_gumbel, seed
        return self.scale * context.contract(probs, prepared, "memory")

    def kl_steps(self, context_vector, probs, prepared):
        del probs, prepared
        return 0.5 * tf.reduce_sum(tf.square(context_vector), axis=-1)


@pytest.mark.parametrize("host", hosts.HOSTS)
def test_a_registered_mechanism_runs_in_every_host(host, monkeypatch):
    """One registry entry is all a host needs: at scale 1 the new mechanism computes
    exactly what soft attention computes, at scale 3 its context reaches the outputs, and
    the host reports its KL and trains every weight through it."""
    monkeypatch.setitem(
        registry.CONTEXTS,
        "scaled",
        registry.Mechanism(ScaledContext, "a scaled context"),
    )
    build, make_batch, outputs = hosts.HOST_SETUPS[host]
    batch = make_batch()
    soft = outputs(build(None, seed=7), batch)
    same = outputs(build(registry.make_context_layer("scaled", scale=1.0), seed=7), batch)
    for name in soft:
        np.testing.assert_allclose(same[name], soft[name], rtol=1e-6, atol=1e-6, err_msg=name)

    model = build(registry.make_context_layer("scaled", scale=3.0), seed=7)
    with tf.GradientTape() as tape:
        scaled = outputs(model, batch)
        out = model(batch, training=True)
        loss = scaled["nll"] + tf.reduce_mean(out["kl"])
    changed = [name for name in soft if not np.allclose(scaled[name], soft[name], atol=1e-6)]
    assert "nll" in changed and len(changed) >= 2
    assert out["kl"].shape == out["attn"].shape[:2] and float(tf.reduce_min(out["kl"])) > 0
    gradients = tape.gradient(loss, model.trainable_weights)
    assert all(g is not None and np.all(np.isfinite(tf.convert_to_tensor(g))) for g in gradients)


# The longest function that defines flags: flags grouped by what they set, a group per
# function, each short enough to read whole.
FLAG_FUNCTION_LINES = 80


def test_no_function_defining_flags_is_long():
    long = []
    for path, tree in _sources():
        for node in ast.walk(tree):
            defines = isinstance(node, ast.FunctionDef) and any(
                isinstance(call, ast.Call)
                and isinstance(call.func, ast.Attribute)
                and call.func.attr.startswith("DEFINE_")
                for call in ast.walk(node)
            )
            if defines and node.end_lineno - node.lineno + 1 > FLAG_FUNCTION_LINES:
                long.append("%s:%d %s" % (path, node.lineno, node.name))
    assert long == []
