"""Human seams: what each offers, how an answer is recorded, and what an answer does to the campaign.

An answer comes from `orchestrate decide`, an `--answers` file, the DAG's `policy:` block (autonomous
mode, realignment only) or a prompt on a terminal. Whatever its source it is one `decision` entry
saying who, when, which choice, the note, and the commit the gates judged.
"""
from __future__ import annotations

from orchestrate import git
from orchestrate.errors import UsageError
from orchestrate.recorder.campaign import ACCEPTED, REWORK, SKIPPED

CHOICES = {
    "final-acceptance": ("accept", "reject"),
    "reserved-halt": ("rework", "skip", "halt"),
    "realignment": ("rework", "skip", "halt"),
    "review-divergence": ("accept", "rework", "halt"),
    "dag-amendment": ("accept", "halt"),
    "guardrail": ("approve", "skip", "halt"),
    "handwork": ("done", "skip", "halt"),
    # the campaign's workers spent its `budget:`: raise it (the decision carries the new limit) or halt
    "budget": ("raise", "halt"),
}
LIMIT_KEYS = ("cost_usd", "tokens")
SEAMS = tuple(CHOICES)


def who(repo, as_who: str | None) -> str:
    """Who a human decision is recorded as: --as, else git's user.email. An empty --as (a variable left unset)
    is refused, not taken for no --as; so is one holding a control character (a line break in the recorder's
    commit subject)."""
    if as_who is not None:
        if not as_who.strip() or any(ord(c) < 32 or ord(c) == 127 for c in as_who):
            raise UsageError(f"--as {as_who!r}: not a name a decision can be recorded under",
                             hint="pass a name or an email on one line, e.g. --as alice@example.com")
        return as_who
    email = git.config_get(repo, "user.email")
    if not email:
        raise UsageError("set git config user.email (or pass --as NAME) so the decision can be attributed")
    return email


def check_answer(open_seam: dict | None, seam: str, choice: str, node: str | None = None) -> None:
    """Refuse (exit 2, nothing written) an answer to a seam that is not open, or a choice it does not offer;
    with `node`, one the open seam does not ask about (under eager, seams of one name open one after another:
    an answer meant for a node whose question was answered already would settle the next node's)."""
    if seam not in CHOICES:
        from orchestrate.dag.schema import did_you_mean
        raise UsageError(f"no seam named `{seam}`{did_you_mean(seam, CHOICES)}", hint=f"seams: {', '.join(SEAMS)}")
    if not open_seam or open_seam.get("seam") != seam:
        current = f"the open seam is {open_seam['seam']}" if open_seam else "no seam is open"
        raise UsageError(f"seam {seam} is not open ({current})", hint="`orchestrate status` shows open seams")
    if node is not None and open_seam.get("node") != node:
        about = f"node {open_seam['node']}" if open_seam.get("node") else "the whole campaign"
        raise UsageError(f"seam {seam} is open for {about}, not for node {node} (its question was answered "
                         "already, or waits behind this one)", hint="`orchestrate status` shows open seams")
    if choice not in open_seam["choices"]:
        raise UsageError(f"{choice} is not a choice at seam {seam}",
                         hint=f"choose one of: {', '.join(open_seam['choices'])}")


def record(ctx, seam: dict, choice: str, note: str, who_: str, source_type: str) -> dict:
    entity = f"human:{who_}" if source_type == "human" else f"{source_type}:{who_}"
    extra = {"edge": seam["edge"]} if seam.get("edge") else {}
    if seam["seam"] == "budget" and choice == "raise":  # the new limit, whichever way the answer came
        extra["limit"] = limit_from(note)
    return ctx.emit("decision", {"seam": seam["seam"], "node": seam.get("node"), **extra, "choice": choice, "note": note,
                                 "who": who_, "bound_to": seam.get("bound_to"), "opened": seam.get("id"),
                                 "gates": list(seam.get("gates", []))},
                    source_entity=entity, source_type=source_type,
                    derived_from=[seam["id"]] + list(seam.get("gates", [])))


def halt_stands(campaign, decision: dict) -> bool:
    """Is a halt reached at a seam, after `decision`, one that resume refuses? A person's `halt` (or a refused
    final acceptance) stands; not an accepted amendment whose DAG proved invalid (the person may fix the DAG),
    nor a halt behind which a seam or an answer still waits. The runner's message and resume both ask this."""
    if campaign.seam is not None or campaign.decision is not None:
        return False
    return not (decision.get("seam") == "dag-amendment" and decision.get("choice") == "accept")


def limit_note(cost_usd: float | None, tokens: int | None, note: str) -> str:
    """The note of a `budget raise`: the new limit first (`cost_usd=X tokens=N`), then the person's words."""
    said = [f"{k}={v}" for k, v in (("cost_usd", cost_usd), ("tokens", tokens)) if v is not None]
    return " ".join(said + ([note] if note else []))


def limit_from(note: str) -> dict:
    """{cost_usd, tokens} named in a `budget raise` note as `cost_usd=X` / `tokens=N`; {} when it names none.
    A note is how an answers file or a prompt gives the limit too, so the CLI writes it the same way. The first
    value of a key wins: `--limit-usd 6 --note "... cost_usd=1000 ..."` is written `cost_usd=6 ...` and means 6,
    not the number the person's words mention after it (rv79)."""
    found: dict = {}
    for word in (note or "").replace(",", " ").split():
        key, _, value = word.partition("=")
        if key in found:
            continue
        try:
            number = float(value) if key == "cost_usd" else int(value) if key == "tokens" else None
        except ValueError:
            continue
        if number is not None and 0 < number < float("inf"):
            found[key] = number
    return found


def details(seam: dict) -> list[str]:
    """What the decision needs, for a prompt or for the pause message."""
    lines = [f"seam {seam['seam']}" + (f" for node {seam['node']}" if seam.get("node") else "")
             + f" (bound to {str(seam.get('bound_to') or '')[:12]})", f"  {seam.get('reason', '')}".rstrip()]
    for extra in seam.get("show", []):
        lines.append(f"  {extra}")
    return lines


def skip_with_dependents(ctx, node_id: str, decision: dict | None = None) -> list[str]:
    """A skipped node's dependents cannot run without it: they are skipped too. Each says who skipped it
    where (`decision`), in place of the failure its last attempt left, which no longer holds it up."""
    said = note = ""
    if decision is not None:
        note = f": {decision['note']}" if decision.get("note") else ""
        said = f"skipped by {decision.get('who')} at the {decision.get('seam')} seam"
    dag = ctx.dag
    after: dict[str, list[str]] = {}  # every ordering edge counts, not only depends_on
    for e in dag.edges:
        if e.orders:
            after.setdefault(e.before, []).append(e.after)
    skipped, todo = [], [node_id]
    seen: set[str] = set()
    while todo:
        n = todo.pop()
        if n in seen:
            continue
        seen.add(n)
        if ctx.campaign.nodes.get(n) and ctx.campaign.nodes[n].status != ACCEPTED:
            along = "" if n == node_id else f", along with {node_id}, which it needs"
            failed = ctx.campaign.nodes[n].feedback.strip().splitlines()  # why it was asked about: kept, after who
            before = f"; its last attempt: {failed[0]}" if failed and n == node_id else ""  # skipped it
            ctx.emit("node", {"node": n, "status": SKIPPED,
                              **({"feedback": said + along + note + before} if said else {})})
            skipped.append(n)
        todo.extend(after.get(n, ()))
    return skipped


def rework(ctx, node_id: str, note: str, who_: str) -> None:
    ctx.emit("node", {"node": node_id, "status": REWORK, "failures": 0, "freeze": None, "verdict": "", "env_error": "",
                      "widens": 0,  # a person's answer is the authority the widening limit defers to
                      "feedback": f"{who_} asked for another attempt: {note or '(no note)'}"})


