"""premise: re-check a node's tripwires against the current tree: FRESH (0) or INVALIDATED (1)."""
from __future__ import annotations

import argparse
import re
from pathlib import Path
from typing import Sequence

from gates.shared import gatecli
from gates.shared.verdict import FAIL, PASS, USAGE, Item, Verdict
from orchestrate import proc
from orchestrate.dag.load import load_dag
from orchestrate.dag.model import Tripwire
from orchestrate.dag.schema import did_you_mean
from orchestrate.errors import ProcError, UsageError

NAME = "premise"
OUTPUT_TAIL = 400  # characters of a command's output kept in the verdict's data (never printed)
_EXIT = re.compile(r"\d{1,3}")
_NOT_RUN = {126: "not executable", 127: "command not found"}


def check(node_id: str, tripwires: Sequence[Tripwire], cwd: Path, *, default_timeout: float = 60) -> Verdict:
    """Each tripwire's command must exit with its `expect`; a timeout is stale; 2 when one cannot be judged."""
    if not tripwires:
        return Verdict(NAME, PASS, f"FRESH: node {node_id} declares no premises", (), {"results": []})
    cwd = Path(cwd)
    if not cwd.is_dir():
        return Verdict(NAME, USAGE, f"ERROR: node {node_id}: cannot check premises in {cwd}: no such directory",
                       (), {"results": []})
    items: list[Item] = []
    results: list[dict] = []
    for t in tripwires:
        item, result = _judge(t, cwd, t.timeout or default_timeout)
        items.append(item)
        results.append(result)
    data = {"results": results}
    errors = sum(i.status == "ERROR" for i in items)
    stale = sum(i.status == "STALE" for i in items)
    if errors:
        return Verdict(NAME, USAGE, f"ERROR: node {node_id}: {errors} premise(s) could not be checked",
                       tuple(items), data)
    if stale:
        return Verdict(NAME, FAIL, f"INVALIDATED: node {node_id} has {stale} stale premise(s); realign before dispatch",
                       tuple(items), data)
    return Verdict(NAME, PASS, f"FRESH: node {node_id}: every premise still holds", tuple(items), data)


def _judge(t: Tripwire, cwd: Path, timeout: float) -> tuple[Item, dict]:
    result = {"run": t.run, "rc": None, "expect": t.expect, "why": t.why, "seconds": 0.0, "timed_out": False,
              "output": ""}
    if not 0 <= t.expect <= 255:  # no command can exit with it: the premise could never hold
        return Item("ERROR", t.run, f"expected exit {t.expect} is outside 0..255"), result
    try:
        done = proc.run_shell(t.run, cwd=cwd, timeout=timeout)
    except ProcError as exc:
        return Item("ERROR", t.run, f"cannot start: {exc.message}"), result
    result.update(rc=done.rc, seconds=round(done.seconds, 3), timed_out=done.timed_out,
                  output=(done.stdout + done.stderr)[-OUTPUT_TAIL:])
    if done.timed_out:
        return Item("STALE", f"(timed out after {timeout:g}s)  {t.run}", t.why), result
    if done.rc == t.expect:
        return Item("FRESH", f"({done.rc}=={t.expect})  {t.run}"), result
    # 126/127 usually mean a typo in the tripwire rather than a moved tree; say so next to the why
    hint = f"rc {done.rc}: {_NOT_RUN[done.rc]}" if done.rc in _NOT_RUN else ""
    detail = "; ".join(x for x in (t.why, hint) if x)
    return Item("STALE", f"(got {done.rc}, want {t.expect})  {t.run}", detail), result


def parse_spec(text: str, file: str) -> list[Tripwire]:
    """The reference's TSV: `<expected-exit><TAB><command>[<TAB><why>]` per line; blank and `#` lines skipped."""
    wires: list[Tripwire] = []
    for n, raw in enumerate(text.split("\n"), 1):
        line = raw.removesuffix("\r")
        if not line.strip() or line.lstrip().startswith("#"):
            continue
        expect, tab, rest = line.partition("\t")
        if not tab:
            raise UsageError(f"{file}:{n}: malformed tripwire (no TAB between the expected exit and the command): "
                             f"{line.strip()}")
        command, _, why = rest.partition("\t")
        if not command.strip():
            raise UsageError(f"{file}:{n}: malformed tripwire (empty command)")
        if not _EXIT.fullmatch(expect.strip()) or int(expect) > 255:
            raise UsageError(f"{file}:{n}: expected exit `{expect}` is not a number from 0 to 255")
        wires.append(Tripwire(command, int(expect), why.strip()))
    if not wires:
        raise UsageError(f"{file}: spec declared no tripwires (only blank lines and comments); "
                         "a spec that declares no tripwires would pass without checking anything")
    return wires


def read_spec(path: str | Path) -> list[Tripwire]:
    p = Path(path)
    try:
        text = p.read_text(encoding="utf-8")
    except FileNotFoundError:
        raise UsageError(f"{p}: no such tripwire spec") from None
    except IsADirectoryError:
        raise UsageError(f"{p}: is a directory, not a tripwire spec") from None
    except PermissionError:
        raise UsageError(f"{p}: permission denied") from None
    except UnicodeDecodeError as exc:
        raise UsageError(f"{p}: not UTF-8 text (byte {exc.start})") from None
    return parse_spec(text, str(p))


def main(argv: Sequence[str] | None = None, prog: str | None = None) -> int:
    p = gatecli.parser(NAME, "Re-run a node's tripwires against the current tree: each command must still exit "
                             "as expected. Either NODE SPEC.tsv (lines `<expected-exit><TAB><command>[<TAB><why>]`) "
                             "or --dag PATH --node ID.",
                       {0: "FRESH: every premise holds (or the node declares none)",
                        1: "INVALIDATED: a premise is stale (wrong exit code, or timed out)",
                        2: "malformed or missing spec, no tripwires, unknown node, bad arguments"}, prog,
        examples=(
            'orchestrate gate premise --dag .ledger/state/dag.yaml --node D4',
            'orchestrate gate premise D4 tripwires.tsv --cwd ../checkout',
        ))
    p.add_argument("node_arg", nargs="?", metavar="NODE", help="node id (reference form, with SPEC.tsv)")
    p.add_argument("spec", nargs="?", metavar="SPEC.tsv", help="tripwire spec (reference form)")
    p.add_argument("--dag", metavar="PATH", help="take the tripwires of --node from this DAG")
    p.add_argument("--node", metavar="ID", help="the node whose tripwires are checked")
    p.add_argument("--cwd", type=Path, default=Path("."), metavar="DIR",
                   help="where the commands run (default: the current directory)")
    p.add_argument("--timeout", type=gatecli.seconds, default=60.0, metavar="S",
                   help="seconds for each command without its own timeout (default 60)")

    def decide(a: argparse.Namespace) -> Verdict:
        if a.node_arg is not None and (a.dag or a.node):
            gatecli.usage(p, "give NODE SPEC.tsv, or --dag PATH --node ID, not both")
        if a.node_arg is not None:
            if a.spec is None:
                gatecli.usage(p, "NODE needs a SPEC.tsv")
            return check(a.node_arg, read_spec(a.spec), a.cwd, default_timeout=a.timeout)
        if not (a.dag and a.node):
            gatecli.usage(p, "give NODE SPEC.tsv, or --dag PATH --node ID")
        dag = load_dag(a.dag)
        if a.node not in dag.by_id:
            raise UsageError(f"no node `{a.node}` in {a.dag}{did_you_mean(a.node, dag.by_id)}")
        return check(a.node, dag.by_id[a.node].tripwires, a.cwd, default_timeout=a.timeout)

    return gatecli.run_gate(p, argv, decide)



if __name__ == "__main__":
    raise SystemExit(main())
