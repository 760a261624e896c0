"""The syntax of the `when:` language: the text parsed with `ast.parse(mode="eval")` and walked against a
whitelist into a small tree of our own (literals, names, not, and/or, comparisons), every name checked
against the source node's outputs and gates and the campaign's params. Nothing is handed to `eval`."""
from __future__ import annotations

import ast
import re
from collections.abc import Collection
from dataclasses import dataclass

STATUSES = ("ACCEPTED", "ABANDONED")
MAX_DEPTH = 64
_LITERAL_NAMES: dict[str, object] = {"true": True, "false": False, "null": None}
_SRC_FIELDS = "src.status, src.outputs.<key>, src.gates.<gate>.rc and src.rework_count"
_CMP_OPS: dict[type, str] = {
    ast.Eq: "==", ast.NotEq: "!=", ast.Lt: "<", ast.LtE: "<=", ast.Gt: ">", ast.GtE: ">=",
    ast.In: "in", ast.NotIn: "not in",
}
_FORBIDDEN: dict[type, str] = {
    ast.Call: "function calls are",
    ast.Subscript: "subscripts are",
    ast.Slice: "slices are",
    ast.BinOp: "arithmetic operators are",
    ast.Lambda: "lambda expressions are",
    ast.IfExp: "if-else expressions are",
    ast.ListComp: "comprehensions are",
    ast.SetComp: "comprehensions are",
    ast.DictComp: "comprehensions are",
    ast.GeneratorExp: "comprehensions are",
    ast.JoinedStr: "f-strings are",
    ast.FormattedValue: "f-strings are",
    ast.NamedExpr: "assignment expressions (:=) are",
    ast.Starred: "starred expressions are",
    ast.Set: "sets are",
    ast.Dict: "dicts are",
    ast.Await: "await expressions are",
    ast.Yield: "yield expressions are",
    ast.YieldFrom: "yield expressions are",
}
class ConditionError(Exception):
    """The condition is invalid: bad syntax, an unknown name or a construct outside the whitelist."""

    def __init__(self, message: str, col: int | None = None):
        super().__init__(message)
        self.message = message
        self.col = col


@dataclass(frozen=True)
class Lit:
    value: object


@dataclass(frozen=True)
class Ref:
    name: str


@dataclass(frozen=True)
class Not:
    operand: Expr


@dataclass(frozen=True)
class BoolOp:
    op: str
    operands: tuple[Expr, ...]


@dataclass(frozen=True)
class Compare:
    first: Expr
    rest: tuple[tuple[str, Expr], ...]


Expr = Lit | Ref | Not | BoolOp | Compare
@dataclass(frozen=True)
class Scope:
    outputs: tuple[str, ...]
    params: tuple[str, ...]
    gates: tuple[str, ...]
    source: str
    can_abandon: bool


def ordered(items: Collection[str]) -> tuple[str, ...]:
    # Sets have no declaration order; sort them so messages are stable.
    if isinstance(items, (set, frozenset)):
        return tuple(sorted(items))
    return tuple(items)


def _listing(items: tuple[str, ...]) -> str:
    return ", ".join(items) if items else "none"


class Builder:
    """Walks the Python AST of a condition; with no scope (re-parsing a stored text) names are not looked up."""

    def __init__(self, text: str, scope: Scope | None):
        self.text = text
        self.scope = scope
        self.names: list[str] = []
        # ast.parse rejects leading blanks ("unexpected indent"); YAML strings often carry them.
        self.lead = len(text) - len(text.lstrip(" \t"))
        self.lines = re.split(r"\r\n|\r|\n", text)

    def build_text(self) -> Expr:
        try:
            tree = ast.parse(self.text[self.lead:], mode="eval")
        except SyntaxError as e:
            col = self._syntax_col(e)
            raise ConditionError(f"cannot parse condition: {e.msg} (col {col})", col) from None
        except (ValueError, RecursionError, MemoryError) as e:
            raise ConditionError(f"cannot parse condition: {e}") from None
        return self.build(tree.body, 0)

    def _syntax_col(self, e: SyntaxError) -> int:
        line = e.lineno or 1
        if e.offset is None or e.offset < 1:
            # Python reports offset 0 when the input ends too early: point just past the end.
            return len(self.lines[min(line, len(self.lines)) - 1]) + 1
        return e.offset + (self.lead if line == 1 else 0)

    def col(self, node: ast.AST) -> int | None:
        lineno = getattr(node, "lineno", None)
        offset = getattr(node, "col_offset", None)
        if lineno is None or offset is None or lineno > len(self.lines):
            return None
        line = self.lines[lineno - 1][self.lead:] if lineno == 1 else self.lines[lineno - 1]
        # col_offset counts UTF-8 bytes; users count characters.
        col = len(line.encode("utf-8")[:offset].decode("utf-8", errors="ignore")) + 1
        return col + (self.lead if lineno == 1 else 0)

    def fail(self, what: str, node: ast.AST) -> ConditionError:
        col = self.col(node)
        suffix = f" (col {col})" if col is not None else ""
        return ConditionError(f"{what} not allowed in conditions{suffix}", col)

    def build(self, node: ast.AST, depth: int) -> Expr:
        if depth > MAX_DEPTH:
            raise ConditionError(f"condition is nested too deeply (more than {MAX_DEPTH} levels)", self.col(node))
        if isinstance(node, ast.BoolOp):
            op = "and" if isinstance(node.op, ast.And) else "or"
            return BoolOp(op, tuple(self.build(v, depth + 1) for v in node.values))
        if isinstance(node, ast.UnaryOp):
            return self._unary(node, depth)
        if isinstance(node, ast.Compare):
            return self._compare(node, depth)
        if isinstance(node, (ast.Name, ast.Attribute)):
            return self._name(node, depth)
        if isinstance(node, ast.Constant):
            return self._constant(node)
        if isinstance(node, (ast.List, ast.Tuple)):
            return Lit(tuple(self._list_item(e, depth) for e in node.elts))
        what = _FORBIDDEN.get(type(node), f"{type(node).__name__} expressions are")
        if isinstance(node, ast.BinOp) and isinstance(node.op, ast.Sub) and (dashed := _DASHED.search(self.text)):
            name = dashed.group(1)  # `src.gates.outputs-present.rc`: a gate name with a dash, read as a minus
            raise ConditionError(f"{self.fail(what, node).message}: `-` reads as a minus; a gate named with `-` "
                                 f"is read with `_` in its place: src.gates.{name.replace('-', '_')}.rc",
                                 self.col(node))
        raise self.fail(what, node)

    def _unary(self, node: ast.UnaryOp, depth: int) -> Expr:
        if isinstance(node.op, ast.Not):
            return Not(self.build(node.operand, depth + 1))
        operand = node.operand
        if (isinstance(node.op, ast.USub) and isinstance(operand, ast.Constant)
                and is_number(operand.value)):
            return Lit(-operand.value)
        raise self.fail("arithmetic operators are", node)

    def _compare(self, node: ast.Compare, depth: int) -> Expr:
        first = self.build(node.left, depth + 1)
        rest: list[tuple[str, Expr]] = []
        prev_ast, prev = node.left, first
        for op, comparator in zip(node.ops, node.comparators):
            if type(op) not in _CMP_OPS:
                raise self.fail("'is' and 'is not' are", self._operator_anchor(prev_ast, comparator))
            symbol = _CMP_OPS[type(op)]
            right = self.build(comparator, depth + 1)
            self._check_status(prev, symbol, right, self.col(node))
            rest.append((symbol, right))
            prev_ast, prev = comparator, right
        return Compare(first, tuple(rest))

    def _operator_anchor(self, left: ast.AST, right: ast.AST) -> ast.AST:
        """A position for an operator, which the AST does not record: just after the left operand."""
        end_line, end = getattr(left, "end_lineno", None), getattr(left, "end_col_offset", None)
        if end_line is None or end is None or end_line != right.lineno or end_line > len(self.lines):
            return right
        raw = self.lines[end_line - 1][self.lead:] if end_line == 1 else self.lines[end_line - 1]
        gap = raw.encode("utf-8")[end:right.col_offset]
        anchor = ast.AST()
        anchor.lineno, anchor.col_offset = end_line, end + len(gap) - len(gap.lstrip(b" \t)"))
        return anchor

    def _check_status(self, left: Expr, symbol: str, right: Expr, col: int | None) -> None:
        """`src.status` is ACCEPTED or ABANDONED; comparing it with anything else is a typo, not a condition."""
        if self.scope is None:
            return
        if isinstance(right, Ref) and isinstance(left, Lit) and symbol in ("==", "!="):
            left, right = right, left
        if not (isinstance(left, Ref) and left.name == "src.status" and isinstance(right, Lit)):
            return
        if symbol in ("==", "!="):
            literals: tuple[object, ...] = (right.value,)
        elif symbol in ("in", "not in") and isinstance(right.value, tuple):
            literals = right.value
        else:
            return
        for value in literals:
            if value not in STATUSES or not isinstance(value, str):
                raise ConditionError(f"src.status is 'ACCEPTED' or 'ABANDONED', never {show(value)}", col)
        if symbol in ("==", "in") and "ABANDONED" in literals and not self.scope.can_abandon:
            raise ConditionError(f"{self.scope.source} can never be ABANDONED "
                                 "(set max_rework and on_exhausted: continue)", col)

    def _name(self, node: ast.Name | ast.Attribute, depth: int) -> Expr:
        parts: list[str] = []
        base: ast.AST = node
        while isinstance(base, ast.Attribute):
            parts.append(base.attr)
            base = base.value
        literal_base = isinstance(base, (ast.Constant, ast.List, ast.Tuple, ast.Set, ast.Dict, ast.JoinedStr))
        if literal_base or (isinstance(base, ast.Name) and base.id in _LITERAL_NAMES and parts):
            raise self.fail("attributes of a literal are", node)
        if not isinstance(base, ast.Name):
            self.build(base, depth + 1)  # names the forbidden construct when there is one
            raise self.fail("attributes of an expression are", node)
        parts.append(base.id)
        parts.reverse()
        if len(parts) == 1 and parts[0] in _LITERAL_NAMES:
            return Lit(_LITERAL_NAMES[parts[0]])
        self._check_name(parts, node)
        dotted = ".".join(parts)
        if dotted not in self.names:
            self.names.append(dotted)
        return Ref(dotted)

    def _check_name(self, parts: list[str], node: ast.AST) -> None:
        col = self.col(node)
        root, dotted = parts[0], ".".join(parts)
        if root == "src":
            self._check_src(parts, dotted, col)
        elif root == "params":
            if len(parts) != 2:
                raise ConditionError(f"unknown name '{dotted}'; a param is read as params.<key>", col)
            if self.scope is not None and parts[1] not in self.scope.params:
                raise ConditionError(f"campaign declares no param '{parts[1]}' "
                                     f"(declared: {_listing(self.scope.params)})", col)
        elif root in ("True", "False", "None"):
            raise ConditionError(f"unknown name '{root}'; the literals are true, false and null", col)
        else:
            raise ConditionError(f"unknown name '{root}'; a condition may read src.* and params.* only", col)

    def _check_src(self, parts: list[str], dotted: str, col: int | None) -> None:
        shape = tuple(parts[1:2])
        if dotted in ("src.status", "src.rework_count"):
            return
        if shape == ("outputs",) and len(parts) == 3:
            if self.scope is not None and parts[2] not in self.scope.outputs:
                raise ConditionError(f"{self.scope.source} declares no output '{parts[2]}' "
                                     f"(declared: {_listing(self.scope.outputs)})", col)
            return
        if shape == ("gates",) and len(parts) == 4 and parts[3] == "rc":
            if self.scope is not None and gate_named(parts[2], self.scope.gates) is None:
                raise ConditionError(f"{self.scope.source} has no gate '{parts[2]}' "
                                     f"(gates: {_listing(self.scope.gates)})", col)
            if self.scope is not None and len(twins := [g for g in self.scope.gates
                                                        if g.replace("-", "_") == parts[2]]) > 1:
                raise ConditionError(f"{self.scope.source} has gates {_listing(twins)}, which a condition cannot "
                                     "tell apart (a `-` in a gate's name is read as `_`): rename one", col)
            return
        if shape == ("gates",) and len(parts) in (3, 4):  # `src.gates.unit.passed`: a verdict read as it is written
            said = f"{parts[2]} has no field '{parts[3]}'" if len(parts) == 4 else f"'{dotted}' is a gate"
            raise ConditionError(f"{said}; a gate offers only its exit code: write src.gates.{parts[2]}.rc == 0 "
                                 "for passed, != 0 for failed", col)
        raise ConditionError(f"unknown name '{dotted}'; src offers {_SRC_FIELDS}", col)

    def _constant(self, node: ast.Constant) -> Expr:
        value = node.value
        if value is True or value is False or value is None:
            col = self.col(node)
            raise ConditionError(f"unknown name '{value}'; the literals are true, false and null", col)
        if isinstance(value, str) or is_number(value):
            return Lit(value)
        if isinstance(value, bytes):
            raise self.fail("bytes literals are", node)
        if isinstance(value, complex):
            raise self.fail("complex numbers are", node)
        raise self.fail(f"{show(value)} is", node)

    def _list_item(self, node: ast.AST, depth: int) -> object:
        item = self.build(node, depth + 1)
        if not isinstance(item, Lit) or isinstance(item.value, tuple):
            raise self.fail("list items other than strings, numbers, true, false and null are", node)
        return item.value


_DASHED = re.compile(r"src\.gates\.([A-Za-z_][\w]*(?:-[\w]+)+)\.rc")


def gate_named(written: str, gates) -> str | None:
    """The gate `src.gates.<written>.rc` reads: its own name, or one written with `-` where the condition has `_`
    (a dash reads as a minus: `outputs-present` is `src.gates.outputs_present.rc`); None when there is none."""
    if written in gates:
        return written
    return next((g for g in gates if g.replace("-", "_") == written), None)


def is_number(value: object) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool)


def show(value: object) -> str:
    if isinstance(value, bool):
        text = "true" if value else "false"
    elif value is None:
        text = "null"
    elif isinstance(value, (list, tuple)):
        text = "[" + ", ".join(show(v) for v in value) + "]"
    elif isinstance(value, dict):
        text = "{" + ", ".join(f"{show(k)}: {show(v)}" for k, v in value.items()) + "}"
    else:
        text = repr(value)
    return text if len(text) <= 80 else text[:77] + "..."
