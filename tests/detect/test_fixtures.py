"""Every shared detection fixture replays to its expected profile, match quality and notes.

The fixtures (``../shared/fixtures/detect``) describe real or constructed machines as raw facts;
``expected:`` says what a correct detector preselects. Replay goes through the same probes as a
live detect (``FixtureFacts`` behind the ``Facts`` seam).
"""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml

from vllm_deploy_wizard.detect import detect, match_profiles
from vllm_deploy_wizard.detect.fixture import FixtureFacts
from vllm_deploy_wizard.detect.hints import deployment_hints

FIXTURES = Path(__file__).resolve().parents[2].parent / "shared" / "fixtures" / "detect"
# Without ../shared one placeholder id each: the ``fixtures_dir`` fixture then skips the test with the
# reason the session summary counts (tests/conftest.py), instead of an empty parameter set.
MACHINES = sorted(p.name for p in FIXTURES.glob("*.yaml") if p.name != "failure_modes.yaml") or ["no-shared"]
SCENARIOS = [s["id"] for s in (yaml.safe_load((FIXTURES / "failure_modes.yaml").read_text())["scenarios"]
                                if (FIXTURES / "failure_modes.yaml").exists() else [])] or ["no-shared"]


def _replay(facts, profiles):
    inv = detect(facts)
    return inv, match_profiles(inv, profiles)


def _assert_expected(inv, cands, expected):
    top = cands[0]
    assert (top.profile_id, top.quality) == (expected["profile"], expected["match"]), top.notes
    shown = top.notes + inv.all_notes()
    for note in expected.get("notes") or []:
        assert any(note in s for s in shown), f"missing note {note!r}; shown: {shown}"
    if expected.get("notes") == []:
        assert top.notes == [], "an exact, unremarkable match must carry no notes"
    if "counted_devices" in expected:
        assert inv.device_count == expected["counted_devices"]
    if "visible_devices" in expected:
        assert inv.primary.visible == expected["visible_devices"]
    for probe, status in (expected.get("probe_status") or {}).items():
        assert inv.probes[probe].status == status, inv.probes[probe]
    if "alternatives" in expected:
        assert [c.profile_id for c in cands[1:1 + len(expected["alternatives"])]] == expected["alternatives"]
    errors = {k: p.reason for k, p in inv.probes.items() if p.status == "error"}
    assert not errors, errors


@pytest.mark.parametrize("name", MACHINES)
def test_machine_fixture_replays_to_expected_profile(name, fixtures_dir, profiles):
    data = yaml.safe_load((fixtures_dir / name).read_text())
    expected = data["expected"]
    inv, cands = _replay(FixtureFacts.load(fixtures_dir / name), profiles)
    _assert_expected(inv, cands, expected)
    if "per_device_mem_gib" in expected or "interconnect" in expected:
        assert inv.primary is not None, f"{name}: expects a device group, detected none"
    if "per_device_mem_gib" in expected:
        # 0.15: xe sysfs VRAM (24.0 GiB on a B60) includes reserved memory torch does not (23.9), §3.3
        assert inv.primary.mem_gib_each == pytest.approx(expected["per_device_mem_gib"], abs=0.15)
    if "interconnect" in expected:
        assert inv.primary.interconnect == expected["interconnect"]
    hints = deployment_hints(inv)
    for key, value in (expected.get("host_hints") or {}).items():
        assert hints[key] == value, (key, hints[key])
    cpu = expected.get("cpu") or {}
    if "ram_gib" in cpu:
        assert inv.host.ram_bytes / 2**30 == pytest.approx(cpu["ram_gib"], abs=0.1)
    if "numa_nodes" in cpu:
        assert inv.host.numa_nodes_with_cpus == cpu["numa_nodes"]
    for flag in ("amx", "avx512"):
        if flag in cpu:
            assert getattr(inv.cpu, flag) is cpu[flag]


@pytest.mark.parametrize("scenario", SCENARIOS)
def test_failure_scenario_yields_status_reason_and_expected_profile(scenario, fixtures_dir, profiles):
    data = yaml.safe_load((fixtures_dir / "failure_modes.yaml").read_text())
    expected = next(s for s in data["scenarios"] if s["id"] == scenario)["expected"]
    inv, cands = _replay(FixtureFacts.load(fixtures_dir / "failure_modes.yaml", scenario), profiles)
    for name, result in inv.probes.items():
        assert result.status in ("ok", "degraded", "unavailable", "absent"), (name, result)
        assert result.reason, name
    _assert_expected(inv, cands, expected)


def test_gb200_host_ram_counts_only_numa_nodes_with_cpus(fixtures_dir):
    inv = detect(FixtureFacts.load(fixtures_dir / "nvidia_gb200_tray_4x.yaml"))
    assert inv.host.numa_nodes_with_cpus == 2
    assert int(inv.host.ram_bytes / 2**30) == 913  # nodes 0+1, not MemTotal (includes GPU HBM)


def test_xeon6_counts_qat_physical_functions_and_enabled_work_queues(fixtures_dir):
    inv = detect(FixtureFacts.load(fixtures_dir / "cpu_xeon6_amx.yaml"))
    assert (inv.cpu.qat_pfs, inv.cpu.iaa, inv.cpu.dsa) == (8, 2, 2)  # the 0x4945 VF is not counted
    assert inv.cpu.dsa_user_wqs_enabled == 1
    assert inv.cpu.generation == "xeon6" and inv.cpu.amx


def test_rtx4090_48gb_mod_is_downgraded_by_the_memory_check(fixtures_dir, profiles):
    data = yaml.safe_load((fixtures_dir / "nvidia_rtx4090_2x.yaml").read_text())
    variant = data["nvml"]["variants"][0]
    for dev in data["nvml"]["devices"]:
        dev["nvmlDeviceGetMemoryInfo"] = {"total": variant["nvmlDeviceGetMemoryInfo_total_mib"] << 20}
    inv, cands = _replay(FixtureFacts(data, fixtures_dir), profiles)
    assert (cands[0].profile_id, cands[0].quality) == ("rtx_4090_2x", variant["expected_match"])
    assert variant["expected_note"] in cands[0].notes


def test_rtx5090_d_variant_keeps_the_profile_with_a_note(fixtures_dir, profiles):
    data = yaml.safe_load((fixtures_dir / "nvidia_rtx5090_1x.yaml").read_text())
    data["nvml"]["devices"][0]["nvmlDeviceGetName"] = "NVIDIA GeForce RTX 5090 D"
    inv, cands = _replay(FixtureFacts(data, fixtures_dir), profiles)
    assert (cands[0].profile_id, cands[0].quality) == ("rtx_5090", "exact")
    assert data["expected"]["variant_notes"]["NVIDIA GeForce RTX 5090 D"] in cands[0].notes


def test_ascend_npu_smi_table_is_parsed_into_16_dies(fixtures_dir):
    from vllm_deploy_wizard.detect.ascend import family_of, parse_npu_smi_info

    chips = parse_npu_smi_info((fixtures_dir / "ascend_910c_npu-smi-info.txt").read_text())
    assert len(chips) == 16 and len({c.npu for c in chips}) == 8
    assert {c.hbm_mb for c in chips} == {65536}
    assert family_of(chips, set()) == "ascend:910c"  # two Ascend910 chip rows per NPU id, no PCI needed


def test_matcher_accepts_plain_seed_namespaces(fixtures_dir, seed_profiles):
    inv = detect(FixtureFacts.load(fixtures_dir / "nvidia_hgx_8x_h200.yaml"))
    assert match_profiles(inv, seed_profiles)[0].to_dict() == {"profile_id": "h200", "quality": "exact", "notes": []}
