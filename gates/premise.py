"""premise: re-check a node's tripwires against the current tree: FRESH (0) or INVALIDATED (1)."""
from __future__ import annotations

from pathlib import Path
from typing import Sequence

from gates.core import gatecli, proc
from gates.core.dagfile import Tripwire, did_you_mean, load_dag, read_text
from gates.core.errors import UsageError
from gates.core.verdict import FAIL, PASS, Item, Verdict

NAME = "premise"


def check(node_id: str, tripwires: Sequence[Tripwire], cwd: Path, *, default_timeout: float = 60) -> Verdict:
    if not tripwires:
        return Verdict(NAME, PASS, f"FRESH: node {node_id} declares no premises")
    items, results = [], []
    for t in tripwires:
        timeout = t.timeout or default_timeout
        done = proc.run_shell(t.run, cwd=cwd, timeout=timeout)
        rc = done.rc
        tail = (done.stdout + done.stderr)[-400:]
        results.append({"run": t.run, "rc": rc, "expect": t.expect, "why": t.why, "seconds": round(done.seconds, 3),
                        "output": tail})
        if done.timed_out:
            items.append(Item("STALE", f"(timed out after {timeout:g}s)  {t.run}", t.why))
        elif rc == t.expect:
            items.append(Item("FRESH", f"({rc}=={t.expect})  {t.run}"))
        else:
            items.append(Item("STALE", f"(got {rc}, want {t.expect})  {t.run}", t.why))
    stale = sum(i.status == "STALE" for i in items)
    data = {"results": results}
    if stale:
        return Verdict(NAME, FAIL, f"INVALIDATED: node {node_id} has {stale} stale premise(s); realign before dispatch",
                       tuple(items), data)
    return Verdict(NAME, PASS, f"FRESH: node {node_id}: every premise still holds", tuple(items), data)


def parse_spec(text: str, file: str) -> list[Tripwire]:
    """`<expected-exit><TAB><command>[<TAB><why>]` per line; blank lines and `#` comments skipped."""
    wires = []
    for n, line in enumerate(text.splitlines(), 1):
        if not line.strip() or line.lstrip().startswith("#"):
            continue
        expect, tab, rest = line.partition("\t")
        if not tab:
            raise UsageError(f"{file}:{n}: malformed tripwire (no TAB between the expected exit and the command)")
        command, _, why = rest.partition("\t")
        if not command.strip():
            raise UsageError(f"{file}:{n}: malformed tripwire (empty command)")
        try:
            value = int(expect.strip())
        except ValueError:
            raise UsageError(f"{file}:{n}: expected exit `{expect}` is not a number") from None
        wires.append(Tripwire(command, value, why.strip()))
    if not wires:
        raise UsageError(f"{file}: the spec declares no tripwires")
    return wires


def main(argv: Sequence[str] | None = None, prog: str | None = None) -> int:
    p = gatecli.parser(NAME, "Re-run a node's tripwires: each command must still exit as expected.",
                       {0: "FRESH: every premise holds", 1: "INVALIDATED: a premise is stale",
                        2: "malformed spec, no tripwires, unknown node, bad input"}, prog)
    p.add_argument("spec", nargs="*", metavar="NODE SPEC.tsv", help="reference form: node id and a TSV spec")
    p.add_argument("--dag", help="take the tripwires of --node from this DAG")
    p.add_argument("--node", help="the node id")
    p.add_argument("--cwd", type=Path, default=Path("."), help="where the commands run (default: .)")
    p.add_argument("--timeout", type=float, default=60, help="seconds per command without its own (default 60)")

    def decide(a) -> Verdict:
        if a.spec:
            if len(a.spec) != 2:
                raise UsageError("give NODE and SPEC.tsv")
            node, spec = a.spec
            return check(node, parse_spec(read_text(spec), spec), a.cwd, default_timeout=a.timeout)
        if not (a.dag and a.node):
            raise UsageError("give NODE SPEC.tsv, or --dag and --node")
        dag = load_dag(a.dag)
        if a.node not in dag.by_id:
            raise UsageError(f"no node `{a.node}` in {a.dag}{did_you_mean(a.node, dag.by_id)}")
        return check(a.node, dag.by_id[a.node].tripwires, a.cwd, default_timeout=a.timeout)

    return gatecli.run_gate(p, argv, decide)


if __name__ == "__main__":
    raise SystemExit(main())
