"""The layout's rules (DESIGN §3, §14.1): the kernel imports nothing above it, gates import only the
kernel, state handlers never import each other, the CLI or the loop, each room uses only what the
README's Development table says it may, no two modules import each other at start-up, exactly one
module starts processes and one speaks git, and no module grows past 400 lines."""
from __future__ import annotations

import ast
import re
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
SOURCES = sorted(p for pkg in ("gates", "orchestrate") for p in (ROOT / pkg).rglob("*.py"))
# The doors every room goes through (the top-level modules of orchestrate/).
DOORS = ("orchestrate.errors", "orchestrate.proc", "orchestrate.reaping", "orchestrate.git", "orchestrate.git_batch", "orchestrate.git_diffs", "orchestrate.git_files", "orchestrate.git_pipe", "orchestrate.git_ids", "orchestrate.git_config", "orchestrate.git_admin",
         "orchestrate.memfiles", "orchestrate.stamps", "orchestrate.flock", "orchestrate.config", "orchestrate.atomic", "orchestrate.removal",
         "orchestrate.faults", "orchestrate.resources", "orchestrate.inert", "orchestrate.printable", "orchestrate.plugins")
# The doors and the plan's model: what the gates may use.
KERNEL = tuple(d for d in DOORS if d != "orchestrate.plugins") + ("orchestrate.dag",)
ROOMS = ("dag", "engine", "recorder", "workers", "seams", "replay", "report", "cli")
# The "may use" column of the README's Development table, for the rooms no other test covers.
MAY_USE = {
    "orchestrate.workers": DOORS + ("orchestrate.dag", "orchestrate.recorder", "orchestrate.seams",
                                    "orchestrate.engine.plugin_gates"),  # the brief names the plugin gates
    "orchestrate.seams": DOORS + ("orchestrate.dag", "orchestrate.recorder"),
    "orchestrate.report": DOORS + ("orchestrate.dag", "orchestrate.recorder"),
    "orchestrate.replay": DOORS + tuple(f"orchestrate.{r}" for r in ROOMS if r != "cli") + ("gates",),
    "orchestrate.dag": DOORS,
}
MAX_LINES = 400


def module(path: Path) -> str:
    return ".".join(path.relative_to(ROOT).with_suffix("").parts).removesuffix(".__init__")


MODULES = {module(p) for p in SOURCES}


def rel(path: Path) -> str:
    return str(path.relative_to(ROOT))


def _absolute(path: Path, node: ast.ImportFrom) -> str:
    """The module a `from ... import` names, a relative one resolved against `path`'s package."""
    if not node.level:
        return node.module or ""
    package = module(path).split(".") if path.name == "__init__.py" else module(path).split(".")[:-1]
    base = package[:len(package) - node.level + 1]
    return ".".join(base + ([node.module] if node.module else []))


def _statements(tree: ast.Module, top_only: bool):
    """Every statement, or only those run when the module is imported (not inside a function, nor under
    `if TYPE_CHECKING:` or `if __name__ == "__main__":`)."""
    if not top_only:
        yield from ast.walk(tree)
        return
    todo = list(tree.body)
    while todo:
        node = todo.pop()
        yield node
        if isinstance(node, ast.If) and ast.unparse(node.test) in ("TYPE_CHECKING", "__name__ == '__main__'"):
            todo += node.orelse
        elif isinstance(node, (ast.If, ast.Try, ast.With)):
            todo += [s for field in ("body", "orelse", "finalbody", "handlers") for s in getattr(node, field, [])]
        elif isinstance(node, ast.ExceptHandler):
            todo += node.body


def imports(path: Path, *, top_only: bool = False) -> set[str]:
    """Every module `path` imports (a lazy import is still a dependency), relative imports resolved;
    `from a import b` counts as `a.b` when that is a module of ours, else as `a`."""
    found = set()
    for node in _statements(ast.parse(path.read_text()), top_only):
        if isinstance(node, ast.Import):
            found.update(a.name for a in node.names)
        elif isinstance(node, ast.ImportFrom):
            base = _absolute(path, node)
            found.update(f"{base}.{a.name}" if f"{base}.{a.name}" in MODULES else base for a in node.names)
    return found


def under(name: str, prefixes: tuple[str, ...]) -> bool:
    return any(name == p or name.startswith(p + ".") for p in prefixes)


def in_kernel(name: str) -> bool:
    return name == "orchestrate" or under(name, KERNEL)


def ours(name: str) -> bool:
    return name.split(".")[0] in ("orchestrate", "gates")


def test_relative_imports_are_resolved():
    here = ROOT / "orchestrate" / "engine" / "handlers" / "merge.py"
    tree = ast.parse("from . import close\nfrom ..context import Ctx\nfrom ...recorder import journal\n")
    assert [_absolute(here, n) for n in tree.body] == ["orchestrate.engine.handlers", "orchestrate.engine.context",
                                                       "orchestrate.recorder"]
    init = ROOT / "orchestrate" / "engine" / "handlers" / "__init__.py"
    assert _absolute(init, ast.parse("from . import merge").body[0]) == "orchestrate.engine.handlers"


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


def test_each_room_uses_only_what_the_development_table_allows():
    bad = {}
    for path in SOURCES:
        room = next((r for r in MAY_USE if under(module(path), (r,))), None)
        if room:
            allowed = MAY_USE[room] + (room,)
            used = sorted(m for m in imports(path) if ours(m) and m != "orchestrate" and not under(m, allowed))
            bad.update({rel(path): used} if used else {})
    assert bad == {}


def _module_of(name: str) -> str | None:
    """The module of ours that importing `name` runs (`a.b.f` for a function f is `a.b`)."""
    while name and name not in MODULES:
        name = name.rpartition(".")[0]
    return name or None


def _start_up_graph() -> dict[str, set[str]]:
    """Who imports whom when a module is imported: each target and the packages above it, except the
    importer's own packages (Python has begun those already, so importing through them closes no circle)."""
    graph: dict[str, set[str]] = {}
    for path in SOURCES:
        me = module(path)
        mine = {".".join(me.split(".")[:i]) for i in range(1, me.count(".") + 1)}
        targets = set()
        for name in imports(path, top_only=True):
            target = _module_of(name) if ours(name) else None
            parts = target.split(".") if target else []
            targets.update(".".join(parts[:i]) for i in range(1, len(parts) + 1))
        graph[me] = targets - mine - {me}
    return graph


def _cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """The strongly connected components with more than one module (Tarjan's algorithm)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    found: list[list[str]] = []

    def visit(v: str) -> None:
        index[v] = low[v] = len(index)
        stack.append(v)
        for w in sorted(graph.get(v, ())):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            component = []
            while True:
                w = stack.pop()
                component.append(w)
                if w == v:
                    break
            if len(component) > 1:
                found.append(sorted(component))

    for v in sorted(graph):
        if v not in index:
            visit(v)
    return found


def test_no_two_modules_import_each_other_at_start_up():
    assert _cycles({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}) == [["a", "b", "c"]]
    assert _cycles(_start_up_graph()) == []


# What starts a process: modules whose only use is that, and the calls that do it.
PROCESS_MODULES = ("subprocess", "asyncio.subprocess", "multiprocessing", "concurrent.futures.process", "webbrowser")
PROCESS_CALLS = {
    "os": re.compile(r"system|popen|fork|forkpty|posix_spawnp?|exec[lv]p?e?|spawn[lv]p?e?|startfile"),
    "pty": re.compile(r"spawn|fork"),
    "asyncio": re.compile(r"create_subprocess_(exec|shell)"),
    "concurrent.futures": re.compile(r"ProcessPoolExecutor"),
}
ANY_OBJECT_CALLS = re.compile(r"create_subprocess_(exec|shell)|subprocess_(exec|shell)")  # an event loop's too


def starts_processes(source: str) -> list[str]:
    """Each way `source` starts a process (imported or called), as `module.name`."""
    tree = ast.parse(source)
    alias = {}  # local name -> module, for `import os as o`
    found = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            for a in node.names:
                if a.asname:
                    alias[a.asname] = a.name
                found += [a.name] if under(a.name, PROCESS_MODULES) else []
        elif isinstance(node, ast.ImportFrom) and node.module:
            found += [node.module] if under(node.module, PROCESS_MODULES) else []
            pattern = PROCESS_CALLS.get(node.module)
            found += [f"{node.module}.{a.name}" for a in node.names if pattern and pattern.fullmatch(a.name)]
    for node in ast.walk(tree):
        if isinstance(node, ast.Attribute):
            head, _, rest = ast.unparse(node.value).partition(".")
            owner = ".".join(filter(None, [alias.get(head, head), rest]))
            pattern = PROCESS_CALLS.get(owner)
            if (pattern and pattern.fullmatch(node.attr)) or ANY_OBJECT_CALLS.fullmatch(node.attr):
                found.append(f"{owner or '?'}.{node.attr}")
    return found


def test_the_process_rule_sees_every_way_to_start_one():
    for source in ("import subprocess", "from subprocess import run", "import multiprocessing.pool",
                   "from concurrent.futures import ProcessPoolExecutor", "import os\nos.system('x')",
                   "import os as o\no.execvp('x', [])", "from os import spawnlp", "import os\nos.posix_spawn",
                   "import os\nos.popen('x')", "import os\nos.fork()", "import pty\npty.spawn(['x'])",
                   "import asyncio\nasyncio.create_subprocess_exec('x')", "loop.subprocess_shell(p, 'x')",
                   "import webbrowser", "import concurrent.futures\nconcurrent.futures.ProcessPoolExecutor()",
                   "from asyncio import create_subprocess_shell"):
        assert starts_processes(source), source
    assert starts_processes("import os\nos.kill(1, 9); os.environ.get('x'); os.getpid()") == []


def test_only_proc_starts_processes():
    offenders = [rel(p) for p in SOURCES if starts_processes(p.read_text())]
    assert offenders == ["orchestrate/proc.py"]


def runs_git(source: str) -> list[int]:
    """Lines where `"git"` (or a path ending in /git) is a program to run: the head of a list or tuple,
    a call's argument, a name's value, anything but a path segment (`home / "git" / "config"`)."""
    tree = ast.parse(source)
    segments = {id(side) for node in ast.walk(tree) if isinstance(node, ast.BinOp) and isinstance(node.op, ast.Div)
                for side in (node.left, node.right)}
    return [node.lineno for node in ast.walk(tree)
            if isinstance(node, ast.Constant) and isinstance(node.value, str)
            and re.fullmatch(r"(.*/)?git(\.exe)?", node.value) and id(node) not in segments]


def test_the_git_rule_sees_every_argv_form():
    for source in ('run(["git", "log"])', "run(['git', 'log'])", 'run(("git", "log"))', 'run(("git",))',
                   'GIT = "git"', 'run("git", "log")', 'run(["/usr/bin/git", "log"])', 'run([*("git",), "x"])'):
        assert runs_git(source), source
    assert runs_git('xdg / "git" / "config"; "git could not merge"; ".git"') == []


def test_only_the_git_module_runs_git():
    offenders = {rel(p): lines for p in SOURCES
                 if rel(p) != "orchestrate/git.py" and (lines := runs_git(p.read_text()))}
    assert offenders == {}


def test_every_module_lives_in_a_room_or_is_a_door():
    loose = sorted(rel(p) for p in (ROOT / "orchestrate").glob("*.py"))
    doors = {"orchestrate/__init__.py", "orchestrate/__main__.py"} | {f"{d.replace('.', '/')}.py" for d in DOORS}
    assert set(loose) == doors
    rooms = {p.name for p in (ROOT / "orchestrate").iterdir() if p.is_dir() and p.name != "__pycache__"}
    assert rooms <= set(ROOMS)


def test_each_package_says_what_it_holds_and_what_it_may_use():
    for init in [p for p in SOURCES if p.name == "__init__.py"]:
        doc = ast.get_docstring(ast.parse(init.read_text()))
        assert doc, f"{rel(init)} has no docstring"
        if rel(init) != "orchestrate/__init__.py":  # the whole program: its rooms carry the rules
            assert re.search(r"^May use: \S", doc, re.MULTILINE), f"{rel(init)}: no `May use:` line in its docstring"


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
