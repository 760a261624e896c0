"""The `when:` language of conditional edges: a strict, whitelisted expression over the source's outcome.

A condition reads only `src.status`, `src.outputs.<key>`, `src.gates.<gate>.rc`, `src.rework_count` and
`params.<key>`, and may use comparisons (`== != < <= > >= in`, `not in`, chains), `and`, `or`, `not`,
parentheses, the literals `true false null`, numbers, quoted strings and lists of literals. The text is
parsed with `ast.parse(mode="eval")` and walked against a whitelist into a small tree of our own; nothing
is ever handed to `eval`. Every name is checked when the DAG is validated (`compile_condition`), so a typo
fails the DAG, not the run.

Evaluation is strict: ordering needs two numbers or two strings, a bool is not a number, `and`/`or`/`not`
take bools only and the result must be a bool. Equality across types is simply false. Type errors raise
`ConditionTypeError`; they are never quietly turned into `false`.
"""
from __future__ import annotations

import operator
from collections.abc import Collection, Mapping
from dataclasses import dataclass, field

from orchestrate.dag import condition_types
from orchestrate.dag.condition_syntax import (
    STATUSES,
    BoolOp,
    Builder,
    ConditionError,
    Expr,
    Lit,
    Not,
    Ref,
    Scope,
    is_number,
    ordered,
    show,
)

__all__ = ["STATUSES", "Condition", "ConditionError", "ConditionTypeError", "compile_condition"]

class ConditionTypeError(Exception):
    """The condition cannot be decided on these values: a type mismatch, a non-bool result, a missing value."""

    def __init__(self, message: str):
        super().__init__(message)
        self.message = message


@dataclass(frozen=True)
class Condition:
    text: str
    names: tuple[str, ...]
    _root: Expr | None = field(default=None, repr=False, compare=False)

    def evaluate(self, values: Mapping[str, object]) -> tuple[bool, dict[str, object]]:
        """Decide the condition on `values` (dotted name -> recorded value); return (result, inputs read)."""
        root = self._root if self._root is not None else Builder(self.text, None).build_text()
        inputs: dict[str, object] = {}
        result = _eval(root, values, inputs)
        if not isinstance(result, bool):
            raise ConditionTypeError(f"condition must be true or false, got {show(result)}")
        return result, inputs


def compile_condition(text: str, *, outputs: Collection[str] = (), params: Mapping[str, object] | None = None,
                      gates: Collection[str] = (), source: str = "src node", can_abandon: bool = False) -> Condition:
    """Parse and check `text` against the source node's outputs and gates and the campaign's params."""
    scope = Scope(outputs=ordered(outputs), params=ordered(params or {}), gates=ordered(gates),
                   source=source, can_abandon=can_abandon)
    builder = Builder(text, scope)
    root = builder.build_text()
    condition_types.check(root, params or {})
    return Condition(text=text, names=tuple(builder.names), _root=root)


_ORDERING = {"<": operator.lt, "<=": operator.le, ">": operator.gt, ">=": operator.ge}


def _eval(node: Expr, values: Mapping[str, object], inputs: dict[str, object]) -> object:
    if isinstance(node, Lit):
        return node.value
    if isinstance(node, Ref):
        if node.name not in values:
            raise ConditionTypeError(f"no recorded value for {node.name}")
        inputs[node.name] = values[node.name]
        return values[node.name]
    if isinstance(node, Not):
        operand = _eval(node.operand, values, inputs)
        if not isinstance(operand, bool):
            raise ConditionTypeError(f"'not' needs true or false, got {_describe(operand)}")
        return not operand
    if isinstance(node, BoolOp):
        # Short-circuits like Python, so `inputs` holds only what the decision actually read.
        for operand_node in node.operands:
            operand = _eval(operand_node, values, inputs)
            if not isinstance(operand, bool):
                raise ConditionTypeError(f"'{node.op}' needs true or false on both sides, got {_describe(operand)}")
            if operand is (node.op == "or"):
                return operand
        return node.op == "and"
    left = _eval(node.first, values, inputs)
    for symbol, right_node in node.rest:
        right = _eval(right_node, values, inputs)
        if not _compare(symbol, left, right):
            return False
        left = right
    return True


def _compare(symbol: str, left: object, right: object) -> bool:
    if symbol == "==":
        return _equal(left, right)
    if symbol == "!=":
        return not _equal(left, right)
    if symbol in ("in", "not in"):
        if isinstance(right, (list, tuple)):
            found = any(_equal(left, item) for item in right)
        elif isinstance(right, str) and isinstance(left, str):
            found = left in right
        else:
            raise ConditionTypeError(f"'{symbol}' needs a list (or a string in a string), "
                                     f"got {_describe(left)} {symbol} {_describe(right)}")
        return found if symbol == "in" else not found
    if not ((is_number(left) and is_number(right)) or (isinstance(left, str) and isinstance(right, str))):
        raise ConditionTypeError(f"cannot compare {_describe(left)} with {_describe(right)}")
    return bool(_ORDERING[symbol](left, right))


def _equal(left: object, right: object) -> bool:
    """Equality without Python's cross-type coercions: `true == 1` is false, `1 == 1.0` is true."""
    if is_number(left) and is_number(right):
        return left == right
    if isinstance(left, (list, tuple)) and isinstance(right, (list, tuple)):
        return len(left) == len(right) and all(_equal(a, b) for a, b in zip(left, right))
    if isinstance(left, dict) and isinstance(right, dict):
        return left.keys() == right.keys() and all(_equal(left[k], right[k]) for k in left)
    if _type_name(left) != _type_name(right):
        return False
    return left == right


def _type_name(value: object) -> str:
    if value is None:
        return "null"
    if isinstance(value, tuple):
        return "list"
    return type(value).__name__


def _describe(value: object) -> str:
    return "null" if value is None else f"{_type_name(value)} {show(value)}"
