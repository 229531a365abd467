"""Probes on a fake machine tree with injected vendor modules: missing, failing at init, failing
on one field — each yields a status and a reason, never an exception.

``LiveFacts(root=tmp, modules=...)`` is the seam: the live code reads a fake sysfs/procfs/dev tree
and gets the injected module instead of importing the real one (no sys.modules patching).
"""

from __future__ import annotations

import os
from pathlib import Path

from vllm_deploy_wizard.detect import detect
from vllm_deploy_wizard.detect.facts import LiveFacts
from vllm_deploy_wizard.detect.fixture_fakes import FakeNvml

H200_DEVICE = {
    "nvmlDeviceGetName": "NVIDIA H200", "nvmlDeviceGetUUID": "GPU-1",
    "nvmlDeviceGetPciInfo": {"busId": "00000000:18:00.0", "pciDeviceId": "0x233510de"},
    "nvmlDeviceGetMemoryInfo": {"total": 143771 << 20}, "nvmlDeviceGetCudaComputeCapability": [9, 0],
    "nvmlDeviceGetMigMode": [0, 0],
}


def make_tree(root: Path, *, dev_nodes=("nvidia0", "nvidiactl"), driver="nvidia") -> Path:
    """A minimal machine: one H200 on the PCI bus, 2 CPUs, 64 GiB RAM, one NUMA node."""
    dev = root / "sys/bus/pci/devices/0000:18:00.0"
    dev.mkdir(parents=True)
    for name, value in {"vendor": "0x10de", "device": "0x2335", "class": "0x030200", "numa_node": "0"}.items():
        (dev / name).write_text(value + "\n")
    if driver:
        (root / "sys/bus/pci/drivers" / driver).mkdir(parents=True)
        os.symlink(root / "sys/bus/pci/drivers" / driver, dev / "driver")
    (root / "proc").mkdir()
    (root / "proc/cpuinfo").write_text("processor\t: 0\nvendor_id\t: GenuineIntel\ncpu family\t: 6\nmodel\t\t: 207\n"
                                       "model name\t: INTEL(R) XEON(R) GOLD 6542Y\nflags\t\t: avx512f amx_tile\n\n")
    (root / "proc/meminfo").write_text("MemTotal:       67108864 kB\nMemAvailable:   60000000 kB\n")
    node = root / "sys/devices/system/node/node0"
    node.mkdir(parents=True)
    (node / "cpulist").write_text("0-1\n")
    (node / "meminfo").write_text("Node 0 MemTotal:       67108864 kB\n")
    (root / "dev").mkdir()
    for name in dev_nodes:
        (root / "dev" / name).write_text("")
    return root


def facts(root: Path, **modules) -> LiveFacts:
    return LiveFacts(root=root, env={"PATH": str(root / "bin")}, modules=modules)


def test_nvml_binding_missing_without_nvidia_smi_is_pci_only(tmp_path):
    inv = detect(facts(make_tree(tmp_path), pynvml=ImportError("No module named 'pynvml'"), amdsmi=ImportError()))
    assert inv.probes["nvidia"].status == "unavailable"
    assert "nvidia-ml-py" in inv.probes["nvidia"].reason
    assert inv.primary.pci_only and inv.primary.count == 1 and inv.primary.name == "NVIDIA H200"


def test_nvml_binding_missing_uses_nvidia_smi_from_path(tmp_path):
    root = make_tree(tmp_path)
    (root / "bin").mkdir()
    smi = root / "bin/nvidia-smi"
    smi.write_text("#!/bin/sh\necho '0, NVIDIA H200, 143771, 9.0, 00000000:18:00.0, 570.124.06'\n")
    smi.chmod(0o755)
    inv = detect(facts(root, pynvml=ImportError("No module named 'pynvml'")))
    assert inv.probes["nvidia"].status == "degraded"
    assert "used nvidia-smi instead" in inv.probes["nvidia"].reason
    dev = inv.primary.devices[0]
    assert (dev.name, dev.compute_arch, dev.memory_bytes, dev.bdf) == (
        "NVIDIA H200", "sm90", 143771 << 20, "0000:18:00.0")


def test_nvml_failing_at_init_reports_the_driver_problem(tmp_path):
    inv = detect(facts(make_tree(tmp_path), pynvml=FakeNvml({"init": "NVMLError_DriverNotLoaded"})))
    assert inv.probes["nvidia"].status == "unavailable"
    assert inv.probes["nvidia"].reason == "NVIDIA kernel driver is not loaded"
    assert inv.primary.pci_only


def test_nvml_failing_on_one_field_keeps_the_gpu_and_says_which_call(tmp_path):
    device = {**H200_DEVICE, "nvmlDeviceGetUUID": "NVMLError_FunctionNotFound"}
    inv = detect(facts(make_tree(tmp_path), pynvml=FakeNvml({"init": "ok", "devices": [device]})))
    assert inv.probes["nvidia"].status == "degraded"
    assert "nvmlDeviceGetUUID" in inv.probes["nvidia"].reason
    dev = inv.primary.devices[0]
    assert dev.name == "NVIDIA H200" and "uuid" not in dev.details and not inv.primary.pci_only


def test_unified_memory_gpu_falls_back_to_host_memory(tmp_path):
    device = {**H200_DEVICE, "nvmlDeviceGetName": "NVIDIA GB10", "nvmlDeviceGetCudaComputeCapability": [12, 1],
              "nvmlDeviceGetMemoryInfo": "NVMLError_NotSupported"}
    inv = detect(facts(make_tree(tmp_path), pynvml=FakeNvml({"init": "ok", "devices": [device]})))
    dev = inv.primary.devices[0]
    assert (dev.memory_source, dev.memory_bytes) == ("host_meminfo", 67108864 * 1024)
    assert inv.primary.flags["unified_memory"] is True


def test_container_without_device_nodes_says_gpus_were_not_passed_in(tmp_path):
    root = make_tree(tmp_path, dev_nodes=())
    (root / ".dockerenv").write_text("")
    inv = detect(facts(root, pynvml=FakeNvml({"init": "NVMLError_LibraryNotFound"})))
    assert inv.host.in_container
    assert "not passed into this container" in inv.primary.access_reason


def test_amdsmi_import_raising_keyerror_is_caught(tmp_path):
    root = make_tree(tmp_path)
    dev = root / "sys/bus/pci/devices/0000:26:00.0"
    dev.mkdir(parents=True)
    for name, value in {"vendor": "0x1002", "device": "0x74a1", "class": "0x120000"}.items():
        (dev / name).write_text(value)
    inv = detect(facts(root, pynvml=FakeNvml({"init": "NVMLError_LibraryNotFound"}),
                       amdsmi=KeyError("libamd_smi.so")))
    amd = next(g for g in inv.accelerators if g.brand == "AMD")
    assert inv.probes["amd"].status == "unavailable" and amd.pci_only and amd.count == 1
    assert "/dev/kfd" in inv.probes["amd"].reason


def test_a_probe_that_raises_becomes_status_error(tmp_path):
    def broken(ctx):
        raise RuntimeError("boom")

    inv = detect(facts(make_tree(tmp_path), pynvml=ImportError()), vendor_probes=(("nvidia", broken),))
    assert inv.probes["nvidia"].status == "error" and "boom" in inv.probes["nvidia"].reason
    assert inv.probes["cpu"].status == "ok"


def test_intel_xeon_tree_reads_generation_and_numa(tmp_path):
    inv = detect(facts(make_tree(tmp_path), pynvml=ImportError()))
    assert (inv.cpu.vendor, inv.cpu.generation, inv.cpu.is_xeon) == ("Intel", "xeon5", True)
    assert inv.host.ram_bytes == 67108864 * 1024 and inv.host.numa_nodes_with_cpus == 1


def test_nvml_capture_records_what_replay_reads_back(fixtures_dir):
    """The capture of an NVML session (run on a GPU host) replays to the same GPUs."""
    import yaml

    from vllm_deploy_wizard.detect.fixture import FixtureFacts
    from vllm_deploy_wizard.detect.fixture_capture import _nvml_block

    data = yaml.safe_load((fixtures_dir / "nvidia_hgx_8x_h200.yaml").read_text())
    recorded = _nvml_block(FakeNvml(data["nvml"]))
    assert recorded["nvmlDeviceGetCount"] == 8 and recorded["devices"][0]["nvlink"]["active_links"] == 18
    original = detect(FixtureFacts(data, fixtures_dir))
    data["nvml"] = recorded
    replayed = detect(FixtureFacts(data, fixtures_dir))

    def pick(inv):
        return [(d.name, d.bdf, d.compute_arch, d.memory_bytes) for d in inv.primary.devices]

    assert pick(replayed) == pick(original)
    assert replayed.primary.interconnect == "nvlink"


def test_jetson_without_nvml_is_reported_not_matched(tmp_path):
    root = make_tree(tmp_path)
    import shutil

    shutil.rmtree(root / "sys/bus/pci/devices/0000:18:00.0")
    (root / "etc").mkdir()
    (root / "etc/nv_tegra_release").write_text("# R36 (release)\n")
    inv = detect(facts(root, pynvml=FakeNvml({"init": "NVMLError_LibraryNotFound"})))
    assert inv.probes["nvidia"].status == "unavailable" and "Jetson" in inv.probes["nvidia"].reason
    assert inv.primary is None


def test_gpu_processes_sums_memory_per_pid_across_gpus(tmp_path):
    from vllm_deploy_wizard.detect.nvidia import gpu_processes

    dev0 = {**H200_DEVICE, "processes": [{"pid": 4242, "usedGpuMemory": 10 << 30}, {"pid": 7, "usedGpuMemory": None}]}
    dev1 = {**H200_DEVICE, "processes": [{"pid": 4242, "usedGpuMemory": 5 << 30}]}
    fake = FakeNvml({"init": "ok", "devices": [dev0, dev1]})
    assert gpu_processes(facts(make_tree(tmp_path), pynvml=fake)) == {4242: 15 << 30, 7: 0}
    assert gpu_processes(facts(tmp_path, pynvml=FakeNvml({"init": "NVMLError_DriverNotLoaded"}))) == {}


def test_numa_node_free_and_available_memory_and_cgroup_usage(tmp_path):
    """``free_bytes`` is the node's MemFree; ``available_bytes`` adds the page cache and reclaimable
    slab, as vLLM's CPU worker counts it; the cgroup's usage is read when a limit is set."""
    root = make_tree(tmp_path)
    (root / "sys/devices/system/node/node0/meminfo").write_text(
        "Node 0 MemTotal:       67108864 kB\nNode 0 MemFree:        1000000 kB\n"
        "Node 0 Active(file):     200000 kB\nNode 0 Inactive(file):   300000 kB\n"
        "Node 0 SReclaimable:      40000 kB\n")
    (root / "sys/fs/cgroup").mkdir(parents=True)
    (root / "sys/fs/cgroup/memory.max").write_text(f"{32 << 30}\n")
    (root / "sys/fs/cgroup/memory.current").write_text(f"{4 << 30}\n")
    inv = detect(facts(root, pynvml=ImportError()))
    [node] = inv.host.numa_nodes
    assert node.free_bytes == 1000000 * 1024
    assert node.available_bytes == (1000000 + 200000 + 300000 + 40000) * 1024
    assert (inv.host.cgroup_limit_bytes, inv.host.cgroup_usage_bytes) == (32 << 30, 4 << 30)


def test_numa_node_without_page_cache_lines_has_no_available_memory(tmp_path):
    inv = detect(facts(make_tree(tmp_path), pynvml=ImportError()))
    [node] = inv.host.numa_nodes
    assert node.mem_bytes == 67108864 * 1024 and node.available_bytes is None
    assert inv.host.cgroup_usage_bytes is None
