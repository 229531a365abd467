"""The planner corrects the builder's commands that cannot run (docs/synthesis.md §7), and says so.

``synthesize`` keeps printing the builder's text (the goldens pin it); ``plan_selection`` — what
``plan``, the wizard, the exports and ``launch`` use — carries the corrected processes and one
``corrected:`` note per change. Each test shows the builder's form first, then the correction.
"""

from __future__ import annotations

import copy

import pytest

from vllm_deploy_wizard.catalog import Selection, load_catalog, synthesize
from vllm_deploy_wizard.catalog.corrections import correct_plan
from vllm_deploy_wizard.catalog.planner import plan_selection

CAT = load_catalog()


def _both(**sel) -> tuple:
    """(the builder's plan, the planner's plan) for one selection."""
    selection = Selection(**sel)
    return synthesize(CAT, selection), plan_selection(CAT, selection).plan


def _proc(plan, name: str):
    return next(p for p in plan.processes if p.name == name)


def _corrected(plan) -> list[str]:
    return [n for n in plan.notes if n.startswith("corrected:")]


# ---------------------------------------------------------------- §7.1 headless DP workers

TP_DP = {"model": "thinkingmachines/Inkling", "hardware": "gb200", "strategy": "multi_node_tp_dp", "nodes": 2}


@pytest.mark.parametrize("mode", ["pip", "docker"])
def test_a_tp_dp_worker_of_an_internally_balanced_head_runs_headless(mode) -> None:
    builder, planned = _both(**TP_DP, install_mode=mode)
    worker = _proc(builder, "vllm-worker-1")
    assert "--data-parallel-start-rank" in worker.argv and "--headless" not in worker.argv
    assert worker.ports and worker.health is not None  # the builder's worker would serve HTTP
    fixed = _proc(planned, "vllm-worker-1")
    assert fixed.argv == [*worker.argv, "--headless"]
    assert fixed.ports == [] and fixed.health is None
    head = _proc(planned, "vllm-head")
    assert head.argv == _proc(builder, "vllm-head").argv and head.health is not None
    [note] = _corrected(planned)
    assert note.startswith("corrected: vllm-worker-1 runs with --headless (the recipes builder prints it without")
    assert "docs/synthesis.md §7.1" in note


def test_a_hybrid_lb_tp_dp_plan_keeps_its_api_serving_workers() -> None:
    """Inkling on H200 adds --data-parallel-hybrid-lb on both nodes: each node serves its own API."""
    builder, planned = _both(**{**TP_DP, "hardware": "h200"}, install_mode="pip")
    worker = _proc(planned, "vllm-worker-1")
    assert "--data-parallel-hybrid-lb" in worker.argv and "--headless" not in worker.argv
    assert [p.argv for p in planned.processes] == [p.argv for p in builder.processes]
    assert not _corrected(planned)


def test_multi_node_dep_workers_are_left_as_the_builder_prints_them() -> None:
    builder, planned = _both(model="deepseek-ai/DeepSeek-V3", hardware="h200", strategy="multi_node_dep", nodes=2)
    assert [p.argv for p in planned.processes] == [p.argv for p in builder.processes]
    assert not _corrected(planned)


# ---------------------------------------------------------------- §7.2 LMCache beside a docker serve

LMCACHE = {"model": "Qwen/Qwen3-8B", "hardware": "h200", "kv_offload": "lmcache"}


def test_a_docker_serve_reaches_the_host_lmcache_server_and_the_host_installs_it() -> None:
    builder, planned = _both(**LMCACHE, install_mode="docker")
    serve = _proc(builder, "vllm")
    assert serve.argv[serve.argv.index("-p") + 1] == "8000:8000" and "--network" not in serve.argv
    assert builder.install == []  # the builder installs LMCache in pip mode only
    fixed = _proc(planned, "vllm")
    assert "-p" not in fixed.argv
    i = fixed.argv.index("--network")
    assert fixed.argv[i:i + 3] == ["--network", "host", "--privileged"]
    assert [t for t in fixed.argv if t not in ("--network", "host")] == [
        t for j, t in enumerate(serve.argv) if j not in (serve.argv.index("-p"), serve.argv.index("-p") + 1)]
    assert fixed.ports == [8000] and fixed.health is not None  # host network: the server binds the host's 8000
    assert planned.install == ["uv venv", "source .venv/bin/activate", 'uv pip install "lmcache==0.5.1"']
    notes = _corrected(planned)
    assert len(notes) == 2 and all("docs/synthesis.md §7.2" in n for n in notes)
    assert "--network host" in notes[0] and "localhost:5555" in notes[0]
    assert "lmcache==0.5.1" in notes[1] and "kv_offload:lmcache" in notes[1]


def test_a_pip_lmcache_plan_is_the_builders() -> None:
    builder, planned = _both(**LMCACHE, install_mode="pip")
    assert [p.argv for p in planned.processes] == [p.argv for p in builder.processes]
    assert planned.install == builder.install == ['uv pip install "lmcache==0.5.1"']
    assert not _corrected(planned)


def test_a_docker_plan_without_a_host_companion_keeps_its_published_port() -> None:
    builder, planned = _both(model="Qwen/Qwen3-8B", hardware="h200", install_mode="docker")
    assert _proc(planned, "vllm").argv == _proc(builder, "vllm").argv and "-p" in _proc(planned, "vllm").argv
    assert not _corrected(planned)


# ---------------------------------------------------------------- §7.3 MiniMax-H3's source mount

H3 = {"model": "MiniMaxAI/MiniMax-H3", "hardware": "h200"}


def test_the_h3_docker_serve_mounts_the_vllm_omni_checkout_and_puts_it_on_pythonpath() -> None:
    builder, planned = _both(**H3, install_mode="docker")
    serve = _proc(builder, "vllm")
    assert "/path/to/vllm-omni:/path/to/vllm-omni:ro" not in serve.argv
    fixed = _proc(planned, "vllm")
    image = fixed.argv.index("vllm/vllm-omni:minimax-h3")
    flags = fixed.argv[:image]
    mounts = [flags[i + 1] for i, t in enumerate(flags) if t == "-v"]
    assert mounts[-1] == "/path/to/vllm-omni:/path/to/vllm-omni:ro"
    assert flags[-2:] == ["-e", "PYTHONPATH=/path/to/vllm-omni"]
    assert fixed.env["PYTHONPATH"] == "/path/to/vllm-omni"
    assert fixed.argv[image:] == serve.argv[serve.argv.index("vllm/vllm-omni:minimax-h3"):]
    [note] = _corrected(planned)
    assert "/path/to/vllm-omni" in note and "docs/synthesis.md §7.3" in note
    # the clone the mount reads is the plan's docker install step
    assert "git clone --depth 1 https://github.com/vllm-project/vllm-omni.git /path/to/vllm-omni" in planned.install


def test_the_h3_pip_plan_is_the_builders() -> None:
    builder, planned = _both(**H3, install_mode="pip")
    assert [p.argv for p in planned.processes] == [p.argv for p in builder.processes]
    assert not _corrected(planned)


# ---------------------------------------------------------------- all of them


@pytest.mark.parametrize("sel", [{**TP_DP, "install_mode": "docker"}, {**LMCACHE, "install_mode": "docker"},
                                 {**H3, "install_mode": "docker"}], ids=["tp_dp", "lmcache", "h3"])
def test_correcting_a_corrected_plan_changes_nothing(sel) -> None:
    selection = Selection(**sel)
    plan = plan_selection(CAT, selection).plan
    before = copy.deepcopy(plan)
    assert correct_plan(CAT, selection, plan) == []
    assert plan == before
