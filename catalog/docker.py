"""Docker form of serve processes: image choice and ``docker run`` argv.

``shared/spec/recipes-synthesis.md`` §2.10 (``computeDockerMeta``) and ``plan-json.md`` §3.4
(``buildDockerArgv``). Only ``vllm serve`` processes are wrapped; routers, Mooncake processes and
companions never are.

Reference quirk kept on purpose (plan-json §5): Huawei (and seed Zhenwu) hardware takes the
``nvidia`` brand key.
"""

from __future__ import annotations

from typing import Any

from .models import HardwareProfile, ModelSpec, Variant

#: Default images per brand key (§2.10).
DEFAULT_IMAGES = {
    "nvidia": "vllm/vllm-openai:latest",
    "amd": "vllm/vllm-openai-rocm:latest",
    "tpu": "vllm/vllm-tpu:latest",
    "intel_cpu": "vllm/vllm-openai-cpu:latest-x86_64",
    "xpu": "vllm/vllm-openai-xpu:latest",
}
#: Nightly defaults (``model.nightly_required``); Intel has none (§2.10).
NIGHTLY_IMAGES = {
    "nvidia": "vllm/vllm-openai:nightly",
    "amd": "vllm/vllm-openai-rocm:nightly",
    "tpu": "vllm/vllm-tpu:nightly",
}
#: Device flags per brand key (plan-json §3.4).
GPU_ARGS = {
    "nvidia": ["--gpus", "all"],
    "amd": ["--device=/dev/kfd", "--device=/dev/dri", "--security-opt", "seccomp=unconfined", "--group-add", "video"],
    "tpu": ["--privileged", "--network", "host", "-v", "/dev/shm:/dev/shm"],
    "xpu": ["--device", "/dev/dri", "-v", "/dev/dri/by-path:/dev/dri/by-path", "--shm-size", "16g"],
    "intel_cpu": ["--shm-size", "16g"],
}
HF_CACHE_MOUNT = "~/.cache/huggingface:/root/.cache/huggingface"
CUDA_KEYS = ("cu129", "cu130")


def brand_key(profile: HardwareProfile) -> str:
    """``tpu`` | ``amd`` | ``intel`` | ``nvidia`` (§2.10; Huawei/Zhenwu fall into nvidia)."""
    gen = profile.gen
    if gen == "tpu":
        return "tpu"
    if profile.brand == "AMD":
        return "amd"
    if gen in ("cpu", "xpu") or profile.brand == "Intel":
        return "intel"
    return "nvidia"


def device_key(profile: HardwareProfile) -> str:
    """Key of :data:`GPU_ARGS` / :data:`DEFAULT_IMAGES`: brand key with Intel split into xpu/cpu."""
    key = brand_key(profile)
    if key == "intel":
        return "xpu" if profile.gen == "xpu" else "intel_cpu"
    return key


def _pick(value: Any, key: str, cuda: str) -> str | None:
    """Image from one precedence level: string (NVIDIA pin), CUDA map, or brand map (§2.10)."""
    if value is None:
        return None
    if isinstance(value, str):
        return value if key == "nvidia" else None
    if isinstance(value, dict):
        if any(k in value for k in CUDA_KEYS):
            return value.get(cuda) if key == "nvidia" else None
        inner = value.get(key)
        if isinstance(inner, dict):
            return inner.get(cuda)
        return inner if isinstance(inner, str) else None
    return None


def docker_image(profile: HardwareProfile, hw_id: str, model: ModelSpec, variant: Variant,
                 cuda: str = "cu130") -> str:
    """The serve image (``computeDockerMeta``, §2.10; seed §4.1 profile image).

    Precedence: variant exact-hw ``hardware_overrides[hw].docker_image`` (any brand) → seed profile
    ``docker_image`` → variant ``docker_image`` → model ``docker_image`` → default (``:nightly`` with
    ``model.nightly_required``; Intel has no nightly image and keeps its ``latest`` default —
    the goldens pin this, e.g. Muse-Glimmer on Arc).
    """
    key = brand_key(profile)
    ho = variant.hardware_overrides.get(hw_id)
    if ho is not None and isinstance(ho.docker_image, str):
        return ho.docker_image
    if profile.docker_image:
        return profile.docker_image
    for level in (variant.docker_image, model.docker_image):
        image = _pick(level, key, cuda)
        if image:
            return image
    dkey = device_key(profile)
    if model.nightly_required and dkey in NIGHTLY_IMAGES:
        return NIGHTLY_IMAGES[dkey]
    return DEFAULT_IMAGES[dkey]  # Intel has no nightly default: the goldens keep :latest


def last_port(argv: list[str], default: int = 8000) -> int:
    """Value of the last ``--port`` in ``argv`` (plan-json §3.4), else ``default``."""
    port = default
    for i, tok in enumerate(argv[:-1]):
        if tok == "--port" and argv[i + 1].isdigit():
            port = int(argv[i + 1])
    return port


def docker_argv(serve_argv: list[str], env: dict[str, str], image: str, profile: HardwareProfile,
                extra_flags: list[str] | None = None) -> list[str]:
    """``buildDockerArgv`` over a pip serve argv ``["vllm", "serve", model, *args]`` (plan-json §3.4).

    ``extra_flags`` (seed connector docker block, e.g. ``--network host --ulimit memlock=-1``) go
    after the device flags.
    """
    model_id, args = serve_argv[2], serve_argv[3:]
    port = last_port(serve_argv)
    out = ["docker", "run", *GPU_ARGS[device_key(profile)], *(extra_flags or []),
           "--privileged", "--ipc=host", "-p", f"{port}:{port}", "-v", HF_CACHE_MOUNT]
    if model_id.startswith("/"):
        out += ["-v", f"{model_id}:{model_id}:ro"]
    for key, value in env.items():
        if key.endswith("_CONFIG_PATH"):
            out += ["-v", f"{value}:{value}:ro"]
    for key, value in env.items():
        out += ["-e", f"{key}={value}"]
    out += [image, model_id, *args]
    return out
