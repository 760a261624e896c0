"""The layering rules of DESIGN §3: one module starts processes, one speaks git, gates never import
orchestrate, state handlers never import each other, the CLI or the engine."""
from __future__ import annotations

import ast
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
SOURCES = sorted(p for pkg in ("gates", "orchestrate") for p in (ROOT / pkg).rglob("*.py"))


def imports(path: Path) -> set[str]:
    found = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Import):
            found.update(a.name for a in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module:
            found.add(node.module)
            found.update(f"{node.module}.{a.name}" for a in node.names)
    return found


def rel(path: Path) -> str:
    return str(path.relative_to(ROOT))


def test_only_proc_starts_processes():
    offenders = [rel(p) for p in SOURCES if {"subprocess", "os.system"} & imports(p) or "os.popen" in p.read_text()]
    assert offenders == ["gates/core/proc.py"]


def test_only_the_git_module_runs_git():
    offenders = [rel(p) for p in SOURCES if rel(p) != "gates/core/git.py" and '["git"' in p.read_text()]
    assert offenders == []


def test_gates_never_import_orchestrate():
    offenders = [rel(p) for p in SOURCES if rel(p).startswith("gates/")
                 and any(m == "orchestrate" or m.startswith("orchestrate.") for m in imports(p))]
    assert offenders == []


def test_handlers_do_not_import_each_other_the_cli_or_the_engine():
    for path in (ROOT / "orchestrate" / "handlers").glob("*.py"):
        if path.name == "__init__.py":
            continue
        bad = {m for m in imports(path) if m.startswith("orchestrate.handlers")
               or m in ("orchestrate.cli", "orchestrate.engine", "orchestrate.runner")}
        assert bad == set(), f"{path.name} imports {bad}"


def test_heavy_modules_are_not_imported_at_start_up():
    import subprocess
    import sys
    code = ("import sys, orchestrate.cli; heavy = {'rich', 'networkx', 'git', 'yaml', 'filelock'} & set(sys.modules);"
            " print(sorted(heavy))")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert done.stdout.strip() == "[]"
