"""The preflight's vLLM rules (launcher/vllm_checks.py, docs/supervision.md §13): picked by the
installed vLLM version, refusing what that vLLM refuses and modelling the ports it binds."""

from __future__ import annotations

import stat

import pytest

from vllm_deploy_wizard.launcher.containers import container_shm_bytes, docker_size, expand_home, parse_run
from vllm_deploy_wizard.launcher.launch import NodeFacts, node_problems, node_refusals, prepare
from vllm_deploy_wizard.launcher.ports import free_port, port_free
from vllm_deploy_wizard.launcher.preflight import _version_path, bound_ports, check
from vllm_deploy_wizard.launcher.spec import ProcessSpec, RunSpec
from vllm_deploy_wizard.launcher.vllm_checks import (
    RULES,
    cpu_memory_refusals,
    human_bytes,
    local_dp_ranks,
    nixl_side_channel_ports,
    rule_for,
    shm_segments,
)

GIB = 2**30
MIB = 2**20
NIXL = '{"kv_connector":"NixlConnector","kv_role":"kv_both"}'


def _serve(name, *args, env=None, exe="vllm"):
    return ProcessSpec(name=name, argv=(exe, "serve", "Qwen/Qwen3-0.6B", *args), env=env or {})


def test_every_rule_names_its_source_and_the_rule_is_picked_by_version():
    assert all(r.source and r.model for r in RULES)
    assert rule_for("nixl-side-channel", "0.32.0+cpu").model == "per-dp-rank"
    assert rule_for("nixl-side-channel", "0.10.2").model == "per-tp-rank"
    assert rule_for("nixl-side-channel", None).model == "per-dp-rank"  # unknown: the newest read
    assert rule_for("gpu-memory-utilization-default", "0.32.0").model == "0.92"
    assert rule_for("gpu-memory-utilization-default", "0.20.1").model == "0.9"
    with pytest.raises(KeyError, match="known: .*cpu-memory"):
        rule_for("no-such-rule", "0.32.0")


def test_cpu_memory_is_checked_as_the_cpu_worker_does():
    total, free = 16 * GIB, int(12.3 * GIB)
    # no explicit KV size: ceil(total × util) against the free memory, fix = the utilization that fits
    [refusal] = cpu_memory_refusals("vllm", ["vllm", "serve", "m", "--gpu-memory-utilization", "0.9"], {}, total, free,
                                    "0.32.0")
    assert refusal.fix_args == ("--gpu-memory-utilization", "0.74") and "12.3 GiB is free" in refusal.text
    # vLLM 0.32's default utilization (0.92) applies when the argv sets none
    [refusal] = cpu_memory_refusals("vllm", ["vllm", "serve", "m"], {}, total, free, "0.32.0")
    assert "--gpu-memory-utilization 0.92" in refusal.text
    # explicit KV size (either spelling): vLLM makes no utilization check
    assert cpu_memory_refusals("vllm", ["vllm", "serve", "m", "--gpu-memory-utilization", "0.9"],
                               {"VLLM_CPU_KVCACHE_SPACE": "4"}, total, free, "0.32.0") == []
    assert cpu_memory_refusals("vllm", ["vllm", "serve", "m", "--kv-cache-memory-bytes", "4G"], {}, total, free,
                               "0.32.0") == []
    # "" is unset for vLLM (platforms/cpu.py): the utilization check applies again
    assert cpu_memory_refusals("vllm", ["vllm", "serve", "m"], {"VLLM_CPU_KVCACHE_SPACE": ""}, total, free, "0.32.0")
    # a KV size above the free memory is refused with the size that fits
    [refusal] = cpu_memory_refusals("vllm", ["vllm", "serve", "m"], {"VLLM_CPU_KVCACHE_SPACE": "13"}, total, free,
                                    "0.32.0")
    assert refusal.fix_env == (("VLLM_CPU_KVCACHE_SPACE", "12"),)
    assert human_bytes("1k") == 1000 and human_bytes("1K") == 1024 and human_bytes("2.5G") == int(2.5 * GIB)
    assert human_bytes("lots") is None


def test_node_refusals_carry_the_fix_they_name():
    facts = NodeFacts(numa_mem_total_bytes=16 * GIB, numa_mem_free_bytes=8 * GIB)
    spec = RunSpec((_serve("vllm", "--gpu-memory-utilization", "0.9"),))
    [refusal] = node_refusals(spec, facts)
    assert refusal.fix_args == ("--gpu-memory-utilization", "0.48")
    assert f"set --gpu-memory-utilization {refusal.fix_args[1]}" in refusal.text


def test_local_dp_ranks_follow_vllms_arguments():
    assert list(local_dp_ranks(["vllm", "serve", "m"])) == [0]
    assert list(local_dp_ranks(["vllm", "serve", "m", "--data-parallel-size", "2"])) == [0, 1]
    assert list(local_dp_ranks(["vllm", "serve", "m", "-dp", "4", "-dpl", "2",
                                "--data-parallel-start-rank", "2"])) == [2, 3]
    assert list(local_dp_ranks(["vllm", "serve", "m", "--data-parallel-size", "4", "--data-parallel-rank", "3"])) == [3]


def test_nixl_side_channel_is_one_port_per_dp_rank_in_vllm_032():
    tp4 = ["vllm", "serve", "m", "--tensor-parallel-size", "4"]
    assert nixl_side_channel_ports(tp4, 5557, "0.32.0") == [5557]
    assert nixl_side_channel_ports(tp4, 5557, "0.10.2") == [5557, 5558, 5559, 5560]
    assert nixl_side_channel_ports([*tp4, "--data-parallel-size", "2"], 5600, "0.32.0") == [5600, 5601]


def _fake_vllm(tmp_path):
    exe = tmp_path / "vllm"
    exe.write_text("#!/bin/sh\nexit 0\n")
    exe.chmod(exe.stat().st_mode | stat.S_IEXEC)
    return str(exe)


def _colocated_pd(exe, prefill_port, decode_port):
    """The recipes' co-located PD plan: prefill TP 4 and decode TP 4 on one node, side channels 1 apart."""
    prefill = ProcessSpec(name="prefill", argv=(exe, "serve", "m", "--tensor-parallel-size", "4",
                                                "--kv-transfer-config", NIXL),
                          env={"VLLM_NIXL_SIDE_CHANNEL_PORT": str(prefill_port)})
    decode = ProcessSpec(name="decode", argv=(exe, "serve", "m", "--tensor-parallel-size", "4",
                                              "--kv-transfer-config", NIXL),
                         env={"VLLM_NIXL_SIDE_CHANNEL_PORT": str(decode_port)})
    return RunSpec((prefill, decode))


def test_colocated_pd_side_channels_one_apart_pass_and_the_installed_version_picks_the_rule(tmp_path):
    exe = _fake_vllm(tmp_path)
    base = next(b for b in iter(free_port, None) if port_free(b + 1))  # two adjacent free ports
    spec = _colocated_pd(exe, base, base + 1)
    problems = check(spec, check_flags=False, free_ram=lambda: 1 << 40, cache=tmp_path / "cache")
    assert not [p for p in problems if "claimed by both" in p], problems
    # the same plan with vLLM 0.10 installed (its version cached): one port per TP rank collides
    (tmp_path / "cache").mkdir(exist_ok=True)
    _version_path(exe, tmp_path / "cache").write_text("0.10.2")
    problems = check(spec, check_flags=False, free_ram=lambda: 1 << 40, cache=tmp_path / "cache")
    assert any(f"port {base + 1}: claimed by both 'prefill' and 'decode'" in p for p in problems), problems


def test_mooncake_bootstrap_is_one_port_from_the_first_local_engine():
    p = _serve("p", "--tensor-parallel-size", "2", "--data-parallel-size", "4", "--data-parallel-size-local", "2",
               "--data-parallel-start-rank", "2", "--kv-transfer-config", '{"kv_connector":"MooncakeConnector"}')
    ports = [port for port, what in bound_ports(p, "0.32.0") if "Mooncake" in what]
    assert ports == [8998 + 2 * 2]


def test_shm_rings_on_cpu_and_in_containers():
    # CPU always runs the multiprocess executor: one broadcast ring + one response ring per worker
    rings = shm_segments(["vllm", "serve", "m"], {}, True, "0.32.0")
    assert rings == [(16 * MIB + 2) * 10, (24 * MIB + 2) * 10]
    assert shm_segments(["vllm", "serve", "m"], {}, False, "0.32.0") == []  # one GPU worker: in-process
    assert len(shm_segments(["vllm", "serve", "m", "-tp", "2"], {}, False, "0.32.0")) == 3
    small = NodeFacts(numa_mem_total_bytes=None, shm_total_bytes=128 * MIB, shm_free_bytes=100 * MIB)
    [problem] = node_problems(RunSpec((_serve("vllm", env={"VLLM_CPU_KVCACHE_SPACE": "1"}),)), small)
    assert "240 MiB of shared memory" in problem and "/dev/shm has 100 MiB free" in problem
    roomy = NodeFacts(shm_total_bytes=16 * GIB, shm_free_bytes=16 * GIB)
    assert node_problems(RunSpec((_serve("vllm", env={"VLLM_CPU_KVCACHE_SPACE": "1"}),)), roomy) == []
    docker = ["docker", "run", "--rm", "-e", "VLLM_CPU_KVCACHE_SPACE=1", "vllm/vllm-openai-cpu:v0.32.0", "m"]
    run = ProcessSpec(name="vllm", argv=tuple(docker))
    [problem] = node_problems(RunSpec((run,)), roomy)
    assert "docker's 64 MiB default" in problem
    sized = ProcessSpec(name="vllm", argv=tuple(docker[:2] + ["--shm-size", "1g"] + docker[2:]))
    assert node_problems(RunSpec((sized,)), roomy) == []
    host_ipc = ProcessSpec(name="vllm", argv=tuple(docker[:2] + ["--ipc=host"] + docker[2:]))
    assert node_problems(RunSpec((host_ipc,)), roomy) == []
    assert node_problems(RunSpec((host_ipc,)), small)  # --ipc=host: the host's /dev/shm counts
    assert docker_size("16g") == 16 * GIB and docker_size("512MiB") == 512 * MIB and docker_size("x") is None
    assert container_shm_bytes(parse_run(sized.argv)) == GIB


def test_docker_volume_mounts_get_home_expanded_before_docker_sees_them():
    argv = ["docker", "run", "-v", "~/.cache/huggingface:/root/.cache/huggingface", "-v=~/m:/m:ro",
            "--mount", "type=bind,source=~/cfg,target=/cfg", "-e", "X=~/keep", "img", "~/model", "--arg", "~"]
    got = expand_home(argv, {"HOME": "/home/ann"})
    assert got == ("docker", "run", "-v", "/home/ann/.cache/huggingface:/root/.cache/huggingface",
                   "-v=/home/ann/m:/m:ro", "--mount", "type=bind,source=/home/ann/cfg,target=/cfg", "-e", "X=~/keep",
                   "img", "~/model", "--arg", "~")
    assert expand_home(["vllm", "serve", "~/model"], {"HOME": "/h"}) == ("vllm", "serve", "~/model")


def test_prepare_hands_docker_the_expanded_mount(tmp_path, monkeypatch):
    monkeypatch.setenv("HOME", str(tmp_path))
    plan = {"plan_version": 1, "plan": {"accelerator": "cpu", "processes": [
        {"name": "vllm", "role": "serve",
         "argv": ["docker", "run", "-v", "~/.cache/huggingface:/root/.cache/huggingface", "--ipc=host", "img", "m"]}]}}
    prepared = prepare(plan, values={}, check_flags=False)
    assert prepared.spec.processes[0].argv[3] == f"{tmp_path}/.cache/huggingface:/root/.cache/huggingface"


def test_a_container_binds_its_side_channels_on_this_host_only_with_host_networking():
    inner = ["-e", "VLLM_NIXL_SIDE_CHANNEL_PORT=5557", "img", "m", "-dp", "2", "--kv-transfer-config", NIXL]
    bridged = ProcessSpec(name="p", argv=("docker", "run", "-p", "8001:8001", *inner), ports=(8001,))
    assert bound_ports(bridged, "0.32.0") == [(8001, "listens")]  # the side channels stay in the container
    host = ProcessSpec(name="p", argv=("docker", "run", "--network", "host", *inner), ports=(8001,))
    assert [port for port, _ in bound_ports(host, "0.32.0")] == [8001, 5557, 5558]
