"""The layout's rules (DESIGN §3, §14.1): the kernel imports nothing above it, gates import only the
kernel, state handlers never import each other, the CLI or the loop, exactly one module starts processes
and one speaks git, and no module grows past 400 lines."""
from __future__ import annotations

import ast
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
SOURCES = sorted(p for pkg in ("gates", "orchestrate") for p in (ROOT / pkg).rglob("*.py"))
# The doors every room goes through, and the plan's model: what the gates may use.
KERNEL = ("orchestrate.errors", "orchestrate.proc", "orchestrate.git", "orchestrate.config", "orchestrate.atomic",
          "orchestrate.faults", "orchestrate.resources", "orchestrate.inert", "orchestrate.dag")
ROOMS = ("dag", "engine", "recorder", "workers", "seams", "replay", "report", "cli")
MAX_LINES = 400


def imports(path: Path) -> set[str]:
    """Every module `path` imports, at the top or inside a function (a lazy import is still a dependency)."""
    found = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Import):
            found.update(a.name for a in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module:
            found.add(node.module)
            found.update(f"{node.module}.{a.name}" for a in node.names)
    return found


def module(path: Path) -> str:
    return ".".join(path.relative_to(ROOT).with_suffix("").parts).removesuffix(".__init__")


def rel(path: Path) -> str:
    return str(path.relative_to(ROOT))


def in_kernel(name: str) -> bool:
    return name in ("orchestrate", "orchestrate.__version__") or any(name == k or name.startswith(k + ".") for k in KERNEL)


def ours(name: str) -> bool:
    return name.split(".")[0] in ("orchestrate", "gates")


def test_the_kernel_imports_nothing_above_it():
    bad = {rel(p): sorted(m for m in imports(p) if ours(m) and not in_kernel(m))
           for p in SOURCES if in_kernel(module(p)) and module(p) != "orchestrate"}
    assert {k: v for k, v in bad.items() if v} == {}


def test_gates_import_only_the_kernel_and_each_other():
    bad = {rel(p): sorted(m for m in imports(p) if ours(m) and not in_kernel(m) and not m.startswith("gates"))
           for p in SOURCES if rel(p).startswith("gates/")}
    assert {k: v for k, v in bad.items() if v} == {}


def test_handlers_do_not_import_each_other_the_cli_or_the_loop():
    for path in (ROOT / "orchestrate" / "engine" / "handlers").glob("*.py"):
        if path.name == "__init__.py":
            continue
        bad = {m for m in imports(path) if m.startswith("orchestrate.engine.handlers")
               or m.startswith("orchestrate.cli") or m in ("orchestrate.engine.loop", "orchestrate.engine.runner")}
        assert bad == set(), f"{path.name} imports {bad}"


def test_nothing_below_the_cli_imports_it():
    bad = [rel(p) for p in SOURCES if not rel(p).startswith("orchestrate/cli/")
           and rel(p) != "orchestrate/__main__.py"
           and any(m.startswith("orchestrate.cli") for m in imports(p))]
    assert bad == []


def test_the_recorder_imports_only_the_kernel_and_itself():
    bad = {rel(p): sorted(m for m in imports(p) if ours(m) and not in_kernel(m)
                          and not m.startswith("orchestrate.recorder"))
           for p in SOURCES if rel(p).startswith("orchestrate/recorder/")}
    assert {k: v for k, v in bad.items() if v} == {}


def test_only_proc_starts_processes():
    offenders = [rel(p) for p in SOURCES if {"subprocess", "os.system"} & imports(p) or "os.popen" in p.read_text()]
    assert offenders == ["orchestrate/proc.py"]


def test_only_the_git_module_runs_git():
    offenders = [rel(p) for p in SOURCES if rel(p) != "orchestrate/git.py" and '["git"' in p.read_text()]
    assert offenders == []


def test_every_module_lives_in_a_room_or_is_a_door():
    loose = sorted(rel(p) for p in (ROOT / "orchestrate").glob("*.py"))
    doors = {f"orchestrate/{n}.py" for n in ("__init__", "__main__", "errors", "proc", "git", "config", "atomic",
                                              "faults", "resources", "inert", "plugins")}
    assert set(loose) == doors
    rooms = {p.name for p in (ROOT / "orchestrate").iterdir() if p.is_dir() and p.name != "__pycache__"}
    assert rooms <= set(ROOMS)


def test_each_package_says_what_it_holds():
    for init in [p for p in SOURCES if p.name == "__init__.py"]:
        assert ast.get_docstring(ast.parse(init.read_text())), f"{rel(init)} has no docstring"


def test_no_module_is_over_400_lines():
    long = {rel(p): n for p in SOURCES if (n := len(p.read_text().splitlines())) > MAX_LINES}
    assert long == {}


def test_heavy_modules_are_not_imported_at_start_up():
    import subprocess
    import sys
    code = ("import sys, orchestrate.cli.main; heavy = {'rich', 'networkx', 'git', 'yaml', 'filelock'} & set(sys.modules);"
            " print(sorted(heavy))")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert done.stdout.strip() == "[]"
