"""Fixture facts replay: :class:`FixtureFacts` answers every
:class:`~vllm_deploy_wizard.detect.facts.Facts` method from a fixture file, so
``detect(FixtureFacts.load(path))`` runs the same probes as a live detect.

The pieces live by concept: fixture files and scenario expansion in :mod:`.fixture_scenario`, the
fake ``pynvml`` / ``amdsmi`` modules in :mod:`.fixture_fakes`, and :func:`~.fixture_capture.capture`
(live facts written in the same schema, redacted, for bug reports) in :mod:`.fixture_capture`.
"""

from __future__ import annotations

import fnmatch
import json
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from vllm_deploy_wizard.common.errors import DetectionError
from vllm_deploy_wizard.detect.facts import CommandResult
from vllm_deploy_wizard.detect.fixture_fakes import FakeAmdsmi, FakeNvml
from vllm_deploy_wizard.detect.fixture_scenario import SCHEMA, _load_yaml, expand_scenario, scenario_ids

DOCKER_VERSION = "docker version --format {{.Server.Version}}"
DOCKER_RUNTIMES = "docker info --format {{json .Runtimes}}"

__all__ = ["FixtureFacts", "SCHEMA", "DOCKER_VERSION", "DOCKER_RUNTIMES", "expand_scenario", "scenario_ids"]


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
    def load(cls, path: str | Path, scenario: str | None = None) -> FixtureFacts:
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
                from vllm_deploy_wizard.common.suggest import did_you_mean

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

    def cgroup_memory_usage(self) -> int | None:
        return self.host.get("cgroup_memory_usage")

    def pci(self) -> list[dict[str, Any]] | None:
        pci = self.data.get("pci", [])
        return None if pci is None or pci == "unavailable" else list(pci)

    def xe_vram_bytes(self, bdf: str) -> int | None:
        value = (self.data.get("xe_sysfs") or {}).get(bdf)
        try:
            return int(str(value), 0) if value is not None else None
        except ValueError:
            return None

    def xe_tiles(self, bdf: str) -> int | None:
        value = (self.data.get("xe_tiles") or {}).get(bdf)
        return int(value) if value is not None else None

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

    def existing_paths(self, paths: Sequence[str]) -> list[str]:
        present = set(self.host.get("existing_paths") or [])
        return [p for p in paths if p in present]

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
