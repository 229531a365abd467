"""Preflight over what a plan's argv and env bind and read: path-valued flags, value-less flags,
ports set through env and flags (holder and owning wizard run named)."""

from __future__ import annotations

import os
import socket
import stat

import pytest

from vllm_deploy_wizard.launcher.ports import free_port
from vllm_deploy_wizard.launcher.preflight import bound_ports, check, path_problems, value_problems
from vllm_deploy_wizard.launcher.spec import ProcessSpec, RunSpec


def _serve(*args: str, env: dict | None = None, cwd: str | None = None) -> ProcessSpec:
    return ProcessSpec(name="vllm", argv=("vllm", "serve", "Qwen/Qwen3-0.6B", *args), env=env or {}, cwd=cwd)


def test_a_relative_recipe_chat_template_is_refused_with_how_to_get_it_for_the_installed_version(tmp_path):
    p = _serve("--chat-template", "examples/tool_chat_template_gemma4.jinja", cwd=str(tmp_path))
    [problem] = path_problems(p, "0.32.0+cpu")  # a local build's version: the release tag has no +cpu
    assert "--chat-template examples/tool_chat_template_gemma4.jinja does not exist" in problem
    assert ("https://raw.githubusercontent.com/vllm-project/vllm/v0.32.0/examples/tool_chat_template_gemma4.jinja"
            in problem)
    assert "vllm/vllm-openai:v0.32.0" in problem
    (tmp_path / "examples").mkdir()
    (tmp_path / "examples" / "tool_chat_template_gemma4.jinja").write_text("{{ messages }}")
    assert path_problems(p, "0.32.0") == []


def test_a_chat_template_vllm_ships_in_its_package_is_found_there(tmp_path):
    exe = tmp_path / "venv" / "bin" / "vllm"
    exe.parent.mkdir(parents=True)
    exe.write_text("#!/bin/sh\n")
    shipped = tmp_path / "venv/lib/python3.12/site-packages/vllm/transformers_utils/chat_templates/examples"
    shipped.mkdir(parents=True)
    (shipped / "template_basic.jinja").write_text("x")
    p = _serve("--chat-template", "examples/template_basic.jinja", cwd=str(tmp_path))
    assert path_problems(p, "0.32.0", str(exe)) == []


def test_missing_files_of_other_path_flags_and_lora_paths_are_named(tmp_path):
    p = _serve("--ssl-keyfile", str(tmp_path / "key.pem"), "--lora-modules", f"sql={tmp_path}/sql-lora",
               "hub=org/adapter", "--chat-template", "{% for m in messages %}{{ m }}{% endfor %}")
    problems = path_problems(p)
    assert len(problems) == 2, problems
    assert any("--ssl-keyfile" in x and "key.pem" in x for x in problems)
    assert any("--lora-modules" in x and "sql-lora" in x for x in problems)  # an HF id and an inline template pass


@pytest.mark.parametrize("args, bad", [
    (["--max-model-len"], "--max-model-len"),
    (["--max-model-len", "--enforce-eager"], "--max-model-len"),
    (["--max-model-len="], "--max-model-len"),
    (["--tensor-parallel-size", "2", "--port"], "--port"),
])
def test_a_flag_written_without_its_value_is_a_problem(args, bad):
    [problem] = value_problems(_serve(*args))
    assert f"{bad} has no value" in problem


def test_flags_with_values_pass():
    assert value_problems(_serve("--max-model-len", "4096", "--enforce-eager", "--seed", "-1")) == []


def test_ports_set_through_env_and_flags_are_bound_ports():
    nixl = ProcessSpec(name="prefill", argv=("vllm", "serve", "m", "--tensor-parallel-size", "2",
                                            "--kv-transfer-config",
                                            '{"kv_connector":"NixlConnector","kv_role":"kv_both"}'), ports=(8100,))
    side = "NIXL side channel (VLLM_NIXL_SIDE_CHANNEL_PORT, vLLM default)"
    # vLLM 0.32 binds one listener per DP rank (nixl/base_scheduler.py); vLLM 0.10 one per TP rank
    assert bound_ports(nixl, "0.32.0+cpu") == [(8100, "listens"), (5600, side)]
    assert bound_ports(nixl, "0.10.2") == [(8100, "listens"), (5600, side), (5601, side)]
    env = ProcessSpec(name="d", argv=("vllm", "serve", "m", "--data-parallel-rpc-port", "13345"),
                      env={"VLLM_NIXL_SIDE_CHANNEL_PORT": "5700", "MASTER_PORT": "29500"})
    got = dict(bound_ports(env))
    assert set(got) == {5700, 29500, 13345} and "data-parallel RPC" in got[13345]


def test_preflight_names_a_busy_env_port_and_two_processes_sharing_a_side_channel_port(tmp_path):
    port = free_port()
    with socket.socket() as s:
        s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        s.bind(("127.0.0.1", port))
        s.listen()
        exe = tmp_path / "vllm"
        exe.write_text("#!/bin/sh\nexit 0\n")
        exe.chmod(exe.stat().st_mode | stat.S_IEXEC)
        a = ProcessSpec(name="prefill", argv=(str(exe), "serve", "m"), env={"VLLM_NIXL_SIDE_CHANNEL_PORT": str(port)})
        b = ProcessSpec(name="decode", argv=(str(exe), "serve", "m"), env={"VLLM_NIXL_SIDE_CHANNEL_PORT": str(port)})
        problems = check(RunSpec((a, b)), check_flags=False, free_ram=lambda: 1 << 40)
    assert any(f"port {port} (needed by 'prefill' for the NIXL side channel (VLLM_NIXL_SIDE_CHANNEL_PORT)) "
               "is in use" in x for x in problems), problems
    assert any(f"port {port}: claimed by both 'prefill' and 'decode'" in x for x in problems), problems
    assert str(os.getpid()) in " ".join(problems) or "in use;" in " ".join(problems)


def test_a_companion_or_router_without_a_readiness_probe_is_warned_about(tmp_path):
    from vllm_deploy_wizard.launcher.spec import Probe

    router = ProcessSpec(name="router", argv=("true",), role="router", phase="after")
    cache = ProcessSpec(name="cache", argv=("true",), role="companion", phase="before",
                        probe=Probe("http://127.0.0.1:1/healthcheck"))
    warnings: list[str] = []
    check(RunSpec((cache, router)), check_flags=False, free_ram=lambda: 1 << 40, warnings=warnings)
    assert warnings == ["'router' (router) has no readiness probe: it counts as READY the moment it starts, so what "
                        "depends on it may start before it serves; give it health.url"]


def test_preflight_refuses_a_cpu_kv_tier_above_the_free_ram():
    """docs/fit.md §6: an OffloadingConnector pinning 512 GiB on a node with 23 GiB free is refused."""
    import json as _json

    from vllm_deploy_wizard.launcher.preflight import kv_tier_problems

    cfg = {"kv_connector": "OffloadingConnector", "kv_role": "kv_both",
           "kv_connector_extra_config": {"cpu_bytes_to_use": 512 * 2**30}}
    serve = ProcessSpec(name="serve", argv=("vllm", "serve", "m", "--kv-transfer-config", _json.dumps(cfg)))
    problems = kv_tier_problems(RunSpec((serve,)), 23 * 2**30)
    assert problems == ["'serve': --kv-transfer-config cpu_bytes_to_use pins 512.0 GiB of RAM on this node but "
                        "only 23.0 GiB is available; lower cpu_bytes_to_use"]
    assert kv_tier_problems(RunSpec((serve,)), 600 * 2**30) == []
    per_rank = {"kv_connector": "SimpleCPUOffloadConnector",
                "kv_connector_extra_config": {"cpu_bytes_to_use_per_rank": 8 * 2**30}}
    tp2 = ProcessSpec(name="s", argv=("vllm", "serve", "m", "-tp", "2", "--kv-transfer-config", _json.dumps(per_rank)))
    assert kv_tier_problems(RunSpec((tp2,)), 15 * 2**30) and not kv_tier_problems(RunSpec((tp2,)), 17 * 2**30)


def test_preflight_refuses_mooncake_segments_above_the_free_ram(tmp_path):
    """docs/fit.md §9: an embedded Mooncake segment × ranks on the node, and the store service's own
    segment, above the free RAM are refused; the GB unit is 1024³ (vLLM 0.32 ``_parse_size``)."""
    import json as _json

    from vllm_deploy_wizard.launcher.preflight import segment_problems

    worker_cfg = tmp_path / "mooncake.json"
    worker_cfg.write_text(_json.dumps({"mode": "embedded", "global_segment_size": "10GB"}))
    serve = ProcessSpec(name="serve", argv=("vllm", "serve", "m", "-tp", "2"),
                        env={"MOONCAKE_CONFIG_PATH": str(worker_cfg)})
    assert segment_problems(RunSpec((serve,)), 20 * 2**30) == []  # 2 × 10 GiB = exactly the free RAM
    problems = segment_problems(RunSpec((serve,)), 19 * 2**30)
    assert problems == [f"'serve': {worker_cfg} global_segment_size 10GB × 2 ranks pins 20.0 GiB of RAM but only "
                        "19.0 GiB is available; lower global_segment_size in that file"]
    store_cfg = tmp_path / "store.json"
    store_cfg.write_text(_json.dumps({"mode": "standalone-store", "global_segment_size": "500GB"}))
    store = ProcessSpec(name="mooncake-store", argv=("python3", "-m", "mooncake.mooncake_store_service",
                                                     "--config", str(store_cfg)))
    assert "500GB pins 500.0 GiB" in segment_problems(RunSpec((store,)), 23 * 2**30)[0]
    missing = ProcessSpec(name="s", argv=("vllm", "serve", "m"), env={"MOONCAKE_CONFIG_PATH": str(tmp_path / "no")})
    assert segment_problems(RunSpec((missing,)), 1) == []  # unreadable: the process names it itself


def test_a_pip_plan_says_how_to_fetch_its_checkout_chat_template_as_the_preflight_does(tmp_path):
    import shlex

    from vllm_deploy_wizard.catalog import load_catalog, synthesize
    from vllm_deploy_wizard.catalog.selection import selection_from_data

    cat = load_catalog()
    pick = {"model": "deepseek-ai/DeepSeek-V3", "hardware": "h200"}
    plan = synthesize(cat, selection_from_data(pick))
    serve = next(p for p in plan.processes if p.argv[:2] == ["vllm", "serve"])
    path = serve.argv[serve.argv.index("--chat-template") + 1]
    assert path.startswith("examples/")
    [note] = [n for n in plan.notes if f"--chat-template {path}" in n]
    fetch = note.split(" run ", 1)[1].split(" (", 1)[0]
    words = shlex.split(fetch)
    assert words[0] == "curl" and words[-1].endswith(f"/v<version>/{path}") and words[-2] == path
    # the preflight's fix is the same command, with the installed version and the full path
    [problem] = path_problems(_serve("--chat-template", path, cwd=str(tmp_path)), "0.32.0+cpu")
    assert fetch.replace("<version>", "0.32.0").replace(f" {path} ", f" {tmp_path / path} ", 1) in problem
    docker = synthesize(cat, selection_from_data({**pick, "install_mode": "docker"}))
    assert not [n for n in docker.notes if "--chat-template" in n]  # the vLLM images have examples/
