"""The package's layers (docs/python.md, "Layers of the package"): every module of python/echomq
is on a row of that table, imports only from its own row or the rows above, and no imports form a
cycle. Every import counts, wherever it stands (top level, inside a function, under
TYPE_CHECKING), read from the source with ast (nothing is imported)."""
import ast
import re
from pathlib import Path
from typing import Dict, List, Set

PKG = Path(__file__).resolve().parents[1] / "echomq"
DOC = Path(__file__).resolve().parents[2] / "docs" / "python.md"


def layer_table(text: str) -> Dict[str, int]:
    """Module name -> row index, from the table under the "Layers of the package" heading."""
    section = text.split("## Layers of the package", 1)[1].split("\n## ", 1)[0]
    rows: Dict[str, int] = {}
    index = 0
    for line in section.splitlines():
        cells = [c.strip() for c in line.strip().strip("|").split("|")]
        if len(cells) < 3 or not cells[1].startswith("`"):
            continue
        for name in re.findall(r"`([A-Za-z_][A-Za-z0-9_]*)`", cells[1]):
            assert name not in rows, f"{name} is on two rows of the layer table"
            rows[name] = index
        index += 1
    return rows


def unit(path: Path) -> str:
    """The table's name for a file: a top-level module, or the package a submodule belongs to."""
    return path.relative_to(PKG).with_suffix("").parts[0]


def imports_of(path: Path, known: Set[str]) -> Set[str]:
    """The package's modules a file imports, anywhere in it (relative or `echomq.` imports)."""
    here = list(path.relative_to(PKG).parent.parts)  # the file's package, below echomq
    found: Set[str] = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        targets: List[List[str]] = []
        if isinstance(node, ast.ImportFrom):
            if node.level == 0:
                parts = (node.module or "").split(".")
                if parts[0] != "echomq":
                    continue
                base = parts[1:]
            else:
                base = here[: len(here) - (node.level - 1)] + (node.module.split(".") if node.module else [])
            # `from .x import y` names x; `from . import y` names y (the first part is what counts)
            targets = [base + [a.name] for a in node.names]
        elif isinstance(node, ast.Import):
            targets = [a.name.split(".")[1:] for a in node.names if a.name.split(".")[0] == "echomq"]
        for t in targets:
            if t and t[0] in known:
                found.add(t[0])
    return found


def import_graph() -> Dict[str, Set[str]]:
    files = sorted(p for p in PKG.rglob("*.py") if "__pycache__" not in p.parts)
    known = {unit(p) for p in files}
    graph: Dict[str, Set[str]] = {u: set() for u in known}
    for p in files:
        u = unit(p)
        graph[u] |= imports_of(p, known) - {u}
    return graph


def cycles(graph: Dict[str, Set[str]]) -> List[List[str]]:
    """Every strongly connected group of two or more modules (Tarjan), each sorted."""
    index: Dict[str, int] = {}
    low: Dict[str, int] = {}
    stack: List[str] = []
    on: Set[str] = set()
    out: List[List[str]] = []

    def visit(v: str) -> None:
        index[v] = low[v] = len(index)
        stack.append(v)
        on.add(v)
        for w in sorted(graph[v]):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            group = []
            while True:
                w = stack.pop()
                on.discard(w)
                group.append(w)
                if w == v:
                    break
            if len(group) > 1:
                out.append(sorted(group))

    for v in sorted(graph):
        if v not in index:
            visit(v)
    return out


def against_order(graph: Dict[str, Set[str]], rows: Dict[str, int]) -> List[str]:
    return sorted(f"{m} imports {d}" for m, deps in graph.items() for d in deps
                  if m in rows and d in rows and rows[d] > rows[m])


def test_every_module_is_on_one_row_of_the_table():
    rows = layer_table(DOC.read_text(encoding="utf-8"))
    graph = import_graph()
    assert sorted(set(graph) - set(rows)) == [], "modules the layer table in docs/python.md does not name"
    assert sorted(set(rows) - set(graph)) == [], "names in the layer table that are no module"


def test_imports_follow_the_layer_order():
    rows = layer_table(DOC.read_text(encoding="utf-8"))
    assert against_order(import_graph(), rows) == []


def test_no_import_cycles():
    assert cycles(import_graph()) == []


def test_the_checks_see_local_and_type_checking_imports(tmp_path):
    # The reader counts an import inside a function and one under TYPE_CHECKING, and the checks
    # report a cycle and an import up the order in a graph that has them.
    src = tmp_path / "m.py"
    src.write_text("from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    from .queue import Queue\n"
                   "def f():\n    from . import job\n    from .custom_errors.step_errors import X\n", encoding="utf-8")
    global PKG
    saved, PKG = PKG, tmp_path
    try:
        assert imports_of(src, {"queue", "job", "custom_errors"}) == {"queue", "job", "custom_errors"}
    finally:
        PKG = saved
    graph = {"job": {"queue"}, "queue": {"job"}, "keys": set()}
    assert cycles(graph) == [["job", "queue"]]
    assert against_order(graph, {"keys": 0, "job": 1, "queue": 2}) == ["job imports queue"]
