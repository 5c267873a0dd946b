"""The runtime stays light: the server, the engines (but the torch one) and ``say`` import no torch, and ``say``
no onnx or zeroconf.

Each check runs in a fresh interpreter, so what another test imported cannot hide what a module pulls in.
"""

from __future__ import annotations

import ast
import json
import subprocess
import sys
from pathlib import Path

import pytest

import wyoming_fasttts


def _imported_after(statements: str) -> set[str]:
    code = f"import json, sys\n{statements}\nprint(json.dumps(sorted(sys.modules)))"
    out = subprocess.run([sys.executable, "-c", code], check=True, capture_output=True, text=True).stdout
    return set(json.loads(out))


def _packages(modules: set[str]) -> set[str]:
    return {name.split(".")[0] for name in modules}


def test_say_imports_no_engine_graph_tool_or_mdns() -> None:
    loaded = _imported_after("from wyoming_fasttts.__main__ import build_parser\n"
                             "build_parser('say')\nimport wyoming_fasttts.client")
    assert not _packages(loaded) & {"torch", "onnx", "onnxruntime", "zeroconf", "tensorrt_rtx"}


def test_every_runtime_module_imports_without_torch() -> None:
    """Walks the whole package except what is torch by design: ``export`` (the ``export`` extra) and the
    ``torch-cuda`` engine (the ``torch`` extra), which the engine factory imports only when it is chosen."""
    loaded = _imported_after(
        "import importlib, pkgutil, wyoming_fasttts\n"
        "for m in pkgutil.walk_packages(wyoming_fasttts.__path__, 'wyoming_fasttts.'):\n"
        "    if not m.name.startswith(('wyoming_fasttts.export', 'wyoming_fasttts.backends.torch_cuda')):\n"
        "        importlib.import_module(m.name)")
    assert not _packages(loaded) & {"torch", "kokoro"}


@pytest.mark.parametrize("module", ["wyoming_fasttts.server.app", "wyoming_fasttts.backends.onnxruntime"])
def test_the_server_path_imports_no_mdns_or_graph_tooling(module: str) -> None:
    assert not _packages(_imported_after(f"import {module}")) & {"torch", "onnx", "zeroconf"}


def test_the_core_types_are_a_leaf() -> None:
    loaded = _imported_after("import wyoming_fasttts.core")
    assert {m for m in loaded if m.startswith("wyoming_fasttts")} == {"wyoming_fasttts", "wyoming_fasttts.core"}


def _module_imports() -> dict[str, set[str]]:
    """Each package module's imports of other package modules at import time (not inside functions)."""
    root = Path(wyoming_fasttts.__file__).parent
    modules = {".".join(p.relative_to(root.parent).with_suffix("").parts).removesuffix(".__init__"): p
               for p in root.rglob("*.py")}
    graph: dict[str, set[str]] = {name: set() for name in modules}
    for name, path in modules.items():
        package = name if path.name == "__init__.py" else name.rpartition(".")[0]
        for node in ast.parse(path.read_text(encoding="utf-8")).body:
            if isinstance(node, ast.ImportFrom):
                base = package.split(".")[: len(package.split(".")) - node.level + 1] if node.level else []
                target = ".".join([*base, *([node.module] if node.module else [])])
                for alias in node.names:
                    graph[name].add(f"{target}.{alias.name}" if f"{target}.{alias.name}" in modules else target)
            elif isinstance(node, ast.Import):
                graph[name].update(alias.name for alias in node.names)
        graph[name] = {m for m in graph[name] & modules.keys() if m != name and not name.startswith(m + ".")}
    return graph


def test_no_import_cycles() -> None:
    """A package's ``__init__`` importing its own modules is how packages work; anything else circular is not."""
    graph = _module_imports()

    def reaches(start: str, goal: str) -> bool:
        seen, todo = set(), [start]
        while todo:
            for nxt in graph[todo.pop()] - seen:
                if nxt == goal:
                    return True
                seen.add(nxt)
                todo.append(nxt)
        return False

    cycles = sorted(f"{a} -> {b}" for a in graph for b in graph[a] if reaches(b, a))
    assert not cycles, cycles
