"""Pinning a plan to the devices picked (catalog/device_pick.py, docs/fit.md §10)."""

from __future__ import annotations

from types import SimpleNamespace

import pytest

from vllm_deploy_wizard.catalog import load_catalog
from vllm_deploy_wizard.catalog.device_pick import ascend_device_nodes, device_bytes, parse_devices, pin_devices
from vllm_deploy_wizard.catalog.plan import PlanProcess
from vllm_deploy_wizard.common.errors import SelectionError

GIB = 2**30


@pytest.fixture(scope="module")
def profiles():
    return load_catalog().taxonomy.hardware_profiles


def _plan(*procs: PlanProcess, image: str | None = None):
    return SimpleNamespace(processes=list(procs), docker={"image": image} if image else None)


def test_a_shape_pinned_share_is_mapped_onto_the_picked_devices(profiles) -> None:
    """Two DP ranks pinned 0,1 and 2,3 by the shape run on the 2nd..5th picked devices in order."""
    a = PlanProcess(name="dp0", role="serve", argv=["vllm", "serve", "m"], env={"CUDA_VISIBLE_DEVICES": "0,1"})
    b = PlanProcess(name="dp1", role="serve", argv=["vllm", "serve", "m"], env={"CUDA_VISIBLE_DEVICES": "2,3"})
    router = PlanProcess(name="router", role="router", argv=["vllm-router"])
    notes = pin_devices(profiles["h200"], _plan(a, b, router), [1, 3, 4, 6])
    assert (a.env["CUDA_VISIBLE_DEVICES"], b.env["CUDA_VISIBLE_DEVICES"]) == ("1,3", "4,6")
    assert a.env["CUDA_DEVICE_ORDER"] == "PCI_BUS_ID" and router.env == {}
    assert notes == ["devices picked: 1, 3, 4, 6 (pinned with CUDA_VISIBLE_DEVICES, CUDA_DEVICE_ORDER=PCI_BUS_ID)"]


def test_docker_processes_get_the_pins_as_env_flags(profiles) -> None:
    image = "vllm/vllm-openai:latest"
    proc = PlanProcess(name="serve", role="serve", argv=["docker", "run", "--gpus", "all", "-e",
                                                          "CUDA_VISIBLE_DEVICES=0", image, "m"])
    pin_devices(profiles["h200"], _plan(proc, image=image), [2])
    head = proc.argv[:proc.argv.index(image)]
    assert "CUDA_VISIBLE_DEVICES=0" not in head and head[-4:] == [
        "-e", "CUDA_VISIBLE_DEVICES=2", "-e", "CUDA_DEVICE_ORDER=PCI_BUS_ID"]


def test_rocm_pins_one_variable_vllm_keeps_consistent(profiles) -> None:
    """vLLM 0.32's ROCm platform refuses HIP_VISIBLE_DEVICES ≠ CUDA_VISIBLE_DEVICES: one variable pins."""
    proc = PlanProcess(name="serve", role="serve", argv=["vllm", "serve", "m"])
    pin_devices(profiles["mi300x"], _plan(proc), [4, 5])
    assert proc.env == {"CUDA_VISIBLE_DEVICES": "4,5"}  # CUDA_DEVICE_ORDER is CUDA's; HIP does not read it


def test_tpu_keeps_the_shapes_process_port(profiles) -> None:
    proc = PlanProcess(name="serve", role="serve", argv=["vllm", "serve", "m"],
                       env={"TPU_VISIBLE_CHIPS": "0,1", "TPU_PROCESS_PORT": "8477"})
    pin_devices(profiles["trillium"], _plan(proc), [4, 5, 6, 7])
    assert proc.env["TPU_VISIBLE_CHIPS"] == "4,5" and proc.env["TPU_PROCESS_PORT"] == "8477"
    assert "CUDA_DEVICE_ORDER" not in proc.env


def test_ascend_pins_logic_ids_and_passes_the_physical_files(profiles) -> None:
    host = SimpleNamespace(devices=[{"index": i, "name": "910B3", "memory_bytes": 64 * GIB, "visible_id": i,
                                     "dev_node": f"/dev/davinci{p}"} for i, p in enumerate((0, 1, 2, 4))])
    proc = PlanProcess(name="serve", role="serve", argv=["docker", "run", "--device", "/dev/davinci0",
                                                         "--device", "/dev/davinci1",
                                                         "--device", "/dev/davinci_manager",
                                                         "img", "serve", "m"])
    pin_devices(profiles["ascend_910c"], _plan(proc, image="img"), [1, 3], host)
    notes = ascend_device_nodes(_plan(proc), host)
    assert proc.env == {"ASCEND_RT_VISIBLE_DEVICES": "1,3"}
    assert proc.argv[2:8] == ["--device", "/dev/davinci1", "--device", "/dev/davinci4", "--device",
                              "/dev/davinci_manager"]
    assert notes == ["Ascend device files as this node names them (logic id 3 = /dev/davinci4): docker passes "
                     "those, ASCEND_RT_VISIBLE_DEVICES takes the logic ids"]


def test_device_memory_is_the_smallest_used() -> None:
    host = SimpleNamespace(devices=[{"index": 0, "memory_bytes": 24 * GIB}, {"index": 1, "memory_bytes": 12 * GIB},
                                    {"index": 2, "memory_bytes": 24 * GIB}])
    assert device_bytes(host, [0, 2], None) == 24 * GIB
    assert device_bytes(host, None, 2) == 12 * GIB  # the first two devices: 4090 + 3060
    assert device_bytes(SimpleNamespace(devices=None), [0], 1) is None


def test_parse_devices_names_the_flag() -> None:
    assert parse_devices("0, 2") == [0, 2] and parse_devices("") is None and parse_devices([3]) == [3]
    with pytest.raises(SelectionError, match="Devices '-1'"):
        parse_devices("-1", "Devices")
