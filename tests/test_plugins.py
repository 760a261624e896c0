"""Plugin loading (reference/seeds-other.md §3.9, X1–X9) and capability resolution (§3.4, D1–D5).

X9: every plugin here is a throwaway distribution written into tmp_path (a module plus a
`<dist>-<ver>.dist-info/` with METADATA and entry_points.txt); discovery reads only those, never the
developer's site-packages. Module names carry a per-test token and are dropped from sys.modules afterwards,
so one test's plugins cannot leak into another.
"""
from __future__ import annotations

import json
import sys

import pytest

from orchestrate import plugins as P
from orchestrate.errors import ExitCode
from orchestrate.plugins import PluginError
from tests.plugin_site import MISSING, gate, worker


def one(plugins: list[P.Plugin], name: str) -> P.Plugin:
    [found] = [p for p in plugins if p.name == name]
    return found


# ---- X1–X8: loading ---------------------------------------------------------------------------------------

def test_x1_current_protocol_loads_silently(site):
    site.add("orchestrate-unit", "1.2.0", gate("unit", capabilities=["python"], priority=3, version="1.2"))
    p = one(site.discover(), "unit")
    assert (p.state, p.reason, p.kind) == ("ok", "", "gate")
    assert (p.dist, p.dist_version, p.version, p.capabilities, p.priority) == (
        "orchestrate-unit", "1.2.0", "1.2", ("python",), 3)
    assert p.obj.check({}, ".", {}) == (0, "clean")  # a class entry point is instantiated
    assert P.require([p], "gate", "unit") is p


def test_x2_newer_protocol_is_refused(site):
    site.add("orchestrate-llm", "0.4.0", gate("llm-review", protocol_version=2))
    plugins = site.discover()
    assert one(plugins, "llm-review").state == "refused" and one(plugins, "llm-review").obj is None
    with pytest.raises(PluginError) as err:
        P.require(plugins, "gate", "llm-review")
    assert str(err.value) == ("gate plugin 'llm-review' (orchestrate-llm 0.4.0) requires protocol version 2, but this "
                              "orchestrate supports version 1; upgrade orchestrate or install orchestrate-llm<0.4")
    assert err.value.exit_code == ExitCode.FAILED == 1


def test_x3_older_protocol_loads_with_a_warning(site):
    site.add("old-lint", "0.9.0", gate("old-lint", protocol_version=0))
    p = P.require(site.discover(), "gate", "old-lint")
    assert p.state == "warning" and p.obj is not None
    assert p.reason == ("gate plugin 'old-lint' uses protocol version 0 (current: 1); "
                        "loading it for backward compatibility")


def test_x4_missing_protocol_version_is_refused(site):
    site.add("quick-check", "0.1.0", gate("quick-check", protocol_version=MISSING))
    with pytest.raises(PluginError, match=r"^gate plugin 'quick-check' \(quick-check 0\.1\.0\) does not declare "
                                          r"protocol_version; it cannot be loaded$"):
        P.require(site.discover(), "gate", "quick-check")


@pytest.mark.parametrize("value, shown", [("1", "'1'"), (True, "True"), (1.0, "1.0")])
def test_x5_protocol_version_that_is_not_an_int_is_refused(site, value, shown):
    site.add("quick-check", "0.1.0", gate("quick-check", protocol_version=value))
    with pytest.raises(PluginError) as err:
        P.require(site.discover(), "gate", "quick-check")
    assert str(err.value) == f"gate plugin 'quick-check': protocol_version must be an integer, got {shown}"


def test_x6_import_failure_of_a_referenced_plugin_is_an_error(site):
    site.add("orchestrate-secrets", "1.0", gate("no-secrets", prelude="import detect_secrets"))
    plugins = site.discover()
    with pytest.raises(PluginError) as err:
        P.require(plugins, "gate", "no-secrets")
    target = one(plugins, "no-secrets").target
    assert str(err.value) == (f"gate plugin 'no-secrets' (entry point {target}) failed to import: "
                              "ModuleNotFoundError: No module named 'detect_secrets'")


def test_x7_import_failure_of_an_unreferenced_plugin_is_only_listed(site):
    site.add("orchestrate-secrets", "1.0", gate("no-secrets", prelude="import detect_secrets"))
    site.add("orchestrate-unit", "1.0", gate("unit"))
    plugins = site.discover()  # does not raise
    bad = one(plugins, "no-secrets")
    assert bad.state == "unavailable"
    assert bad.reason == "import failed: ModuleNotFoundError: No module named 'detect_secrets'"
    assert P.require(plugins, "gate", "unit").state == "ok"
    assert "unavailable (import failed: ModuleNotFoundError: No module named 'detect_secrets')" in P.render(plugins)


def test_x8_two_distributions_exporting_one_name_are_both_refused(site):
    site.add("pkg-a", "1.0", gate("unit"))
    site.add("pkg-b", "2.1", gate("unit"))
    plugins = site.discover()
    assert sorted((p.dist, p.state) for p in plugins) == [("pkg-a", "refused"), ("pkg-b", "refused")]
    with pytest.raises(PluginError) as err:
        P.require(plugins, "gate", "unit")
    assert str(err.value) == ("gate plugin name 'unit' is provided by two distributions (pkg-a 1.0, pkg-b 2.1); "
                              "uninstall one")


def test_one_name_in_two_groups_is_not_a_clash(site):
    site.add("pkg-a", "1.0", gate("unit"))
    site.add("pkg-b", "1.0", worker("unit"))
    plugins = site.discover()
    assert P.require(plugins, "gate", "unit").dist == "pkg-a"
    assert P.require(plugins, "worker", "unit").dist == "pkg-b"


def test_a_plugin_without_its_callable_is_refused(site):
    site.add("pkg-a", "1.0", worker("lazy"), call=False)
    with pytest.raises(PluginError, match=r"^worker plugin 'lazy' has no callable command\(\); it cannot be loaded$"):
        P.require(site.discover(), "worker", "lazy")


def test_bad_capabilities_are_refused(site):
    site.add("pkg-a", "1.0", worker("w", capabilities="python"))
    assert one(site.discover(), "w").reason == "worker plugin 'w': capabilities must be a list of strings, got 'python'"


def test_unknown_name_lists_the_installed_ones(site):
    site.add("pkg-a", "1.0", gate("unit"), gate("lint"), worker("coder"))
    with pytest.raises(PluginError, match=r"^no gate plugin named 'typo' is installed; installed gate plugins: "
                                          r"lint, unit$"):
        P.require(site.discover(), "gate", "typo")


def test_kinds_limit_discovery(site):
    site.add("pkg-a", "1.0", gate("unit"), worker("coder"))
    assert [p.name for p in site.discover(["worker"])] == ["coder"]


def test_an_entry_point_without_a_distribution_names_its_target(site):
    from importlib.metadata import EntryPoint
    site.add("pkg-a", "1.0", gate("new", protocol_version=2))
    [real] = site.entry_points(P.GROUPS["gate"])
    bare = EntryPoint(name="new", value=real.value, group=real.group)
    [p] = P.discover(["gate"], entry_points=lambda group: [bare] if group == real.group else [])
    assert p.dist == "" and p.state == "refused"
    assert p.reason == (f"gate plugin 'new' (entry point {real.value}) requires protocol version 2, but this "
                        "orchestrate supports version 1; upgrade orchestrate or install an older version of the plugin")


def test_the_default_finder_is_importlib_metadata(monkeypatch):
    import importlib.metadata
    asked = []
    monkeypatch.setattr(importlib.metadata, "entry_points", lambda group: asked.append(group) or [])
    assert P.discover() == [] and asked == ["orchestrate.gates", "orchestrate.workers"]


# ---- D1–D5: resolution by capability ----------------------------------------------------------------------

def test_d1_highest_priority_wins_and_every_candidate_is_listed(site):
    site.add("coders", "1.0", worker("python-coder", capabilities=["python", "pytest", "alembic"]),
             worker("py-pro", capabilities=["python", "alembic"], priority=5, version="1.4.0"))
    r = P.resolve(site.discover(), ["python", "alembic"])
    assert r.chosen.name == "py-pro"
    assert [(c["name"], c["excluded"]) for c in r.candidates] == [
        ("py-pro", ""), ("python-coder", "lower priority than py-pro (5)")]
    assert r.to_json()["chosen"] == {"kind": "worker", "name": "py-pro", "version": "1.4.0", "dist": "coders",
                                     "dist_version": "1.0"}
    json.dumps(r.to_json())  # recordable as is


def test_d2_equal_priority_goes_to_the_first_name_every_time(site):
    site.add("coders", "1.0", worker("zeta", capabilities=["python"]), worker("alpha", capabilities=["python"]))
    plugins = site.discover()
    picks = {P.resolve(list(order), ["python"]).chosen.name for order in (plugins, plugins[::-1])}
    assert picks == {"alpha"}
    assert P.resolve(plugins, ["python"]).candidates[1]["excluded"] == (
        "same priority as alpha (0), which sorts first by name")


def test_d4_no_match_message_lists_installed_workers(site):
    site.add("workers", "1.0", worker("human", capabilities=["any"]),
             worker("python-coder", capabilities=["python", "pytest"]))
    plugins = site.discover()
    r = P.resolve(plugins, ["python", "alembic"])
    assert r.chosen is None
    assert [c["excluded"] for c in r.candidates] == ["missing capabilities: python, alembic",
                                                     "missing capabilities: alembic"]
    assert P.no_match_message("N4", "e5", ["python", "alembic"], plugins) == (
        "no installed worker provides [python, alembic] for N4 (edge e5) and no fallback is declared; "
        "installed workers: human (any), python-coder (python, pytest)")


def test_d4_with_nothing_installed():
    assert P.no_match_message("N4", "e5", ["python"], []).endswith("installed workers: none")


def test_d5_a_matching_plugin_that_fails_to_import_is_skipped(site):
    site.add("helpers", "1.0", worker("alembic-helper", prelude="import alembic_helper", capabilities=["python"]))
    site.add("coders", "1.0", worker("python-coder", capabilities=["python"]))
    r = P.resolve(site.discover(), ["python"])
    assert r.chosen.name == "python-coder"
    assert r.candidates[0] == {"kind": "worker", "name": "alembic-helper", "version": "1.0", "priority": 0,
                               "capabilities": [],
                               "excluded": "import failed: ModuleNotFoundError: No module named 'alembic_helper'"}


def test_protocol_refusal_excludes_from_resolution(site):
    site.add("coders", "1.0", worker("future", capabilities=["python"], protocol_version=9),
             worker("old", capabilities=["python"], protocol_version=0))
    r = P.resolve(site.discover(), ["python"])
    assert r.chosen.name == "old"  # a warning still loads
    assert r.candidates[0]["excluded"].startswith("worker plugin 'future' (coders 1.0) requires protocol version 9")


def test_available_false_excludes(site):
    body = "def available(self):\n    return False"
    site.add("coders", "1.0", worker("gpu", body=body, capabilities=["python"], priority=9),
             worker("cpu", capabilities=["python"]))
    r = P.resolve(site.discover(), ["python"])
    assert r.chosen.name == "cpu"
    assert r.candidates[1]["excluded"] == "available() returned false"


def test_available_that_raises_excludes_instead_of_crashing(site):
    body = "def available(self):\n    raise OSError('no gpu')"
    site.add("coders", "1.0", worker("gpu", body=body, capabilities=["python"]))
    r = P.resolve(site.discover(), ["python"])
    assert r.chosen is None and r.candidates[0]["excluded"] == "available() failed: OSError: no gpu"


def test_capabilities_match_case_sensitively(site):
    site.add("coders", "1.0", worker("coder", capabilities=["Python"]))
    r = P.resolve(site.discover(), ["python"])
    assert r.chosen is None and r.candidates[0]["excluded"] == "missing capabilities: python"


def test_kind_any_considers_gates_and_workers(site):
    site.add("mixed", "1.0", gate("lint", capabilities=["python"], priority=2),
             worker("coder", capabilities=["python"]))
    plugins = site.discover()
    assert P.resolve(plugins, ["python"]).chosen.name == "coder"  # workers only by default
    assert P.resolve(plugins, ["python"], kind="gate").chosen.name == "lint"
    r = P.resolve(plugins, ["python"], kind="any")
    assert r.chosen.kind == "gate" and [c["name"] for c in r.candidates] == ["coder", "lint"]


def test_no_capabilities_requested_matches_every_usable_plugin(site):
    site.add("coders", "1.0", worker("b"), worker("a"))
    assert P.resolve(site.discover(), []).chosen.name == "a"


# ---- listing ----------------------------------------------------------------------------------------------

def test_render_and_as_json(site):
    site.add("orchestrate-unit", "1.2.0", gate("unit", capabilities=["python", "pytest"], priority=2))
    site.add("old-lint", "0.9.0", gate("old-lint", protocol_version=0))
    site.add("orchestrate-secrets", "1.0", gate("no-secrets", prelude="import detect_secrets"))
    plugins = site.discover()
    lines = P.render(plugins).splitlines()
    assert lines[0].split() == ["KIND", "NAME", "VERSION", "DIST", "STATE", "DETAIL"]
    assert lines[1].split()[:5] == ["gate", "no-secrets", "1.0", "orchestrate-secrets", "1.0"]
    assert lines[2].endswith("  gate plugin 'old-lint' uses protocol version 0 (current: 1); "
                             "loading it for backward compatibility")
    assert lines[3].endswith("  python, pytest (priority 2)")
    state_column = lines[0].index("STATE")
    assert [line[state_column:].split()[0] for line in lines] == ["STATE", "unavailable", "warning", "ok"]
    data = P.as_json(plugins)
    json.dumps(data)
    assert data[2] == {"kind": "gate", "name": "unit", "version": "1.0", "dist": "orchestrate-unit",
                       "dist_version": "1.2.0", "target": plugins[2].target, "state": "ok", "reason": "",
                       "capabilities": ["python", "pytest"], "priority": 2}


def test_render_with_nothing_installed():
    assert P.render([]) == "no plugins installed (entry-point groups: orchestrate.gates, orchestrate.workers)"


def test_importing_the_module_does_not_import_importlib_metadata():
    import subprocess
    code = ("import sys; sys.modules.pop('importlib.metadata', None); import orchestrate.plugins;"
            " print('importlib.metadata' in sys.modules)")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert done.stdout.strip() == "False"


def test_the_plugins_command_lists_each_plugin_with_its_state(site):
    """End to end through the CLI, in a process whose only extra site is the throwaway one."""
    import json
    import os
    import subprocess
    site.add("orchestrate-lint", "0.2.0", gate("lint", capabilities=["python"]))
    site.add("orchestrate-secrets", "1.0.0", gate("no-secrets", prelude="import detect_secrets"))
    env = dict(os.environ, PYTHONPATH=str(site.root))
    done = subprocess.run([sys.executable, "-m", "orchestrate", "plugins", "--json"], capture_output=True,
                          text=True, env=env, check=True)
    rows = {r["name"]: r for r in json.loads(done.stdout)}
    assert rows["lint"]["state"] == "ok" and rows["lint"]["dist"] == "orchestrate-lint"
    assert rows["no-secrets"]["state"] == "unavailable"
    assert "No module named 'detect_secrets'" in rows["no-secrets"]["reason"]
    table = subprocess.run([sys.executable, "-m", "orchestrate", "plugins"], capture_output=True, text=True,
                           env=env, check=True).stdout
    assert "lint" in table and "unavailable (import failed: ModuleNotFoundError" in table
