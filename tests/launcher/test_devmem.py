"""Accelerator memory held after a stop: NVML, amdsmi and npu-smi readers, each with a fake vendor,
and the container rule (pids invisible, judged against the per-device use recorded at launch)."""

from __future__ import annotations

import sys
import types

from vllm_deploy_wizard.launcher import devmem
from vllm_deploy_wizard.launcher.devmem import MIB, Reading

NPU_SMI = """\
+------------------------------------------------------------------------------------------------+
| npu-smi 25.2.1                   Version: 25.2.1                                               |
+---------------------------+---------------+----------------------------------------------------+
| NPU   Name                | Health        | Power(W)    Temp(C)           Hugepages-Usage(page)|
| Chip  Phy-ID              | Bus-Id        | AICore(%)   Memory-Usage(MB)  HBM-Usage(MB)        |
+===========================+===============+====================================================+
| 0     Ascend910           | OK            | 172.4       35                0    / 0             |
| 0     0                   | 0000:9D:00.0  | 0           0    / 0          61200 / 65536        |
+------------------------------------------------------------------------------------------------+
| 0     Ascend910           | OK            | -           35                0    / 0             |
| 1     1                   | 0000:9F:00.0  | 0           0    / 0          2893 / 65536         |
+===========================+===============+====================================================+
+---------------------------+---------------+----------------------------------------------------+
| NPU     Chip              | Process id    | Process name             | Process memory(MB)      |
+===========================+===============+====================================================+
| 0       0                 | 4242          | python3.11               | 58000                   |
+===========================+===============+====================================================+
| No running processes found in NPU 0 chip 1                                                     |
+===========================+===============+====================================================+
"""


def test_npu_smi_process_table_and_hbm_use() -> None:
    r = devmem.parse_npu_smi(NPU_SMI)
    assert r.per_pid == {4242: 58000 * MIB}
    assert r.per_device == {"npu:0.0": 61200 * MIB, "npu:0.1": 2893 * MIB}
    assert devmem.read_npu_smi(run=lambda argv: NPU_SMI).per_pid == {4242: 58000 * MIB}
    assert devmem.read_npu_smi(run=lambda argv: None) is None


def test_amdsmi_process_list_and_vram(monkeypatch) -> None:
    calls = []
    procs = {0: [{"pid": 7, "name": "python3", "memory_usage": {"vram_mem": 3 << 30, "gtt_mem": 1}},
                 {"pid": 8, "mem": 5}],
             1: [{"pid": 7, "memory_usage": {"vram_mem": 1 << 30}}]}

    def process_list(h):
        return procs[h]

    fake = types.SimpleNamespace(
        amdsmi_init=lambda *a: calls.append("init"), amdsmi_shut_down=lambda: calls.append("shutdown"),
        amdsmi_get_processor_handles=lambda: [0, 1], amdsmi_get_gpu_process_list=process_list,
        amdsmi_get_gpu_vram_usage=lambda h: {"vram_total": 196592, "vram_used": 4096 if h == 0 else 1024})
    monkeypatch.setitem(sys.modules, "amdsmi", fake)
    r = devmem.read_amdsmi()
    assert r.per_pid == {7: 4 << 30, 8: 5}
    assert r.per_device == {"amdsmi:0": 4096 * MIB, "amdsmi:1": 1024 * MIB}
    assert calls == ["init", "shutdown"]

    def no_driver(*a):
        raise RuntimeError("AMDSMI_STATUS_DRIVER_NOT_LOADED")

    monkeypatch.setitem(sys.modules, "amdsmi", types.SimpleNamespace(amdsmi_init=no_driver))
    assert devmem.read_amdsmi() is None


def test_nvml_device_use_is_read_beside_the_pids(monkeypatch) -> None:
    fake = types.SimpleNamespace(
        nvmlInit=lambda: None, nvmlShutdown=lambda: None, nvmlDeviceGetCount=lambda: 1,
        nvmlDeviceGetHandleByIndex=lambda i: i,
        nvmlDeviceGetComputeRunningProcesses=lambda h: [types.SimpleNamespace(pid=3, usedGpuMemory=1 << 30)],
        nvmlDeviceGetGraphicsRunningProcesses=lambda h: [],
        nvmlDeviceGetMemoryInfo=lambda h: types.SimpleNamespace(used=70 << 30))
    monkeypatch.setitem(sys.modules, "pynvml", fake)
    r = devmem.read_nvml()
    assert r.per_pid == {3: 1 << 30} and r.per_device == {"nvml:0": 70 << 30}


def test_pid_match_outside_a_container() -> None:
    readers = (lambda: Reading({10: 2 << 30, 99: 1 << 30}, {"nvml:0": 3 << 30}), lambda: None)
    assert devmem.memory_held({10, 11}, readers=readers) == {10: 2 << 30}
    assert devmem.memory_held({11}, readers=readers) == {}
    assert devmem.memory_held({10}, readers=(lambda: None,)) is None


def test_container_judges_device_use_against_the_launch_baseline() -> None:
    """In a container NVML lists host pids (none match ours): memory above the launch baseline is
    held; a device back at its baseline (plus allocator slack) is released."""
    base = devmem.baseline(readers=(lambda: Reading({}, {"nvml:0": 1 << 30, "npu:0.0": 3 << 30}),))
    assert base == {"nvml:0": 1 << 30, "npu:0.0": 3 << 30}
    still = (lambda: Reading({123456: 40 << 30}, {"nvml:0": 41 << 30, "npu:0.0": 3 << 30}),)
    assert devmem.memory_held({77}, base, readers=still) == {0: 40 << 30}
    released = (lambda: Reading({}, {"nvml:0": (1 << 30) + 100 * MIB, "npu:0.0": 3 << 30}),)
    assert devmem.memory_held({77}, base, readers=released) == {}


def test_in_container_markers(tmp_path) -> None:
    assert devmem.in_container(str(tmp_path)) is False
    (tmp_path / ".dockerenv").write_text("")
    assert devmem.in_container(str(tmp_path)) is True
