"""Surface semantics: unit cases and properties (hypothesis)."""
from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from orchestrate.dag.surface import covers, overlap, token_problem

COVERS = [
    ("docs", "docs/x.md", True), ("docs/", "docs/x.md", True), ("docs", "docsx/y.md", False),
    ("docs/x.md", "docs/x.md", True), ("a/b.txt", "a/b.txt.bak", False),
    ("templates/*.md", "templates/IBC.md", True), ("templates/*.md", "templates/sub/x.md", False),
    ("src/*", "src/a", True), ("src/*", "src/a/b.py", False), ("src/**", "src/a/b.py", True),
    ("src/**/*.py", "src/b.py", True), ("src/**/*.py", "src/a/b/c.py", True), ("src/**/*.py", "src/a/b.txt", False),
    ("pkg*/", "pkg1/x.py", True), ("pkg?", "pkg12", False), ("[ab].txt", "a.txt", True), ("[ab].txt", "c.txt", False),
]


@pytest.mark.parametrize("token,path,expected", COVERS)
def test_covers(token, path, expected):
    assert covers(token, path) is expected


OVERLAP = [
    ("docs/", "docs/x.md", True), ("docs", "docsx", False), ("shared/", "shared/", True),
    ("templates/*.md", "templates/IBC.md", True), ("*.md", "*.py", False), ("a*", "b*", False),
    ("src/*", "src/a/b.py", False), ("src/**", "src/a/b.py", True), ("src/*", "lib/*", False),
    ("**", "anything/at/all", True), ("src/*/x.py", "src/a/*", True), ("a/b.txt", "a/b.txt.bak", False),
]


@pytest.mark.parametrize("a,b,expected", OVERLAP)
def test_overlap(a, b, expected):
    assert overlap(a, b) is expected
    assert overlap(b, a) is expected


@pytest.mark.parametrize("token,fragment", [
    ("", "empty"), ("  ", "empty"), ("/etc", "absolute"), ("a/../b", "`..`"), ("..", "`..`"),
    ("a\\b", "backslash"), ("a//b", "normalised"), ("./a", "normalised"), (3, "string"),
])
def test_invalid_tokens(token, fragment):
    assert fragment in token_problem(token)


@pytest.mark.parametrize("token", ["docs", "docs/", "src/**/*.py", "README.md", "a/b-c_d.e"])
def test_valid_tokens(token):
    assert token_problem(token) is None


SEGMENTS = st.sampled_from(["a", "b", "x.md", "y.py", "docs"])
GLOB_SEGMENTS = st.sampled_from(["a", "b", "x.md", "*", "*.md", "?", "a*", "**", "[ab]"])
paths = st.lists(SEGMENTS, min_size=1, max_size=4).map("/".join)
tokens = st.tuples(st.lists(GLOB_SEGMENTS, min_size=1, max_size=4), st.booleans()).map(
    lambda t: "/".join(t[0]) + ("/" if t[1] else ""))


@settings(max_examples=300, deadline=None)
@given(tokens, tokens)
def test_overlap_is_symmetric(a, b):
    assert overlap(a, b) == overlap(b, a)


@settings(max_examples=300, deadline=None)
@given(tokens, tokens, paths)
def test_two_tokens_covering_one_path_overlap(a, b, path):
    if covers(a, path) and covers(b, path):
        assert overlap(a, b)


@settings(max_examples=300, deadline=None)
@given(tokens)
def test_a_token_overlaps_itself(a):
    assert overlap(a, a)


@settings(max_examples=300, deadline=None)
@given(st.lists(SEGMENTS, min_size=1, max_size=3).map("/".join), paths)
def test_a_plain_token_covers_exactly_itself_and_what_is_under_it(token, path):
    assert covers(token, path) == (path == token or path.startswith(token + "/"))
