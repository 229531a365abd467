"""Huawei Ascend through vllm-ascend: which chip series a profile is, and what vllm-ascend ships for it.

Facts from vllm-ascend's documentation (docs/backends.md §3 cites the pages):

* the image matrix tags one image per chip series of a release: ``vX.Y.Z`` for Atlas A2
  (910B), ``vX.Y.Z-a3`` for Atlas A3 (910C) and ``vX.Y.Z-950dt`` for Atlas 950DT
  (quay.io/ascend/vllm-ascend, Quick Start "Pull the image");
* the pip install is documented for Atlas A2 only ("It's usually the Atlas 800 A2 series"), with
  ``vllm`` and ``vllm-ascend`` pinned to one row of the release compatibility matrix
  (:data:`ASCEND_RELEASE`, the validated stack of the installation guide);
* 950PR is not in the supported-hardware list (A2, A3, Atlas inference 300I DUO / 200I Pro, 950DT):
  a plan for it is refused unless ``--allow-unverified``, then marked unverified.
"""

from __future__ import annotations

from .models import HardwareProfile

#: The vllm-ascend release whose validated stack the plans install (installation guide,
#: "Validated hardware and software stack": vLLM 0.23.0 with vLLM Ascend 0.23.0, CANN 9.1.0).
ASCEND_RELEASE = "0.23.0"
#: The vLLM release that ``vllm-ascend`` :data:`ASCEND_RELEASE` is validated with.
ASCEND_VLLM_RELEASE = "0.23.0"
ASCEND_REPOSITORY = "quay.io/ascend/vllm-ascend"
#: Image tag suffix per chip series (vllm-ascend image matrix); A2 has none.
IMAGE_SUFFIX = {"a2": "", "a3": "-a3", "950dt": "-950dt"}
#: Series vllm-ascend's pip install is documented for.
PIP_SERIES = frozenset({"a2"})
#: Why a 950PR plan is unverified (or refused without --allow-unverified).
UNSUPPORTED_950PR = (
    "Ascend 950PR is not in vllm-ascend's supported hardware (Atlas A2, Atlas A3, Atlas 300I DUO / 200I Pro, "
    "Atlas 950DT) and no vllm-ascend image is tagged for it (docs/backends.md §3)"
)


def ascend_series(profile: HardwareProfile) -> str:
    """The chip series of an Ascend profile: ``a2`` | ``a3`` | ``950dt`` | ``950pr``, read from its
    display name and description (``910C``/``A3``, ``950DT``, ``950PR``; anything else is A2, 910B)."""
    text = f"{profile.display_name} {profile.description}".lower().replace("-", " ")
    if "950pr" in text:
        return "950pr"
    if "950dt" in text:
        return "950dt"
    if "910c" in text or " a3 " in f" {text} ":
        return "a3"
    return "a2"


def ascend_image(profile: HardwareProfile) -> str:
    """The vllm-ascend image of a profile's chip series (950PR: the 950DT image, the nearest part;
    its plan is marked unverified)."""
    series = ascend_series(profile)
    return f"{ASCEND_REPOSITORY}:v{ASCEND_RELEASE}{IMAGE_SUFFIX.get(series, IMAGE_SUFFIX['950dt'])}"


def ascend_pip_ok(profile: HardwareProfile) -> bool:
    """True when vllm-ascend documents a pip install for this profile's series (Atlas A2 only)."""
    return ascend_series(profile) in PIP_SERIES


def ascend_pip_install() -> list[str]:
    """The pip install on an Atlas A2 host with CANN installed: the CANN and NNAL environments, a
    Python 3.12 venv, ``vllm`` and ``vllm-ascend`` pinned to one compatibility-matrix row."""
    return ["source /usr/local/Ascend/ascend-toolkit/set_env.sh",
            "source /usr/local/Ascend/nnal/atb/set_env.sh",
            "uv venv --python 3.12", "source .venv/bin/activate",
            f"uv pip install vllm=={ASCEND_VLLM_RELEASE} vllm-ascend=={ASCEND_RELEASE}"]


def unsupported_by_backend(profile: HardwareProfile) -> bool:
    """True for an Ascend profile whose chip vllm-ascend does not support (950PR): a plan for it is
    refused unless ``allow_unverified``, then marked unverified (:data:`UNSUPPORTED_950PR`)."""
    gen, brand = profile.gen, profile.brand
    return (brand == "Huawei" or gen == "npu") and ascend_series(profile) == "950pr"
