"""The plan's model: frozen records for checks, tripwires, nodes and the DAG, and the schedule questions
the engine asks of a DAG (layers, groups, incoming and outgoing edges, effective checks)."""
from __future__ import annotations

from dataclasses import MISSING, dataclass, field, fields

from orchestrate.dag import graph

MODES = ("interactive", "autonomous")
SCHEDULES = ("eager", "layered")
SCHEMA_VERSIONS = (1,)
ACTIVATIONS = ("always", "on_demand")
JOINS = ("all", "any")
ON_EXHAUSTED = ("halt", "continue")
WORKER_KINDS = ("human",)
SANDBOXES = ("auto", "bwrap", "none")
# Workers without the sandbox: one at a time (`serial`, the default) or alongside others (`parallel`).
UNSANDBOXED = ("serial", "parallel")
COMMAND_PLUGIN = "command"  # the one gate plugin built in: a shell command, like an inline evaluator
# Names the implicit contracts use; a declared gate with one of them would be ambiguous in a verdict.
RESERVED_GATES = ("outputs-present", "payload-present")
# The built-in coding-agent presets (orchestrate/workers/agents BUILTIN holds their classes): the plan is
# checked against these names without importing the workers room.
AGENT_PRESETS = ("aider", "claude-code", "codex", "gemini", "opencode")
DEFAULT_TIMEOUT = 3600
DEFAULT_MAX_ATTEMPTS = 2


@dataclass(frozen=True)
class Check:
    """An evaluator or campaign check: a shell command that must exit 0."""

    name: str
    run: str
    timeout: int | None = None
    review: bool = False  # a reviewer: when reviewers disagree, a person decides


@dataclass(frozen=True)
class Tripwire:
    """A premise: `run` must exit with `expect` while the node is pending."""

    run: str
    expect: int = 0
    why: str = ""
    timeout: int | None = None


@dataclass(frozen=True)
class Node:
    id: str
    title: str
    depends_on: tuple[str, ...]
    file_surface: tuple[str, ...]
    worker: str | None
    discipline: str | None = None
    brief: str = ""
    brief_file: str | None = None
    evaluators: tuple[Check, ...] = ()
    tripwires: tuple[Tripwire, ...] = ()
    serialize: bool = False
    complete: bool = False
    mitigates: tuple[str, ...] = ()
    timeout: int = DEFAULT_TIMEOUT
    max_attempts: int = DEFAULT_MAX_ATTEMPTS
    line: int = 0
    plugin_gates: tuple[str, ...] = ()  # `gates:` instances of a non-command plugin, run by that plugin
    outputs: tuple[str, ...] = ()  # keys the worker reports; conditions read them as src.outputs.<key>
    activation: str = "always"  # on_demand: SKIPPED unless a reroute or a discovery fallback enables it
    join: str = "all"  # all: every incoming ordering edge taken; any: at least one
    max_rework: int | None = None
    on_exhausted: str = "halt"  # continue: ABANDONED after max_rework instead of halting
    worker_spec: dict | None = None  # `worker: {capabilities: [...]}` or `{kind: human}`
    sandbox: str | None = None  # auto | bwrap | none; None: `.ledger/config.yaml`'s, else auto
    budget: dict | None = None  # {cost_usd, tokens}: no further attempt once its attempts spent that much


@dataclass(frozen=True)
class Dag:
    path: str
    topic: str
    base: str
    mode: str
    workers: dict[str, str]
    checks: tuple[Check, ...]
    nodes: tuple[Node, ...]
    by_id: dict[str, Node] = field(repr=False, compare=False)
    policy: dict = field(default_factory=dict, repr=False, compare=False)
    edges: tuple = ()  # tuple[edges.Edge, ...]: the `edges:` list in file order, then the `depends_on` short forms
    params: dict = field(default_factory=dict, compare=False)
    gates: dict = field(default_factory=dict, repr=False, compare=False)  # name -> {plugin, ...config}
    budget: dict = field(default_factory=dict, compare=False)  # the campaign's {cost_usd, tokens}; {}: none
    schedule: str = "eager"  # eager | layered: when a node may start (engine/schedule.py)
    unsandboxed: str | None = None  # `defaults: {unsandboxed: ...}`; None: `.ledger/config.yaml`'s, else serial
    keep_ignored: bool | None = None  # `defaults: {keep_ignored: ...}`; None: `.ledger/config.yaml`'s, else false
    _groups: tuple = field(default=(), repr=False, compare=False)
    _layer_deps: dict = field(default_factory=dict, repr=False, compare=False)
    _effective: dict = field(default_factory=dict, repr=False, compare=False)
    _memo: dict = field(default_factory=dict, repr=False, compare=False)  # indexes built on first use

    def cached(self, key: str, build):
        """`build()` once per DAG: the engine asks per node, and a scan per question would be quadratic."""
        if key not in self._memo:
            self._memo[key] = build()
        return self._memo[key]

    def deps(self) -> dict[str, tuple[str, ...]]:
        """node -> ordering predecessors (depends_on, TRIGGERS, PRODUCES, and the spokes a hub COMPOSES)."""
        return {n.id: n.depends_on for n in self.nodes}

    def layer_deps(self) -> dict[str, tuple[str, ...]]:
        """`deps()` with each LOOPS_WITH group contracted: a member waits for all its group's outside deps."""
        return self._layer_deps or self.deps()

    def layers(self) -> list[list[str]]:
        """Kahn layers in natural id order; complete nodes are settled and never appear."""
        return graph.kahn_layers(self.layer_deps(), settled=(n.id for n in self.nodes if n.complete))

    def groups(self) -> list[tuple[str, ...]]:
        """LOOPS_WITH groups (co-reconciled), each in natural id order."""
        return list(self._groups)

    def group_of(self, node_id: str) -> tuple[str, ...]:
        return self._group_index().get(node_id, (node_id,))

    def _group_index(self) -> dict[str, tuple[str, ...]]:
        """node -> its LOOPS_WITH group, for the members of one."""
        return self.cached("group_of", lambda: {m: g for g in self._groups for m in g})

    def effective_gates(self, node_id: str) -> list[str]:
        """The gate names judging `node_id` (seeds-other §3.1), sorted by name."""
        return list(self._effective.get(node_id, ()))

    def effective_checks(self, node_id: str) -> tuple[Check, ...]:
        """The command checks behind `effective_gates`: the node's own in declared order, then its spokes' and peers'."""
        return self.checks_for((node_id,))

    def checks_for(self, starts: tuple[str, ...]) -> tuple[Check, ...]:
        """The command checks behind the effective gates of `starts` (a node, or a LOOPS_WITH group judged on one
        tree): their own in declared order, then the rest by name. Inline evaluators are named per node, so two
        nodes may each have an `exists` of their own: a check is told apart by what it runs, not by its name
        alone (a hub judged only by its own `exists` never ran its spoke's), and a gathered one whose name is
        taken is shown as `name (owner)`."""
        own = list(self.by_id[starts[0]].evaluators)  # a group's other members are gathered as its peers
        named = {c.name for c in own}
        wanted = {g for n in starts for g in self.effective_gates(n)}
        if not wanted & self.cached("ambiguous-checks", self._ambiguous_names):
            first = self.cached("check-by-name", self._first_check_by_name)
            return tuple(own) + tuple(first[g] for g in sorted(wanted - named) if g in first)
        return self.cached(f"checks:{'+'.join(starts)}", lambda: self._gathered(starts, own, wanted))

    def walked(self, node_id: str) -> list[tuple[str, bool]]:
        """The nodes whose gates judge `node_id`, in its effective-gates walk's order (edges.visited)."""
        from orchestrate.dag import edges
        spokes = self.cached("spokes", lambda: {h: [e.dst for e in es] for h, es in self._by_end(
            lambda e: e.src if e.predicate == "COMPOSES" else None).items()})
        return edges.visited(node_id, self.by_id, spokes, self._group_index())

    def _gathered(self, starts: tuple[str, ...], own: list[Check], wanted: set[str]) -> tuple[Check, ...]:
        owners = dict.fromkeys(m for n in starts for m, _ in self.walked(n))
        named = {c.name for c in own}
        rest: list[Check] = []
        gathered = set(own)
        for m in graph.natural_sorted(owners):
            for c in self.by_id[m].evaluators:
                if c in gathered or c.name not in wanted:
                    continue
                gathered.add(c)
                taken = c.name in named or any(r.name == c.name for r in rest)
                rest.append(replaced(c, name=f"{c.name} ({m})") if taken else c)
        return tuple(own) + tuple(sorted(rest, key=lambda c: c.name))

    def _first_check_by_name(self) -> dict[str, Check]:
        found: dict[str, Check] = {}
        for n in sorted(self.nodes, key=lambda m: graph.natural_key(m.id)):
            for c in n.evaluators:
                found.setdefault(c.name, c)
        return found

    def _ambiguous_names(self) -> set[str]:
        """Check names that stand for different checks on different nodes, or on one node for a check and on
        another for a plugin's gate (an EXTENDS action, a plugin's `gates:` instance)."""
        seen: dict[str, Check] = {}
        clashing = {c.name for n in self.nodes for c in n.evaluators if seen.setdefault(c.name, c) != c}
        plugins = {a["name"] for e in self.edges if e.predicate == "EXTENDS" for a in e.actions}
        plugins |= {name for name, spec in self.gates.items() if spec.get("plugin") != COMMAND_PLUGIN}
        return clashing | (plugins & seen.keys())

    def incoming(self, node_id: str) -> list:
        """Ordering edges whose later end is `node_id` (for COMPOSES that is the hub), in edge-id order."""
        return self.cached("incoming", lambda: self._by_end(lambda e: e.after if e.orders else None)).get(node_id, [])

    def outgoing(self, node_id: str) -> list:
        """Every edge whose `from` is `node_id`, in edge-id order."""
        return self.cached("outgoing", lambda: self._by_end(lambda e: e.src)).get(node_id, [])

    def _by_end(self, end) -> dict[str, list]:
        index: dict[str, list] = {}
        for e in sorted(self.edges, key=lambda e: graph.natural_key(e.id)):
            if (key := end(e)) is not None:
                index.setdefault(key, []).append(e)
        return index

    def partition(self, layer: list[str]) -> tuple[list[str], list[str]]:
        """(parallel set, serial rest) of one layer, each in natural id order. A LOOPS_WITH group moves as
        one: when any member serializes, the whole group is in the serial rest."""
        def serial_(i: str) -> bool:
            return any(self.by_id[m].serialize for m in self.group_of(i))
        parallel = [i for i in layer if not serial_(i)]
        serial = [i for i in layer if serial_(i)]
        return parallel, serial

    def concurrent_with(self, node_id: str) -> list[str]:
        """Nodes that neither reach nor are reached by `node_id` (complete ones excluded)."""
        deps = self.deps()
        ancestors = graph.reaches(deps, node_id)
        return [n.id for n in self.nodes
                if n.id != node_id and not n.complete and n.id not in ancestors
                and node_id not in graph.reaches(deps, n.id)]


_DEFAULTS: dict[type, tuple[dict, frozenset, frozenset]] = {}


def _shape(cls: type) -> tuple[dict, frozenset, frozenset]:
    """(plain defaults, field names, fields without a plain default) of a dataclass, found once."""
    known = _DEFAULTS.get(cls)
    if known is None:
        defaults = {f.name: f.default for f in fields(cls) if f.default is not MISSING}
        names = frozenset(f.name for f in fields(cls))
        known = _DEFAULTS[cls] = (defaults, names, names - defaults.keys())
    return known


def assemble(cls: type, **values):
    """`cls(**values)` for a frozen dataclass, made without its `__init__`: that sets each field through
    `object.__setattr__`, three to four times the cost of filling `__dict__`, and validation builds a
    Node per node and an Edge per dependency (100k and 300k of them in a 100k-node DAG). A field with
    a default factory must be given; unknown or missing names fail as they would in the constructor."""
    defaults, names, required = _DEFAULTS.get(cls) or _shape(cls)
    if not (values.keys() <= names and required <= values.keys()):
        raise TypeError(f"{cls.__name__}: unknown or missing fields among {sorted(values)}")
    obj = object.__new__(cls)
    obj.__dict__.update(defaults, **values)
    return obj


def replaced(obj, **changes):
    """`dataclasses.replace(obj, **changes)` for a frozen dataclass built by `assemble` or its constructor,
    without running `__init__` again (validation adds the ordering predecessors to every hub's node)."""
    if not changes.keys() <= _shape(type(obj))[1]:
        raise TypeError(f"{type(obj).__name__}: unknown fields among {sorted(changes)}")
    new = object.__new__(type(obj))
    new.__dict__.update(obj.__dict__, **changes)
    return new

