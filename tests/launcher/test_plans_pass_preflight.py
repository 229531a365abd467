"""Every plan the planner makes for a node passes that node's static preflight when the node has what
the plan asks for: each detect fixture's profile (and this CPU node, live) × every bundled model ×
every strategy the wizard offers there, each node label of the plan. Static: no vLLM runs (flag check
skipped), the ports count as free, the executables exist (stubs on PATH), the node is idle (free =
total memory) and the chat templates a recipe names from a vLLM checkout are there. The builder
commands the planner corrects (docs/synthesis.md §7) pass it too, on the fixture node each runs on."""

from __future__ import annotations

from dataclasses import replace
from functools import cache
from pathlib import Path

import pytest

from vllm_deploy_wizard.catalog import Selection, load_catalog, options
from vllm_deploy_wizard.catalog.hostfit import HostCapacity
from vllm_deploy_wizard.catalog.planner import PlanRefused, options_for, plan_selection
from vllm_deploy_wizard.catalog.render import plan_file
from vllm_deploy_wizard.common.flags import flag_values
from vllm_deploy_wizard.launcher import preflight
from vllm_deploy_wizard.launcher.launch import NodeFacts, node_facts, prepare
from vllm_deploy_wizard.launcher.plan_file import plan_placeholders

CAT = load_catalog()
FIXTURES = Path("/work/shared/fixtures/detect")
FIXTURE_FILES = sorted(p.name for p in FIXTURES.glob("*.yaml") if p.name != "failure_modes.yaml") \
    if FIXTURES.is_dir() else []

def _idle(facts: NodeFacts, ram: int | None) -> NodeFacts:
    """``facts`` of a node with nothing else running: all memory free, ``/dev/shm`` half the RAM
    (the Linux default) when unknown."""
    shm = facts.shm_total_bytes or (ram // 2 if ram else None)
    return replace(facts, numa_mem_free_bytes=facts.numa_mem_total_bytes, device_free_bytes=facts.device_total_bytes,
                   shm_total_bytes=shm, shm_free_bytes=shm)


@cache
def _node(fixture: str | None):
    from vllm_deploy_wizard.detect import detect
    from vllm_deploy_wizard.detect.fixture import FixtureFacts
    from vllm_deploy_wizard.workflows.planning import detect_defaults

    data: dict = {}
    detect_defaults(CAT, data, replay=FIXTURES / fixture if fixture else None)
    inv = detect(FixtureFacts.load(FIXTURES / fixture)) if fixture else detect()
    return data, inv, _idle(node_facts(inv.host, inv), inv.host.ram_bytes)


def _stubs(bindir: Path, names: set[str]) -> None:
    for name in names:
        stub = bindir / name
        if not stub.exists():
            stub.write_text("#!/bin/sh\nexit 0\n")
            stub.chmod(0o755)


def _placeholder_values(names: list[str]) -> dict[str, str]:
    """A value for each placeholder as the person launching would give: a distinct port for each
    ``*PORT*`` name, an interface, else an address."""
    ports = iter(range(41000, 42000))
    return {n: str(next(ports)) if "PORT" in n else ("eth0" if "IFNAME" in n or "IFACE" in n else "10.0.0.2")
            for n in names}


def _walk(fixture: str | None, bindir: Path, cwd: Path) -> tuple[dict, int]:
    """``{(fixture, model, strategy): [problem kinds…]}`` for every offered plan that is refused, and
    how many node launches were checked."""
    data, inv, facts = _node(fixture)
    hw = data.get("hardware")
    host = HostCapacity.from_inventory(inv)
    refused: dict[tuple[str, str, str], list[str]] = {}
    checked = 0
    sizes = {"gpus": data["gpus"]} if "gpus" in data else {}
    # a restricted profile no bundled recipe lists is offered with "allow unverified" (docs/catalog.md §4)
    allow = not any(any(c.id == hw and c.available for c in options(CAT, Selection(model=r.hf_id, hardware=hw,
                                                                                     **sizes)).hardware)
                    for r in CAT.sorted_recipes())

    def offered(sel: Selection):  # the rows the wizard shows for this node (node facts applied)
        return options_for(CAT, sel, host=host)

    for recipe in CAT.sorted_recipes():
        base = {"model": recipe.hf_id, "hardware": hw, **sizes, **({"allow_unverified": True} if allow else {})}
        opts = offered(Selection(**base))
        if not any(c.id == hw and c.available for c in opts.hardware):
            continue
        for strategy in (c.id for c in opts.strategy if c.available):
            key = (fixture or "live", recipe.hf_id, strategy)
            # the node count the wizard shows for the strategy (options' resolved value), as the TUI plans it
            # (or the first it offers when that one is disabled: the person must pick another)
            rows = offered(Selection(**base, strategy=strategy))
            counts = [int(c.id) for c in rows.nodes if c.available and c.id.isdigit()]
            nodes = rows.resolved.get("nodes")
            if rows.nodes and nodes not in counts:
                if not counts:
                    continue  # no node count offered: the wizard offers no plan here
                nodes = counts[0]
            try:
                planned = plan_selection(CAT, Selection(**base, strategy=strategy, nodes=nodes), host)
            except PlanRefused as exc:
                refused[key] = [f"planner refuses: {exc}"]
                continue
            doc = plan_file(planned.plan, {"catalog_source": "bundled"}, "test")
            procs = doc["plan"]["processes"]
            _stubs(bindir, {Path(str(p["argv"][0])).name for p in procs})
            for p in procs:  # recipes name chat templates of a vLLM checkout: the node has them here
                for path in flag_values([str(a) for a in p["argv"]], "--chat-template"):
                    if not path.startswith("/") and "$" not in path:
                        (cwd / path).parent.mkdir(parents=True, exist_ok=True)
                        (cwd / path).write_text("{{ messages }}")
            values = _placeholder_values(plan_placeholders(doc))
            for label in sorted({p.get("node") for p in procs if p.get("node")}) or [None]:
                checked += 1
                prepared = prepare(doc, node=label, values=values, facts=facts, check_flags=False,
                                   preflight_kw={"base_env": {"PATH": str(bindir), "HOME": str(cwd)}})
                if prepared.problems:
                    refused.setdefault(key, []).extend(prepared.problems)
    return refused, checked


def _check(refused: dict) -> None:
    """No offered plan is refused: the planner does not offer a shape vLLM can't start
    (docs/synthesis.md §2.15)."""
    assert not refused, "offered plans the preflight refuses:\n" + "\n".join(
        f"{k}: {v[:3]}" for k, v in refused.items())


@pytest.fixture
def static_preflight(tmp_path, monkeypatch):
    """Ports count as free (other work on this machine holds some); cwd and PATH are the test's."""
    monkeypatch.setattr(preflight, "port_free", lambda port, host="0.0.0.0": True)
    monkeypatch.chdir(tmp_path)
    bindir = tmp_path / "bin"
    bindir.mkdir()
    return bindir, tmp_path


@pytest.mark.parametrize("fixture", FIXTURE_FILES)
def test_every_offered_plan_for_a_fixture_node_passes_its_preflight(fixture, static_preflight):
    refused, checked = _walk(fixture, *static_preflight)
    assert checked > 0, f"{fixture}: no plan was offered"
    _check(refused)


def test_every_offered_plan_for_this_cpu_node_passes_its_preflight(static_preflight):
    data, inv, _ = _node(None)
    if inv.primary is not None:
        pytest.skip("this node has accelerators: the fixture walk covers them")
    refused, checked = _walk(None, *static_preflight)
    assert checked > 0
    _check(refused)



#: The builder commands the planner corrects (docs/synthesis.md §7), each on the fixture node it runs on.
CORRECTED = [
    ("nvidia_gb200_tray_4x.yaml", {"model": "thinkingmachines/Inkling", "strategy": "multi_node_tp_dp", "nodes": 2,
                                   "install_mode": "docker"}),
    ("nvidia_gb200_tray_4x.yaml", {"model": "thinkingmachines/Inkling", "strategy": "multi_node_tp_dp", "nodes": 2,
                                   "install_mode": "pip"}),
    # the L1 pool sized to what this test machine has free (the preflight reads the live RAM)
    ("nvidia_hgx_8x_h200.yaml", {"model": "Qwen/Qwen3-8B", "kv_offload": "lmcache", "install_mode": "docker",
                                 "companion_args": {"l1_size_gb": 1}}),
    ("nvidia_hgx_8x_h200.yaml", {"model": "MiniMaxAI/MiniMax-H3", "install_mode": "docker"}),
]


def _every_node_problems(plan, bindir: Path, cwd: Path, facts) -> list:
    """The static preflight's problems on every machine of ``plan`` (stub executables in ``bindir``,
    placeholders filled with test values)."""
    doc = plan_file(plan, {"catalog_source": "bundled"}, "test")
    procs = doc["plan"]["processes"]
    _stubs(bindir, {Path(str(p["argv"][0])).name for p in procs})
    values = _placeholder_values(plan_placeholders(doc))
    problems = []
    for label in sorted({p.get("node") for p in procs if p.get("node")}):
        problems += prepare(doc, node=label, values=values, facts=facts, check_flags=False,
                            preflight_kw={"base_env": {"PATH": str(bindir), "HOME": str(cwd)}}).problems
    return problems


@pytest.mark.parametrize("fixture,sel", CORRECTED, ids=["tp_dp docker", "tp_dp pip", "lmcache docker", "h3 docker"])
def test_every_corrected_plan_passes_its_nodes_preflight(fixture, sel, static_preflight):
    """The corrected commands (headless workers, host network beside LMCache, H3's source mount)
    pass the static preflight on every machine of the plan, like every offered plan."""
    if fixture not in FIXTURE_FILES:
        pytest.skip(f"fixture {fixture} not here")
    bindir, cwd = static_preflight
    data, inv, facts = _node(fixture)
    planned = plan_selection(CAT, Selection(**sel, hardware=data["hardware"]), HostCapacity.from_inventory(inv))
    assert any(n.startswith("corrected:") for n in planned.plan.notes)
    problems = _every_node_problems(planned.plan, bindir, cwd, facts)
    assert not problems, problems


#: PD pools sized by the person (``--pd-prefill``/``--pd-decode``) that the planner keeps: both pools
#: co-located, one co-located beside a pool of its own nodes (docs/constraints.md §3.2 N6), one each.
POOL_SIZES = [(0, 0), (1, 0), (0, 1), (1, 1)]


@pytest.mark.parametrize("prefill,decode", POOL_SIZES, ids=[f"{p}+{d}" for p, d in POOL_SIZES])
def test_sized_pd_pools_the_planner_keeps_pass_every_nodes_preflight(prefill, decode, static_preflight):
    """MiniMax-M2 (276 GB: half an H200 node holds it) with explicit pool sizes: every machine of
    the plan passes the static preflight."""
    fixture = "nvidia_hgx_8x_h200.yaml"
    if fixture not in FIXTURE_FILES:
        pytest.skip(f"fixture {fixture} not here")
    bindir, cwd = static_preflight
    data, inv, facts = _node(fixture)
    sel = Selection(model="MiniMaxAI/MiniMax-M2", hardware=data["hardware"], strategy="pd_cluster",
                    pd={"prefill": {"nodes": prefill}, "decode": {"nodes": decode}})
    planned = plan_selection(CAT, sel, HostCapacity.from_inventory(inv))
    problems = _every_node_problems(planned.plan, bindir, cwd, facts)
    assert not problems, problems
