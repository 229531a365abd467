"""A real detect on whatever machine runs the suite, and the CLI around it.

Facts are read from the machine at test time, so the assertions compare detect's answers with
what /proc and os report, and the expected profile is derived from /proc/cpuinfo with the table of
docs/detection.md §3.4 (CPU-only hosts) or from the detected accelerator's brand.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest

from vllm_deploy_wizard.detect import detect, match_profiles
from vllm_deploy_wizard.detect.facts import LiveFacts
from vllm_deploy_wizard.detect.fixture import FixtureFacts
from vllm_deploy_wizard.detect.fixture_capture import capture


def _proc_field(key: str) -> str:
    with open("/proc/cpuinfo") as f:
        for line in f:
            if line.split(":")[0].strip() == key:
                return line.split(":", 1)[1].strip()
    return ""


@pytest.fixture(scope="module")
def live():
    return detect()


def test_live_detect_names_cpu_ram_numa_and_software(live):
    assert live.cpu.model_name == _proc_field("model name")
    assert live.cpu.logical_cpus == os.cpu_count()
    with open("/proc/meminfo") as f:
        total_kb = int(next(line for line in f if line.startswith("MemTotal")).split()[1])
    assert live.host.mem_total_bytes == total_kb * 1024
    assert live.host.numa_nodes and live.host.numa_nodes_with_cpus >= 1
    assert live.probes["software"].status == "ok"
    assert all(p.status != "error" for p in live.probes.values()), live.probes


#: Intel (family, model) of a Xeon → (profile, qualities), docs/detection.md §3.4.
INTEL_XEONS = {(6, 0xAD): ("xeon6", {"exact", "count_mismatch"}), (6, 0xAE): ("xeon6", {"exact", "count_mismatch"}),
               (6, 0xCF): ("xeon5", {"exact", "count_mismatch"}), (6, 0xAF): ("xeon6", {"nearest"}),
               (6, 0xDD): ("xeon6", {"nearest"}), (6, 0x8F): ("xeon5", {"nearest"})}


def expected_cpu_match() -> tuple[str, set[str], str | None]:
    """(profile, allowed qualities, a note fragment) for a CPU-only host, from /proc/cpuinfo."""
    vendor = _proc_field("vendor_id")
    if vendor == "AuthenticAMD":
        return "xeon6", {"nearest"}, "no AMD CPU profile in the catalog"
    if vendor == "GenuineIntel":
        key = (int(_proc_field("cpu family") or -1), int(_proc_field("model") or -1))
        xeon = "xeon" in _proc_field("model name").lower()
        if xeon and key in INTEL_XEONS:
            profile, qualities = INTEL_XEONS[key]
            return profile, qualities, None
        if key == (19, 0x01):
            return "xeon6", {"nearest"}, "Diamond Rapids"
        if xeon:
            return "xeon5", {"nearest"}, "older than any catalog profile"
        return "xeon6", {"nearest"}, "client CPU with no catalog profile"
    return "xeon6", {"nearest"}, "no Arm CPU profile in the catalog"  # aarch64: no vendor_id line


def test_live_detect_preselects_the_profile_this_machine_implies(live, profiles):
    best = match_profiles(live, profiles)[0]
    if live.accelerators:  # the chosen accelerator's brand, and an answer rather than "none"
        brands = {g.brand for g in live.accelerators}
        assert profiles[best.profile_id].brand in brands and best.quality != "none", best
        return
    profile, qualities, note = expected_cpu_match()
    assert best.profile_id == profile and best.quality in qualities, best
    if note:
        assert any(note in n for n in best.notes), best.notes


def test_capture_round_trips_through_replay(tmp_path, profiles):
    import yaml

    data = capture(LiveFacts())
    path = tmp_path / "capture.yaml"
    path.write_text(yaml.safe_dump(data, sort_keys=False))
    replayed = detect(FixtureFacts.load(path))
    live = detect()
    assert replayed.cpu.model_name == live.cpu.model_name
    assert replayed.host.ram_bytes == live.host.ram_bytes
    assert [g.count for g in replayed.accelerators] == [g.count for g in live.accelerators]
    assert match_profiles(replayed, profiles)[0] == match_profiles(live, profiles)[0]


def test_capture_redacts_uuids_and_serials():
    from vllm_deploy_wizard.detect.fixture_capture import redact

    out = redact({"nvmlDeviceGetUUID": "GPU-d0b737ba-bab2-9fc1-645b-a70606d5760c",
                  "other": "GPU-d0b737ba-bab2-9fc1-645b-a70606d5760c", "asic_serial": "0x0CEE36DDC4255115"})
    assert "d0b737ba" not in json.dumps(out)
    assert out["nvmlDeviceGetUUID"] == out["other"]  # the same UUID keeps the same placeholder
    assert out["asic_serial"] == "REDACTED"


def _cli(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "vllm_deploy_wizard", "detect", *args], capture_output=True, text=True,
                          timeout=120)


def test_cli_detect_prints_profile_cpu_and_probes():
    out = _cli()
    assert out.returncode == 0, out.stderr
    assert out.stdout.startswith("Profile: ")
    assert f"CPU: {_proc_field('model name')}" in out.stdout
    assert "Probes:" in out.stdout and "NUMA:" in out.stdout


def test_cli_json_replay_of_a_scenario(fixtures_dir):
    out = _cli("--json", "--replay", str(fixtures_dir / "failure_modes.yaml"), "--scenario", "nvidia_driver_not_loaded")
    assert out.returncode == 0, out.stderr
    data = json.loads(out.stdout)
    assert (data["profile"], data["match"], data["device_count"]) == ("rtx_4090_2x", "pci_only", 2)
    assert data["inventory"]["probes"]["nvidia"]["status"] == "unavailable"


def test_cli_bad_replay_input_is_a_clear_error(fixtures_dir, tmp_path):
    out = _cli("--replay", str(fixtures_dir / "failure_modes.yaml"), "--scenario", "tpu_container_without_vfo")
    assert out.returncode == 2 and "did you mean 'tpu_container_without_vfio'" in out.stderr
    bad = tmp_path / "bad.yaml"
    bad.write_text("schema: something-else\n")
    out = _cli("--replay", str(bad))
    assert out.returncode == 2 and "field 'schema'" in out.stderr and "Traceback" not in out.stderr


@pytest.mark.parametrize("dist", ["pyyaml", "PyYAML", "nvidia-ml-py", "psutil", "vllm-deploy-wizard",
                                  "no-such-dist-xyz"])
def test_dist_version_agrees_with_importlib_metadata(dist):
    from importlib import metadata

    try:
        expected = metadata.version(dist)
    except metadata.PackageNotFoundError:
        expected = None
    assert LiveFacts().dist_version(dist) == expected
