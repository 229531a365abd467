"""The preflight's CPU memory rule against the real vLLM CPU build (docs/supervision.md §13
``cpu-memory``): on a NUMA node with less than ``--gpu-memory-utilization`` 0.9 of its memory free,
vLLM refuses to start without an explicit KV cache size and starts with ``VLLM_CPU_KVCACHE_SPACE``;
the preflight, keyed to the installed vLLM's version, refuses and accepts exactly the same.

One vLLM start per case, each bounded by a deadline. A fixture holds memory when this machine has
so much free that 0.9 of the node would fit (other work usually holds enough already)."""

from __future__ import annotations

import os
import signal
import subprocess
import threading
import time

import pytest

from vllm_deploy_wizard.launcher.launch import NodeFacts, node_facts, node_problems
from vllm_deploy_wizard.launcher.ports import free_port
from vllm_deploy_wizard.launcher.preflight import installed_version
from vllm_deploy_wizard.launcher.spec import ProcessSpec, RunSpec

pytestmark = pytest.mark.e2e

GIB = 2**30
UTIL = 0.9
#: How far below UTIL × total the free memory is held (what others free meanwhile must not close it).
MARGIN_BYTES = GIB // 2
#: The most this test holds itself; a machine needing more is left alone (skip).
MAX_HOLD_BYTES = 6 * GIB
#: vLLM's worker check (explicit KV size: passed) and refusal (no KV size), vllm/v1/worker/cpu_worker.py 0.32.
PASSED = "Explicitly set ("
REFUSED = "less than desired CPU memory utilization"



def _live_facts() -> NodeFacts:
    from vllm_deploy_wizard.detect import detect

    return node_facts(detect().host)


@pytest.fixture
def short_node():
    """The live node's facts with its free memory below UTIL of the NUMA node by MARGIN_BYTES,
    holding (written, so resident) memory for the test when needed."""
    facts = _live_facts()
    if not facts.numa_mem_total_bytes or facts.numa_mem_free_bytes is None:
        pytest.skip("NUMA memory of this node unknown")
    need = facts.numa_mem_free_bytes - int(UTIL * facts.numa_mem_total_bytes) + MARGIN_BYTES
    if need > MAX_HOLD_BYTES:
        pytest.skip(f"would have to hold {need / GIB:.1f} GiB to get below {UTIL} of the NUMA node")
    held = b"\x01" * need if need > 0 else b""
    yield _live_facts()
    del held


def _serve(real, *, kv_space: str | None) -> ProcessSpec:
    env = {"HF_HUB_OFFLINE": "1", **({"VLLM_CPU_KVCACHE_SPACE": kv_space} if kv_space else {})}
    return ProcessSpec(name="vllm", argv=(str(real["vllm"] / "vllm"), "serve", str(real["model"]), "--host",
                                          "127.0.0.1", "--port", str(free_port()), "--gpu-memory-utilization",
                                          str(UTIL), "--max-model-len", "256", "--enforce-eager", "--dtype",
                                          "float32"), env=env)


def _vllm_verdict(p: ProcessSpec, deadline_s: float = 300) -> str:
    """Start ``p`` and read its output until vLLM's own CPU memory check passes (``"passed"``),
    refuses (``"refused"``), the process ends otherwise or the deadline passes; the process group
    is ended before returning."""
    env = {k: v for k, v in os.environ.items() if k != "VLLM_CPU_KVCACHE_SPACE"}
    env.update(p.env)
    proc = subprocess.Popen(list(p.argv), env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                            stdin=subprocess.DEVNULL, start_new_session=True)
    verdict: list[str] = []
    lines: list[str] = []

    def read() -> None:
        for line in proc.stdout:  # a thread: the deadline below bounds the wait
            lines.append(line)
            if PASSED in line or REFUSED in line:
                verdict.append("passed" if PASSED in line else "refused")
                return
        verdict.append(f"exited {proc.wait()}")

    reader = threading.Thread(target=read, daemon=True)
    reader.start()
    reader.join(deadline_s)
    try:
        os.killpg(proc.pid, signal.SIGTERM)
        proc.wait(20)
    except (ProcessLookupError, subprocess.TimeoutExpired):
        os.killpg(proc.pid, signal.SIGKILL)
    assert verdict, f"no verdict from vLLM within {deadline_s} s:\n" + "".join(lines[-20:])
    return verdict[0] + ("" if verdict[0] in ("passed", "refused") else ":\n" + "".join(lines[-20:]))


def _preflight_refuses(p: ProcessSpec, facts: NodeFacts) -> bool:
    version = installed_version(p, dict(os.environ), read=True)
    assert version and version.startswith("0.32"), version
    return any("NUMA node" in x for x in node_problems(RunSpec((p,)), facts, "cpu", vllm_versions={"vllm": version}))


def test_without_a_kv_size_vllm_and_the_preflight_both_refuse(real, short_node):
    p = _serve(real, kv_space=None)
    assert _preflight_refuses(p, short_node)
    assert _vllm_verdict(p) == "refused"


def test_with_a_kv_size_vllm_and_the_preflight_both_accept(real, short_node):
    started = time.monotonic()
    p = _serve(real, kv_space="1")
    assert not _preflight_refuses(p, short_node)
    assert _vllm_verdict(p) == "passed", f"after {time.monotonic() - started:.0f} s"
