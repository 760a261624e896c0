"""The adherence gate on real histories: only --no-ff merges of this campaign's node commits after the baseline."""
from __future__ import annotations

import json

import pytest

from gates import adherence
from tests.helpers import RepoDir

# ---- building histories ---------------------------------------------------------------------

def start(repo: RepoDir, topic: str) -> str:
    """campaign/<topic> at the current baseline commit, checked out; returns the baseline sha."""
    base = repo.head()
    repo.git("checkout", "-q", "-b", f"campaign/{topic}", base)
    return base


def node(repo: RepoDir, branch: str, name: str, start_at: str | None = None, commits: int = 1) -> str:
    """A node branch forked from `start_at` (default: the current branch) with its own commits; returns its tip."""
    current = repo.git("symbolic-ref", "--short", "HEAD")
    repo.git("checkout", "-q", "-b", branch, start_at or current)
    for i in range(commits):
        repo.commit(f"{name}: step {i + 1}", {f"{name}.txt": f"{name} {i}\n"})
    tip = repo.head()
    repo.git("checkout", "-q", current)
    return tip


def merge(repo: RepoDir, *what: str, message: str) -> str:
    repo.git("merge", "-q", "--no-ff", *what, "-m", message)
    return repo.head()


def direct(repo: RepoDir, name: str) -> str:
    return repo.commit(f"direct: {name}", {f"{name}.txt": f"{name}\n"})


def statuses(verdict) -> list[str]:
    return [i.status for i in verdict.items]


# ---- passing campaigns ----------------------------------------------------------------------

def test_no_ff_merges_of_this_campaigns_nodes_pass(repo):
    base = start(repo, "t")
    node(repo, "node/t/N1", "n1")
    node(repo, "node/t/N2", "n2")
    m1 = merge(repo, "node/t/N1", message="merge node N1: one")
    m2 = merge(repo, "node/t/N2", message="merge node N2: two")
    v = adherence.check(repo, "t", base)
    assert v.code == 0, v.lines()
    assert v.summary == "PASS: 2 merge(s), all of this campaign's nodes"
    assert [i.line() for i in v.items] == [f"{'OK':<10} {m1[:12]}  merge node N1: one",
                                           f"{'OK':<10} {m2[:12]}  merge node N2: two"]
    assert v.data["merges"] == [m1, m2] and v.data["offenders"] == []


def test_later_layer_forked_from_the_tip_passes(repo):
    base = start(repo, "t")
    node(repo, "node/t/N1", "n1")
    merge(repo, "node/t/N1", message="merge node N1: one")
    node(repo, "node/t/N2", "n2")  # forked from the tip that already holds N1's merge
    merge(repo, "node/t/N2", message="merge node N2: two")
    assert adherence.check(repo, "t", base).code == 0


def test_a_later_attempt_branch_counts_as_a_node(repo):
    base = start(repo, "t")
    node(repo, "node/t/N1", "n1-first")  # attempt 1, never merged
    node(repo, "node/t/N1+2", "n1")
    merge(repo, "node/t/N1+2", message="merge node N1: one")
    assert adherence.check(repo, "t", base).code == 0


def test_empty_range_passes_with_an_info_item(repo):
    base = start(repo, "t")
    v = adherence.check(repo, "t", base)
    assert v.code == 0
    assert [(i.status, i.subject) for i in v.items] == [("INFO", "no commits after the baseline")]
    assert v.summary.startswith("PASS:")


def test_integration_ref_may_be_spelled_in_full_or_as_head(repo):
    base = start(repo, "t")
    node(repo, "node/t/N1", "n1")
    merge(repo, "node/t/N1", message="merge node N1: one")
    assert adherence.check(repo, "t", base, campaign_ref="refs/heads/campaign/t").code == 0
    assert adherence.check(repo, "t", base, campaign_ref="HEAD").code == 0  # HEAD is the campaign branch


# ---- predicate.md §8.4, with our semantics ----------------------------------------------------

def test_8_4_a_campaign_started_at_a_node_tip_fails(repo):
    # Reference (a) "octopus-style" passes (rc 0): campaign/test is created at node/alpha's tip and then
    # merges node/beta. Ours fails: alpha's commit sits on the first-parent chain as a non-merge (in effect
    # a fast-forward), and DESIGN §5 merges every node with --no-ff.
    base = repo.head()
    alpha = node(repo, "node/test/alpha", "alpha", start_at=base)
    node(repo, "node/test/beta", "beta", start_at=base)
    repo.git("checkout", "-q", "-b", "campaign/test", alpha)
    good = merge(repo, "node/test/beta", message="merge node beta")
    v = adherence.check(repo, "test", base)
    assert v.code == 1
    assert [(i.status, i.subject[:12]) for i in v.items] == [("DIRECT", alpha[:12]), ("OK", good[:12])]
    assert v.summary.startswith("FAIL: 1 commit(s) break adherence (")


def test_8_4_a_true_octopus_of_node_commits_passes(repo):
    # A real octopus merge (one commit, every further parent a node tip) is not a bypass: each of its
    # second and further parents is a node commit, and the chain holds no direct commit.
    base = start(repo, "test")
    node(repo, "node/test/alpha", "alpha")
    node(repo, "node/test/beta", "beta")
    merge(repo, "node/test/alpha", "node/test/beta", message="merge nodes alpha, beta")
    assert adherence.check(repo, "test", base).code == 0


def test_8_4_a_octopus_with_one_foreign_parent_fails(repo):
    base = start(repo, "test")
    node(repo, "node/test/alpha", "alpha")
    stray = node(repo, "feature/x", "x")
    merge(repo, "node/test/alpha", "feature/x", message="merge alpha and x")
    v = adherence.check(repo, "test", base)
    assert v.code == 1
    assert v.items[0].status == "FOREIGN" and stray[:12] in v.items[0].detail


def test_8_4_b_fast_forward_fails(repo):
    # Reference (b) passes (rc 0): campaign/ff fast-forwarded to node/work. Ours fails: a fast-forward
    # puts the node's own commits on the first-parent chain, and they are not merges.
    base = start(repo, "ff")
    tip = node(repo, "node/ff/work", "work", commits=2)
    repo.git("merge", "-q", "--ff-only", "node/ff/work")
    assert repo.head() == tip
    v = adherence.check(repo, "ff", base)
    assert v.code == 1
    assert statuses(v) == ["DIRECT", "DIRECT"]
    assert v.summary.startswith("FAIL: 2 commit(s) break adherence (")


def test_8_4_c_direct_bypass_fails(repo):
    # Same outcome as the reference: node/side exists unmerged; campaign/bad has its own commit.
    base = start(repo, "bad")
    node(repo, "node/bad/side", "side")
    flat = direct(repo, "flat")
    v = adherence.check(repo, "bad", base)
    assert v.code == 1
    assert v.items[0].line() == f"{'DIRECT':<10} {flat[:12]}  direct: flat  <- not a merge"


def test_8_4_d_no_node_branches_fails(repo):
    # Reference (d) only warns "cannot verify" (rc 0) when no node/* refs exist. Ours fails: with no node
    # commits at all, nothing on the chain can be a merge of one, so a commit there is a bypass.
    base = start(repo, "gone")
    direct(repo, "lonely")
    v = adherence.check(repo, "gone", base)
    assert v.code == 1 and statuses(v) == ["DIRECT"]


def test_8_4_d_merge_without_any_node_branch_is_foreign(repo):
    base = start(repo, "gone")
    node(repo, "work/x", "x")
    merge(repo, "work/x", message="merge work x")
    v = adherence.check(repo, "gone", base)
    assert v.code == 1
    assert statuses(v) == ["INFO", "FOREIGN"]
    assert v.items[0].subject == "no node/gone/* branches"


def test_8_4_e_direct_commit_on_main_fails_or_is_unusable(repo):
    # Reference (e) skips (rc 0) when no campaign is active (.ledger/active-dag absent). Our gate has no
    # such switch: the engine audits at RECONCILE and at CLOSE, and a user asking for an audit gets one.
    # Naming main as the integration ref is a failure; without a campaign/<topic> branch there is nothing
    # to audit, which is a usage error.
    base = repo.head()
    direct(repo, "on-main")
    v = adherence.check(repo, "t", base, campaign_ref="main")
    assert v.code == 1
    assert v.items[0].status == "FAIL" and v.items[0].subject == "integration ref"
    assert "the branch main, not campaign/t" in v.items[0].detail
    assert adherence.check(repo, "t", base).code == 2  # campaign/t does not exist


def test_older_harness_cases(repo):
    # test_gates.sh @1a7e1633: node merged --no-ff -> 0; direct commit -> 1; bad baseline -> 2; master -> 1.
    base = start(repo, "demo")
    node(repo, "node/demo/x", "x")
    merge(repo, "node/demo/x", message="merge node x")
    assert adherence.check(repo, "demo", base).code == 0
    direct(repo, "oops")
    assert adherence.check(repo, "demo", base).code == 1
    assert adherence.check(repo, "demo", "no-such-ref").code == 2
    repo.git("branch", "master", "campaign/demo")
    v = adherence.check(repo, "demo", base, campaign_ref="master")
    assert v.code == 1 and "integration ref" in [i.subject for i in v.items]


def test_any_other_branch_name_is_not_the_integration_ref(repo):
    base = start(repo, "t")
    repo.git("branch", "campaign/other")
    repo.git("branch", "integration")
    for ref in ("campaign/other", "integration"):
        v = adherence.check(repo, "t", base, campaign_ref=ref)
        assert v.code == 1, ref
        assert v.summary.startswith(f"FAIL: {ref} is not campaign/t")
    v = adherence.check(repo, "t", base, campaign_ref=repo.head())  # a bare commit
    assert v.code == 1 and "not a branch" in v.items[0].detail


# ---- predicate.md §9.2: the holes ------------------------------------------------------------

def test_laundering_a_direct_commit_through_a_later_node_fails(repo):
    # The hole: a flat commit made on the campaign before a dispatch becomes an ancestor of every node
    # forked afterwards, so "reachable from a node tip" would pass it. We require every first-parent
    # commit to be a merge, so it is caught no matter what later contains it.
    base = start(repo, "t")
    flat = direct(repo, "before-dispatch")
    node(repo, "node/t/N2", "n2")
    m = merge(repo, "node/t/N2", message="merge node N2: two")
    repo.git("merge-base", "--is-ancestor", flat, "node/t/N2")  # the later node does contain it
    v = adherence.check(repo, "t", base)
    assert v.code == 1
    assert [(i.status, i.subject[:12]) for i in v.items] == [("DIRECT", flat[:12]), ("OK", m[:12])]


def test_laundering_a_foreign_merge_through_a_later_node_fails(repo):
    # The same hole for merges: feature/x merged into the campaign, then a node forked from that tip
    # contains feature/x's commit. A node owns only what it adds after its fork point, so the earlier
    # merge stays foreign.
    base = start(repo, "t")
    x = node(repo, "feature/x", "x")
    smuggle = merge(repo, "feature/x", message="merge feature x")
    node(repo, "node/t/N1", "n1")
    merge(repo, "node/t/N1", message="merge node N1: one")
    v = adherence.check(repo, "t", base)
    assert v.code == 1
    assert statuses(v) == ["FOREIGN", "OK"]
    assert v.items[0].line() == (f"{'FOREIGN':<10} {smuggle[:12]}  merge feature x  <- merges {x[:12]} "
                                 "which is not a node commit of t")


def test_a_merged_foreign_branch_fails(repo):
    base = start(repo, "t")
    node(repo, "node/t/N1", "n1")
    merge(repo, "node/t/N1", message="merge node N1: one")
    node(repo, "feature/x", "x")
    merge(repo, "feature/x", message="merge feature x")
    v = adherence.check(repo, "t", base)
    assert v.code == 1 and statuses(v) == ["OK", "FOREIGN"]
    assert v.summary.startswith("FAIL: 1 commit(s) break adherence (")


@pytest.mark.parametrize("other", ["node/othertopic/N1", "node/t2/N1", "node/N1"])
def test_a_node_branch_of_another_topic_fails(repo, other):
    # node/t2/... must not pass for topic t: the prefix is matched up to the slash.
    base = start(repo, "t")
    node(repo, other, "n1")
    merge(repo, other, message="merge node N1")
    v = adherence.check(repo, "t", base)
    assert v.code == 1 and statuses(v)[-1] == "FOREIGN"


def test_recorded_heads_pass(repo):
    base = start(repo, "t")
    h1 = node(repo, "node/t/N1", "n1")
    h2 = node(repo, "node/t/N2", "n2")
    merge(repo, "node/t/N1", message="merge node N1: one")
    merge(repo, "node/t/N2", message="merge node N2: two")
    assert adherence.check(repo, "t", base, node_heads={h1, h2}).code == 0
    assert adherence.check(repo, "t", base, node_heads=[h1[:10], h2]).code == 0  # any spelling of the commit


def test_recorded_heads_refuse_an_unrecorded_commit_on_a_node_branch(repo):
    # Decision: with recorded heads, only those exact commits are node commits; branch refs no longer
    # count. The engine judged the head it recorded; a commit added to node/t/N1 after that was never
    # judged, so merging it is a bypass even though it lives on a node/<topic>/ ref.
    base = start(repo, "t")
    judged = node(repo, "node/t/N1", "n1")
    repo.git("checkout", "-q", "node/t/N1")
    later = repo.commit("N1: unjudged", {"n1.txt": "late\n"})
    repo.git("checkout", "-q", "campaign/t")
    merge(repo, "node/t/N1", message="merge node N1: one")
    v = adherence.check(repo, "t", base, node_heads={judged})
    assert v.code == 1
    assert statuses(v) == ["FOREIGN"] and later[:12] in v.items[0].detail
    assert adherence.check(repo, "t", base).code == 0  # the ref-based fallback cannot tell


def test_recorded_heads_refuse_an_unrecorded_node_branch_and_an_earlier_commit(repo):
    base = start(repo, "t")
    tip = node(repo, "node/t/N1", "n1", commits=2)
    first = repo.git("rev-parse", f"{tip}~1")
    node(repo, "node/t/N2", "n2")
    merge(repo, first, message="merge node N1 (first step only)")
    merge(repo, "node/t/N2", message="merge node N2: two")
    v = adherence.check(repo, "t", base, node_heads={tip})
    assert statuses(v) == ["FOREIGN", "FOREIGN"]  # an ancestor of a head is not the head; N2 unrecorded


def test_recorded_heads_empty_set_is_not_the_ref_fallback(repo):
    base = start(repo, "t")
    assert adherence.check(repo, "t", base, node_heads=set()).code == 0  # nothing merged yet
    node(repo, "node/t/N1", "n1")
    merge(repo, "node/t/N1", message="merge node N1: one")
    assert adherence.check(repo, "t", base, node_heads=set()).code == 1
    assert adherence.check(repo, "t", base, node_heads=None).code == 0


# ---- baseline and usage ---------------------------------------------------------------------

def test_baseline_must_be_an_ancestor_of_the_campaign(repo):
    start(repo, "t")
    node(repo, "node/t/N1", "n1")
    merge(repo, "node/t/N1", message="merge node N1: one")
    repo.git("checkout", "-q", "-b", "elsewhere", "main")
    other = direct(repo, "elsewhere")
    v = adherence.check(repo, "t", other)
    assert v.code == 1
    assert [(i.status, i.subject) for i in v.items] == [("FAIL", "baseline")]
    assert "not an ancestor" in v.summary


@pytest.mark.parametrize("kwargs", [
    {"topic": "t", "baseline": "nope"},
    {"topic": "t", "baseline": "HEAD", "campaign_ref": "campaign/missing"},
    {"topic": "t", "baseline": "HEAD", "node_heads": ["0123456789abcdef0123456789abcdef01234567"]},
    {"topic": "", "baseline": "HEAD"},
    {"topic": "Bad Topic", "baseline": "HEAD"},
])
def test_bad_input_is_a_usage_verdict(repo, kwargs):
    start(repo, "t")
    v = adherence.check(repo, **kwargs)
    assert v.code == 2 and v.summary.startswith("ERROR:"), v.summary


def test_not_a_repository_is_a_usage_verdict(tmp_path):
    (tmp_path / "plain").mkdir()
    v = adherence.check(tmp_path / "plain", "t", "HEAD")
    assert v.code == 2 and "not inside a git repository" in v.summary


# ---- the command line -----------------------------------------------------------------------

def test_cli_exit_codes_and_lines(repo, orch):
    base = start(repo, "t")
    h1 = node(repo, "node/t/N1", "n1")
    merge(repo, "node/t/N1", message="merge node N1: one")
    r = orch("gate", "adherence", "--topic", "t", "--base", base, cwd=repo)
    assert r.rc == 0, r.out + r.err
    assert r.out.splitlines()[-1] == "PASS: 1 merge(s), all of this campaign's nodes"
    assert orch("gate", "adherence", "--topic", "t", "--base", base, "--node-head", h1, "--repo", repo).rc == 0
    assert orch("gate", "adherence", "--topic", "t", "--base", base, "--node-head", base, "--repo", repo).rc == 1
    flat = direct(repo, "flat")
    r = orch("gate", "adherence", "--topic", "t", "--base", base, "--repo", repo)
    assert r.rc == 1
    assert f"DIRECT     {flat[:12]}  direct: flat  <- not a merge" in r.out
    assert r.out.splitlines()[-1].startswith("FAIL: 1 commit(s) break adherence (")
    r = orch("gate", "adherence", "--topic", "t", "--base", base, "--campaign", "main", "--repo", repo)
    assert r.rc == 1
    r = orch("gate", "adherence", "--topic", "t", "--base", base, "--repo", repo, "--json")
    doc = json.loads(r.out)
    assert r.rc == 1 and doc["code"] == 1 and doc["data"]["offenders"] == [flat]


def test_cli_bad_refs_exit_2_without_traceback(repo, orch):
    start(repo, "t")
    r = orch("gate", "adherence", "--topic", "t", "--base", "nope", "--repo", repo)
    assert r.rc == 2 and "ERROR:" in r.err and "Traceback" not in r.err + r.out


@pytest.mark.parametrize("args", [[], ["--topic", "t"], ["--base", "HEAD"],
                                  ["--topic", "t", "--base", "HEAD", "--bogus"]])
def test_cli_wrong_arguments_exit_2_with_usage(repo, orch, args):
    r = orch("gate", "adherence", *args, cwd=repo)
    assert r.rc == 2
    assert "usage:" in r.err and "Traceback" not in r.err + r.out


def test_cli_help_lists_exit_codes(orch):
    r = orch("gate", "adherence", "--help")
    assert r.rc == 0
    assert "Exit codes:" in r.out
    for code in ("0", "1", "2"):
        assert f"  {code}  " in r.out
    assert "--node-head" in r.out and "DIRECT" in r.out


def test_module_main_runs_standalone(repo, capsys):
    base = start(repo, "t")
    assert adherence.main(["--topic", "t", "--base", base, "--repo", str(repo)]) == 0
    assert "PASS: 0 merge(s)" in capsys.readouterr().out


def test_a_single_head_given_as_a_string_is_one_head(repo):
    base = start(repo, "t")
    h1 = node(repo, "node/t/N1", "n1")
    merge(repo, "node/t/N1", message="merge node N1: one")
    assert adherence.check(repo, "t", base, node_heads=h1).code == 0
