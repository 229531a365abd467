"""Plan file → RunSpec (contracts §2): phases, dependencies, placeholders, errors naming the field."""

from __future__ import annotations

import json
import signal

import pytest
import yaml

from vllm_deploy_wizard.common.errors import LaunchError
from vllm_deploy_wizard.launcher.plan_file import load_plan_file, parse_plan
from vllm_deploy_wizard.launcher.spec import ProcessSpec, RunSpec


def _plan(*procs, placeholders=()):
    return {"plan_version": 1, "plan": {"processes": list(procs), "placeholders": list(placeholders)}}


LMCACHE = {"name": "kv_offload:lmcache", "role": "companion", "node_rank": 0,
           "argv": ["lmcache", "server", "--port", "5555"], "env": {},
           "ports": [5555, 5556], "health": {"url": "http://127.0.0.1:5556/healthcheck", "expect_status": 200}}
VLLM = {"name": "vllm", "role": "serve", "node_rank": 0,
        "argv": ["vllm", "serve", "m", "--host", "$HEAD_IP", "--port", "8000"],
        "env": {"PYTHONHASHSEED": 0, "MASTER": "${HEAD_IP}:29500"}, "ports": [8000],
        "health": {"url": "http://127.0.0.1:8000/health"}}
ROUTER = {"name": "router", "role": "router", "node_rank": None, "argv": ["vllm-router", "--port", "9000"],
          "ports": [9000], "health": None}
WORKER1 = {"name": "vllm-node1", "role": "worker", "node_rank": 1, "argv": ["vllm", "serve", "m", "--headless"]}


def test_yaml_plan_with_roles_gets_phases_and_default_dependencies(tmp_path):
    f = tmp_path / "plan.yaml"
    f.write_text(yaml.safe_dump(_plan(ROUTER, VLLM, LMCACHE, placeholders=["HEAD_IP"])))
    spec = load_plan_file(f, values={"HEAD_IP": "127.0.0.1"})
    assert [p.name for p in spec.processes] == ["kv_offload:lmcache", "vllm", "router"]  # launch order
    lm, v, r = spec.processes
    assert (lm.phase, v.phase, r.phase) == ("before", "engine", "after")
    assert v.depends_on == ("kv_offload:lmcache",) and r.depends_on == ("kv_offload:lmcache", "vllm")
    assert v.argv[4] == "127.0.0.1" and v.env == {"PYTHONHASHSEED": "0", "MASTER": "127.0.0.1:29500"}
    assert lm.probe.url.endswith("/healthcheck") and r.probe is None
    assert lm.ports == (5555, 5556)


def test_unresolved_placeholders_are_all_named_with_the_fix(tmp_path):
    f = tmp_path / "plan.json"
    f.write_text(json.dumps(_plan(VLLM, {**ROUTER, "argv": ["vllm-router", "--host", "$ROUTER_HOST"]})))
    with pytest.raises(LaunchError) as exc:
        load_plan_file(f)
    msg = str(exc.value)
    assert "$HEAD_IP (in vllm argv, vllm env MASTER)" in msg and "$ROUTER_HOST" in msg
    assert "--set HEAD_IP=VALUE --set ROUTER_HOST=VALUE" in msg


def test_node_rank_selects_processes():
    spec = parse_plan(_plan(LMCACHE, {**VLLM, "argv": ["vllm", "serve", "m"], "env": {}}, WORKER1, ROUTER), node_rank=1)
    assert [p.name for p in spec.processes] == ["vllm-node1"]
    with pytest.raises(LaunchError, match=r"no process for node_rank 5; the plan has node ranks \[0, 1\]"):
        parse_plan(_plan(LMCACHE, WORKER1), node_rank=5)


def test_every_problem_is_listed_at_once():
    bad = [
        {"name": "a", "argv": "vllm serve", "role": "serve"},
        {"name": "b", "argv": ["x"], "phase": "middle"},
        {"name": "c", "argv": ["x"], "ports": [70000], "stop": {"signal": "SIGFOO"}, "restart": {"mode": "sometimes"}},
    ]
    with pytest.raises(LaunchError) as exc:
        parse_plan(_plan(*bad), source="p.yaml")
    msg = str(exc.value)
    assert "process 'a': argv must be a non-empty list" in msg
    assert "phase 'middle' is not one of infra, before, engine, after" in msg
    assert "port 70000 out of range" in msg and "'SIGFOO' is not a signal name" in msg
    assert "restart mode 'sometimes'" in msg


def test_extras_restart_stop_setup_and_roundtrip():
    proc = {"name": "x", "argv": ["python", "-V"], "restart": {"policy": "always", "max_failures": 5},
            "stop": {"signal": "INT", "timeout_s": 7}, "setup": "source $VENV/bin/activate", "ready_timeout_s": 60}
    spec = parse_plan(_plan(proc, placeholders=["VENV"]), values={"VENV": "/opt/v"})
    p = spec.processes[0]
    assert p.restart.mode == "always" and p.restart.max_failures == 5
    assert p.stop_signal == signal.SIGINT and p.stop_timeout_s == 7
    assert p.command() == ["bash", "-c", 'source /opt/v/bin/activate\nexec "$@"', "bash", "python", "-V"]
    assert RunSpec.from_dict(json.loads(json.dumps(spec.to_dict()))) == spec


def test_duplicate_names_and_unknown_dependency():
    with pytest.raises(LaunchError, match="repeated: a"):
        RunSpec((ProcessSpec("a", ("x",)), ProcessSpec("a", ("y",))))
    with pytest.raises(LaunchError, match="depends_on unknown .nope.; known: a"):
        parse_plan(_plan({"name": "a", "argv": ["x"], "depends_on": ["nope"]}))


def test_not_a_plan(tmp_path):
    f = tmp_path / "p.yaml"
    f.write_text("- just\n- a list\n")
    with pytest.raises(LaunchError, match="not a plan file"):
        load_plan_file(f)
    with pytest.raises(LaunchError, match="cannot read plan file"):
        load_plan_file(tmp_path / "missing.yaml")


def test_self_dependency_and_cycles_are_refused_naming_them():
    with pytest.raises(LaunchError, match=r"process 'a' depends on itself"):
        parse_plan(_plan({"name": "a", "argv": ["x"], "depends_on": ["a"]}))
    three = [{"name": n, "argv": ["x"], "depends_on": [d]} for n, d in (("a", "b"), ("b", "c"), ("c", "a"))]
    with pytest.raises(LaunchError) as exc:
        parse_plan(_plan(*three, {"name": "d", "argv": ["x"], "depends_on": ["a"]}), source="p.yaml")
    msg = str(exc.value)
    assert "p.yaml: dependency cycle: a → b → c → a" in msg and msg.count("dependency cycle") == 1
    # a cycle through a default dependency: the router waits for vllm (earlier phase) and vice versa
    with pytest.raises(LaunchError, match=r"dependency cycle: (vllm → router → vllm|router → vllm → router)"):
        parse_plan(_plan({**VLLM, "argv": ["vllm", "serve", "m"], "env": {}, "depends_on": ["router"]}, ROUTER))
    with pytest.raises(LaunchError, match="dependency cycle"):
        RunSpec((ProcessSpec("a", ("x",), depends_on=("b",)), ProcessSpec("b", ("y",), depends_on=("a",))))


def test_unknown_dependency_suggests_the_closest_name():
    with pytest.raises(LaunchError) as exc:
        parse_plan(_plan(LMCACHE, {**VLLM, "argv": ["vllm", "serve", "m"], "env": {},
                                   "depends_on": ["kv_offload:lmcach"]}))
    assert ("process 'vllm' depends_on unknown 'kv_offload:lmcach' (did you mean 'kv_offload:lmcache'?)"
            in str(exc.value))
    with pytest.raises(LaunchError, match="depends_on must be a list of process names, got 'cache'"):
        parse_plan(_plan({"name": "a", "argv": ["x"], "depends_on": "cache"}))


@pytest.mark.parametrize("url", ["127.0.0.1:8000/health", "ftp://127.0.0.1/x", "http:///health", "/health"])
def test_health_url_must_be_http(url):
    with pytest.raises(LaunchError) as exc:
        parse_plan(_plan({"name": "srv", "argv": ["x"], "health": {"url": url}}), source="p.yaml")
    assert f"p.yaml: process 'srv': health.url {url!r} is not an http(s) URL" in str(exc.value)
    # a placeholder host is checked once filled
    spec = parse_plan(_plan({"name": "srv", "argv": ["x"], "health": {"url": "https://$HEAD_IP:8000/health"}},
                            placeholders=["HEAD_IP"]), values={"HEAD_IP": "10.0.0.1"})
    assert spec.processes[0].probe.url == "https://10.0.0.1:8000/health"


def test_plan_json_output_gets_told_to_use_plan_out():
    plan_json = {"deploy_type": "single_node", "install_mode": "pip", "resolved": {"model": "m"},
                 "processes": [{"name": "vllm", "role": "serve", "node_rank": 0, "argv": ["vllm", "serve", "m"]}]}
    with pytest.raises(LaunchError) as exc:
        parse_plan(plan_json, source="p.json")
    assert str(exc.value) == ("p.json: this looks like `plan --json` output; write a launchable plan file with "
                              "`vllm-wizard plan … --out plan.yaml`")


def test_plan_placeholders_lists_declared_and_written_ones():
    from vllm_deploy_wizard.launcher.plan_file import plan_placeholders

    data = _plan(VLLM, {**ROUTER, "argv": ["vllm-router", "--host", "${ROUTER_HOST}"], "ports": ["$RPORT"]},
                 {**WORKER1, "env": {"NCCL_SOCKET_IFNAME": "$IFACE_NAME"}}, placeholders=["MODEL_DIR"])
    assert plan_placeholders(data) == ["HEAD_IP", "IFACE_NAME", "MODEL_DIR", "ROUTER_HOST", "RPORT"]
    assert plan_placeholders(["not", "a plan"]) == []


def test_ready_cadence_defaults_to_5_s_unless_configured():
    from vllm_deploy_wizard.launcher.spec import Probe

    assert Probe("http://h/health").ready_cadence_s == 5.0
    assert Probe("http://h/health", interval_s=10).ready_cadence_s == 10
    assert Probe("http://h/health", ready_interval_s=0.5).ready_cadence_s == 0.5
    spec = parse_plan(_plan({"name": "s", "argv": ["x"],
                             "health": {"url": "http://h:1/health", "ready_interval_s": 2}}))
    assert spec.processes[0].probe.ready_cadence_s == 2



def test_duplicate_names_are_listed_with_every_other_problem():
    """Duplicate names are reported with every other problem, not in a pass of their own (contracts §3)."""
    procs = [{"name": "a", "argv": ["x"], "depends_on": ["a"]}, {"name": "a", "argv": ["y"]},
             {"name": "b", "argv": ["z"], "depends_on": ["nope"], "ports": [70000]}]
    with pytest.raises(LaunchError) as exc:
        parse_plan(_plan(*procs), source="p.yaml")
    lines = str(exc.value).splitlines()
    assert "p.yaml: process names must be unique; repeated: a" in lines
    assert any("process 'a' depends on itself" in x for x in lines)
    assert any("process 'b' depends_on unknown 'nope'" in x for x in lines)
    assert any("port 70000 out of range" in x for x in lines)
    assert len(lines) == 4, lines


def test_a_default_dependency_cycle_is_listed_with_the_other_problems():
    vllm = {**VLLM, "argv": ["vllm", "serve", "m"], "env": {}, "depends_on": ["router"], "stop": {"signal": "SIGFOO"}}
    with pytest.raises(LaunchError) as exc:
        parse_plan(_plan(vllm, ROUTER))
    assert "dependency cycle" in str(exc.value) and "'SIGFOO' is not a signal name" in str(exc.value)


def test_double_dollar_is_a_literal_dollar_never_a_placeholder():
    """``$$NAME`` → ``$NAME`` for a shell; other ``$$`` and lower-case ``$x`` untouched."""
    from vllm_deploy_wizard.common.placeholders import fill
    from vllm_deploy_wizard.common.placeholders import names as placeholders_in
    from vllm_deploy_wizard.launcher.plan_file import plan_placeholders

    proc = {"name": "sh", "argv": ["bash", "-c", 'echo "$$HOME $${USER} pid $$ $x"; sleep 1', "$PORT", "$$PORT"],
            "env": {"LIT": "$$TOKEN", "BOTH": "$$A-$A"}, "setup": "export X=$$VENV; source $VENV/bin/activate"}
    data = _plan(proc, placeholders=["VENV"])
    assert plan_placeholders(data) == ["A", "PORT", "VENV"]
    spec = parse_plan(data, values={"PORT": "8000", "A": "1", "VENV": "/v", "HOME": "/not/used"})
    p = spec.processes[0]
    assert p.argv == ("bash", "-c", 'echo "$HOME ${USER} pid $$ $x"; sleep 1', "8000", "$PORT")
    assert dict(p.env) == {"LIT": "$TOKEN", "BOTH": "$A-1"}
    assert p.setup == "export X=$VENV; source /v/bin/activate"
    # an escaped name needs no --set; an unescaped one still does
    with pytest.raises(LaunchError) as exc:
        parse_plan(_plan({"name": "sh", "argv": ["bash", "-c", "$$HOME", "$PORT"]}))
    assert "$PORT" in str(exc.value) and "HOME" not in str(exc.value)
    assert placeholders_in("$$HOME ${PORT} $$$X") == ["PORT"]
    assert fill("$$HOME:$P", {"P": "$Q", "HOME": "x"}) == "$HOME:$Q"  # a value is never filled again


def test_a_plan_file_that_is_not_utf8_is_a_launch_error_naming_byte_and_offset(tmp_path):
    """A binary file given as PLAN is a launch error naming the byte and offset, not a UnicodeDecodeError."""
    f = tmp_path / "bad.yaml"
    f.write_bytes(b"plan_version: 1\nplan:\n  \xd0\x01 binary")
    with pytest.raises(LaunchError) as exc:
        load_plan_file(f)
    msg = str(exc.value)
    assert msg.startswith(f"{f}: is not UTF-8 text (byte 0xd0 at offset 24); expected a plan file written by "
                          "`vllm-wizard plan --out FILE`"), msg
    assert exc.value.exit_code == 2


SRV = {"name": "srv", "role": "serve", "node_rank": 0, "argv": ["python", "-m", "http.server", "8011"],
       "ports": [8011], "health": {"url": "http://127.0.0.1:8099/health"}}


@pytest.mark.parametrize("host", ["127.0.0.1", "localhost", "0.0.0.0", "[::1]"])
def test_a_local_health_url_on_a_port_the_process_does_not_bind_is_refused_naming_its_ports(host):
    proc = {**SRV, "health": {"url": f"http://{host}:8099/health"}}
    with pytest.raises(LaunchError) as err:
        parse_plan(_plan(proc), source="p.yaml")
    msg = str(err.value)
    assert "process 'srv'" in msg and "health.url" in msg and "port 8099" in msg and "ports: 8011" in msg


@pytest.mark.parametrize("change", [
    {"health": {"url": "http://127.0.0.1:8011/health"}},            # its own port
    {"health": {"url": "http://127.0.0.1:$SRV_PORT/health"}},       # a placeholder port: not judged
    {"health": {"url": "http://$HEAD_IP:8099/health"}},             # a placeholder host: not judged
    {"health": {"url": "http://10.0.0.9:8099/health"}},             # another host: not judged
    {"health": {"url": "http://127.0.0.1:8099/health", "remote": True}},
    {"ports": []},                                                  # binds nothing declared: not judged
])
def test_a_health_url_the_rule_cannot_judge_exactly_is_accepted(change):
    spec = parse_plan(_plan({**SRV, **change}), values={"SRV_PORT": "8099", "HEAD_IP": "10.0.0.2"})
    assert spec.processes[0].probe is not None


def test_a_filled_port_placeholder_is_judged_against_the_health_url():
    with pytest.raises(LaunchError, match="port 8099"):
        parse_plan(_plan({**SRV, "ports": ["$SRV_PORT"]}), values={"SRV_PORT": "8011"})


def test_an_unknown_deploy_type_is_refused_naming_the_valid_ones():
    data = _plan(VLLM | {"env": {}})
    data["plan"]["deploy_type"] = "foo"
    with pytest.raises(LaunchError, match=r"plan.deploy_type 'foo' is not one of single_node, multi_node, "
                                          r"pd_cluster, kv_store_lb, omni"):
        parse_plan(data, source="p.yaml", values={"HEAD_IP": "127.0.0.1"})
    data["plan"]["deploy_type"] = "single-node"
    with pytest.raises(LaunchError, match=r"did you mean 'single_node'"):
        parse_plan(data, source="p.yaml", values={"HEAD_IP": "127.0.0.1"})


def test_an_unknown_role_is_refused_naming_the_valid_ones_with_a_did_you_mean():
    with pytest.raises(LaunchError) as err:
        parse_plan(_plan({"name": "a", "role": "bogus", "argv": ["x"]}, {"name": "b", "role": "rooter", "argv": ["x"]}),
                   source="p.yaml")
    msg = str(err.value)
    assert "process 'a': role 'bogus' is not one of serve, head, worker" in msg
    assert "process 'b': role 'rooter'" in msg and "did you mean 'router'" in msg


def test_an_unknown_process_key_is_refused_with_a_did_you_mean_on_any_machine():
    with pytest.raises(LaunchError) as err:
        parse_plan(_plan({"name": "a", "argv": ["x"], "frobnicate": 1},
                         {"name": "b", "node_rank": 3, "argv": ["x"], "dependson": []}), source="p.yaml")
    msg = str(err.value)
    assert "process 'a': unknown key 'frobnicate'; a process has name, role" in msg
    assert "process 'b': unknown key 'dependson' (did you mean 'depends_on'?)" in msg


def test_every_documented_process_extra_is_accepted():
    proc = {"name": "a", "role": "serve", "node_rank": 0, "instance": 0, "node": "node-0", "argv": ["x"], "env": {},
            "phase": "engine", "depends_on": [], "ports": [8000], "health": None, "setup": None,
            "group": {"id": "a", "leader": "a", "size": 1, "rank": 0}, "restart": {"max_failures": 2},
            "stop": {"signal": "SIGINT"}, "ready_timeout_s": 10, "cwd": "/tmp", "wait_for": []}
    assert parse_plan(_plan(proc)).processes[0].name == "a"


def test_env_numbers_become_text_and_other_non_strings_are_refused():
    spec = parse_plan(_plan({"name": "a", "argv": ["x"], "env": {"SEED": 0, "RATIO": 0.5}}))
    assert spec.processes[0].env == {"SEED": "0", "RATIO": "0.5"}
    with pytest.raises(LaunchError) as err:
        parse_plan(_plan({"name": "a", "argv": ["x"], "env": {"FLAG": True, "NONE": None, "L": [1]}}), source="p.yaml")
    msg = str(err.value)
    assert "env FLAG: True is not a string; quote the value" in msg and 'FLAG: "true"' in msg
    assert "env NONE: None is not a string" in msg and "env L: [1] is not a string" in msg
    with pytest.raises(LaunchError, match="env must be a mapping"):
        parse_plan(_plan({"name": "a", "argv": ["x"], "env": ["A=1"]}))
