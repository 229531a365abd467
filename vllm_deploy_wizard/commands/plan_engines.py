"""``plan … --k8s DIR`` / ``plan … --slurm FILE``: the plan file exported for an engine (docs/multi-node.md §3–§4).

The exporters (:mod:`vllm_deploy_wizard.launcher.engines`) read plan-file data only; what they need
from the catalog — the container image and the hardware brand for the device resource — is looked
up here, where the catalog is at hand.
"""

from __future__ import annotations

import argparse
import re
import sys
from pathlib import Path
from typing import Any

#: Image when neither the plan nor its docker form names one.
DEFAULT_IMAGE = "vllm/vllm-openai:latest"


def add_flags(p: argparse.ArgumentParser) -> None:
    """The engine-export flags of ``plan``."""
    p.add_argument("--k8s", type=Path, metavar="DIR",
                   help="write Kubernetes manifests into DIR for `kubectl apply -f DIR` (a LeaderWorkerSet per "
                   "multi-node group, Deployments otherwise, a Service per port; secrets from a Secret reference)")
    p.add_argument("--k8s-image", metavar="IMAGE", help="container image for --k8s (default: the plan's docker image)")
    p.add_argument("--k8s-namespace", metavar="NS", help="namespace set on every --k8s manifest")
    p.add_argument("--k8s-set", action="append", default=[], metavar="VAR=VALUE",
                   help="value of a plan placeholder the cluster cannot fill (e.g. MOONCAKE_DEVICE_NAME=mlx5_0)")
    p.add_argument("--k8s-router-image", metavar="IMAGE",
                   help="image of the --k8s router (default: the engine image, installing the router at start)")
    p.add_argument("--k8s-hf-cache-claim", metavar="PVC",
                   help="PersistentVolumeClaim for the --k8s engines' Hugging Face cache (default: a hostPath on "
                   "each node, kept across pod restarts)")
    p.add_argument("--k8s-model-claim", metavar="PVC",
                   help="PersistentVolumeClaim holding a --model given as a local path, mounted read-only at that "
                   "path in the --k8s engine pods (without it such a model is on no pod)")
    p.add_argument("--k8s-cpu-request", metavar="CPUS", help="cpu request of a --k8s CPU engine pod (default 8)")
    p.add_argument("--k8s-memory-request", metavar="MEM",
                   help="memory request of a --k8s CPU engine pod (default 32Gi)")
    p.add_argument("--slurm", type=Path, metavar="FILE",
                   help="write an sbatch script running the plan file (next to FILE as FILE.plan.yaml) with one "
                   "task per node")


#: The ``--k8s-*`` flags: each shapes the ``--k8s DIR`` manifests and means nothing without it.
K8S_FLAGS = ("--k8s-image", "--k8s-namespace", "--k8s-set", "--k8s-router-image", "--k8s-hf-cache-claim",
             "--k8s-model-claim", "--k8s-cpu-request", "--k8s-memory-request")


def check_flags(args: argparse.Namespace) -> None:
    """Refuse, before any planning, ``--k8s-*`` flags given without ``--k8s DIR`` (they would be
    ignored) and a ``--k8s-namespace`` that is no DNS-1123 label (Kubernetes refuses it on apply).

    Raises:
        SelectionError: naming the flags and what they need.
    """
    from vllm_deploy_wizard.common.errors import SelectionError

    given = [f for f in K8S_FLAGS if getattr(args, f[2:].replace("-", "_"), None) not in (None, [])]
    if given and getattr(args, "k8s", None) is None:
        one = len(given) == 1
        raise SelectionError(f"{', '.join(given)} only shape{'s' if one else ''} the Kubernetes manifests and "
                             f"need{'s' if one else ''} --k8s DIR (the folder to write them into): add --k8s DIR "
                             f"or drop {'it' if one else 'them'}")
    namespace = getattr(args, "k8s_namespace", None)
    if namespace is None:
        return
    # imported only here: the launcher package is ~75 ms of imports a plain `plan` does not need
    from vllm_deploy_wizard.launcher.engines.kubernetes import dns_label_problem

    if why := dns_label_problem(namespace):
        raise SelectionError(f"--k8s-namespace {namespace!r}: {why}")


def image_of(cat: Any, selection: Any, plan_json: dict[str, Any]) -> str:
    """The plan's docker image: its own (docker plans), else that of the same selection planned for docker."""
    docker = plan_json.get("docker") or {}
    if docker.get("image"):
        return str(docker["image"])
    from vllm_deploy_wizard.catalog import plan_to_json, synthesize

    try:
        other = plan_to_json(synthesize(cat, selection.model_copy(update={"install_mode": "docker"})))
    except Exception:  # noqa: BLE001 - no docker form for this selection: the generic image
        return DEFAULT_IMAGE
    return str((other.get("docker") or {}).get("image") or DEFAULT_IMAGE)


def local_model_path(model: str) -> str | None:
    """``model`` when it names a folder on this machine rather than a Hugging Face id (an absolute,
    ``./``/``../`` or ``~`` path, or an existing folder); None for an id such as ``Qwen/Qwen3-32B``."""
    if model.startswith(("/", "./", "../", "~")) or Path(model).is_dir():
        return model
    return None


def model_volume(args: argparse.Namespace, doc: dict[str, Any]) -> tuple[str, str] | None:
    """``(PVC, path)`` mounting ``--k8s-model-claim`` at the plan's local model path; None for a
    Hugging Face id. A local path without the claim is warned about on stderr (no pod has it: the
    engines would fail to start); SelectionError for a claim with a relative path or with a model id."""
    from vllm_deploy_wizard.common.errors import SelectionError

    model = str(doc["plan"].get("resolved", {}).get("model") or "")
    path = local_model_path(model)
    claim = getattr(args, "k8s_model_claim", None)
    if path is None:
        if claim:
            raise SelectionError(f"--k8s-model-claim {claim}: the model {model!r} is a Hugging Face id, not a local "
                                 "path; the engines download it into the Hugging Face cache (--k8s-hf-cache-claim)")
        return None
    if claim:
        if not path.startswith("/"):
            raise SelectionError(f"--k8s-model-claim {claim}: the model path {path!r} is relative; give --model "
                                 "as an absolute path, where the claim is mounted in the pods")
        return claim, path
    print(f"warning: --k8s: the engines serve the local path {path}, which no pod has: provide it with "
          f"--k8s-model-claim PVC (a PersistentVolumeClaim holding the model, mounted read-only at {path}) or an "
          "image that contains it (--k8s-image), or plan with a Hugging Face model id (downloaded into the "
          "Hugging Face cache: a hostPath on each node, or --k8s-hf-cache-claim PVC)", file=sys.stderr)
    return None


def export(args: argparse.Namespace, cat: Any, selection: Any, doc: dict[str, Any]) -> list[str]:
    """Write what ``--k8s`` / ``--slurm`` ask for from plan-file ``doc``; returns the paths written.
    Raises ``WizardError`` subclasses naming the flag."""
    from vllm_deploy_wizard.common.errors import SelectionError

    written: list[str] = []
    if getattr(args, "k8s", None) is not None:
        from vllm_deploy_wizard.launcher.engines.kubernetes import ExportError, kubernetes_manifests
        from vllm_deploy_wizard.launcher.engines.kubernetes_files import write_manifests

        if args.k8s.exists() and not args.k8s.is_dir():
            raise SelectionError(f"--k8s {args.k8s}: is a file; --k8s takes a FOLDER for the manifests")
        hw = doc["plan"].get("resolved", {}).get("hardware")
        profile = cat.taxonomy.hardware_profiles.get(hw) if hw else None
        image = args.k8s_image or image_of(cat, selection, doc["plan"])
        values = {}
        for item in args.k8s_set:
            key, sep, value = item.partition("=")
            if not sep or not key.strip():
                raise SelectionError(f"--k8s-set {item!r}: expected VAR=VALUE, "
                                     "e.g. --k8s-set MOONCAKE_DEVICE_NAME=mlx5_0")
            values[key.strip().lstrip("$")] = value
        from vllm_deploy_wizard.catalog.backends import kubernetes_placement

        selector, per_unit = (kubernetes_placement(profile, int(doc["plan"].get("resolved", {}).get("nodes") or 1))
                              if profile is not None else ({}, 1))
        requests = {}
        for flag, key, pattern in (("--k8s-cpu-request", "cpu", r"\d+(\.\d+)?m?"),
                                   ("--k8s-memory-request", "memory", r"\d+(\.\d+)?([KMGTPE]i?)?")):
            given = getattr(args, flag[2:].replace("-", "_"), None)
            if given is None:
                continue
            if not re.fullmatch(pattern, given):
                raise SelectionError(f"{flag} {given!r}: expected a Kubernetes quantity, e.g. "
                                     + ("8 or 500m" if key == "cpu" else "32Gi"))
            requests[key] = given
        try:
            files = kubernetes_manifests(doc, image=image, vendor=getattr(profile, "brand", None),
                                         arch=(getattr(profile, "compute_arch", None)
                                               or getattr(profile, "generation", None)),
                                         namespace=args.k8s_namespace, values=values,
                                         node_selector=selector, devices_per_unit=per_unit,
                                         router_image=getattr(args, "k8s_router_image", None),
                                         hf_cache_claim=getattr(args, "k8s_hf_cache_claim", None),
                                         cpu_requests=requests, model_claim=model_volume(args, doc))
            written += [str(p) for p in write_manifests(args.k8s, files)]
        except ExportError as exc:
            raise SelectionError(f"--k8s: {exc}") from None
        except OSError as exc:
            raise SelectionError(f"--k8s {args.k8s}: cannot write: {exc.strerror or exc}") from None
    if getattr(args, "slurm", None) is not None:
        from vllm_deploy_wizard.launcher.engines.slurm import write_script

        if args.slurm.is_dir():
            raise SelectionError(f"--slurm {args.slurm}: is a folder; --slurm takes the sbatch FILE to write")
        try:
            if args.out is not None:  # the plan file every node reads
                plan_path = args.out.resolve()
            else:
                import yaml

                from vllm_deploy_wizard.common.files import write_atomic

                plan_path = args.slurm.resolve().with_name(args.slurm.name + ".plan.yaml")
                write_atomic(plan_path, yaml.safe_dump(doc, sort_keys=False, allow_unicode=True), mode=0o600)
                written.append(str(plan_path))
            written.append(str(write_script(args.slurm, doc, plan_path)))
        except OSError as exc:
            raise SelectionError(f"--slurm {args.slurm}: cannot write: {exc.strerror or exc}") from None
    if written:
        print(f"wrote {', '.join(written)}", file=sys.stderr)
    return written
