"""Print pullback's import graph and enforce its layers.

The package is ``src/pullback/`` plus the top-level ``transforms/`` folder, which installs as
``pullback.transforms``. Each module belongs to one layer (``LAYERS`` below, bottom to top)
and may import only modules of its own layer or of lower layers. The tool reads the source
with ``ast`` (it never imports the package), so it works on a broken tree too.

Every import of a pullback module is an edge, including imports inside functions: a
function-level import still makes a cycle, it only hides it until call time.

Run from the repository root::

    python tools/import_graph.py          # the graph, grouped by layer, then the problems
    python tools/import_graph.py --dot    # the graph as Graphviz DOT (upward edges in red)

It exits 1 when there are problems:

* a cycle (strongly connected component) of more than ``MAX_CYCLE`` files;
* a cycle that contains a module of layers 1-4 (config, dtypes, ops, ir, transforms);
* an upward import (a lower layer importing a higher one), with its file and line; the
  front door ``pullback/__init__.py`` may import anything, and a package ``__init__.py``
  may import its own submodules;
* an import of a pullback module inside a function body (``function_import_problems``;
  drop it from ``CHECKS`` to relax that rule).

``check(root)`` returns the problems as a list of strings, empty when the tree is clean;
``tests/test_layers.py`` calls it.
"""

from __future__ import annotations

import argparse
import ast
import sys
from collections.abc import Callable, Container, Iterator
from pathlib import Path
from typing import NamedTuple

ROOT_PACKAGE = "pullback"


class Layer(NamedTuple):
    number: int
    name: str
    modules: tuple[str, ...]  # a module and everything under it ("pullback" alone: exactly)


# Bottom to top: a module may import only its own layer and the layers below it.
LAYERS: tuple[Layer, ...] = (
    Layer(1, "leaf utilities", ("pullback.settings", "pullback.dtypes", "pullback.pytree",
                                "pullback.user_code")),
    Layer(2, "op table", ("pullback.ops",)),
    Layer(3, "IR", ("pullback.ir",)),
    Layer(4, "transforms", ("pullback.transforms",)),
    Layer(5, "eager runtime", ("pullback.tensor", "pullback.format", "pullback.creation",
                               "pullback.numpy_interop", "pullback.numpy_face",
                               "pullback.autograd")),
    Layer(6, "compiler", ("pullback.compiler",)),
    Layer(7, "front end", ("pullback.nn", "pullback.linalg", "pullback.fft", "pullback.optim",
                           "pullback.debug", "pullback.func",
                           "pullback.serialization", "pullback.viz", "pullback.datasets",
                           "pullback.scipy", "pullback.distributions",
                           "pullback")),
)
DEFAULT_LAYER = 5  # any other pullback module belongs to the eager runtime
NO_CYCLE_LAYERS = 4  # modules of layers 1..4 may be in no import cycle at all
MAX_CYCLE = 4  # the largest import cycle (in files) allowed in the upper layers

# (folder relative to the repository root, the package it installs as)
SOURCE_DIRS: tuple[tuple[str, str], ...] = (
    ("src/pullback", "pullback"),
    ("transforms", "pullback.transforms"),
)


class Module(NamedTuple):
    name: str  # dotted name; a package's __init__.py is named after the package
    path: Path  # relative to the repository root
    is_package: bool


class Import(NamedTuple):
    source: str
    target: str
    line: int
    in_function: bool
    names: tuple = ()  # the names a ``from ... import`` takes


class Graph(NamedTuple):
    modules: dict[str, Module]
    imports: list[Import]  # sorted by source, line, target

    def edges(self) -> dict[str, list[str]]:
        """Every module (imported ones too) -> its sorted, distinct imports."""
        out: dict[str, set[str]] = {name: set() for name in self.modules}
        for imp in self.imports:
            out[imp.source].add(imp.target)
            out.setdefault(imp.target, set())
        return {name: sorted(out[name]) for name in sorted(out)}


# ----------------------------------------------------------------------------- layers


def _is_ours(name: str) -> bool:
    return name == ROOT_PACKAGE or name.startswith(ROOT_PACKAGE + ".")


def _matches(module: str, prefix: str) -> bool:
    if prefix == ROOT_PACKAGE:
        return module == prefix
    return module == prefix or module.startswith(prefix + ".")


def layer_of(module: str) -> Layer:
    """The layer of a dotted module name (the longest matching entry of ``LAYERS`` wins)."""
    best: tuple[int, Layer] | None = None
    for layer in LAYERS:
        for prefix in layer.modules:
            if _matches(module, prefix) and (best is None or len(prefix) > best[0]):
                best = (len(prefix), layer)
    return best[1] if best else LAYERS[DEFAULT_LAYER - 1]


def _describe(module: str) -> str:
    layer = layer_of(module)
    return f"{module} (layer {layer.number}, {layer.name})"


# ----------------------------------------------------------------------------- parsing


def find_modules(root: Path) -> dict[str, Module]:
    """Every module file of the package under ``root``, by dotted name."""
    found: dict[str, Module] = {}
    for folder, package in SOURCE_DIRS:
        base = root / folder
        for path in sorted(base.rglob("*.py")) if base.is_dir() else ():
            parts = path.relative_to(base).with_suffix("").parts
            is_package = parts[-1] == "__init__"
            name = ".".join((package, *(parts[:-1] if is_package else parts)))
            found[name] = Module(name, path.relative_to(root), is_package)
    return found


def _import_nodes(tree: ast.AST) -> Iterator[tuple[ast.Import | ast.ImportFrom, bool]]:
    """Every import statement, with whether it sits inside a function (iterative walk)."""
    stack: list[tuple[ast.AST, bool]] = [(tree, False)]
    while stack:
        node, in_function = stack.pop()
        if isinstance(node, (ast.Import, ast.ImportFrom)):
            yield node, in_function
        inner = in_function or isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef))
        stack.extend((child, inner) for child in ast.iter_child_nodes(node))


def _absolute(module: Module, node: ast.ImportFrom) -> str:
    """The absolute dotted name ``from <here> import ...`` refers to."""
    if node.level == 0:
        return node.module or ""
    package = module.name if module.is_package else module.name.rpartition(".")[0]
    parts = package.split(".")
    if node.level - 1 >= len(parts):
        return ""  # above the top of the package: not ours
    base = ".".join(parts[: len(parts) - (node.level - 1)])
    return f"{base}.{node.module}" if node.module else base


def _targets(module: Module, node: ast.Import | ast.ImportFrom, known: Container[str]) -> set[str]:
    """The pullback modules one import statement imports (a named submodule, else the package)."""
    if isinstance(node, ast.Import):
        return {alias.name for alias in node.names if _is_ours(alias.name)}
    base = _absolute(module, node)
    if not _is_ours(base):
        return set()
    return {f"{base}.{a.name}" if f"{base}.{a.name}" in known else base for a in node.names}


def module_imports(root: Path, module: Module, known: Container[str]) -> list[Import]:
    """The imports of pullback modules in one file (self-imports left out)."""
    tree = ast.parse((root / module.path).read_text(encoding="utf-8"), str(module.path))
    found = []
    for node, in_function in _import_nodes(tree):
        names = tuple(a.name for a in node.names) if isinstance(node, ast.ImportFrom) else ()
        for target in _targets(module, node, known):
            if target != module.name:
                found.append(Import(module.name, target, node.lineno, in_function, names))
    return found


def build_graph(root: Path) -> Graph:
    """Parse every module under ``root`` into the import graph."""
    modules = find_modules(root)
    imports = [imp for m in modules.values() for imp in module_imports(root, m, modules)]
    return Graph(modules, sorted(imports, key=lambda i: (i.source, i.line, i.target)))


# ----------------------------------------------------------------------------- cycles


class _Tarjan:
    """Tarjan's strongly connected components, with an explicit stack instead of recursion."""

    def __init__(self, edges: dict[str, list[str]]) -> None:
        self.edges = edges
        self.index: dict[str, int] = {}
        self.low: dict[str, int] = {}
        self.stack: list[str] = []
        self.on_stack: set[str] = set()
        self.components: list[list[str]] = []

    def _enter(self, node: str, work: list[tuple[str, Iterator[str]]]) -> None:
        self.index[node] = self.low[node] = len(self.index)
        self.stack.append(node)
        self.on_stack.add(node)
        work.append((node, iter(self.edges.get(node, ()))))

    def _leave(self, node: str) -> None:
        if self.low[node] != self.index[node]:
            return
        component = []
        while True:
            member = self.stack.pop()
            self.on_stack.discard(member)
            component.append(member)
            if member == node:
                break
        self.components.append(sorted(component))

    def _visit(self, start: str) -> None:
        work: list[tuple[str, Iterator[str]]] = []
        self._enter(start, work)
        while work:
            node, children = work[-1]
            child = next(children, None)
            if child is None:
                work.pop()
                self._leave(node)
                if work:
                    parent = work[-1][0]
                    self.low[parent] = min(self.low[parent], self.low[node])
            elif child not in self.index:
                self._enter(child, work)
            elif child in self.on_stack:
                self.low[node] = min(self.low[node], self.index[child])

    def run(self) -> list[list[str]]:
        for node in sorted(self.edges):
            if node not in self.index:
                self._visit(node)
        return sorted(self.components)


def strongly_connected(edges: dict[str, list[str]]) -> list[list[str]]:
    """The strongly connected components of ``edges``: each sorted, the list sorted."""
    return _Tarjan(edges).run()


def cycles(graph: Graph) -> list[list[str]]:
    """The import cycles: components of more than one module."""
    return [c for c in strongly_connected(graph.edges()) if len(c) > 1]


def _cycle_reasons(cycle: list[str]) -> list[str]:
    reasons = []
    if len(cycle) > MAX_CYCLE:
        reasons.append(f"more than {MAX_CYCLE} files")
    low = [m for m in cycle if layer_of(m).number <= NO_CYCLE_LAYERS]
    if low:
        reasons.append(f"includes layer 1-{NO_CYCLE_LAYERS} modules: {', '.join(low)}")
    return reasons


def _where(graph: Graph, imp: Import) -> str:
    module = graph.modules.get(imp.source)
    return f"{module.path.as_posix() if module else imp.source}:{imp.line}"


def cycle_problems(graph: Graph) -> list[str]:
    """Cycles too large, or reaching into layers 1-4; each with the imports that close it."""
    problems = []
    for cycle in cycles(graph):
        reasons = _cycle_reasons(cycle)
        if not reasons:
            continue
        members = set(cycle)
        inside = [i for i in graph.imports if i.source in members and i.target in members]
        head = f"import cycle of {len(cycle)} files ({'; '.join(reasons)}), closed by:"
        problems.append("\n".join([head, *(_edge_line(graph, i) for i in inside)]))
    return problems


def _edge_line(graph: Graph, imp: Import) -> str:
    tags = [tag for tag, on in (("upward", is_upward(graph, imp)),
                                ("in a function", imp.in_function)) if on]
    note = f"  ({', '.join(tags)})" if tags else ""
    return f"    {_where(graph, imp)}: {imp.source} -> {imp.target}{note}"


# ----------------------------------------------------------------------------- layering


def is_upward(graph: Graph, imp: Import) -> bool:
    """Whether an import goes from a lower layer to a higher one (and is not exempt)."""
    source = graph.modules.get(imp.source)
    if source is not None and source.is_package and imp.target.startswith(imp.source + "."):
        return False  # a package __init__ importing its own submodules (the front door too)
    return layer_of(imp.target).number > layer_of(imp.source).number


def upward_problems(graph: Graph) -> list[str]:
    """Imports from a lower layer to a higher one, with file and line."""
    return [
        f"upward import at {_where(graph, i)}: {_describe(i.source)} imports "
        f"{_describe(i.target)}"
        for i in graph.imports
        if is_upward(graph, i)
    ]


def function_import_problems(graph: Graph) -> list[str]:
    """Imports of pullback modules inside function bodies (style: none, to dodge a cycle)."""
    return [
        f"import inside a function at {_where(graph, i)}: {i.source} imports {i.target}"
        for i in graph.imports
        if i.in_function
    ]


#: the front doors: each builds on ``pullback.compiler.doors`` (their shared machinery),
#: never on another door's private names (a new door goes in this list)
DOORS = frozenset(f"pullback.compiler.{m}" for m in (
    "grad", "vjp", "forward", "jacobians", "compiled", "jax_options", "control_flow"))


def door_problems(graph: Graph) -> list[str]:
    """A front door importing another door's private (underscore) names."""
    return [
        f"front door {i.source} imports private {name} of front door {i.target} at "
        f"{_where(graph, i)}; move it to pullback.compiler.doors"
        for i in graph.imports
        if i.source in DOORS and i.target in DOORS
        for name in i.names if name.startswith("_")
    ]


CHECKS: tuple[Callable[[Graph], list[str]], ...] = (
    cycle_problems,
    upward_problems,
    function_import_problems,
    door_problems,
)


def problems(graph: Graph) -> list[str]:
    return [problem for rule in CHECKS for problem in rule(graph)]


def check(root: Path | str) -> list[str]:
    """Every problem of the package under the repository root ``root``; empty when clean."""
    return problems(build_graph(Path(root)))


# ----------------------------------------------------------------------------- output


def _by_layer(edges: dict[str, list[str]]) -> dict[Layer, list[str]]:
    grouped: dict[Layer, list[str]] = {layer: [] for layer in LAYERS}
    for module in edges:
        grouped[layer_of(module)].append(module)
    return grouped


def format_text(graph: Graph) -> str:
    """module -> [imports], grouped by layer, bottom first."""
    edges = graph.edges()
    out = []
    for layer, members in _by_layer(edges).items():
        out.append(f"layer {layer.number}: {layer.name}")
        for module in members:
            missing = "" if module in graph.modules else "  (no file)"
            out.append(f"  {module} -> [{', '.join(edges[module])}]{missing}")
    return "\n".join(out)


def format_dot(graph: Graph) -> str:
    """The graph as Graphviz DOT: one cluster per layer, upward imports in red."""
    out = ["digraph pullback {", "  rankdir=BT;", "  node [shape=box, fontsize=10];"]
    for layer, members in _by_layer(graph.edges()).items():
        out.append(f'  subgraph cluster_{layer.number} {{ label="{layer.number}: {layer.name}";')
        out.extend(f'    "{module}";' for module in members)
        out.append("  }")
    seen: set[tuple[str, str]] = set()
    for imp in graph.imports:
        if (imp.source, imp.target) not in seen:
            seen.add((imp.source, imp.target))
            style = " [color=red]" if is_upward(graph, imp) else ""
            out.append(f'  "{imp.source}" -> "{imp.target}"{style};')
    out.append("}")
    return "\n".join(out)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--dot", action="store_true", help="print Graphviz DOT")
    parser.add_argument("--root", type=Path, default=Path(__file__).resolve().parent.parent,
                        help="the repository root (default: the one holding this tool)")
    args = parser.parse_args(argv)
    graph = build_graph(args.root)
    print(format_dot(graph) if args.dot else format_text(graph))
    found = problems(graph)
    if found:
        print(f"\n{len(found)} problem(s):", file=sys.stderr)
        for problem in found:
            print(f"- {problem}", file=sys.stderr)
        return 1
    print("\nno problems", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
