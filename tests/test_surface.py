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
    (".scratch/out.txt", "no node may change"), (".ledger", "no node may change"), (".git/config", "no node may change"),
    ("sub/.GIT/hooks", "no node may change"),
])
def test_invalid_tokens(token, fragment):
    assert fragment in token_problem(token)


@pytest.mark.parametrize("token", ["docs", "docs/", "src/**/*.py", "README.md", "a/b-c_d.e", ".github/x", ".gitignore",
                                   "sub/.scratch", "sub/.ledger/x"])
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


# Globs follow git's pathspec `:(glob)` magic; these cases were read off `git ls-files` (git 2.39). A `**`
# right after the literal prefix spans directories (`src/a**`): git strips that prefix before wildmatch.
GIT_COVERS = [
    ("[^a]", "b", True), ("[^a]", "^", True), ("[^a]", "a", False), ("[!a]", "^", True), ("[!a]", "!", True),
    ("[!a]", "a", False), ("[]a]", "]", True), ("[!]a]", "b", True), ("[a-c]", "b", True), ("[c-a]", "b", False),
    ("[[:digit:]]x", "7x", True), ("[[:digit:]]x", "ax", False), ("a\\*b", "a*b", True), ("a\\*b", "axb", False),
    ("a\\*b2", "a*b2/y", False), ("src/a**", "src/a/x", True), ("src/a**", "src/abc", True),
    ("[!a]**", "b/c", False), ("x/**", "x", False), ("src/a**/c", "src/ab/c", True),
    ("src/a**/c", "src/a/b/c", True), ("src/a**c", "src/ab/c", False), ("src**/c", "src/a/b2/c", True),
    ("src/**c", "src/a/c", False), ("src/**", "src", False), ("**/y", "y", True), ("src/**/y", "src/y", True),
    ("src/**/y", "src/a/b/y", True), ("*", "a/b", False), ("[d", "[d/x", True), ("a[", "a[", True),
    ("a[", "a[b", False), ("***", "a/b/c", True), ("src/***", "src/a/b", True),
    ("docs/?.md", "docs/é.md", False), ("docs/??.md", "docs/é.md", True), ("docs/[!a].md", "docs/é.md", False),
    ("docs/[!a][!a].md", "docs/é.md", True), ("docs/[é].md", "docs/é.md", False),
    ("docs/[é][é].md", "docs/é.md", True), ("docs/?e.md", "docs/ée.md", False), ("docs/*.md", "docs/é.md", True),
]


@pytest.mark.parametrize("token,path,expected", GIT_COVERS)
def test_globs_cover_what_git_lists(token, path, expected):
    assert covers(token, path) is expected


@pytest.mark.parametrize("token,fragment", [
    ("src\\x.py", "escapes no glob character"), ("[/a]b", "inside `[...]`"), ("a\\", "backslash"),
    ("[[:foo:]].txt", "unknown character class"),
])
def test_tokens_that_git_would_read_otherwise(token, fragment):
    assert fragment in token_problem(token)


@pytest.mark.parametrize("token", ["a\\*b", "\\[x\\]", "[[:alpha:]]*", "[!a]", "[^a]/**"])
def test_escaped_and_negated_tokens_are_valid(token):
    assert token_problem(token) is None


# `é` is two bytes, and git's `?` and classes take one byte each: `?` misses it, `??` and `[!a][!a]` match it
TOP_FILES = ["a", "b", "ab", "^", "!", "*", "[", "-", ".x", "a]", "a*b", "é", "éa"]
DIRS = ["d", "da", "d*", "[d"]
UNDER = ["a", "b", "^", "ab", "e/a", "e/b"]
GIT_FILES = TOP_FILES + [f"{d}/{f}" for d in DIRS for f in UNDER]
ATOMS = st.sampled_from(["a", "b", "d", "e", "*", "?", "**", "[ab]", "[!a]", "[^a]", "[a-b]", "[]a]", "[!]a]",
                         "\\*", "\\[", "^", "!", "[[:alpha:]]", "[", "-", "]", "***", "é", "[é]", "[!é]"])
GIT_PATTERNS = st.lists(st.lists(ATOMS, min_size=1, max_size=3).map("".join), min_size=1, max_size=3).map("/".join)


def test_globs_match_exactly_what_git_ls_files_lists(repo):
    """Against git itself: every generated token covers exactly the files `git ls-files ':(glob)TOKEN'` lists."""
    repo.write({f: "x\n" for f in GIT_FILES})
    repo.git("add", "-A")
    tracked = repo.git("ls-files", "-z").strip("\0").split("\0")

    @settings(max_examples=300, deadline=None, database=None)
    @given(GIT_PATTERNS)
    def agrees(token):
        if token_problem(token) is not None:
            return
        listed = {p for p in repo.git("ls-files", "-z", "--", f":(glob){token}").split("\0") if p}
        assert {p for p in tracked if covers(token, p)} == listed, token

    agrees()


@settings(max_examples=500, deadline=None)
@given(GIT_PATTERNS, GIT_PATTERNS, st.sampled_from(GIT_FILES))
def test_tokens_git_would_both_list_a_file_for_overlap(a, b, path):
    if token_problem(a) is None and token_problem(b) is None and covers(a, path) and covers(b, path):
        assert overlap(a, b), (a, b, path)


@pytest.mark.parametrize("path, fragment", [
    (".ledger/state/dag.yaml", "no node may change"), ("x/.git/hooks/pre-commit", "no node may change"),
    ("/etc/passwd", "requests are relative to the repository root"), ("docs/new.md", None),
])
def test_a_surface_exceed_request_is_refused_what_no_token_may_name(path, fragment):
    from orchestrate.workers.local import request_problem
    found = request_problem(path)
    assert found is None if fragment is None else fragment in found


@pytest.mark.parametrize("token, path, expected", [
    ("[z-a]", "z", True), ("[a-\\]]", "a", True), ("[a-[:digit:]]", "a]", True),  # git matches the low end
    ("[[:]x", "[x", True), ("[[:]x", ":x", True), ("[[:]**[:alpha:]", "[:", True),  # `[:` with no `:]` before `]`
])
def test_classes_read_as_git_reads_them(token, path, expected):
    assert covers(token, path) is expected
