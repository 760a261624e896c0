"""How one worker attempt is contained: whether it runs in the sandbox, and what it may write there.

The setting is the node's `sandbox:` (or the DAG's `defaults:`), else `sandbox:` in `.ledger/config.yaml`,
else `auto`. In the sandbox a worker may write its worktree, its worktree's admin dir (HEAD, index),
a private object store, its run folder (return, outputs and usage files), a private /tmp, and the
configured caches (`$HOME` unless `sandbox: {writable: [...]}` says otherwise). Everything else,
the user's checkout, `.ledger/`, other worktrees, the shared git config, hooks, refs and objects,
is read-only, and a PID namespace ends whatever it started when it returns.
"""
from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path

from orchestrate import config, git
from orchestrate.workers import private_objects, sandbox

CONFIG_KEYS = ("mode", "writable")


@dataclass(frozen=True)
class Jail:
    writable: tuple[str, ...]
    readable: tuple[str, ...]  # the project and its git dir, visible even when they live under /tmp
    objects: str  # the private object store, brought in after the worker returns
    env: dict


def mode(ctx, node) -> str:
    """auto, bwrap or none, for this node."""
    if getattr(node, "sandbox", None):
        return node.sandbox
    return _configured(ctx.layout.ledger)[0]


def enabled(ctx, node) -> bool:
    warned = getattr(ctx, "_sandbox_warned", False)

    def warn(reason: str) -> None:
        if not warned:
            ctx.out.always(f"warning: workers run without the sandbox: {reason} "
                           "(set `sandbox: none` to silence this, or install bubblewrap)")
            ctx._sandbox_warned = True
    return sandbox.resolve(mode(ctx, node), warn)


def jail(ctx, node_id: str, attempt: int, worktree: Path, run_dir: Path) -> Jail:
    common = git.git_common_dir(ctx.root)
    objects = ctx.layout.scratch / "objects" / ctx.topic / f"{node_id}+{attempt}"
    objects.mkdir(parents=True, exist_ok=True)
    admin = git.admin_dir(worktree)
    extra = _configured(ctx.layout.ledger)[1]
    writable = [str(worktree), str(admin), str(objects), str(run_dir), *extra]
    return Jail(tuple(dict.fromkeys(writable)), (str(ctx.root), str(common)), str(objects),
                private_objects.env(objects, common / "objects"))


def settle(ctx, ns) -> None:
    """After a sandboxed attempt: bring its objects in, then move its branch from the base to the head the
    worktree holds (a compare-and-swap: the branch can only have stayed at the base)."""
    common = git.git_common_dir(ctx.root)
    private_objects.bring_in(ctx.root, Path(ns.objects), common / "objects")


def _configured(ledger: Path | None) -> tuple[str, list[str]]:
    found = config.read(ledger, "sandbox")
    value = found.value
    home = [os.path.expanduser("~")]
    if value is None:
        return "auto", home
    if isinstance(value, str):
        if value not in sandbox.MODES:
            raise found.error("sandbox", found.line, f"`{value}` is not a sandbox setting: use {', '.join(sandbox.MODES)}")
        return value, home
    if not isinstance(value, dict):
        raise found.error("sandbox", found.line, "expected auto, bwrap, none, or {mode: ..., writable: [...]}")
    for key in value:
        if key not in CONFIG_KEYS:
            raise found.error(f"sandbox.{key}", found.line, f"unknown key; keys: {', '.join(CONFIG_KEYS)}")
    chosen = value.get("mode", "auto")
    if chosen not in sandbox.MODES:
        raise found.error("sandbox.mode", found.line, f"`{chosen}` is not a sandbox setting: use {', '.join(sandbox.MODES)}")
    writable = value.get("writable", home)
    if not isinstance(writable, list) or not all(isinstance(w, str) and w.strip() for w in writable):
        raise found.error("sandbox.writable", found.line, "expected a list of folders")
    return chosen, [os.path.expanduser(w) for w in writable]
