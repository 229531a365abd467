"""What vLLM sees of a partitioned group, one replayable fixture per mode: NVIDIA MIG, AMD CPX/NPS4,
Ascend A3 dies, TPU chips and TPU7x TensorCores, Intel XPU tiles — detected, shown by ``detect``,
and used by ``plan --replay`` for the device count and a per-device memory warning."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from vllm_deploy_wizard.detect import detect
from vllm_deploy_wizard.detect.fixture import FixtureFacts
from vllm_deploy_wizard.detect.partitions import vllm_view

GIB = 2**30
HERE = Path(__file__).parent / "fixtures"


def _view(path: Path, scenario: str | None = None):
    inv = detect(FixtureFacts.load(path, scenario))
    return inv.primary, vllm_view(inv.primary)


def test_nvidia_mig_gpu_is_one_instance(fixture_dir) -> None:
    group, view = _view(fixture_dir / "failure_modes.yaml", "nvidia_mig_enabled_h100")
    assert group.count == 8 and view.devices == 8
    assert view.memory_bytes_each == 20096 << 20  # GPU 0's first MIG instance, the smallest device
    assert view.reason == "MIG on GPU 0: vLLM gets one MIG instance there (20 GiB)"


def test_amd_cpx_nps4_is_64_small_gpus(fixture_dir) -> None:
    group, view = _view(fixture_dir / "failure_modes.yaml", "amd_cpx_nps4_partitioned")
    assert group.count == 8  # the profile match keeps physical cards
    assert view.devices == 64 and view.memory_bytes_each == (196592 << 20) // 8
    assert "CPX/NPS4" in view.reason


def test_ascend_a3_dies_are_the_devices(fixture_dir) -> None:
    group, view = _view(fixture_dir / "ascend_910c_16x.yaml")
    assert group.unit == "NPU" and view.devices == group.count == 16 and view.reason is None


def test_tpu_chips_and_tpu7x_tensorcores(fixture_dir) -> None:
    v6e, view = _view(fixture_dir / "tpu_v6e_8x.yaml")
    assert v6e.unit == "chip" and view.devices == 8 and view.memory_bytes_each == 32 * GIB
    tpu7x, view = _view(HERE / "tpu7x_4chip.yaml")
    assert tpu7x.unit == "TensorCore" and tpu7x.flags["chips"] == 4
    assert view.devices == 8 and view.memory_bytes_each == 96 * GIB


def test_xpu_tiles_are_devices(fixture_dir) -> None:
    group, view = _view(HERE / "intel_max1550_2tile_2x.yaml")
    assert group.count == 2 and [d.details["tiles"] for d in group.devices] == [2, 2]
    assert view.devices == 4 and view.memory_bytes_each == 64 * GIB
    arc = FixtureFacts.load(fixture_dir / "intel_arc_pro_b60_4x.yaml")
    assert vllm_view(detect(arc).primary).reason is None  # one tile per card: nothing to say


def _cli(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "vllm_deploy_wizard", *args], capture_output=True, text=True,
                          timeout=120)


def test_detect_shows_and_plan_uses_what_vllm_sees(fixture_dir) -> None:
    modes = str(fixture_dir / "failure_modes.yaml")
    shown = _cli("detect", "--replay", modes, "--scenario", "amd_cpx_nps4_partitioned")
    assert "vLLM sees: 64 devices, 24.0 GiB total each" in shown.stdout, shown.stdout
    as_json = json.loads(_cli("detect", "--replay", modes, "--scenario", "amd_cpx_nps4_partitioned", "--json").stdout)
    assert as_json["vllm_view"]["devices"] == 64
    planned = _cli("plan", "--model", "Qwen/Qwen3-32B", "--replay", modes, "--scenario", "amd_cpx_nps4_partitioned",
                   "--json")
    plan = json.loads(planned.stdout)
    assert plan["resolved"]["gpus"] == 64
    assert any("vLLM sees 64 devices of 24 GiB each" in n and "192 GB each" in n for n in plan["notes"])


@pytest.mark.parametrize("scenario, physical, visible", [
    ("cuda_visible_devices_subset", 8, 4), ("ascend_visible_subset", 16, 8)])
def test_a_device_control_variable_limits_what_vllm_sees_and_the_plan(fixture_dir, scenario, physical,
                                                                       visible) -> None:
    group, view = _view(fixture_dir / "failure_modes.yaml", scenario)
    assert group.count == physical and view.devices == visible
    assert f"sees {visible} of {physical}" in view.reason
    planned = _cli("plan", "--model", "Qwen/Qwen3-32B", "--replay", str(fixture_dir / "failure_modes.yaml"),
                   "--scenario", scenario, "--allow-unverified", "--json")
    assert json.loads(planned.stdout)["resolved"]["gpus"] == visible, planned.stderr


@pytest.fixture()
def fixture_dir(shared: Path) -> Path:
    return shared / "fixtures" / "detect"


MAPPING_950 = """\
NPU ID    Slot ID    Chip ID    Chip Logic ID    Chip Phy-ID    Chip Name
0         3          0          1                6              Ascend950DT
0         3          1          -                -              Mcu
1         1          0          0                2              Ascend950DT
"""


def test_ascend_logic_and_slot_ids(fixture_dir) -> None:
    from vllm_deploy_wizard.detect.ascend import parse_npu_smi_mapping

    assert parse_npu_smi_mapping(MAPPING_950) == {(0, 0): {"logic_id": 1, "slot_id": 3, "phy_id": 6},
                                                  (1, 0): {"logic_id": 0, "slot_id": 1, "phy_id": 2}}
    group, _ = _view(fixture_dir / "ascend_910c_16x.yaml")  # its `-m` output lists the first two modules
    assert [d.details.get("logic_id") for d in group.devices[:5]] == [0, 1, 2, 3, None]
    assert not any("logic ids" in n for n in group.notes)  # in order: nothing to say
