"""IAXL KVShrink host readiness: every gap listed at once, replayed on the Xeon 6 fixture."""

from __future__ import annotations

from pathlib import Path

import pytest

from vllm_deploy_wizard.detect.fixture import FixtureFacts
from vllm_deploy_wizard.detect.iaxl import HOST_SETUP_STEPS, readiness, uses_iaxl


@pytest.fixture()
def xeon(shared: Path) -> FixtureFacts:
    """The 2-socket Xeon 6 fixture (8 QAT PFs, POLICY=0) made ready: IOMMU words, qat active, checkout."""
    facts = FixtureFacts.load(shared / "fixtures" / "detect" / "cpu_xeon6_amx.yaml")
    facts.host.setdefault("files", {})["/proc/cmdline"] = (
        "BOOT_IMAGE=/vmlinuz root=/dev/sda1 intel_iommu=on,sm_on iommu=pt")
    facts.data.setdefault("env", {})["HOME"] = "/home/ai"
    facts.host["existing_paths"] = ["/home/ai/intel-accel-for-llm/setvars.sh"]
    facts.on_path.add("systemctl")
    facts.commands["systemctl is-active qat"] = "active\n"
    return facts


def test_ready_host_has_no_gap(xeon) -> None:
    assert readiness(8, xeon) == []


def test_every_gap_is_listed_at_once(xeon) -> None:
    xeon.host["files"]["/proc/cmdline"] = "root=/dev/sda1 intel_iommu=on"
    xeon.host["etc_sysconfig_qat"] = {"POLICY": "1", "ServicesEnabled": "dc"}
    xeon.commands["systemctl is-active qat"] = "inactive\n"
    xeon.host["existing_paths"] = []
    gaps = readiness(16, xeon)
    texts = [g.text() for g in gaps]
    assert len(gaps) == 5, texts
    assert "intel_iommu=on,sm_on iommu=pt" in texts[0] and "found: intel_iommu=on" in texts[0]
    assert "TP_SIZE=16 needs 16" in texts[1] and "found: 8 bound" in texts[1]
    assert "POLICY=0" in texts[2] and "found: POLICY=1" in texts[2]
    assert "qat service" in texts[3] and "inactive" in texts[3]
    assert "/home/ai/intel-accel-for-llm/setvars.sh" in texts[4]
    assert all(any(step in t for step in HOST_SETUP_STEPS) for t in texts[:1] + texts[2:])


def test_qat_count_is_judged_against_tp_size(xeon) -> None:
    assert readiness(8, xeon) == []
    [gap] = readiness(9, xeon)
    assert "QAT devices" in gap.what


def test_plan_processes_that_use_iaxl() -> None:
    serve = {"argv": ["vllm", "serve", "m", "--kv-transfer-config", '{"kv_connector":"KVShrinkConnector"}'],
             "env": {"TP_SIZE": "4", "DEVICE": "cpu"}}
    assert uses_iaxl([{"argv": ["vllm-router"], "env": {}}, serve]) == 4
    assert uses_iaxl([{"argv": ["vllm", "serve", "m"], "env": {}}]) is None
