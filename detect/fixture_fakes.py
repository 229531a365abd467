"""Fake vendor libraries for fixture replay: ``pynvml`` and ``amdsmi`` call surfaces answered from a
fixture's ``nvml`` / ``amdsmi`` blocks (a value ``"NVMLError_NotSupported"`` makes that call raise an
exception class of that name, as pynvml's generated classes do)."""

from __future__ import annotations

from types import SimpleNamespace
from typing import Any


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

    def nvmlDeviceGetMemoryInfo(self, h: Any, version: Any = None) -> SimpleNamespace:
        if isinstance(h, tuple):  # a MIG device handle (parent, index): the instance's own memory
            mig = self._devices[h[0]]["mig_devices"][h[1]]
            total = int(mig.get("memory_mib", 0)) << 20
            return SimpleNamespace(total=total, free=total, used=0)
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
