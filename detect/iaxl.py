"""Is this host ready for IAXL KVShrink? Every gap at once, each with the host step that closes it.

intel-accel-for-llm's ``setvars.sh`` assigns QAT devices, CPUs and DSA queues per tensor-parallel
rank and stops the launch when the host lacks them, one problem per attempt. ``launch`` asks
:func:`readiness` first and prints every gap together (docs/backends.md §11). The host setup steps
are the project's README ones (kernel command line, QAT driver + qatlib with ``POLICY=0``, the qat
service, the checkout); the wizard shows them and never runs them: they need root and a reboot.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from vllm_deploy_wizard.detect import cpu as cpu_mod
from vllm_deploy_wizard.detect import pci as pci_mod
from vllm_deploy_wizard.detect.facts import Facts, LiveFacts

#: Kernel command-line words the IOMMU scalable mode needs (shared virtual memory for QAT/DSA).
CMDLINE_WORDS = ("intel_iommu=on,sm_on", "iommu=pt")
CHECKOUT = "$HOME/intel-accel-for-llm"


@dataclass(frozen=True)
class Gap:
    """One thing the host lacks: ``what`` it is, what was found (``found``) and the ``steps`` to run."""

    what: str
    found: str
    steps: tuple[str, ...]

    def text(self) -> str:
        """``what (found: …); run: step1; step2``."""
        return f"{self.what} (found: {self.found}); run: " + "; ".join(self.steps)


#: The host setup of intel-accel-for-llm, in order (never run by the wizard).
HOST_SETUP_STEPS = (
    "sudo ./tools/setup_kernel_cmdline.sh && sudo reboot   # adds intel_iommu=on,sm_on iommu=pt",
    "sudo apt install qatlib-service libqat-dev libusdm-dev",
    "printf 'POLICY=0\\nServicesEnabled=dc\\n' | sudo tee /etc/sysconfig/qat",
    "sudo systemctl enable qat && sudo systemctl restart qat",
    "git clone https://github.com/intel/intel-accel-for-llm \"$HOME/intel-accel-for-llm\"",
)


def uses_iaxl(processes: Sequence[Mapping[str, Any]]) -> int | None:
    """``TP_SIZE`` of the first process whose ``--kv-transfer-config`` loads KVShrinkConnector (or
    whose setup sources setvars.sh with ``TP_SIZE`` in its env); None when no process uses IAXL."""
    for p in processes:
        argv = [str(t) for t in p.get("argv") or []]
        env = p.get("env") or {}
        if any("KVShrinkConnector" in t for t in argv) or ("setvars.sh" in str(p.get("setup") or "")
                                                           and "TP_SIZE" in env):
            try:
                return int(env.get("TP_SIZE", 1))
            except (TypeError, ValueError):
                return 1
    return None


def _cmdline_gap(facts: Facts) -> Gap | None:
    words = (facts.read_text("/proc/cmdline") or "").split()
    missing = [w for w in CMDLINE_WORDS if w not in words]
    if not missing:
        return None
    have = [w for w in words if w.startswith(("intel_iommu=", "iommu="))]
    return Gap(f"kernel command line lacks {' '.join(missing)}", " ".join(have) or "no IOMMU options",
               (HOST_SETUP_STEPS[0],))


def _qat_gaps(facts: Facts, tp_size: int) -> list[Gap]:
    gaps = []
    _, host_cpu = cpu_mod.probe(facts, pci_mod.scan(facts))
    if host_cpu.qat_pfs < tp_size:
        gaps.append(Gap(f"QAT devices: TP_SIZE={tp_size} needs {tp_size}", f"{host_cpu.qat_pfs} bound to a QAT driver",
                        (HOST_SETUP_STEPS[1], "or lower the tensor-parallel size / export KVSHRINK_QAT_DEVICES")))
    policy = facts.qat_config().get("POLICY")
    if policy != "0":
        gaps.append(Gap("/etc/sysconfig/qat needs POLICY=0 (each process sees every QAT device)",
                        f"POLICY={policy}" if policy is not None else "no /etc/sysconfig/qat",
                        (HOST_SETUP_STEPS[2], HOST_SETUP_STEPS[3])))
    result = facts.run(["systemctl", "is-active", "qat"]) if facts.which("systemctl") else None
    state = (result.stdout.strip() if result is not None and result.stdout else "") or "unknown"
    if state != "active":
        gaps.append(Gap("the qat service is not running", f"systemctl is-active qat: {state}", (HOST_SETUP_STEPS[3],)))
    return gaps


def _checkout_gap(facts: Facts) -> Gap | None:
    home = facts.env().get("HOME") or "/root"
    setvars = f"{home}/intel-accel-for-llm/setvars.sh"
    if facts.existing_paths([setvars]):
        return None
    return Gap("the intel-accel-for-llm checkout with setvars.sh", f"no {setvars}", (HOST_SETUP_STEPS[4],))


def readiness(tp_size: int, facts: Facts | None = None) -> list[Gap]:
    """Every IAXL host gap for a run with ``tp_size`` ranks, in host-setup order; [] when ready.

    Checks: kernel command line (``intel_iommu=on,sm_on iommu=pt``), QAT physical functions bound to
    a QAT driver ≥ ``tp_size``, ``POLICY=0`` in /etc/sysconfig/qat, the ``qat`` service active, and
    ``$HOME/intel-accel-for-llm/setvars.sh``. ``facts`` defaults to this machine. Never raises.
    """
    facts = facts or LiveFacts()
    gaps: list[Gap] = []
    for check in (lambda: [_cmdline_gap(facts)], lambda: _qat_gaps(facts, tp_size), lambda: [_checkout_gap(facts)]):
        try:
            gaps += [g for g in check() if g is not None]
        except Exception as exc:  # noqa: BLE001 - a check that cannot run is itself a gap to look at
            gaps.append(Gap("an IAXL host check could not run", f"{type(exc).__name__}: {exc}", ("check by hand",)))
    return gaps
