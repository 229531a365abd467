"""What the wizard writes and hands to the launcher: node scripts (owner-only, like ``plan --script``)
and this node's facts (the launcher's builder, the same the CLI's ``launch`` uses)."""

from __future__ import annotations

import os
import stat
from types import SimpleNamespace as NS

import pytest

from vllm_deploy_wizard.catalog import Selection, load_catalog, synthesize
from vllm_deploy_wizard.launcher.launch import node_facts
from vllm_deploy_wizard.tui import placeholders
from vllm_deploy_wizard.tui.plan_export import write_scripts


@pytest.fixture(scope="module")
def snapshot(shared):
    return load_catalog(shared / "recipes-snapshot")


def test_export_writes_owner_only_executable_node_scripts(snapshot, tmp_path):
    plan = synthesize(snapshot, Selection(model="moonshotai/Kimi-K3", hardware="h200", strategy="multi_node_tp",
                                          nodes=2))
    old = tmp_path / "scripts" / "node-0.sh"
    old.parent.mkdir()
    old.write_text("stale")
    old.chmod(0o755)
    paths = write_scripts(plan, tmp_path / "scripts")
    assert sorted(p.name for p in paths) == ["node-0.sh", "node-1.sh"]
    for path in paths:  # a script carries --api-key: owner only, never briefly wider
        assert stat.S_IMODE(path.stat().st_mode) == 0o700 and os.access(path, os.X_OK)
        assert path.read_text().startswith("#!/usr/bin/env bash\n")
    assert sorted(p.name for p in (tmp_path / "scripts").iterdir()) == ["node-0.sh", "node-1.sh"]  # no temp files


def test_placeholder_node_facts_are_the_launchers_facts_of_the_inventory():
    host = NS(primary_ip="10.0.0.7", default_iface="eth1", cgroup_limit_bytes=None, cgroup_usage_bytes=None,
              numa_nodes=[NS(id=0, cpus=8, mem_bytes=32 << 30, available_bytes=20 << 30)])
    inventory = NS(host=host, accelerators=[], primary=None)
    facts = placeholders.node_facts(inventory)
    assert facts == node_facts(host, inventory) and facts.numa_mem_free_bytes == 20 << 30
    assert placeholders.node_facts(NS(host=None)) is None
    assert placeholders.offered_defaults(["HEAD_IP", "IFACE_NAME"], inventory) == {"HEAD_IP": "10.0.0.7",
                                                                                    "IFACE_NAME": "eth1"}
