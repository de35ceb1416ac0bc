"""The layers of the package: imports only go downward, no cycles, and the results layer runs
without torch.

Layers, bottom to top: ``mr2.common`` < ``mr2.method`` < ``mr2.engine``; ``mr2.results`` sits
beside the engine on ``mr2.common`` alone, and so does ``mr2.pipeline``, the workflow's logic, which
imports only the standard library, YAML and jsonschema (the workflow parses without torch or pandas); ``mr2.cli`` (and the package's ``__init__`` and
``__main__``) on top. ``theory`` stands beside the stack: its formulas (``theory.bound``,
``theory.corollary``) import only the method layer; ``theory.pipeline``, which evaluates the bound
on the pipeline's tidy tables, and ``theory.answers`` and ``theory.plots``, which put its numbers in
words and figures, also use the results layer's helpers.
"""

import ast
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]

#: layer -> the layers its modules may import (itself included)
ALLOWED = {
    "common": {"common"},
    "method": {"method", "common"},
    "engine": {"engine", "method", "common"},
    "results": {"results", "common"},
    "pipeline": {"pipeline", "common"},
    "cli": {"cli", "engine", "method", "results", "common"},
    "theory": {"theory", "method"},
    "theory.pipeline": {"theory.pipeline", "theory", "method", "results", "common"},
}


def layer_of(module: str) -> str:
    parts = module.split(".")
    if parts[0] == "theory":
        return "theory.pipeline" if module in ("theory.pipeline", "theory.answers", "theory.plots",
                                               "theory.__main__") else "theory"
    if len(parts) > 1 and parts[1] in ("common", "method", "engine", "results", "pipeline"):
        return parts[1]
    return "cli"  # mr2, mr2.cli, mr2.__main__


def module_name(path: Path) -> str:
    rel = path.relative_to(REPO).with_suffix("")
    parts = list(rel.parts)
    if parts[-1] == "__init__":
        parts = parts[:-1]
    return ".".join(parts)


def project_modules() -> dict[str, Path]:
    files = list((REPO / "mr2").rglob("*.py")) + list((REPO / "theory").rglob("*.py"))
    return {module_name(f): f for f in files}


def imports_of(name: str, path: Path, known: set[str]) -> set[str]:
    """Every project module that ``name`` imports, at module level or inside a function."""
    package = name if path.name == "__init__.py" else name.rsplit(".", 1)[0]
    found = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Import):
            targets = [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = package.split(".")
                base = base[: len(base) - (node.level - 1)]
                stem = ".".join(base + ([node.module] if node.module else []))
            else:
                stem = node.module or ""
            # "from . import hostsync" names a module; "from .stats import lp_sq_norm" a function
            targets = [f"{stem}.{alias.name}" if f"{stem}.{alias.name}" in known else stem for alias in node.names]
        else:
            continue
        for target in targets:
            while target and target not in known:  # the deepest project module it names
                target = target.rpartition(".")[0]
            if target and target != name:
                found.add(target)
    return found


def import_graph() -> dict[str, set[str]]:
    modules = project_modules()
    known = set(modules)
    return {name: imports_of(name, path, known) for name, path in modules.items()}


def test_the_tree_has_one_folder_per_layer():
    for folder in ("common", "method", "engine", "results", "pipeline"):
        assert (REPO / "mr2" / folder / "__init__.py").is_file()
    flat = sorted(p.name for p in (REPO / "mr2").glob("*.py"))
    assert flat == ["__init__.py", "__main__.py", "cli.py"], flat


def test_the_import_walker_sees_relative_and_absolute_imports():
    graph = import_graph()
    assert "mr2.method.hostsync" in graph["mr2.method.stats"]  # from . import hostsync
    assert "mr2.common.io" in graph["mr2.engine.config"]  # from ..common.io import load_yaml
    assert "mr2.method.margins" in graph["theory.bound"]  # from mr2.method.margins import ...
    assert "mr2.engine.train" in graph["mr2.cli"]  # imported inside a function


def test_imports_only_go_downward():
    graph = import_graph()
    wrong = sorted(f"{a} ({layer_of(a)}) -> {b} ({layer_of(b)})" for a, targets in graph.items() for b in targets
                   if layer_of(b) not in ALLOWED[layer_of(a)] and not (a.startswith("mr2") and b == "mr2"))
    assert not wrong, "imports against the layers:\n" + "\n".join(wrong)


def test_a_broken_layer_rule_would_be_caught():
    assert "engine" not in ALLOWED["method"] and "engine" not in ALLOWED["results"]
    assert "method" not in ALLOWED["results"] and "engine" not in ALLOWED["theory"]
    assert ALLOWED["pipeline"] == {"pipeline", "common"}


def find_cycle(graph: dict[str, set[str]]) -> list[str] | None:
    state: dict[str, int] = {}
    stack: list[str] = []

    def visit(node: str) -> list[str] | None:
        state[node] = 1
        stack.append(node)
        for nxt in sorted(graph.get(node, ())):
            if state.get(nxt) == 1:
                return stack[stack.index(nxt):] + [nxt]
            if nxt not in state and (cycle := visit(nxt)):
                return cycle
        stack.pop()
        state[node] = 2
        return None

    for node in sorted(graph):
        if node not in state and (cycle := visit(node)):
            return cycle
    return None


def test_no_import_cycles():
    graph = {a: {b for b in targets if b != "mr2"} for a, targets in import_graph().items()}
    cycle = find_cycle(graph)
    assert cycle is None, " -> ".join(cycle)


def test_the_cycle_finder_finds_a_cycle():
    assert find_cycle({"a": {"b"}, "b": {"c"}, "c": {"a"}}) == ["a", "b", "c", "a"]
    assert find_cycle({"a": {"b"}, "b": set()}) is None


@pytest.mark.parametrize("modules", [
    ["mr2.results.tables", "mr2.results.groups", "mr2.results.figures.render", "mr2.results.premise_figures",
     "mr2.results.report", "mr2.common.io", "mr2.common.runs"],
    ["mr2.engine.config"],
])
def test_results_layer_and_run_config_do_not_import_torch(modules):
    code = "import sys\n" + "".join(f"import {m}\n" for m in modules) + \
        "heavy = sorted(m for m in sys.modules if m == 'torch' or m.startswith(('torch.', 'mr2.engine.train', 'mr2.method')))\n" \
        "print(heavy)\n"
    res = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=REPO)
    assert res.returncode == 0, res.stderr
    assert res.stdout.strip() == "[]", res.stdout


def test_the_pipeline_layer_imports_only_the_standard_library_yaml_and_jsonschema():
    """What the workflow imports when it is parsed: neither torch, nor numpy, nor pandas, nor Snakemake."""
    modules = sorted(name for name in project_modules() if name.startswith("mr2.pipeline"))
    assert "mr2.pipeline.config" in modules and "mr2.pipeline.runs" in modules
    code = ("import sys\n" + "".join(f"import {m}\n" for m in modules)
            + "import mr2.pipeline.config as c, pathlib\n"
            + "c.checked({'datasets': {'d': {'data': {'name': 'digits'}}}, 'methods': ['erm'], 'seeds': [0]},"
            + " c.load_schemas(pathlib.Path('workflow/schemas')))\n"
            + "print(sorted({m.split('.')[0] for m in sys.modules} & {'torch', 'numpy', 'pandas', 'snakemake', 'matplotlib'}))\n")
    res = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=REPO)
    assert res.returncode == 0, res.stderr
    assert res.stdout.strip() == "[]", res.stdout
