"""The manifests written as files for ``kubectl apply -f DIR`` (``plan … --k8s DIR``; docs/multi-node.md §3),
each headed by the ``kubectl create secret`` line naming every key of the Secret it reads."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from vllm_deploy_wizard.common.files import write_atomic
from vllm_deploy_wizard.launcher.engines.kubernetes import SECRET_NAME


def secret_keys(files: list[tuple[str, list[dict[str, Any]]]]) -> list[str]:
    """Every key of :data:`SECRET_NAME` the manifests read (``HF_TOKEN``, ``API_KEY`` …), sorted."""
    keys: set[str] = set()

    def walk(node: Any) -> None:
        if isinstance(node, dict):
            ref = node.get("secretKeyRef")
            if isinstance(ref, dict) and ref.get("name") == SECRET_NAME:
                keys.add(str(ref["key"]))
            for v in node.values():
                walk(v)
        elif isinstance(node, list):
            for v in node:
                walk(v)

    walk([d for _, docs in files for d in docs])
    return sorted(keys)


def write_manifests(directory: Path, files: list[tuple[str, list[dict[str, Any]]]]) -> list[Path]:
    """Write ``files`` (from :func:`kubernetes_manifests`) as multi-document YAML into ``directory``
    (created), each atomically with mode 0644; returns the paths. Each starts with how to create the
    Secret it reads. Raises OSError when the folder cannot be written."""
    import yaml

    class Dumper(yaml.SafeDumper):
        """Every shared value written out in full: no ``&id``/``*id`` anchors and aliases."""

        def ignore_aliases(self, data: Any) -> bool:
            return True

    directory.mkdir(parents=True, exist_ok=True)
    literals = " ".join(f"--from-literal={k}=…" for k in secret_keys(files) or ["HF_TOKEN"])
    header = (f"# vllm-wizard: kubectl apply -f {directory}/ — secrets come from Secret {SECRET_NAME!r}:\n"
              f"#   kubectl create secret generic {SECRET_NAME} {literals}\n")
    out = []
    for fname, docs in files:
        # atomic; 0644: the manifests hold no secret value (each is read from the Secret)
        out.append(write_atomic(directory / fname, header + yaml.dump_all(docs, Dumper=Dumper, sort_keys=False),
                                mode=0o644))
    return out
