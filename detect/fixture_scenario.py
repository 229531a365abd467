"""Fixture files (schema ``vllm-wizard/detect-fixture/v1``) and scenario expansion.

``failure_modes.yaml`` holds short *scenarios* that list only what differs from a healthy host
(its ``summary``). :func:`expand_scenario` turns one into a full fixture: a ``based_on`` file is
the starting point; otherwise facts the scenario does not state come from a healthy host — device
nodes for each PCI device that has a driver (or no ``driver`` key), and, for a vendor whose library
state is not stated, the library view of a sibling full fixture with the same PCI id.
"""

from __future__ import annotations

import copy
import functools
from pathlib import Path
from typing import Any

import yaml

from vllm_deploy_wizard.common import yamlio
from vllm_deploy_wizard.common.errors import DetectionError
from vllm_deploy_wizard.detect.nvidia import NVIDIA_SMI_QUERY
from vllm_deploy_wizard.detect.pci import AMD, GOOGLE, HUAWEI, INTEL, NVIDIA

SCHEMA = "vllm-wizard/detect-fixture/v1"


def _load_yaml(path: Path) -> Any:
    """A fixture file's YAML; DetectionError naming the file when unreadable, not UTF-8 or not YAML."""
    from vllm_deploy_wizard.common.errors import not_utf8

    try:
        return yamlio.load(path.read_text(encoding="utf-8"))
    except OSError as exc:
        raise DetectionError(f"{path}: cannot read detection fixture ({exc.strerror})") from None
    except UnicodeDecodeError as exc:
        raise DetectionError(not_utf8(path, exc, "a detection fixture: a capture written by "
                                      "`vllm-wizard detect --capture FILE` (YAML)")) from None
    except yaml.YAMLError as exc:
        raise DetectionError(yamlio.error_message(path, exc)) from None


def _expand_pci(spec: Any) -> list[dict[str, Any]] | None:
    if spec == "unavailable":
        return None
    out: list[dict[str, Any]] = []
    for item in spec if isinstance(spec, list) else [spec]:
        for _ in range(int(item.get("count", 1))):
            entry = {k: v for k, v in item.items() if k != "count"}
            entry["bdf"] = f"0000:{0x10 + len(out):02x}:00.0"
            entry.setdefault("device", "0x0000")
            entry.setdefault("iommu_group", len(out))
            out.append(entry)
    return out


def _healthy_dev_nodes(pci: list[dict[str, Any]] | None) -> list[str]:
    nodes: list[str] = []
    counters: dict[str, int] = {}
    for entry in pci or []:
        if "driver" in entry and entry["driver"] is None:
            continue
        vendor = str(entry.get("vendor"))
        i = counters.get(vendor, 0)
        counters[vendor] = i + 1
        if vendor == NVIDIA:
            nodes += ["/dev/nvidiactl", f"/dev/nvidia{i}"]
        elif vendor == AMD:
            nodes += ["/dev/kfd", f"/dev/dri/renderD{128 + i}"]
        elif vendor == INTEL:
            nodes += [f"/dev/dri/renderD{128 + i}"]
        elif vendor == HUAWEI:
            nodes += [f"/dev/davinci{i}", "/dev/davinci_manager", "/dev/devmm_svm", "/dev/hisi_hdc"]
        elif vendor == GOOGLE:
            nodes += ["/dev/vfio/vfio", f"/dev/vfio/{entry.get('iommu_group', i)}"]
    return sorted(set(nodes))


@functools.lru_cache(maxsize=8)
def _siblings(directory: Path) -> dict[str, dict[str, Any]]:
    """Device records of the full fixtures in ``directory``, keyed ``nvml:<pci id>``/``amd:<pci id>``.

    Cached per directory; callers copy what they take (see :func:`expand_scenario`)."""
    out: dict[str, dict[str, Any]] = {}
    for path in sorted(directory.glob("*.yaml")):
        try:
            data = yamlio.load(path.read_text(encoding="utf-8"))
        except (OSError, UnicodeDecodeError, yaml.YAMLError):
            continue
        if not isinstance(data, dict) or "scenarios" in data:
            continue
        for dev in (data.get("nvml") or {}).get("devices") or []:
            pci_id = str((dev.get("nvmlDeviceGetPciInfo") or {}).get("pciDeviceId", ""))
            if pci_id.startswith("0x") and len(pci_id) == 10:
                out.setdefault(f"nvml:0x{pci_id[2:6]}", dev)
        for dev in (data.get("amdsmi") or {}).get("devices") or []:
            out.setdefault(f"amd:{(dev.get('amdsmi_get_gpu_asic_info') or {}).get('device_id')}", dev)
    return out


def _expand_indices(devices: list[dict[str, Any]]) -> list[dict[str, Any]]:
    out: list[dict[str, Any]] = []
    for dev in devices:
        index = dev.get("index", len(out))
        if isinstance(index, str) and ".." in index:
            lo, hi = (int(x) for x in index.split(".."))
            out += [{**dev, "index": i} for i in range(lo, hi + 1)]
        else:
            out.append(dev)
    return out


def _nvml_device(dev: dict[str, Any], bdf: str) -> dict[str, Any]:
    full = {k: v for k, v in dev.items() if k not in ("memory_total_mib", "cc")}
    if "memory_total_mib" in dev:
        full["nvmlDeviceGetMemoryInfo"] = {"total": int(dev["memory_total_mib"]) << 20}
    if "cc" in dev:
        full["nvmlDeviceGetCudaComputeCapability"] = list(dev["cc"])
    full.setdefault("nvmlDeviceGetPciInfo", {"busId": "0000" + bdf})
    return full


def _render_npu_smi(rows: list[dict[str, Any]], npu_ids: int, pci: list[dict[str, Any]] | None) -> str:
    buses = [e["bdf"] for e in pci or []]
    lines = ["| NPU   Name                | Health        | Power(W)    Temp(C)           Hugepages-Usage(page)|",
             "| Chip  Phy-ID              | Bus-Id        | AICore(%)   Memory-Usage(MB)  HBM-Usage(MB)        |"]
    phy = 0
    for npu in range(npu_ids):
        for row in rows:
            for chip in range(int(row.get("chips", 1))):
                bus = buses[phy] if phy < len(buses) else f"0000:{0x80 + phy:02x}:00.0"
                lines.append(f"| {npu}     {row['name']}  | OK  | 100.0  35  0 / 0 |")
                lines.append(f"| {chip}     {phy}  | {bus.upper()} | 0  0 / 0  3000 / {row.get('hbm_mb', 0)} |")
                phy += 1
    return "\n".join(lines) + "\n"


def expand_scenario(scenario: dict[str, Any], directory: Path) -> dict[str, Any]:
    """A ``failure_modes.yaml`` scenario → a full fixture dict (rules in the module docstring)."""
    sc = scenario
    based = sc.get("based_on")
    data: dict[str, Any] = copy.deepcopy(_load_yaml(directory / based)) if based else {"schema": SCHEMA}
    data["id"], data["expected"] = sc.get("id"), sc.get("expected", {})
    data["env"] = {**(data.get("env") or {}), **(sc.get("env") or {})}
    host = data.setdefault("host", {})
    software = data.setdefault("software", {})
    commands = data.setdefault("commands", {})
    on_path = data.setdefault("on_path", [])
    if "host_arch" in sc:
        host["arch"] = sc["host_arch"]
    if "os_release_contains" in sc:
        host["proc_version"] = f"Linux version 5.15.0 ({sc['os_release_contains']}-standard-WSL2)"
    if "kernel" in sc:
        host["kernel"] = str(sc["kernel"])
    if isinstance(sc.get("cpuinfo"), dict):
        c = sc["cpuinfo"]
        host["cpuinfo"] = (f"processor\t: 0\nvendor_id\t: {c.get('vendor_id')}\ncpu family\t: {c.get('family')}\n"
                           f"model\t\t: {c.get('model')}\nmodel name\t: {c.get('model_name')}\n"
                           f"flags\t\t: fpu sse sse2 {' '.join(c.get('flags_has') or [])}")
    if "pci" in sc:
        data["pci"] = _expand_pci(sc["pci"])
    if "dev_nodes" in sc:
        host["dev_nodes"] = list(sc["dev_nodes"])
    elif not based:
        host["dev_nodes"] = _healthy_dev_nodes(data.get("pci"))
    if "dev_kfd_access" in sc:
        host["dev_kfd_access"] = sc["dev_kfd_access"]
    if sc.get("in_container"):
        software["in_container"] = True
    probes = sc.get("probes") or {}
    pci = data.get("pci") or []
    siblings = copy.deepcopy(_siblings(directory.resolve())) if not based else {}
    bdfs = {v: [e["bdf"] for e in pci if e.get("vendor") == v] for v in (NVIDIA, AMD, INTEL)}
    # NVIDIA library view.
    if probes.get("import_pynvml"):
        data["nvml"] = {"import": probes["import_pynvml"]}
    elif probes.get("nvmlInit"):
        data["nvml"] = {"init": probes["nvmlInit"]}
    elif "nvml" in sc:
        devs = _expand_indices(sc["nvml"].get("devices") or [])
        nv_bdfs = bdfs[NVIDIA]
        data["nvml"] = {"init": "ok", "devices": [
            _nvml_device(d, nv_bdfs[i] if i < len(nv_bdfs) else f"0000:{0x10 + i:02x}:00.0")
            for i, d in enumerate(devs)]}
    elif not based and bdfs[NVIDIA]:
        sib = siblings.get(f"nvml:{pci[0].get('device')}") if pci else None
        nv = [e for e in pci if e.get("vendor") == NVIDIA]
        if sib and all(e.get("driver") for e in nv):
            data["nvml"] = {"init": "ok", "devices": [
                {**sib, "index": i, "nvmlDeviceGetPciInfo": {**sib.get("nvmlDeviceGetPciInfo", {}),
                                                             "busId": "0000" + e["bdf"]}}
                for i, e in enumerate(nv)]}
    if probes.get("nvidia_smi_csv"):
        commands[" ".join(NVIDIA_SMI_QUERY)] = probes["nvidia_smi_csv"]
        on_path.append("nvidia-smi")
    # AMD library view.
    if probes.get("import_amdsmi"):
        data["amdsmi"] = {"import": probes["import_amdsmi"]}
    elif "amdsmi_get_processor_handles" in probes:
        data["amdsmi"] = {"init": probes.get("amdsmi_init", "ok"),
                          "devices": list(probes["amdsmi_get_processor_handles"])}
    elif isinstance(sc.get("amdsmi"), dict):
        block = sc["amdsmi"]
        handles, cards = int(block.get("processor_handles", 0)), max(1, len(bdfs[AMD]))
        per = block.get("per_handle") or {}
        devices = []
        for h in range(handles):
            card = h * cards // handles if handles else 0
            first = h % (handles // cards or 1) == 0
            devices.append({
                "amdsmi_get_gpu_asic_info": {"market_name": per.get("market_name"),
                                             "target_graphics_version": per.get("target_graphics_version"),
                                             "device_id": pci[0].get("device") if pci else None},
                "amdsmi_get_gpu_vram_info": {"vram_size": per.get("vram_size_mb_reported")},
                "amdsmi_get_gpu_device_bdf": bdfs[AMD][card] if bdfs[AMD] else f"0000:{card:02x}:00.0",
                "compute_partition": block.get("compute_partition_first_of_each_card") if first
                else block.get("compute_partition_others"),
                "memory_partition": block.get("memory_partition_first_of_each_card") if first else "N/A",
            })
        data["amdsmi"] = {"init": "ok", "devices": devices}
    elif not based and bdfs[AMD]:
        sib = siblings.get(f"amd:{pci[0].get('device')}") if pci else None
        if sib:
            data["amdsmi"] = {"init": "ok", "topo_link_type_any_pair": {"hops": 1, "type": 2},
                              "devices": [{**sib, "amdsmi_get_gpu_device_bdf": b} for b in bdfs[AMD]]}
    if isinstance(sc.get("sysfs"), dict):
        data["amd_sysfs"] = {
            "vram_total_bytes": [int(sc["sysfs"]["drm_card_device_mem_info_vram_total"])] * max(1, len(bdfs[AMD]))
            if "drm_card_device_mem_info_vram_total" in sc["sysfs"] else [],
            "gfx_target_versions": [int(sc["sysfs"]["kfd_gfx_target_version"])]
            if "kfd_gfx_target_version" in sc["sysfs"] else [],
        }
    # Ascend, TPU, Intel extras.
    if isinstance(sc.get("npu_smi"), dict):
        npu = sc["npu_smi"]
        commands["npu-smi info"] = _render_npu_smi(npu.get("rows") or [], int(npu.get("npu_ids", 1)), pci)
        on_path.append("npu-smi")
    if isinstance(sc.get("tpu_info"), dict):
        data["tpu_info"] = {**(data.get("tpu_info") or {}), **sc["tpu_info"]}
    if isinstance(sc.get("xpu_smi"), dict):
        name = sc["xpu_smi"].get("device_name")
        data["xpu_smi_discovery_json"] = {"device_list": [
            {"device_id": i, "device_name": name, "pci_bdf_address": b} for i, b in enumerate(bdfs[INTEL])]}
    return data


def scenario_ids(path: str | Path) -> list[str]:
    """Ids of the scenarios in a scenario file (``failure_modes.yaml``); [] for a machine fixture."""
    data = _load_yaml(Path(path))
    return [str(s.get("id")) for s in data.get("scenarios") or []] if isinstance(data, dict) else []
