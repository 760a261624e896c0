"""`orchestrate init`: the recorder is created once, the project is only told to ignore it."""
from __future__ import annotations

from tests.helpers import RepoDir, make_repo


def _checkout(repo):
    return (repo.git("rev-parse", "HEAD"), repo.git("symbolic-ref", "HEAD"), repo.git("ls-files", "-s"),
            repo.git("status", "--porcelain", "--untracked-files=all"))


def test_init_creates_the_recorder_and_excludes_it(tmp_path, orch):
    repo = make_repo(tmp_path / "repo")
    before = _checkout(repo)
    result = orch("init", cwd=repo)
    assert result.rc == 0 and "created the recorder" in result.out
    ledger = RepoDir(repo / ".ledger")
    assert ledger.git("log", "--format=%s") == "log: init recorder"
    for path in ["config.yaml", "gates/README.md", "log", "state"]:
        assert (ledger / path).exists(), path
    exclude = (repo / ".git" / "info" / "exclude").read_text().splitlines()
    assert exclude.count(".ledger/") == 1 and exclude.count(".scratch/") == 1
    assert _checkout(repo) == before


def test_init_is_idempotent(tmp_path, orch):
    repo = make_repo(tmp_path / "repo")
    orch("init", cwd=repo)
    head = RepoDir(repo / ".ledger").head()
    again = orch("init", cwd=repo)
    assert again.rc == 0 and "already initialised" in again.out
    assert RepoDir(repo / ".ledger").head() == head
    exclude = (repo / ".git" / "info" / "exclude").read_text().splitlines()
    assert exclude.count(".ledger/") == 1


def test_init_outside_a_repository_exits_2(tmp_path, orch):
    result = orch("init", cwd=tmp_path)
    assert result.rc == 2 and "not inside a git repository" in result.err
    assert len(result.err.strip().splitlines()) == 1


def test_init_from_a_subdirectory_or_a_linked_worktree_targets_the_main_checkout(tmp_path, orch):
    repo = make_repo(tmp_path / "repo")
    (repo / "sub").mkdir()
    assert orch("init", cwd=repo / "sub").rc == 0
    assert (repo / ".ledger" / ".git").exists() and not (repo / "sub" / ".ledger").exists()
    repo.git("worktree", "add", "-q", str(tmp_path / "wt"), "-b", "side")
    assert "already initialised" in orch("init", cwd=tmp_path / "wt").out
    assert not (tmp_path / "wt" / ".ledger").exists()


def test_a_foreign_ledger_folder_is_refused(tmp_path, orch):
    repo = make_repo(tmp_path / "repo")
    (repo / ".ledger").mkdir()
    (repo / ".ledger" / "notes.txt").write_text("mine\n")
    result = orch("init", cwd=repo)
    assert result.rc == 2 and "is not a recorder" in result.err
    assert (repo / ".ledger" / "notes.txt").read_text() == "mine\n"


def test_a_ledger_that_is_a_file_or_a_dangling_link_is_refused_without_a_traceback(tmp_path, orch):
    repo = make_repo(tmp_path / "repo")
    (repo / ".ledger").write_text("mine\n")
    made = orch("init", cwd=repo)
    assert made.rc == 2 and f"{repo / '.ledger'} exists (a file) and is not a recorder repository" in made.err
    checked = orch("validate", cwd=repo)
    assert checked.rc == 2 and "dag.yaml: a folder on this path is a file" in checked.err
    (repo / ".ledger").unlink()
    (repo / ".ledger").symlink_to(tmp_path / "nowhere")
    made = orch("init", cwd=repo)
    assert made.rc == 2 and "exists (a link) and is not a recorder repository" in made.err
    assert not (tmp_path / "nowhere").exists()


def test_inside_the_recorder_every_command_acts_on_the_project(tmp_path, orch):
    """rv45: from `.ledger/state` (where the DAG is edited) the recorder, a repository too, was taken for the
    project: `init` made `.ledger/.ledger`, and `run` ran the campaign on the recorder's own history."""
    repo = make_repo(tmp_path / "repo")
    orch("init", cwd=repo)
    ledger = RepoDir(repo / ".ledger")
    head, inside = ledger.head(), repo / ".ledger" / "state"
    again = orch("init", cwd=inside)
    assert again.rc == 0 and f"already initialised: {repo / '.ledger'}" in again.out
    assert not (inside.parent / ".ledger").exists() and ledger.head() == head
    said = orch("validate", cwd=inside)
    assert said.rc == 0 and str(repo / ".ledger" / "state" / "dag.yaml") in said.out, said.out + said.err
    assert orch("run", "--no-interactive", "-q", cwd=inside).rc == 75
    assert "campaign/starter" in repo.git("branch", "--list", "campaign/*")
    assert ledger.git("branch", "--list", "campaign/*", "node/*") == ""


def test_before_init_validate_and_run_say_to_run_it(tmp_path, orch):
    """rv45: `validate` in a fresh repository said to create the DAG file, where `init` writes a starter one."""
    repo = make_repo(tmp_path / "repo")
    for command in ("validate", "run"):
        said = orch(command, cwd=repo)
        assert said.rc == 2 and "run `orchestrate init` first" in said.err, said.err
    orch("init", cwd=repo)
    (repo / ".ledger/state/dag.yaml").write_text("topic: one\nworkers: {c: 'true'}\n"
                                                  "nodes:\n  - {id: A, file_surface: [a], discipline: c}\n")
    assert "(1 node, 1 layer, topic one)" in orch("validate", cwd=repo).out


def test_a_repository_of_the_users_own_called_ledger_is_not_taken_for_a_recorder(tmp_path, orch):
    """rv46: a `~/.ledger` repository (the user's books) inside a dotfiles checkout was taken for orchestrate's
    recorder: `init` and `run` wrote the campaign into the outer repository and its recorder into the books."""
    outer = make_repo(tmp_path / "home")
    books = make_repo(outer / ".ledger")
    said = orch("init", cwd=books)
    assert said.rc == 0 and f"created the recorder {books / '.ledger'}" in said.out, said.out
    assert ".ledger/" not in (outer / ".git" / "info" / "exclude").read_text()
