"""The import structure the README's Layout section states, checked on the source: top-level
packages import one way only (``envs`` <- ``agents`` <- ``export`` <- ``studies`` <- entry points),
nothing imports an entry point, and no two modules import each other, directly or around a circle.
Every import statement counts, also those inside functions or under ``TYPE_CHECKING``."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
LAYERS = ("envs", "agents", "export", "studies")  # each may import only those before it
# entry points and scripts: import anything, imported by none
ENTRY_POINTS = ("train", "evaluate", "tune", "benchmarks", "tools", "tests")


def modules(root: Path, packages: tuple[str, ...]) -> dict[str, Path]:
    """Dotted module name -> file, for every module of ``packages`` under ``root``."""
    out = {}
    for package in packages:
        for path in sorted((root / package).rglob("*.py")):
            parts = path.relative_to(root).with_suffix("").parts
            out[".".join(parts[:-1] if parts[-1] == "__init__" else parts)] = path
    return out


def imports(name: str, path: Path, known: set[str]) -> set[str]:
    """The modules in ``known`` that module ``name`` imports (a name imported from a package is
    the submodule when there is one, else the package)."""
    is_package = path.name == "__init__.py"
    found: set[str] = set()

    def owner(dotted: str) -> str | None:
        while dotted and dotted not in known:
            dotted = dotted.rpartition(".")[0]
        return dotted or None

    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        targets: list[str] = []
        if isinstance(node, ast.Import):
            targets = [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = name.split(".") if is_package else name.split(".")[:-1]
                base = base[:len(base) - node.level + 1]
                module = ".".join(base + ([node.module] if node.module else []))
            else:
                module = node.module or ""
            targets = [f"{module}.{alias.name}" for alias in node.names]
        for target in targets:
            hit = owner(target)
            if hit is not None and hit != name:
                found.add(hit)
    return found


def import_graph(root: Path, packages: tuple[str, ...]) -> dict[str, set[str]]:
    mods = modules(root, packages)
    return {name: imports(name, path, set(mods)) for name, path in mods.items()}


def cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """The strongly connected components of more than one module (Tarjan), each sorted."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []

    def visit(v: str) -> None:
        index[v] = low[v] = len(index)
        stack.append(v)
        on_stack.add(v)
        for w in sorted(graph.get(v, ())):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on_stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            component = []
            while True:
                w = stack.pop()
                on_stack.discard(w)
                component.append(w)
                if w == v:
                    break
            if len(component) > 1:
                found.append(sorted(component))

    for v in sorted(graph):
        if v not in index:
            visit(v)
    return found


def upward(graph: dict[str, set[str]], layers: tuple[str, ...]) -> list[str]:
    """Imports from a module to a module of a higher layer."""
    rank = {package: i for i, package in enumerate(layers)}
    return sorted(f"{a} -> {b}" for a, targets in graph.items() for b in targets
                  if rank[b.split(".")[0]] > rank[a.split(".")[0]])


def test_checker_sees_circles_and_upward_imports(tmp_path):
    """The checks themselves: a planted circle (through a relative and a lazy import) and an
    upward import are found."""
    tree = {"low/__init__.py": "", "low/a.py": "from . import b\n", "low/b.py": "def f():\n    from low.a import g\n",
            "low/c.py": "import high.x\n", "high/__init__.py": "", "high/x.py": "from low import c\n"}
    for rel, text in tree.items():
        (tmp_path / rel).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / rel).write_text(text)
    graph = import_graph(tmp_path, ("low", "high"))
    assert graph["low.a"] == {"low.b"} and graph["low.b"] == {"low.a"}
    assert cycles(graph) == [["high.x", "low.c"], ["low.a", "low.b"]]
    assert upward(graph, ("low", "high")) == ["low.c -> high.x"]


@pytest.fixture(scope="module")
def graph() -> dict[str, set[str]]:
    return import_graph(ROOT, LAYERS)


def test_packages_import_downward_only(graph):
    assert upward(graph, LAYERS) == []


def test_no_module_imports_another_that_imports_it_back(graph):
    assert cycles(graph) == []


def test_nothing_imports_an_entry_point():
    for path in [p for package in LAYERS for p in sorted((ROOT / package).rglob("*.py"))]:
        for node in ast.walk(ast.parse(path.read_text())):
            names = ([a.name for a in node.names] if isinstance(node, ast.Import)
                     else [node.module or ""] if isinstance(node, ast.ImportFrom) and not node.level else [])
            bad = [n for n in names if n.split(".")[0] in ENTRY_POINTS]
            assert not bad, f"{path.relative_to(ROOT)} imports {bad}"
