"""Throwaway plugin distributions for tests (seeds-other §3.9 X9): a module plus a
`<dist>-<ver>.dist-info/` with METADATA and entry_points.txt in a private folder put on sys.path, so
discovery never sees the developer's site-packages. Module names carry a per-test token and are dropped
from sys.modules afterwards: one test's plugins cannot leak into another.
"""
from __future__ import annotations

import importlib
import sys
import uuid
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Iterable

from orchestrate import plugins as P


@dataclass
class Spec:
    kind: str
    name: str
    attrs: dict[str, Any]
    body: str = ""  # extra methods, indented by the builder
    prelude: str = ""  # module-level code before the class (e.g. an import that fails)


def gate(name: str, body: str = "", prelude: str = "", **attrs: Any) -> Spec:
    return Spec("gate", name, {"protocol_version": 1, "version": "1.0", **attrs}, body, prelude)


def worker(name: str, body: str = "", prelude: str = "", **attrs: Any) -> Spec:
    return Spec("worker", name, {"protocol_version": 1, "version": "1.0", **attrs}, body, prelude)


CALLS = {"gate": "def check(self, config, cwd, env):\n    return 0, 'clean'",
         "worker": "def command(self, node_id, config):\n    return f'run {node_id}'"}
MISSING = object()  # an attribute value meaning "leave it out"


@dataclass
class Site:
    """A private site directory of throwaway distributions."""

    root: Path
    token: str
    modules: list[str] = field(default_factory=list)

    def add(self, dist: str, version: str, *specs: Spec, call: bool = True) -> None:
        module = f"plug_{self.token}_{len(self.modules)}"
        self.modules.append(module)
        (self.root / f"{module}.py").write_text("\n".join(self._source(s, i, call) for i, s in enumerate(specs)))
        info = self.root / f"{dist.replace('-', '_')}-{version}.dist-info"
        info.mkdir()
        (info / "METADATA").write_text(f"Metadata-Version: 2.1\nName: {dist}\nVersion: {version}\n")
        groups: dict[str, list[str]] = {}
        for i, s in enumerate(specs):
            groups.setdefault(P.GROUPS[s.kind], []).append(f"{s.name} = {module}:Plugin{i}")
        (info / "entry_points.txt").write_text("".join(f"[{g}]\n" + "\n".join(lines) + "\n\n"
                                                       for g, lines in groups.items()))
        importlib.invalidate_caches()  # the path finder caches directory listings

    @staticmethod
    def _source(spec: Spec, index: int, call: bool) -> str:
        attrs = [f"    {k} = {v!r}" for k, v in spec.attrs.items() if v is not MISSING]
        methods = [CALLS[spec.kind]] if call else []
        methods += [spec.body] if spec.body else []
        indented = ["    " + line for m in methods for line in m.splitlines()]
        return "\n".join([spec.prelude, f"class Plugin{index}:", "    name = " + repr(spec.name), *attrs,
                          *indented, ""])

    def entry_points(self, group: str) -> Iterable[Any]:
        from importlib.metadata import distributions
        return [ep for d in distributions(path=[str(self.root)]) for ep in d.entry_points if ep.group == group]

    def discover(self, kinds: Iterable[str] = P.KINDS) -> list[P.Plugin]:
        return P.discover(kinds, entry_points=self.entry_points)


def throwaway_site(tmp_path, monkeypatch):
    """The body of the `site` fixture (tests/conftest.py): an empty private site on sys.path."""
    root = tmp_path / "site"
    root.mkdir()
    monkeypatch.syspath_prepend(str(root))
    s = Site(root, uuid.uuid4().hex[:8])
    yield s
    for module in s.modules:
        sys.modules.pop(module, None)
