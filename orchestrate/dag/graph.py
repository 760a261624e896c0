"""Graph algorithms over node ids: natural order, Kahn layers, cycles, and concurrent surface conflicts.

Pure functions over plain dicts so the DAG loader, the scheduler and the gates share them. Everything
is linear or near-linear: no search per node pair (concurrency comes from one sweep of ancestor
bitsets restricted to the nodes whose surfaces overlap at all) and no all-pairs token comparison
(tokens are bucketed by their leading path segment).
"""
from __future__ import annotations

import re
from collections import defaultdict
from typing import Iterable, Mapping

from orchestrate.dag import surface, wildmatch

_DIGITS = re.compile(r"(\d+)")


def natural_key(node_id: str) -> tuple:
    """Sort key putting `N2` before `N10`; the id itself breaks ties (`N02` vs `N2`)."""
    parts = _DIGITS.split(node_id)  # text, digits, text, ...: digit runs are the odd parts
    return tuple([(0, int(p), "") if i & 1 else (1, 0, p) for i, p in enumerate(parts)]), node_id


def natural_sorted(ids: Iterable[str]) -> list[str]:
    return sorted(ids, key=natural_key)


def kahn_layers(deps: Mapping[str, Iterable[str]], settled: Iterable[str] = ()) -> list[list[str]]:
    """Kahn generations in natural id order; `settled` nodes count as done and never appear.

    Nodes on a cycle never become ready and are left out: validate first.
    """
    return [natural_sorted(layer) for layer in _generations(deps, set(settled), known_only=False)]


def _generations(deps: Mapping[str, Iterable[str]], done: set[str], known_only: bool) -> list[list[str]]:
    """Kahn generations, unsorted. Nodes holding the very same dependency collection (one object) are
    counted as one vertex: they become ready together, or never if one of them is among those
    dependencies. A contracted LOOPS_WITH group shares one tuple of outside dependencies among its
    members (`edges.contract`), so a group of 50 waiting for 50 nodes costs 50 edges here, not 2,500.
    `known_only` ignores dependencies that are not keys of `deps`; otherwise such a node never starts."""
    # id of a dependency collection -> (the collection, the nodes holding it); holding the collection
    # keeps it alive, so its id cannot be reused while it is a key
    members: dict[int, tuple[Iterable[str], list[str]]] = {}
    for node, ds in deps.items():
        if node not in done:
            key = id(ds)
            if key in members:
                members[key][1].append(node)
            else:
                members[key] = (ds, [node])
    indegree: dict[int, int] = {}
    children: dict[str, list[int]] = defaultdict(list)
    for key, (ds, _) in members.items():
        pending = [d for d in set(ds) if d not in done and (d in deps or not known_only)] if ds else ()
        indegree[key] = len(pending)
        for d in pending:
            children[d].append(key)
    ready = [n for key, k in indegree.items() if k == 0 for n in members[key][1]]
    layers = []
    while ready:
        layers.append(ready)
        ready = []
        for n in layers[-1]:
            for key in children.get(n, ()):
                indegree[key] -= 1
                if indegree[key] == 0:
                    ready.extend(members[key][1])
    return layers


def topological_order(deps: Mapping[str, Iterable[str]]) -> list[str]:
    return [n for layer in kahn_layers(deps) for n in layer]


def cycles(deps: Mapping[str, Iterable[str]]) -> list[list[str]]:
    """One cycle path per strongly connected component that has one, e.g. ['D2', 'D3', 'D2']."""
    known = deps.keys()
    # Nodes that Kahn can settle cannot be on a cycle; only what is left is sorted and searched (a valid
    # DAG, the common case, costs one unsorted Kahn pass).
    order = kahn_order(deps)
    if len(order) == len(deps):
        return []
    settled = set(order)
    rest = {n: natural_sorted(d for d in set(deps[n]) if d in known and d not in settled)
            for n in deps if n not in settled}
    found = []
    for component in _strong_components(rest):
        members = set(component)
        start = natural_sorted(members)[0]
        if len(members) == 1 and start not in rest[start]:
            continue
        found.append(_cycle_from(start, rest, members))
    return sorted(found, key=lambda c: natural_key(c[0]))


def kahn_order(deps: Mapping[str, Iterable[str]]) -> list[str]:
    """Every node Kahn's algorithm can order, dependencies first but otherwise unsorted: what needs only
    some topological order (cycle search, ancestor sweeps) skips `kahn_layers`' natural sort of each
    layer. Dependencies outside `deps` are ignored; nodes on or behind a cycle are left out."""
    return [n for layer in _generations(deps, set(), known_only=True) for n in layer]


def heights(deps: Mapping[str, Iterable[str]]) -> dict[str, int]:
    """For each node, how many nodes long the longest chain from it through its dependents is (1: none depends
    on it). Nodes on or behind a cycle are left out."""
    order = kahn_order(deps)
    known = set(order)
    below: dict[str, int] = {n: 1 for n in order}
    for node in reversed(order):  # each node's dependents come later in the order: theirs are final
        for d in deps.get(node, ()):
            if d in known and below[d] < below[node] + 1:
                below[d] = below[node] + 1
    return below


def _strong_components(graph: Mapping[str, list[str]]) -> list[list[str]]:
    """Tarjan's algorithm, iterative (a deep chain must not hit Python's recursion limit)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    on_stack: set[str] = set()
    stack: list[str] = []
    out = []
    counter = 0
    for root in natural_sorted(graph):
        if root in index:
            continue
        work = [(root, iter(graph[root]))]
        index[root] = low[root] = counter
        counter += 1
        stack.append(root)
        on_stack.add(root)
        while work:
            node, it = work[-1]
            advanced = False
            for nxt in it:
                if nxt not in index:
                    index[nxt] = low[nxt] = counter
                    counter += 1
                    stack.append(nxt)
                    on_stack.add(nxt)
                    work.append((nxt, iter(graph[nxt])))
                    advanced = True
                    break
                if nxt in on_stack:
                    low[node] = min(low[node], index[nxt])
            if advanced:
                continue
            work.pop()
            if work:
                parent = work[-1][0]
                low[parent] = min(low[parent], low[node])
            if low[node] == index[node]:
                comp = []
                while True:
                    member = stack.pop()
                    on_stack.discard(member)
                    comp.append(member)
                    if member == node:
                        break
                out.append(comp)
    return out


def _cycle_from(start: str, graph: Mapping[str, list[str]], members: set[str]) -> list[str]:
    """A shortest dependency cycle through `start` inside one strong component (BFS)."""
    parent: dict[str, str | None] = {start: None}
    queue = [start]
    for node in queue:
        for nxt in graph[node]:
            if nxt == start:
                path = []
                cur: str | None = node
                while cur is not None:
                    path.append(cur)
                    cur = parent[cur]
                return list(reversed(path)) + [start]
            if nxt in members and nxt not in parent:
                parent[nxt] = node
                queue.append(nxt)
    raise AssertionError(f"no cycle through {start} in its strong component")


def surface_conflicts(surfaces: Mapping[str, tuple[str, ...]], deps: Mapping[str, Iterable[str]],
                      exempt: Iterable[frozenset] = ()) -> list[tuple[str, str, list[tuple[str, str]]]]:
    """Pairs of concurrent nodes (neither reaches the other) whose surfaces overlap.

    `surfaces` holds only the nodes that take part (callers leave out serialize and complete nodes);
    `deps` is the whole graph, for reachability. `exempt` holds node pairs that can never both run (a
    node and its discovery fallback or reroute target: one replaces the other). Returns
    (a, b, [(token of a, token of b), ...]) with a before b in natural order, sorted.
    """
    skip = {frozenset(p) for p in exempt}
    owners: dict[str, list[str]] = defaultdict(list)
    spelled: dict[tuple[str, str], str] = {}  # (node, token as compared) -> token as the node wrote it
    for node, tokens in surfaces.items():
        for written in tokens:
            token = written if surface.is_glob(written) else written.rstrip("/")
            if (node, token) not in spelled:
                spelled[node, token] = written
                owners[token].append(node)
    token_pairs = _token_pairs(list(owners))
    candidate: dict[tuple[str, str], list[tuple[str, str]]] = defaultdict(list)
    shared_groups = []
    for t1, t2 in token_pairs:
        if t1 == t2:
            if len(owners[t1]) > 1:
                shared_groups.append(t1)
            continue
        for a in owners[t1]:
            for b in owners[t2]:
                if a != b:
                    key, pair = ((a, b), (t1, t2)) if natural_key(a) < natural_key(b) else ((b, a), (t2, t1))
                    candidate[key].append(pair)
    involved = {n for pair in candidate for n in pair} | {n for t in shared_groups for n in owners[t]}
    if not involved:
        return []
    order = {n: i for i, n in enumerate(kahn_order(deps))}  # any topological order serves
    ancestors = _ancestor_bits(deps, order, involved)
    bit = {n: 1 << i for i, n in enumerate(sorted(involved, key=natural_key))}

    def ordered(a: str, b: str) -> bool:
        return bool(ancestors[b] & bit[a]) or bool(ancestors[a] & bit[b])

    for token in shared_groups:
        group = sorted(owners[token], key=lambda n: order.get(n, -1))
        # A group that forms one dependency chain has no concurrent pair: check neighbours only.
        if all(ordered(group[i], group[i + 1]) for i in range(len(group) - 1)):
            continue
        for i, a in enumerate(group):
            for b in group[i + 1:]:
                key = (a, b) if natural_key(a) < natural_key(b) else (b, a)
                candidate[key].append((token, token))
    result = [(a, b, sorted({(spelled[a, x], spelled[b, y]) for x, y in pairs}))
              for (a, b), pairs in candidate.items() if not ordered(a, b) and frozenset((a, b)) not in skip]
    return sorted(result, key=lambda r: (natural_key(r[0]), natural_key(r[1])))


def _overlapping_tokens(tokens: list[str]) -> list[tuple[str, str]]:
    """Every pair of distinct tokens that overlap, plus (t, t) for each token; never all-pairs."""
    literal = {t for t in tokens if not surface.is_glob(t)}
    globs = [t for t in tokens if surface.is_glob(t)]
    pairs = [(t, t) for t in tokens]
    for t in literal:  # literal overlap is containment: look up each parent directory
        parts = t.split("/")
        for k in range(1, len(parts)):
            parent = "/".join(parts[:k])
            if parent in literal:
                pairs.append((parent, t))
    if not globs:
        return list(dict.fromkeys(pairs))
    # A glob can only meet tokens under its literal prefix, or tokens whose literal prefix contains it.
    # Both indexes keep only the keys some glob looks up.
    glob_lits = {surface.literal_prefix(g) for g in globs}
    heads = {lit[:k] for lit in glob_lits for k in range(len(lit))}
    deepest = max(map(len, glob_lits))
    by_prefix: dict[tuple[str, ...], list[str]] = defaultdict(list)
    under: dict[tuple[str, ...], list[str]] = defaultdict(list)
    for t in tokens:
        lit = surface.literal_prefix(t)
        if lit in heads:
            by_prefix[lit].append(t)
        for k in range(min(len(lit), deepest) + 1):
            if lit[:k] in glob_lits:
                under[lit[:k]].append(t)
    for g in globs:
        lit = surface.literal_prefix(g)
        pool = under.get(lit, []) + [t for k in range(len(lit)) for t in by_prefix.get(lit[:k], ())]
        for other in pool:
            if other != g and surface.overlap_as_written(g, other):
                pairs.append((g, other) if g < other else (other, g))
    return list(dict.fromkeys(pairs))


def _token_pairs(tokens: list[str]) -> list[tuple[str, str]]:
    """`_overlapping_tokens` with names compared as git compares them or where case is not told apart (macOS,
    Windows), in one pass over the tokens' folded forms: a fold covers the lower-case form of every path its
    token covers, so tokens that overlap as written overlap folded too. When folding changes no token (no
    capital, no class) the folded forms are the tokens."""
    folded: dict[str, list[str]] = defaultdict(list)
    for t in tokens:
        folded[wildmatch.fold(t)].append(t)
    if all(len(same) == 1 and same[0] == f for f, same in folded.items()):
        return _overlapping_tokens(tokens)
    return [(t, t) for t in tokens] + [
        (t1, t2) if t1 < t2 else (t2, t1) for f1, f2 in _overlapping_tokens(list(folded))
        for t1 in folded[f1] for t2 in folded[f2] if t1 != t2]


def _ancestor_bits(deps: Mapping[str, Iterable[str]], order: Mapping[str, int], involved: set[str]) -> dict[str, int]:
    """For every node, a bitset of its involved ancestors, in one sweep in topological order."""
    bit = {n: 1 << i for i, n in enumerate(sorted(involved, key=natural_key))}
    bits: dict[str, int] = {}
    for node in order:  # insertion order is topological
        acc = 0
        for d in deps.get(node, ()):
            acc |= bits.get(d, 0) | bit.get(d, 0)
        bits[node] = acc
    return bits


def reaches(deps: Mapping[str, Iterable[str]], start: str) -> set[str]:
    """Every node `start` depends on, transitively (iterative, with a visited set)."""
    seen: set[str] = set()
    stack = list(deps.get(start, ()))
    while stack:
        n = stack.pop()
        if n in seen:
            continue
        seen.add(n)
        stack.extend(deps.get(n, ()))
    return seen
