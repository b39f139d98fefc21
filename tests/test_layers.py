"""The layer table of DESIGN.md §2, enforced on the source's imports.

Every ``import`` / ``from … import`` in ``wopdsl/`` and ``tui/`` (module level, function
level and ``TYPE_CHECKING`` blocks alike) is read with ``ast``. A test fails on an import
that goes up a layer, on an import cycle between modules, and on an import of another
package's private (``_name``) module.
"""

from __future__ import annotations

import ast
import re
from collections.abc import Iterator
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]

LAYERS: dict[str, int] = {
    "errors": 0,
    "_described": 0,
    "_ids": 0,
    "_lazy": 0,
    "_sync": 0,
    "model": 1,
    "protocol": 1,
    "state": 2,
    "declare": 2,
    "compile": 2,
    "store": 2,
    "agents": 2,
    "engine": 3,
    "projections": 3,
    "council": 4,
    "run": 4,
    "presence": 4,
    "cli": 5,
    "jupyter": 5,
    "testing": 5,
    "server": 5,
    "evals": 5,
    "wopdsl_tui": 5,
}
"""DESIGN.md §2: lowest first; an import may only go down (or stay on its layer)."""

TOP = 4.5
"""``wopdsl/__init__.py``, the public API, re-exports layers 0–4; the L5 front ends (CLI,
notebook, plugin, TUI, host) import from it rather than from the engine."""

MAIN = 6
"""``wopdsl/__main__.py`` starts the CLI."""


def _module_name(path: Path) -> str:
    if path.is_relative_to(ROOT / "tui"):
        rel = path.relative_to(ROOT / "tui").with_suffix("")
        parts = ["wopdsl_tui", *rel.parts]
    else:
        rel = path.relative_to(ROOT).with_suffix("")
        parts = list(rel.parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def _sources() -> dict[str, Path]:
    files = [*(ROOT / "wopdsl").rglob("*.py"), *(ROOT / "tui").rglob("*.py")]
    return {_module_name(p): p for p in sorted(files)}


MODULES = _sources()


def _is_package(name: str) -> bool:
    return MODULES[name].name == "__init__.py"


def _resolve(name: str) -> str | None:
    """The project module an imported name lands in (a module or a package's ``__init__``)."""
    while name:
        if name in MODULES:
            return name
        name = name.rpartition(".")[0]
    return None


def imports(module: str) -> Iterator[tuple[str, int]]:
    """Project modules ``module`` imports, with line numbers.

    ``from pkg import mod`` counts ``pkg.mod`` when that is a module, else ``pkg``.
    """
    tree = ast.parse(MODULES[module].read_text(encoding="utf-8"))
    package = module if _is_package(module) else module.rpartition(".")[0]
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            for alias in node.names:
                target = _resolve(alias.name)
                if target:
                    yield target, node.lineno
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base_parts = package.split(".")
                base_parts = base_parts[: len(base_parts) - (node.level - 1)]
                base = ".".join([*base_parts, *([node.module] if node.module else [])])
            else:
                base = node.module or ""
            for alias in node.names:
                target = _resolve(f"{base}.{alias.name}") if base else None
                if target and target != base and target in MODULES:
                    yield target, node.lineno
                else:
                    found = _resolve(base)
                    if found:
                        yield found, node.lineno


def layer_of(module: str) -> tuple[str, float]:
    parts = module.split(".")
    if parts[0] == "wopdsl_tui":
        return "wopdsl_tui", LAYERS["wopdsl_tui"]
    if len(parts) == 1:
        return "wopdsl", TOP
    top = parts[1]
    if top == "__main__":
        return top, MAIN
    return top, LAYERS.get(top, -1)


def package_of(module: str) -> str:
    return module if _is_package(module) else module.rpartition(".")[0]


def test_every_package_has_a_layer() -> None:
    unknown = sorted({layer_of(m)[0] for m in MODULES if layer_of(m)[1] < 0})
    assert unknown == [], f"packages missing from the layer table: {unknown}"


def test_no_import_goes_up_a_layer() -> None:
    upward = []
    for module in MODULES:
        name, level = layer_of(module)
        for target, line in imports(module):
            target_name, target_level = layer_of(target)
            if target_level > level:  # No exception: Run.show() finds its view by entry point.
                upward.append(
                    f"{MODULES[module].relative_to(ROOT)}:{line}: {name} (L{level}) imports "
                    f"{target} ({target_name}, L{target_level})"
                )
    assert upward == [], "imports going up a layer:\n" + "\n".join(upward)


def test_no_private_module_of_another_package() -> None:
    wrong = []
    for module in MODULES:
        for target, line in imports(module):
            last = target.rpartition(".")[2]
            private = last.startswith("_") and not last.startswith("__")
            owner = package_of(target)
            if private and not (module == owner or module.startswith(owner + ".")):
                wrong.append(f"{MODULES[module].relative_to(ROOT)}:{line}: imports {target}")
    assert wrong == [], "imports of another package's private module:\n" + "\n".join(wrong)


def cycles() -> list[list[str]]:
    """Strongly connected components of more than one module (Tarjan's algorithm)."""
    graph = {
        m: sorted({t for t, _line in imports(m) if t != m})
        for m in MODULES
    }
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []
    counter = 0

    def visit(node: str) -> None:
        nonlocal counter
        index[node] = low[node] = counter
        counter += 1
        stack.append(node)
        on_stack.add(node)
        for nxt in graph[node]:
            if nxt not in index:
                visit(nxt)
                low[node] = min(low[node], low[nxt])
            elif nxt in on_stack:
                low[node] = min(low[node], index[nxt])
        if low[node] == index[node]:
            component = []
            while True:
                item = stack.pop()
                on_stack.discard(item)
                component.append(item)
                if item == node:
                    break
            if len(component) > 1:
                found.append(sorted(component))

    for module in graph:
        if module not in index:
            visit(module)
    return found


def test_no_import_cycles() -> None:
    found = [" <-> ".join(component) for component in cycles()]
    assert found == [], "import cycles:\n" + "\n".join(found)


FRONT_ENDS = ("cli", "jupyter", "testing", "server", "evals", "wopdsl_tui")


def test_front_ends_use_the_public_api_not_the_engine() -> None:
    wrong = []
    for module in MODULES:
        if layer_of(module)[0] not in FRONT_ENDS:
            continue
        for target, line in imports(module):
            if target == "wopdsl.engine" or target.startswith("wopdsl.engine."):
                wrong.append(f"{MODULES[module].relative_to(ROOT)}:{line}: imports {target}")
    assert wrong == [], "front ends importing the engine:\n" + "\n".join(wrong)


def test_the_checker_finds_a_cycle_and_an_upward_import(tmp_path: Path) -> None:
    # The checks above pass only if they can fail: feed them a known-bad pair of modules.
    MODULES["wopdsl.state.fake_a"] = tmp_path / "a.py"
    MODULES["wopdsl.engine.fake_b"] = tmp_path / "b.py"
    (tmp_path / "a.py").write_text("from wopdsl.engine import fake_b\n")
    (tmp_path / "b.py").write_text("import wopdsl.state.fake_a\n")
    try:
        assert ["wopdsl.engine.fake_b", "wopdsl.state.fake_a"] in cycles()
        assert ("wopdsl.engine.fake_b", 1) in list(imports("wopdsl.state.fake_a"))
        assert layer_of("wopdsl.engine.fake_b")[1] > layer_of("wopdsl.state.fake_a")[1]
    finally:
        del MODULES["wopdsl.state.fake_a"], MODULES["wopdsl.engine.fake_b"]


@pytest.mark.parametrize("module", ["wopdsl.engine", "wopdsl.state"])
def test_the_checker_sees_imports(module: str) -> None:
    # Guard against a checker that silently finds nothing.
    if module in MODULES:
        assert list(imports(module)), f"{module} imports nothing the checker can see"


# -- docs/architecture.md stays in step with the code ---------------------------------------

ARCHITECTURE = ROOT / "docs" / "architecture.md"
BEGIN, END = "<!-- layers:begin -->", "<!-- layers:end -->"
LAYER_NAMES = {0: "L0", 1: "L1", 2: "L2", 3: "L3", 4: "L4", 4.5: "API", 5: "L5"}


def package_edges() -> set[tuple[str, str]]:
    """Package-level imports, L0 (errors, ids) left out: every package may use it."""
    edges = set()
    for module in MODULES:
        source = layer_of(module)[0]
        for target, _line in imports(module):
            name, level = layer_of(target)
            if name != source and level > 0 and source != "__main__":
                edges.add((source, name))
    return edges


def reduced(edges: set[tuple[str, str]]) -> set[tuple[str, str]]:
    """The transitive reduction: an arrow that another path already implies is left out."""
    succ: dict[str, set[str]] = {}
    for a, b in edges:
        succ.setdefault(a, set()).add(b)

    def reach(start: str, skip: tuple[str, str]) -> set[str]:
        seen: set[str] = set()
        todo = [start]
        while todo:
            node = todo.pop()
            for nxt in succ.get(node, ()):
                if (node, nxt) != skip and nxt not in seen:
                    seen.add(nxt)
                    todo.append(nxt)
        return seen

    return {(a, b) for a, b in edges if b not in reach(a, (a, b))}


def render_layers() -> str:
    names = {layer_of(m)[0]: layer_of(m)[1] for m in MODULES if layer_of(m)[0] != "__main__"}
    lines = ["```mermaid", "flowchart TB"]
    for level in sorted(set(names.values()), reverse=True):
        members = sorted(n for n, lv in names.items() if lv == level)
        label = LAYER_NAMES[level]
        lines.append(f'  subgraph {label}["{label}"]')
        lines.extend(f"    {n.replace('_', '')}[{n}]" for n in members)
        lines.append("  end")
    for a, b in sorted(reduced(package_edges())):
        lines.append(f"  {a.replace('_', '')} --> {b.replace('_', '')}")
    lines.append("```")
    return "\n".join(lines)


def test_architecture_diagram_matches_the_imports() -> None:
    text = ARCHITECTURE.read_text(encoding="utf-8")
    found = text[text.index(BEGIN) + len(BEGIN): text.index(END)].strip()
    expected = render_layers()
    assert found == expected, (
        "docs/architecture.md's layer diagram is out of step with the imports; "
        f"replace the block between the markers with:\n{expected}"
    )


def test_architecture_diagram_has_no_arrow_going_up() -> None:
    names = {layer_of(m)[0].replace("_", ""): layer_of(m)[1] for m in MODULES}
    for a, b in reduced(package_edges()):
        assert names[a.replace("_", "")] >= names[b.replace("_", "")], (a, b)


def test_the_turn_path_names_real_code() -> None:
    import importlib

    text = ARCHITECTURE.read_text(encoding="utf-8")
    names = set(re.findall(r"`(wopdsl[\w.]*)`", text))
    assert len(names) >= 10
    for dotted in sorted(names):
        module_name, _, attr = dotted, "", ""
        while module_name and module_name not in MODULES:
            module_name, _, tail = module_name.rpartition(".")
            attr = f"{tail}.{attr}" if attr else tail
        assert module_name, f"{dotted}: no such module"
        obj: object = importlib.import_module(module_name)
        for part in filter(None, attr.split(".")):
            assert hasattr(obj, part), f"docs/architecture.md names {dotted}, which is gone"
            obj = getattr(obj, part)


def test_tests_mirror_the_packages() -> None:
    packages = sorted(p.parent.name for p in (ROOT / "wopdsl").glob("*/__init__.py"))
    missing = [name for name in [*packages, "tui"]
               if not list((ROOT / "tests" / name).glob("test_*.py"))]
    assert missing == [], f"no tests/<package>/ folder with tests for: {missing}"


def test_no_product_module_is_over_400_lines() -> None:
    """A tidy house: a module that grows past 400 lines is split by concern, not grown."""
    long = {str(path.relative_to(ROOT)): lines
            for folder in ("wopdsl", "tui") for path in (ROOT / folder).rglob("*.py")
            if (lines := len(path.read_text(encoding="utf-8").splitlines())) > 400}
    assert long == {}, f"split these modules by concern: {long}"
