"""What one plan process runs in its container (``plan … --k8s``; docs/multi-node.md §3): the argv
inside the image (a ``docker run`` unwrapped), the device-plugin resource it requests, and the
ports it listens on besides its own ``ports`` (its KV connector's: :func:`kv_ports`)."""

from __future__ import annotations

import json
from collections.abc import Mapping
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

from vllm_deploy_wizard.common import backends_registry
from vllm_deploy_wizard.common.flags import last_flag_value

#: Device-plugin resource per hardware brand (and Intel compute arch): what a pod requests (docs/backends.md §13).
DEVICE_RESOURCES: dict[str, str] = backends_registry.device_resources()
#: vLLM's NIXL side-channel port when ``VLLM_NIXL_SIDE_CHANNEL_PORT`` is unset (vLLM 0.32.0 ``vllm/envs.py``);
#: each data-parallel rank listens on this port + its DP index
#: (``vllm/distributed/kv_transfer/kv_connector/v1/nixl/base_scheduler.py``).
NIXL_SIDE_CHANNEL_PORT = 5600
CONTAINER_CLIENTS = ("docker", "podman", "nerdctl")
_FLAGS_WITH_VALUE = ("-e", "--env", "-v", "--volume", "-p", "--publish", "--device", "--name", "--network",
                     "--ipc", "--shm-size", "--gpus", "-w", "--workdir", "--entrypoint", "--ulimit", "--cap-add",
                     "--security-opt", "--group-add", "-u", "--user", "--runtime", "--env-file", "--mount")



def device_resource(vendor: str | None, arch: str | None = None) -> str | None:
    """The device-plugin resource for a hardware brand (``NVIDIA`` → ``nvidia.com/gpu``); Intel
    GPUs by ``arch`` (``xpu``/``xe`` → xe, ``i915`` → i915); None for CPUs and unknown brands
    (the backend registry's, docs/backends.md §13)."""
    return backends_registry.device_resource(vendor, arch)


def docker_image(proc: Mapping[str, Any]) -> str | None:
    """The image a ``docker run …`` argv runs (its first word that is no option), None for another argv."""
    argv = [str(a) for a in proc.get("argv") or []]
    if not argv or Path(argv[0]).name not in CONTAINER_CLIENTS:
        return None
    i = 2 if len(argv) > 1 and argv[1] == "run" else 1
    while i < len(argv):
        if argv[i] in _FLAGS_WITH_VALUE:
            i += 2
            continue
        if not argv[i].startswith("-"):
            return argv[i]
        i += 1
    return None


def runs_vllm(image: str | None) -> bool:
    """Whether a plan's docker image has vLLM's entrypoint (``vllm serve``): the vLLM images of each
    vendor carry ``vllm`` in their name; another (Dynamo's etcd) runs its own command."""
    return image is None or "vllm" in image.lower()


def container_command(proc: Mapping[str, Any], image: str | None) -> tuple[list[str], dict[str, str]]:
    """(argv inside the container, env) of a plan process: a ``docker run … IMAGE ARGS`` argv
    becomes ``vllm serve ARGS`` (the vLLM images' entrypoint) with its ``-e K=V`` in env; one of
    another image (:func:`runs_vllm`) keeps ``ARGS``."""
    argv = [str(a) for a in proc.get("argv") or []]
    env = {str(k): str(v) for k, v in (proc.get("env") or {}).items()}
    if not argv or Path(argv[0]).name not in CONTAINER_CLIENTS:
        return argv, env
    i = 2 if len(argv) > 1 and argv[1] == "run" else 1
    while i < len(argv):
        tok = argv[i]
        if image and tok == image:
            break
        if tok in ("-e", "--env") and i + 1 < len(argv):
            k, _, v = argv[i + 1].partition("=")
            env[k] = v
        if tok in _FLAGS_WITH_VALUE:
            i += 2
            continue
        if not tok.startswith("-"):
            break  # the image
        i += 1
    rest = argv[i + 1:]
    if rest and (rest[0] in ("vllm", "python", "python3", "bash", "sh") or not runs_vllm(docker_image(proc))):
        return rest, env
    return ["vllm", "serve", *rest], env


def side_channel_ports(argv: list[str], env: Mapping[str, str]) -> list[int]:
    """The NIXL side-channel ports an engine listens on (vLLM 0.32.0
    ``vllm/distributed/kv_transfer/kv_connector/v1/nixl/base_scheduler.py``: the base port +
    the data-parallel index of each rank it runs): ``[]`` without a NixlConnector; base
    ``VLLM_NIXL_SIDE_CHANNEL_PORT`` (default :data:`NIXL_SIDE_CHANNEL_PORT`); ranks from
    ``--data-parallel-start-rank`` (0) over ``--data-parallel-size-local`` (else 1). Only the engine's
    own ``--kv-transfer-config`` counts (a router that registers NIXL workers binds no side channel)."""
    if "NixlConnector" not in (last_flag_value(argv, "--kv-transfer-config") or ""):
        return []
    base = str(env.get("VLLM_NIXL_SIDE_CHANNEL_PORT") or NIXL_SIDE_CHANNEL_PORT)
    if not base.isdigit():
        return []
    start = last_flag_value(argv, "--data-parallel-start-rank") or "0"
    local = last_flag_value(argv, "--data-parallel-size-local") or "1"
    start_n = int(start) if start.isdigit() else 0
    local_n = int(local) if local.isdigit() else 1
    return [int(base) + start_n + i for i in range(local_n)]


def moriio_ports(argv: list[str]) -> list[int]:
    """The ports a MoRIIO engine listens on for its peers (vLLM 0.32.0
    ``vllm/distributed/kv_transfer/kv_connector/v1/moriio/moriio_common.py``): ``handshake_port``,
    and ``notify_port`` + ``get_port_offset(dp_rank, tp_rank)`` (= local DP rank + TP rank) for each
    rank on the node; a router's ``--vllm-discovery-address HOST:PORT`` (where engines register);
    ``[]`` otherwise. (Its KV port is any free port, no Service can list it: pods reach it by IP.)"""
    discovery = last_flag_value(argv, "--vllm-discovery-address")
    if discovery and discovery.rpartition(":")[2].isdigit():
        return [int(discovery.rpartition(":")[2])]
    config = last_flag_value(argv, "--kv-transfer-config") or ""
    if "MoRIIOConnector" not in config:
        return []
    try:
        extra = json.loads(config).get("kv_connector_extra_config") or {}
        handshake, notify = int(extra["handshake_port"]), int(extra["notify_port"])
    except (ValueError, KeyError, TypeError, AttributeError):
        return []
    tp = last_flag_value(argv, "--tensor-parallel-size") or "1"
    local = last_flag_value(argv, "--data-parallel-size-local") or "1"
    tp_n, local_n = (int(tp) if tp.isdigit() else 1), (int(local) if local.isdigit() else 1)
    return sorted({handshake, *(notify + d + t for d in range(local_n) for t in range(tp_n))})


def kv_ports(argv: list[str], env: Mapping[str, str]) -> list[int]:
    """Every port a process's KV connector listens on for its peers: NIXL's side channel
    (:func:`side_channel_ports`) and MoRIIO's (:func:`moriio_ports`)."""
    return sorted({*side_channel_ports(argv, env), *moriio_ports(argv)})


def port_of(url: str) -> int | None:
    """The port of ``url`` (None when it names none or is malformed)."""
    try:
        return urlsplit(url).port
    except ValueError:
        return None
