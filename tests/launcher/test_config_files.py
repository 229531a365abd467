"""``launch`` writes the plan's config files before it starts a process (docs/plan-file.md §6.3).

The Mooncake configs of a kv_store plan name ``$MOONCAKE_MASTER_IP`` inside and are read from the
path ``$MOONCAKE_CONFIG_PATH`` / ``$MOONCAKE_STORE_CONFIG_PATH`` names: each machine gets the files
its processes read, filled from the launch values, owner-only, at the path given or the default one.
"""

from __future__ import annotations

import json
import stat
from pathlib import Path

import pytest
import yaml
from children import PY, run_cli

from vllm_deploy_wizard.launcher.config_files import config_file_defaults, config_files_for, write_config_files
from vllm_deploy_wizard.launcher.launch import NodeFacts, prepare
from vllm_deploy_wizard.launcher.plan_file import parse_plan
from vllm_deploy_wizard.launcher.spec import ConfigFile, RunSpec

HOST = NodeFacts(primary_ip="10.1.2.3", default_iface="ens5")


@pytest.fixture(scope="module")
def mooncake_plan() -> dict:
    """The plan file of the bundled Mooncake kv_store shape (2 instances, centralized store)."""
    from vllm_deploy_wizard.catalog import Selection, load_catalog
    from vllm_deploy_wizard.catalog.planner import plan_selection
    from vllm_deploy_wizard.catalog.render import plan_file

    planned = plan_selection(load_catalog(), Selection(model="Qwen/Qwen3-32B", hardware="h200",
                                                       kv_offload="kv_store_centralized_mooncake",
                                                       kv_instances={"count": 2}))
    return json.loads(json.dumps(plan_file(planned.plan, {"catalog_source": "test"}, "0.1.0")))


VALUES = {"VLLM_INSTANCE_1": "10.0.0.1", "VLLM_INSTANCE_2": "10.0.0.2", "MOONCAKE_MASTER_IP": "10.0.0.9"}


def test_each_machine_gets_the_config_files_its_processes_read_filled_at_the_default_path(
        mooncake_plan, tmp_path, monkeypatch) -> None:
    monkeypatch.setenv("XDG_STATE_HOME", str(tmp_path / "state"))
    defaults = config_file_defaults(mooncake_plan["plan"])
    assert set(defaults) == {"MOONCAKE_CONFIG_PATH", "MOONCAKE_STORE_CONFIG_PATH"}
    assert all(p.startswith(str(tmp_path / "state" / "vllm-wizard" / "config-files")) for p in defaults.values())
    prepared = prepare(mooncake_plan, node="instance-0-node-0", values=VALUES, facts=HOST, check_flags=False)
    [f] = prepared.spec.config_files
    assert (f.name, f.path) == ("MOONCAKE_CONFIG_PATH", defaults["MOONCAKE_CONFIG_PATH"])
    assert prepared.spec.get("instance-0").env["MOONCAKE_CONFIG_PATH"] == f.path  # the engine reads that file
    config = json.loads(f.text)
    assert config["master_server_address"] == "10.0.0.9:50051"
    assert config["device_name"] == ""  # unset: Mooncake picks the RDMA NICs, as the scripts do
    assert "$" not in f.text
    # the services machine: the store's own config, at the path its --config names
    services = prepare(mooncake_plan, node="services", values=VALUES, facts=HOST, check_flags=False).spec
    [store] = services.config_files
    assert store.name == "MOONCAKE_STORE_CONFIG_PATH"
    assert services.get("mooncake-store").argv[-1] == store.path
    assert json.loads(store.text)["master_server_address"] == "10.0.0.9:50051"
    assert prepare(mooncake_plan, node="router", values=VALUES, facts=HOST, check_flags=False).spec.config_files == ()


def test_a_given_path_wins_and_a_relative_one_is_made_absolute(mooncake_plan, tmp_path, monkeypatch) -> None:
    monkeypatch.chdir(tmp_path)
    given = {**VALUES, "MOONCAKE_CONFIG_PATH": "conf/mooncake.json", "MOONCAKE_DEVICE_NAME": "mlx5_0"}
    spec = prepare(mooncake_plan, node="instance-1-node-0", values=given, facts=HOST, check_flags=False).spec
    [f] = spec.config_files
    assert f.path == str(tmp_path / "conf" / "mooncake.json")  # the supervisor runs from /, not from here
    assert spec.get("instance-1").env["MOONCAKE_CONFIG_PATH"] == f.path
    assert json.loads(f.text)["device_name"] == "mlx5_0"


def test_an_unfilled_placeholder_inside_a_config_file_is_a_problem_naming_the_set(mooncake_plan) -> None:
    plan = mooncake_plan["plan"]
    path = config_file_defaults(plan)["MOONCAKE_CONFIG_PATH"]
    values = {"VLLM_INSTANCE_1": "10.0.0.1", "VLLM_INSTANCE_2": "10.0.0.2", "MOONCAKE_CONFIG_PATH": path}
    spec = parse_plan(mooncake_plan, node="instance-0-node-0", values=values)
    files, problems = config_files_for(plan, spec, values)
    assert files == ()
    assert problems == [f"config file $MOONCAKE_CONFIG_PATH ({path}): $MOONCAKE_MASTER_IP not filled; give "
                        "--set MOONCAKE_MASTER_IP=VALUE"]


def test_files_are_written_owner_only_and_an_unwritable_place_names_the_set(tmp_path) -> None:
    from vllm_deploy_wizard.common.errors import LaunchError

    target = tmp_path / "deep" / "mooncake.json"
    spec = RunSpec(processes=(), config_files=(ConfigFile("MOONCAKE_CONFIG_PATH", str(target), '{"a": 1}\n'),))
    assert write_config_files(spec) == [target]
    assert target.read_text() == '{"a": 1}\n' and stat.S_IMODE(target.stat().st_mode) == 0o600
    blocked = tmp_path / "file"
    blocked.write_text("")
    spec = RunSpec(processes=(), config_files=(ConfigFile("MOONCAKE_CONFIG_PATH", str(blocked / "x.json"), "{}"),))
    with pytest.raises(LaunchError, match=r"cannot write config file \$MOONCAKE_CONFIG_PATH at .*"
                                          r"--set MOONCAKE_CONFIG_PATH=PATH"):
        write_config_files(spec)
    # the spec's round trip (spec.json, the detached supervisor's stdin) keeps them
    assert RunSpec.from_dict(spec.to_dict()) == spec


READER = ("import json, os, stat, sys; p = os.environ['MOONCAKE_CONFIG_PATH']; "
          "print('config', oct(stat.S_IMODE(os.stat(p).st_mode)), json.dumps(json.load(open(p))), flush=True)")


def test_launch_writes_the_file_before_the_process_that_reads_it_starts(tmp_path, env) -> None:
    """A real ``vllm-wizard launch --foreground``: the child finds the file, filled, mode 0600."""
    path = tmp_path / "conf" / "mooncake.json"
    plan = {"plan_version": 1, "plan": {
        "config_files": {"MOONCAKE_CONFIG_PATH": {"master_server_address": "$MOONCAKE_MASTER_IP:50051",
                                                  "device_name": "$MOONCAKE_DEVICE_NAME"}},
        "placeholders": ["MOONCAKE_CONFIG_PATH", "MOONCAKE_DEVICE_NAME", "MOONCAKE_MASTER_IP"],
        "processes": [{"name": "reader", "role": "serve", "node_rank": 0, "argv": [PY, "-c", READER],
                       "env": {"MOONCAKE_CONFIG_PATH": "$MOONCAKE_CONFIG_PATH"}, "health": None,
                       "restart": {"mode": "never"}}]}}
    plan_path = tmp_path / "plan.yaml"
    plan_path.write_text(yaml.safe_dump(plan))
    r = run_cli(env, "launch", str(plan_path), "--foreground", "--skip-flag-check",
                "--set", "MOONCAKE_MASTER_IP=10.0.0.9", "--set", f"MOONCAKE_CONFIG_PATH={path}")
    line = next((ln for ln in r.stdout.splitlines() if "config 0o600" in ln), None)
    assert line is not None, r.stdout + r.stderr
    assert json.loads(line.split("0o600 ", 1)[1]) == {"master_server_address": "10.0.0.9:50051", "device_name": ""}
    assert Path(path).exists()
