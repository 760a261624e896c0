"""The types a condition's parts are known to have before the run, checked when the DAG is validated.

`src.status` is text, `src.rework_count` and `src.gates.<gate>.rc` are numbers (a gate's exit code), a param
has the type of its value in the DAG; only `src.outputs.<key>` is unknown until the worker reports it. A part
whose type already makes the condition fail (`cannot compare`, `needs true or false`) or never hold (a number
`==` a text) is refused here, naming the fix, instead of halting the run when the source settles (rv83)."""
from __future__ import annotations

from collections.abc import Mapping

from orchestrate.dag.condition_syntax import BoolOp, Compare, ConditionError, Expr, Lit, Not, Ref, show

BOOL, NUMBER, TEXT, NULL, LIST, MAP = "true/false", "a number", "text", "null", "a list", "a mapping"
ANY = frozenset((BOOL, NUMBER, TEXT, NULL, LIST, MAP))
_ORDERED = frozenset((NUMBER, TEXT))


def kind_of(value: object) -> str:
    if isinstance(value, bool):
        return BOOL
    if isinstance(value, (int, float)):
        return NUMBER
    if isinstance(value, str):
        return TEXT
    if value is None:
        return NULL
    if isinstance(value, (list, tuple)):
        return LIST
    return MAP


def render(node: Expr) -> str:
    if isinstance(node, Lit):
        return show(node.value) if not isinstance(node.value, str) else repr(node.value)
    if isinstance(node, Ref):
        return node.name
    if isinstance(node, Not):
        return f"not {_inner(node.operand)}"
    if isinstance(node, BoolOp):
        return f" {node.op} ".join(_inner(o) for o in node.operands)
    return render(node.first) + "".join(f" {op} {render(right)}" for op, right in node.rest)


def _inner(node: Expr) -> str:
    return f"({render(node)})" if isinstance(node, (BoolOp, Compare)) else render(node)


class Checker:
    def __init__(self, params: Mapping[str, object]):
        self.params = params

    def kinds(self, node: Expr) -> frozenset[str]:
        if isinstance(node, Lit):
            return frozenset((kind_of(node.value),))
        if isinstance(node, Ref):
            return self._ref(node.name)
        if isinstance(node, Not):
            self.truth(node.operand, "'not'")
        elif isinstance(node, BoolOp):
            for operand in node.operands:
                self.truth(operand, f"'{node.op}'")
        else:
            self._compare(node)
        return frozenset((BOOL,))

    def _ref(self, name: str) -> frozenset[str]:
        if name == "src.status":
            return frozenset((TEXT,))
        if name == "src.rework_count" or name.startswith("src.gates."):
            return frozenset((NUMBER,))
        if name.startswith("params.") and name[7:] in self.params:
            return frozenset((kind_of(self.params[name[7:]]),))
        return ANY

    def truth(self, node: Expr, needed_by: str) -> None:
        """`node` is read as true or false (by `needed_by`, or as the whole condition)."""
        kinds = self.kinds(node)
        if BOOL not in kinds:
            raise ConditionError(f"{needed_by} needs true or false, but {self.what(node, kinds)}; "
                                 f"{_example(node, kinds)}")

    def what(self, node: Expr, kinds: frozenset[str]) -> str:
        if isinstance(node, Ref) and node.name.startswith("src.gates."):
            return f"{node.name} is a gate's exit code (a number: 0 when it passed)"
        if isinstance(node, Ref) and node.name.startswith("params.") and kinds != ANY:
            return f"{node.name} is {_one(kinds)} ({show(self.params[node.name[7:]])} in params:)"
        if isinstance(node, Ref):
            return f"{node.name} is {_one(kinds)}"
        return f"{render(node)} is {_one(kinds)}"

    def _compare(self, node: Compare) -> None:
        left = node.first
        for symbol, right in node.rest:
            lk, rk = self.kinds(left), self.kinds(right)
            said = f"`{render(left)} {symbol} {render(right)}`"
            if symbol in ("==", "!=") and not lk & rk:
                raise ConditionError(f"{said} is {'never' if symbol == '==' else 'always'} true: "
                                     f"{self.what(left, lk)} and {self.what(right, rk)}; "
                                     f"{_fix_equal(left, right, lk, rk)}")
            if symbol in ("<", "<=", ">", ">=") and not (lk & rk & _ORDERED):
                bad = [self.what(side, kinds) for side, kinds in ((left, lk), (right, rk)) if kinds != ANY]
                raise ConditionError(f"{said} cannot be decided: {symbol} needs two numbers or two texts, and "
                                     f"{' and '.join(bad)}; compare with == or != instead, or put "
                                     f"{'numbers' if NUMBER in lk | rk else 'texts'} on both sides")
            if symbol in ("in", "not in"):
                self._member(said, symbol, left, right, lk, rk)
            left = right

    def _member(self, said: str, symbol: str, left: Expr, right: Expr, lk: frozenset[str],
                rk: frozenset[str]) -> None:
        if not rk & {LIST, TEXT} or (rk == {TEXT} and TEXT not in lk):
            raise ConditionError(f"{said} cannot be decided: '{symbol}' needs a list on its right (or a text in "
                                 f"a text), and {self.what(right, rk)}; write a list, as in "
                                 f"{render(left)} {symbol} [...]")
        items = right.value if isinstance(right, Lit) else None
        if isinstance(items, tuple) and items and not lk & {kind_of(v) for v in items}:
            raise ConditionError(f"{said} is {'never' if symbol == 'in' else 'always'} true: "
                                 f"{self.what(left, lk)} and the list holds none; list {_one(lk)}")


def _one(kinds: frozenset[str]) -> str:
    return next(iter(kinds)) if len(kinds) == 1 else "of any type"


def _example(node: Expr, kinds: frozenset[str]) -> str:
    said = render(node) if not isinstance(node, (BoolOp, Compare)) else f"({render(node)})"
    if isinstance(node, Lit):
        return "write true, false or a comparison, as in src.status == 'ACCEPTED'"
    if isinstance(node, Ref) and node.name.startswith("src.gates."):
        return f"compare it, as in {said} == 0"
    return f"compare it, as in {said} > 0" if kinds == {NUMBER} else f"compare it, as in {said} == ..."


def _fix_equal(left: Expr, right: Expr, lk: frozenset[str], rk: frozenset[str]) -> str:
    for side in (left, right):
        if isinstance(side, Ref) and side.name.startswith("src.gates."):
            return f"write {side.name} == 0 for passed, != 0 for failed"
    if len(lk) == 1 and isinstance(right, Lit):
        return f"compare {render(left)} with {_one(lk)}"
    if len(rk) == 1 and isinstance(left, Lit):
        return f"compare {render(right)} with {_one(rk)}"
    return "compare values of the same type"


def check(root: Expr, params: Mapping[str, object]) -> None:
    """Refuse a condition whose types already decide that it fails or never changes (ConditionError)."""
    Checker(params).truth(root, "a condition")
