"""Regenerate the bundled recipes (``catalog/data/recipes.json``) from a vLLM recipes checkout.

Usage::

    python tools/build_catalog.py RECIPES_DIR [--out catalog/data/recipes.json] [--revision REV]

``RECIPES_DIR`` is laid out like github.com/vllm-project/recipes (``models/<org>/<repo>.yaml``).
Every model recipe is kept in a facts-only form (docs/catalog.md §2): ids, display names,
provider, tasks, dates, args and env, features and modes, variants, hardware verification,
compatible strategies, KV-offload support, hardware/strategy overrides, dependencies, omni serving
config, minimum vLLM version. Prose is left out: ``guide``, ``meta.description``,
``meta.performance_headline``, ``meta.related_recipes`` and the ``description`` of variants,
features, feature modes and omni tasks.

The output records where the data came from (``source.revision``: the checkout's git commit, the
revision ``vllm-wizard recipes sync`` stamped, or ``sha256:<hex>`` of the model files) and carries
the recipes' Apache-2.0 attribution; the license text itself is copied next to it as
``catalog/data/RECIPES-LICENSE``. Each recipe is validated with the catalog's own schema before
anything is written, so a broken checkout leaves the bundled data as it was.

Exit status: 0 written, 2 bad input (message names the file and field).
"""

from __future__ import annotations

import argparse
import datetime as dt
import hashlib
import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import yaml

ROOT = Path(__file__).resolve().parents[1]
DEFAULT_OUT = ROOT / "catalog" / "data" / "recipes.json"

#: Top-level recipe keys that are prose, not facts.
PROSE_TOP = ("guide",)
#: ``meta`` keys that are prose or page links.
PROSE_META = ("description", "performance_headline", "related_recipes")

ATTRIBUTION = (
    "Model recipes derived from the vLLM recipes repository (https://github.com/vllm-project/recipes), "
    "Copyright the vLLM project contributors, licensed under the Apache License, Version 2.0 "
    "(see RECIPES-LICENSE). Reduced to facts (prose and guides removed) by tools/build_catalog.py."
)


def _plain(value: Any) -> Any:
    """YAML values as JSON values: dates become ``YYYY-MM-DD`` strings (the loader's form, §0)."""
    if isinstance(value, dict):
        return {str(k): _plain(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_plain(v) for v in value]
    if isinstance(value, (dt.date, dt.datetime)):
        return value.strftime("%Y-%m-%d")
    return value


def _drop_description(block: Any) -> Any:
    if isinstance(block, dict):
        block.pop("description", None)
    return block


def facts_only(recipe: dict[str, Any]) -> dict[str, Any]:
    """A copy of one parsed recipe without its prose (see the module docstring for the keys)."""
    out = _plain(recipe)
    for key in PROSE_TOP:
        out.pop(key, None)
    meta = out.get("meta")
    if isinstance(meta, dict):
        for key in PROSE_META:
            meta.pop(key, None)
    for variant in (out.get("variants") or {}).values():
        _drop_description(variant)
    for feature in (out.get("features") or {}).values():
        _drop_description(feature)
        if isinstance(feature, dict):
            for mode in (feature.get("modes") or {}).values():
                _drop_description(mode)
    omni = out.get("omni")
    if isinstance(omni, dict):
        for task in omni.get("tasks") or []:
            _drop_description(task)
    return out


def recipes_revision(root: Path, files: list[Path]) -> str:
    """The checkout's git commit, else the ``recipes sync`` stamp, else ``sha256:`` of the model files."""
    try:
        out = subprocess.run(["git", "-C", str(root), "rev-parse", "HEAD"], capture_output=True, text=True,
                             timeout=10)
        if out.returncode == 0 and out.stdout.strip():
            top = subprocess.run(["git", "-C", str(root), "rev-parse", "--show-toplevel"], capture_output=True,
                                 text=True, timeout=10).stdout.strip()
            if top and Path(top).resolve() == root.resolve():
                return out.stdout.strip()
    except (OSError, subprocess.SubprocessError):
        pass
    stamp = root / ".vllm-wizard-sync.json"
    try:
        rev = json.loads(stamp.read_text(encoding="utf-8")).get("revision")
        if rev:
            return str(rev)
    except (OSError, ValueError):
        pass
    digest = hashlib.sha256()
    for path in files:
        digest.update(str(path.relative_to(root)).encode() + b"\0" + path.read_bytes() + b"\0")
    return "sha256:" + digest.hexdigest()[:16]


def build(root: Path, revision: str | None = None) -> tuple[dict[str, Any], list[str]]:
    """``(document, problems)`` for the checkout at ``root``; the document is what gets written.

    ``problems`` lists ``file: message`` lines (YAML errors, schema errors); empty means valid.
    """
    sys.path.insert(0, str(ROOT))
    from pydantic import ValidationError

    from vllm_deploy_wizard.catalog.models import Recipe  # the project's own schema
    from vllm_deploy_wizard.common import yamlio

    files = sorted((root / "models").glob("*/*.yaml"))
    problems: list[str] = []
    if not files:
        problems.append(f"{root}/models: no <org>/<repo>.yaml recipes found")
    recipes: dict[str, Any] = {}
    for path in files:
        try:
            data = yamlio.load(path.read_bytes())  # duplicate keys are refused with file:line, as the loader does
        except yaml.YAMLError as exc:
            problems.append(yamlio.error_message(path, exc))
            continue
        if not isinstance(data, dict):
            problems.append(f"{path}: top level: expected a mapping")
            continue
        hf_id = f"{path.parent.name}/{path.stem}"
        facts = facts_only(data)
        try:
            Recipe.model_validate({**facts, "hf_org": path.parent.name, "hf_repo": path.stem, "hf_id": hf_id})
        except ValidationError as exc:
            for err in exc.errors():
                where = ".".join(str(p) for p in err["loc"])
                problems.append(f"{path}: {where}: {err['msg']}")
            continue
        recipes[hf_id] = facts
    doc = {
        "source": {
            "repository": "https://github.com/vllm-project/recipes",
            "revision": revision or recipes_revision(root, files),
            "license": "Apache-2.0",
            "attribution": ATTRIBUTION,
            "generated_by": "tools/build_catalog.py",
        },
        "recipes": recipes,
    }
    return doc, problems


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("recipes_dir", type=Path, help="a vLLM recipes checkout (models/<org>/<repo>.yaml)")
    ap.add_argument("--out", type=Path, default=DEFAULT_OUT, help=f"output file (default {DEFAULT_OUT})")
    ap.add_argument("--revision", help="record this revision instead of detecting it")
    args = ap.parse_args(argv)
    root = args.recipes_dir.expanduser().resolve()
    if not (root / "models").is_dir():
        print(f"error: {root} is not a recipes checkout (no models/ folder)", file=sys.stderr)
        return 2
    doc, problems = build(root, args.revision)
    if problems:
        print("error: the checkout does not validate; nothing written:", file=sys.stderr)
        for line in problems:
            print(f"  {line}", file=sys.stderr)
        return 2
    args.out.parent.mkdir(parents=True, exist_ok=True)
    text = json.dumps(doc, indent=1, ensure_ascii=False, sort_keys=False) + "\n"
    tmp = args.out.with_suffix(".tmp")
    tmp.write_text(text, encoding="utf-8")
    tmp.replace(args.out)
    license_src = root / "LICENSE"
    if license_src.is_file():
        (args.out.parent / "RECIPES-LICENSE").write_bytes(license_src.read_bytes())
    print(f"wrote {args.out} ({len(doc['recipes'])} recipes, revision {doc['source']['revision']})")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
