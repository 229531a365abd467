"""The plan file meets the launcher's reader (docs/contracts.md §2): every node of a plan loads.

A cross-package check: the catalog writes what ``vllm_deploy_wizard.launcher.load_plan_file`` reads, for
every shape the goldens cover (sampled), on every node rank of the plan.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from vllm_deploy_wizard.catalog import load_catalog, synthesize
from vllm_deploy_wizard.catalog.render import plan_file
from vllm_deploy_wizard.catalog.selection import selection_from_data
from vllm_deploy_wizard.launcher.plan_file import parse_plan


@pytest.fixture(scope="module")
def sampled(shared: Path):
    cat = load_catalog(shared / "recipes-snapshot")
    cases = [json.loads(line) for line in (shared / "golden" / "cases.jsonl").open()]
    return cat, cases[::5]  # every shape is well represented in a fifth of the corpus


def test_every_node_of_every_sampled_plan_loads_in_the_launcher(sampled) -> None:
    """Every machine label selects exactly its processes; a node rank selects its processes where it
    names one machine, and is refused (naming the labels) where it names several (PD, Mooncake)."""
    from vllm_deploy_wizard.catalog.plan import node_label
    from vllm_deploy_wizard.common.errors import LaunchError

    cat, cases = sampled
    shapes, failures, refused = set(), [], set()
    for case in cases:
        plan = synthesize(cat, selection_from_data(case["selection"]))
        shapes.add(plan.deploy_type)
        doc = json.loads(json.dumps(plan_file(plan, {"catalog_source": "test"}, "0.1.0")))
        # the plan file's (+ $NODE_IP): addresses, and a port for a port ($ROUTER_PORT is in `ports`)
        values = {name: "30000" if name.endswith("_PORT") else "10.0.0.1" for name in doc["plan"]["placeholders"]}
        labels = {p.name: node_label(plan, p) for p in plan.processes}
        for label in sorted(set(labels.values())):
            try:
                spec = parse_plan(doc, source=case["id"], node=label, values=values)
            except Exception as exc:  # collect, report the first few
                failures.append(f"{case['id']} node {label}: {exc}")
                continue
            assert {p.name for p in spec.processes} == {n for n, lb in labels.items() if lb == label}, case["id"]
        for rank in sorted({p.node_rank or 0 for p in plan.processes}):
            machines = {labels[p.name] for p in plan.processes if p.node_rank == rank}
            if len(machines) > 1:
                with pytest.raises(LaunchError, match="pick one with --node LABEL"):
                    parse_plan(doc, source=case["id"], node_rank=rank, values=values)
                refused.add(plan.deploy_type)
                continue
            spec = parse_plan(doc, source=case["id"], node_rank=rank, values=values)
            on_node = {p.name for p in plan.processes if (p.node_rank or 0) == rank}
            assert {p.name for p in spec.processes} == on_node, case["id"]
    assert shapes == {"single_node", "multi_node", "pd_cluster", "kv_store_lb", "omni"}
    assert refused == {"pd_cluster", "kv_store_lb"}
    assert not failures, "\n".join(failures[:5])


def test_depends_on_stays_within_a_node(sampled) -> None:
    cat, _ = sampled
    plan = synthesize(cat, selection_from_data({
        "model": "MiniMaxAI/MiniMax-M2", "hardware": "h200", "strategy": "pd_cluster",
        "pd": {"prefill": {"nodes": 2, "mode": "dep"}, "decode": {"nodes": 1, "mode": "dep"}}}))
    by_name = {p.name: p for p in plan.processes}
    assert by_name["router"].depends_on == ["prefill-0", "decode-0"]
    assert by_name["prefill-1"].depends_on == []
