"""`report -o FILE` where the file cannot be written is bad input: one line naming the path, exit 2, never a
traceback; a folder that does not exist is refused, not created."""
from __future__ import annotations

import pytest

from tests.engine_helpers import campaign_repo

WORKER = r"""#!/bin/sh
set -eu
mkdir -p out && echo x > out/one.txt
"""
DAG = """\
topic: rep
workers: {sh: "./work.sh"}
nodes:
  - {id: one, title: one, depends_on: [], file_surface: [out/], discipline: sh}
"""


@pytest.fixture
def paused(tmp_path, orch):
    """A campaign at its final-acceptance seam."""
    repo = campaign_repo(tmp_path, DAG, WORKER)
    assert orch("run", "--no-interactive", "-q", cwd=repo).rc == 75
    return repo


@pytest.mark.parametrize("target,says", [
    ("README.md/x.html", "README.md/x.html: README.md is not a folder"),  # was FileExistsError, exit 70
    ("missing/dir/x.html", "missing/dir/x.html: no folder missing/dir"),  # was created, folders and all
    ("/proc/x.html", "/proc/x.html: cannot write the report there"),  # was a traceback, exit 70
])
def test_an_unwritable_output_is_one_line_and_exit_2(paused, orch, target, says):
    refused = orch("report", "-o", target, cwd=paused)
    assert refused.rc == 2, refused.err
    assert refused.err.count("\n") == 1 and says in refused.err, refused.err
    assert "Traceback" not in refused.err and refused.out == ""
    assert not (paused / "missing").exists()
    assert (paused / "README.md").is_file()


def test_a_folder_given_as_the_file_is_refused(paused, orch):
    (paused / "folder").mkdir()
    refused = orch("report", "-o", paused / "folder", cwd=paused)
    assert refused.rc == 2 and "is a directory" in refused.err and "Traceback" not in refused.err
    assert list((paused / "folder").iterdir()) == []


def test_an_existing_folder_takes_the_report(paused, orch):
    done = orch("report", "-o", "r.html", cwd=paused)  # relative: in the folder it is run from
    assert done.rc == 0, done.err
    assert done.out.strip() == "r.html"
    assert "campaign/rep" in (paused / "r.html").read_text()
