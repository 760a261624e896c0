"""The `when:` language of conditional edges (seeds-other §3.3): whitelist, names, strict evaluation."""
from __future__ import annotations

import string

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from orchestrate.dag.condition import Condition, ConditionError, ConditionTypeError, compile_condition

OUTPUTS = ("needs_migration", "note", "size", "count", "tables", "kind")
PARAMS = {"env": "prod", "limit": 5}
GATES = ("tests", "lint")


def cond(text: str, *, can_abandon: bool = False) -> Condition:
    return compile_condition(text, outputs=OUTPUTS, params=PARAMS, gates=GATES, source="N1",
                             can_abandon=can_abandon)


def rejected(text: str, **kwargs: object) -> ConditionError:
    with pytest.raises(ConditionError) as info:
        compile_condition(text, **{"outputs": OUTPUTS, "params": PARAMS, "gates": GATES, "source": "N1", **kwargs})
    return info.value


def run(text: str, **values: object) -> tuple[bool, dict[str, object]]:
    return cond(text).evaluate({k.replace("__", "."): v for k, v in values.items()})


def type_error(text: str, **values: object) -> str:
    with pytest.raises(ConditionTypeError) as info:
        run(text, **values)
    return str(info.value)


# -- the C table -------------------------------------------------------------------------------------------

def test_c1_taken_edge_records_its_inputs():
    result = run("src.outputs.needs_migration == true", src__outputs__needs_migration=True)
    assert result == (True, {"src.outputs.needs_migration": True})


def test_c1_false_value_is_not_taken():
    assert run("src.outputs.needs_migration == true", src__outputs__needs_migration=False)[0] is False


def test_c6_undeclared_output_names_the_declared_ones():
    err = rejected("src.outputs.needs_migraton == true", outputs=("needs_migration",))
    assert err.message == "N1 declares no output 'needs_migraton' (declared: needs_migration)"


def test_c6_no_outputs_declared():
    err = rejected("src.outputs.x == 1", outputs=())
    assert err.message == "N1 declares no output 'x' (declared: none)"


def test_c7_other_nodes_cannot_be_read():
    err = rejected("N2.status == 'ACCEPTED'")
    assert err.message == "unknown name 'N2'; a condition may read src.* and params.* only"


def test_c8_function_call_names_construct_and_column():
    err = rejected("len(src.outputs.tables) > 2")
    assert err.message == "function calls are not allowed in conditions (col 1)"
    assert err.col == 1


def test_c9_ordering_str_with_int_is_a_type_error():
    assert type_error("src.outputs.size > 10", src__outputs__size="big") == "cannot compare str 'big' with int 10"


def test_c10_result_must_be_bool():
    assert type_error("src.outputs.count", src__outputs__count=3) == "condition must be true or false, got 3"


def test_c11_operators_inside_strings_are_just_text():
    c = cond("src.outputs.note == 'a || b'")
    assert c.names == ("src.outputs.note",)
    assert c.evaluate({"src.outputs.note": "a || b"})[0] is True
    assert c.evaluate({"src.outputs.note": "a"})[0] is False


def test_c14_abandoned_needs_opt_in():
    expected = "N1 can never be ABANDONED (set max_rework and on_exhausted: continue)"
    assert rejected("src.status == 'ABANDONED'").message == expected
    assert rejected("src.status in ['ACCEPTED', 'ABANDONED']").message == expected
    assert rejected("'ABANDONED' == src.status").message == expected


def test_c14_abandoned_allowed_with_opt_in():
    c = cond("src.status == 'ABANDONED'", can_abandon=True)
    assert c.evaluate({"src.status": "ABANDONED"}) == (True, {"src.status": "ABANDONED"})
    assert c.evaluate({"src.status": "ACCEPTED"})[0] is False


def test_status_not_equal_abandoned_needs_no_opt_in():
    assert cond("src.status != 'ABANDONED'").names == ("src.status",)


@pytest.mark.parametrize("text", ["src.status == 'DONE'", "src.status in ['ACCEPTED', 'FAILED']",
                                  "src.status != 'accepted'", "src.status == 1"])
def test_status_only_compares_with_its_two_values(text: str):
    message = rejected(text, can_abandon=True).message
    assert "'ACCEPTED' or 'ABANDONED'" in message


# -- the whitelist -----------------------------------------------------------------------------------------

@pytest.mark.parametrize("text,construct,col", [
    ("src.outputs.tables[0] == 1", "subscripts", 1),
    ("src.outputs.size + 1 > 2", "arithmetic operators", 1),
    ("-src.outputs.size > 2", "arithmetic operators", 1),
    ("(lambda: true)", "lambda expressions", 2),
    ("[x for x in src.outputs.tables] == []", "comprehensions", 1),
    ("src.outputs.kind == f'{1}'", "f-strings", 21),
    ("(x := 1) == 1", "assignment expressions (:=)", 2),
    ("true.real == 1", "attributes of a literal", 1),
    ("'a'.upper == 1", "attributes of a literal", 1),
    ("src.outputs.kind is null", "'is' and 'is not'", 18),
    ("src.outputs.kind in {'a'}", "sets", 21),
    ("1 if true else 2", "if-else expressions", 1),
    ("src.outputs.size in [1, [2]]", "list items other than strings, numbers, true, false and null", 25),
    ("src.outputs.size in [src.outputs.count]", "list items other than strings, numbers, true, false and null", 22),
    ("__import__('os').system('true')", "function calls", 1),
])
def test_forbidden_constructs_name_themselves_and_their_column(text: str, construct: str, col: int):
    err = rejected(text)
    assert err.message == f"{construct} are not allowed in conditions (col {col})"
    assert err.col == col


@pytest.mark.parametrize("text,name", [("True", "True"), ("src.outputs.kind == None", "None"),
                                       ("false or False", "False")])
def test_python_literals_are_unknown_names(text: str, name: str):
    assert rejected(text).message.startswith(f"unknown name '{name}';")


@pytest.mark.parametrize("text", ["src", "src.outputs", "src.nope", "src.gates.tests.rc.x",
                                  "src.status.x", "src.outputs.size.x"])
def test_src_paths_outside_the_namespace(text: str):
    assert rejected(text).message == f"unknown name '{text}'; src offers src.status, src.outputs.<key>, " \
                                     "src.gates.<gate>.rc and src.rework_count"


@pytest.mark.parametrize("text,said", [("src.gates.tests.stdout == 'ok'", "tests has no field 'stdout'"),
                                       ("src.gates.lint.passed", "lint has no field 'passed'"),
                                       ("src.gates.tests == 0", "'src.gates.tests' is a gate")])
def test_a_gate_read_as_a_verdict_it_does_not_have_names_rc(text: str, said: str):
    """rv83: said only `unknown name`, listing every root of the namespace."""
    name = said.split()[0].strip("'").rsplit(".", 1)[-1]
    assert rejected(text).message == (f"{said}; a gate offers only its exit code: write src.gates.{name}.rc == 0 for "
                                      "passed, != 0 for failed")


def test_column_counts_characters_and_leading_blanks():
    assert rejected("  'é' == len(1)").col == 10


@pytest.mark.parametrize("text,reason", [("(src.status", "'(' was never closed"), ("src.status ==", "invalid syntax"),
                                         ("", "invalid syntax"), ("'open", "unterminated string literal")])
def test_syntax_errors(text: str, reason: str):
    err = rejected(text)
    assert err.message.startswith(f"cannot parse condition: {reason}")
    assert err.message.endswith(f"(col {err.col})")


def test_deep_nesting_is_refused_not_crashing():
    assert "nested too deeply" in rejected("not " * 200 + "true").message


# -- names: params and gates ------------------------------------------------------------------------------

def test_params_are_read():
    assert run("params.env == 'prod' and params.limit >= 5", params__env="prod", params__limit=5)[0] is True


def test_unknown_param_lists_declared():
    assert rejected("params.x == 1").message == "campaign declares no param 'x' (declared: env, limit)"
    assert rejected("params.x == 1", params=None).message == "campaign declares no param 'x' (declared: none)"


def test_gate_rc_is_read():
    assert run("src.gates.tests.rc == 0", src__gates__tests__rc=0) == (True, {"src.gates.tests.rc": 0})


def test_unknown_gate_lists_gates():
    assert rejected("src.gates.x.rc == 0", gates=("b", "a")).message == "N1 has no gate 'x' (gates: b, a)"
    assert rejected("src.gates.x.rc == 0", gates=()).message == "N1 has no gate 'x' (gates: none)"


def test_names_in_first_seen_order_without_duplicates():
    c = cond("params.limit < src.rework_count or src.outputs.size > params.limit or src.status == 'ACCEPTED'")
    assert c.names == ("params.limit", "src.rework_count", "src.outputs.size", "src.status")


# -- evaluation ------------------------------------------------------------------------------------------

@pytest.mark.parametrize("size,expected", [(2, True), (1, False), (3, False), (2.5, True), (-1, False)])
def test_chained_comparison(size: object, expected: bool):
    assert run("1 < src.outputs.size < 3", src__outputs__size=size)[0] is expected


def test_chain_stops_reading_once_false():
    assert run("src.outputs.size < 0 < src.outputs.count", src__outputs__size=1) == (False, {"src.outputs.size": 1})


@pytest.mark.parametrize("text,kind,expected", [
    ("src.outputs.kind in ['a', 'b']", "b", True),
    ("src.outputs.kind in ['a', 'b']", "c", False),
    ("src.outputs.kind not in ('a', 'b')", "c", True),
    ("src.outputs.kind in 'abc'", "bc", True),
    ("src.outputs.kind in [1, true, null]", None, True),
    ("src.outputs.kind in [1, -2.5]", -2.5, True),
])
def test_membership(text: str, kind: object, expected: bool):
    assert run(text, src__outputs__kind=kind)[0] is expected


def test_membership_in_recorded_list():
    assert run("'users' in src.outputs.tables", src__outputs__tables=["users", "orders"])[0] is True


def test_membership_needs_a_list():
    assert type_error("src.outputs.kind in src.outputs.size", src__outputs__kind="a", src__outputs__size=3) == \
        "'in' needs a list (or a string in a string), got str 'a' in int 3"


@pytest.mark.parametrize("kind", [1, 1.0])
def test_bool_is_not_a_number_in_membership(kind: object):
    assert run("src.outputs.kind in [true]", src__outputs__kind=kind)[0] is False


@pytest.mark.parametrize("text,values,expected", [
    ("src.outputs.kind == 1", {"src.outputs.kind": True}, False),
    ("src.outputs.kind != 0", {"src.outputs.kind": False}, True),
    ("src.outputs.kind == 1", {"src.outputs.kind": 1.0}, True),
    ("src.outputs.kind == '1'", {"src.outputs.kind": 1}, False),
    ("src.outputs.kind == null", {"src.outputs.kind": False}, False),
    ("src.outputs.kind == [1, 'a']", {"src.outputs.kind": [True, "a"]}, False),
    ("src.outputs.kind == [1, 'a']", {"src.outputs.kind": [1, "a"]}, True),
])
def test_equality_across_types_is_false_not_an_error(text: str, values: dict[str, object], expected: bool):
    assert cond(text).evaluate(values)[0] is expected


@pytest.mark.parametrize("text,value,message", [
    ("src.outputs.kind < 1", True, "cannot compare bool true with int 1"),
    ("src.outputs.kind >= 'a'", 1, "cannot compare int 1 with str 'a'"),
    ("src.outputs.kind < 1", None, "cannot compare null with int 1"),
    ("src.outputs.kind <= 1", [1], "cannot compare list [1] with int 1"),
])
def test_ordering_is_strict(text: str, value: object, message: str):
    assert type_error(text, src__outputs__kind=value) == message


def test_ordering_strings_and_mixed_numbers():
    assert run("src.outputs.kind < 'b'", src__outputs__kind="a")[0] is True
    assert run("src.outputs.kind <= 2", src__outputs__kind=1.5)[0] is True


@pytest.mark.parametrize("text,message", [
    ("src.outputs.count and true", "'and' needs true or false on both sides, got int 3"),
    ("false or src.outputs.count", "'or' needs true or false on both sides, got int 3"),
    ("not src.outputs.count", "'not' needs true or false, got int 3"),
])
def test_logic_operands_must_be_bools(text: str, message: str):
    assert type_error(text, src__outputs__count=3) == message


@pytest.mark.parametrize("text,values,expected", [
    ("src.outputs.size > 1 and src.outputs.count > 1", {"src.outputs.size": 0}, (False, {"src.outputs.size": 0})),
    ("src.outputs.size > 1 or src.outputs.count > 1", {"src.outputs.size": 2}, (True, {"src.outputs.size": 2})),
    ("src.outputs.size > 1 or src.outputs.count > 1", {"src.outputs.size": 0, "src.outputs.count": 2},
     (True, {"src.outputs.size": 0, "src.outputs.count": 2})),
])
def test_short_circuit_reads_only_what_decides(text: str, values: dict[str, object],
                                               expected: tuple[bool, dict[str, object]]):
    assert cond(text).evaluate(values) == expected


def test_short_circuit_skips_a_type_error():
    assert run("false and src.outputs.count", src__outputs__count=3) == (False, {})


def test_not_and_parentheses():
    assert run("not (src.rework_count > 0 or src.status == 'ACCEPTED')", src__rework_count=0,
               src__status="ABANDONED")[0] is True


def test_missing_value_is_a_type_error():
    assert type_error("src.outputs.size > 1") == "no recorded value for src.outputs.size"


@pytest.mark.parametrize("text,expected", [("null", "null"), ("'yes'", "'yes'"), ("[1, true]", "[1, true]")])
def test_non_bool_literal_results(text: str, expected: str):
    """Refused when the DAG is validated (rv83); a stored text read back still fails strictly when evaluated."""
    assert rejected(text).message.startswith(f"a condition needs true or false, but {expected} is ")
    with pytest.raises(ConditionTypeError, match="condition must be true or false, got " + expected.replace("[", r"\[")):
        Condition(text=text, names=()).evaluate({})


def test_literal_true_is_a_condition():
    assert cond("true").evaluate({}) == (True, {})


def test_condition_built_from_text_alone_evaluates():
    stored = Condition(text="src.outputs.size > 1", names=("src.outputs.size",))
    assert stored.evaluate({"src.outputs.size": 2}) == (True, {"src.outputs.size": 2})
    assert stored == cond("src.outputs.size > 1")


# -- properties ------------------------------------------------------------------------------------------

@settings(max_examples=500, deadline=None)
@given(st.text(alphabet=string.printable, max_size=60))
def test_random_text_only_raises_condition_error(text: str):
    try:
        compile_condition(text, outputs=OUTPUTS, params=PARAMS, gates=GATES, source="N1")
    except ConditionError:
        pass


TOKENS = st.sampled_from(["src.outputs.size", "src.outputs.kind", "params.limit", "src.status", "true", "null",
                          "1", "-2", "'a'", "[1, 'a']", "==", "!=", "<", ">=", "in", "not in", "and", "or", "not",
                          "(", ")", "src.outputs.kind.x", "len(", "+", ","])
JSON = st.recursive(st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | st.text(max_size=3),
                    lambda inner: st.lists(inner, max_size=3), max_leaves=5)


@settings(max_examples=500, deadline=None)
@given(st.lists(TOKENS, min_size=1, max_size=9).map(" ".join), JSON, JSON)
def test_token_soup_fails_cleanly_at_compile_or_run(text: str, size: object, kind: object):
    try:
        c = compile_condition(text, outputs=OUTPUTS, params=PARAMS, gates=GATES, source="N1")
    except ConditionError:
        return
    values = {"src.outputs.size": size, "src.outputs.kind": kind, "params.limit": 5, "src.status": "ACCEPTED"}
    try:
        result, inputs = c.evaluate(values)
    except ConditionTypeError:
        return
    assert isinstance(result, bool)
    assert set(inputs) <= set(c.names)
