"""``vllm-wizard catalog check|models|hardware|show``: validate and list the recipe catalog.

* ``check [DIR]`` prints every warning and error as ``file:line: message`` (warnings first, each
  line prefixed with ``warning:`` / ``error:``), then a one-line summary. Exit status 0 when there
  are only warnings, 1 when there is at least one error (docs/synthesis.md §5: unknown keys and ids
  are warnings).
* ``models [--hardware P] [--task T] [--arch A] [--search TEXT]`` lists the recipes: HF id, tasks,
  dense/MoE, variants, the profiles each is verified on; with ``--hardware`` the status there
  (verified / available / unlisted / unsupported, :mod:`vllm_deploy_wizard.catalog.listing`, the
  rule and order of the wizard's model screen).
* ``hardware`` lists the hardware profiles: brand, name, devices and memory per device, whether a
  model can be planned there from this machine (rule H1), how many models are offered there, and
  the profile ``vllm-wizard detect`` preselects on this machine (``--replay FIXTURE``: on a capture).
* ``show MODEL [--hardware P] [--nodes N]`` prints the option rows of the wizard's configure step
  for one model (variants, strategies, KV offload options, features and their modes), each with
  its state and the reason it is unavailable (:func:`vllm_deploy_wizard.catalog.planner.options_for`).

``models`` and ``show`` take ``--detect`` / ``--replay FIXTURE`` as ``vllm-wizard plan`` does: the
detected profile becomes the default ``--hardware`` and is offered even when restricted (H1), and
on it the node facts apply. Every listing honours ``--recipes DIR`` and prints a table (through
:mod:`vllm_deploy_wizard.common.tables`) or, with ``--json``, a JSON list of objects with the same fields.
An unknown ``--hardware``, ``--task`` or MODEL is a :class:`~vllm_deploy_wizard.common.errors.SelectionError`
naming the flag with did-you-mean (exit status 2).
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Any

from vllm_deploy_wizard.commands import add_recipes_flag
from vllm_deploy_wizard.common.contract import MAX_NODES

#: Most nodes ``show --nodes`` takes (docs/synthesis.md §2.3 ``MAX_NODES``).


def register(subparsers: argparse._SubParsersAction) -> None:
    """Add ``catalog`` with its ``check``, ``models``, ``hardware`` and ``show`` sub-commands."""
    parser = subparsers.add_parser("catalog", help="inspect, list and validate the recipe catalog",
                                   description="Inspect, list and validate the recipe catalog.")
    sub = parser.add_subparsers(dest="catalog_command", metavar="SUBCOMMAND", required=True)
    check = sub.add_parser(
        "check", help="validate a recipes checkout: file:line errors and warnings",
        description="Validate a recipes checkout (taxonomy.yaml, strategies/, kv_store/, models/). "
        "Without DIR, checks the catalog in use (--recipes / remembered recipes_dir / bundled). "
        "Exits non-zero only when there are errors; unknown keys and ids are warnings.")
    check.add_argument("dir", nargs="?", type=Path, metavar="DIR", help="recipes checkout to check")
    check.add_argument("--quiet", "-q", action="store_true", help="print errors and the summary only")
    check.set_defaults(handler=handle_check)

    models = sub.add_parser(
        "models", help="list the recipe models (ids for plan --model), their status on a profile",
        description="List the recipe models: HF id (what plan --model takes), tasks, dense/MoE, variants "
        "and the hardware profiles each is verified on. With --hardware, the status there (verified, "
        "available, unlisted: a restricted profile the recipe does not list, offered because detected; "
        "unsupported, with the reason), in the order of the wizard's model table; models the profile "
        "hides (a restricted profile their recipe does not list) are left out.")
    models.add_argument("--hardware", metavar="PROFILE", help="hardware profile id (see `catalog hardware`)")
    models.add_argument("--task", help="only models of this task (e.g. text, multimodal, omni, embedding)")
    models.add_argument("--arch", choices=("dense", "moe"), help="only dense or only MoE models")
    models.add_argument("--search", metavar="TEXT",
                        help="only models whose title, HF id or provider contains every word of TEXT")
    _add_detect_flags(models)
    models.add_argument("--json", action="store_true", help="print a JSON list of objects, one per model")
    add_recipes_flag(models)
    models.set_defaults(handler=handle_models)

    hardware = sub.add_parser(
        "hardware", help="list the hardware profile ids (for plan --hardware) and the detected one",
        description="List the hardware profiles of the catalog: id (what plan --hardware takes), brand, "
        "name, devices and memory per device, whether any model can be planned there (a restricted "
        "profile is offered only to the models whose recipe lists it, unless it is detected here), how "
        "many models are offered there, and which one `vllm-wizard detect` preselects on this machine.")
    hardware.add_argument("--replay", type=Path, metavar="FIXTURE",
                          help="mark the profile detection preselects on a detect fixture instead of this machine")
    hardware.add_argument("--scenario", metavar="ID", help="with --replay: scenario id inside a scenario file")
    hardware.add_argument("--json", action="store_true", help="print a JSON list of objects, one per profile")
    add_recipes_flag(hardware)
    hardware.set_defaults(handler=handle_hardware)

    show = sub.add_parser(
        "show", help="one model's variants, strategies, KV offload options and features, and why not",
        description="Show one model's option rows as the wizard's configure step computes them on a "
        "hardware profile: variants, strategies, KV offload options (and their sub-rows) and features "
        "(and their modes), each available, disabled or hidden with the reason. Rows depend on the "
        "hardware and node count; the values they are computed against are printed first.")
    show.add_argument("model", metavar="MODEL", help="recipe HF id (case-insensitive) or a variant's model id")
    show.add_argument("--hardware", metavar="PROFILE",
                      help="hardware profile id (default: the recipe's landing hardware, or the detected one)")
    show.add_argument("--nodes", type=int, metavar="N",
                      help=f"node count, 1..{MAX_NODES} (multi-node strategies are offered from 2)")
    _add_detect_flags(show)
    show.add_argument("--json", action="store_true", help="print a JSON list of objects, one per option row")
    add_recipes_flag(show)
    show.set_defaults(handler=handle_show)


def _add_detect_flags(parser: argparse.ArgumentParser) -> None:
    """``--detect``, ``--replay FIXTURE``, ``--scenario ID`` with the meaning ``plan`` gives them."""
    parser.add_argument("--detect", action="store_true",
                        help="detect this node: default --hardware to the best-matching profile, which is "
                        "offered even when restricted (as `plan --detect`)")
    parser.add_argument("--replay", type=Path, metavar="FIXTURE", help="like --detect, replaying a detect fixture file")
    parser.add_argument("--scenario", metavar="ID", help="with --replay: scenario id inside a scenario file")


def handle_check(args: argparse.Namespace) -> int:
    """Handler of ``catalog check``; returns 0 (no errors) or 1 (errors)."""
    from vllm_deploy_wizard.catalog.diagnostics import check_catalog
    from vllm_deploy_wizard.catalog.sources import resolve_source

    target = args.dir
    if target is None:
        target = resolve_source().path  # None = bundled data folder
    report = check_catalog(target)
    for line in report.errors:  # errors first: the reason plan refuses the catalog
        print(f"error: {line}", file=sys.stderr)
    sys.stderr.flush()
    if not args.quiet:
        for line in report.warnings:
            print(f"warning: {line}")
    where = target if target is not None else "bundled catalog"
    print(f"{where}: {report.files} files, {len(report.errors)} error(s), {len(report.warnings)} warning(s)")
    return 0 if report.ok else 1


# ---------------------------------------------------------------------------------------------
# shared by the listings


def _load(args: argparse.Namespace) -> Any:
    """The catalog in use: ``--recipes DIR`` > remembered recipes dir > bundled (as ``plan``)."""
    from vllm_deploy_wizard.catalog.loader import load_for_source
    from vllm_deploy_wizard.catalog.sources import resolve_source

    return load_for_source(resolve_source(args.recipes))


def _known(flag: str, kind: str, value: str, choices: list[str], where: str, lister: str = "") -> str:
    """``value`` as the catalog spells it (case ignored, as ``plan`` matches ids); raises
    SelectionError ``--flag 'x': unknown KIND in WHERE (did you mean …?). Valid: …`` (then
    ``lister``, the command that lists them, when given)."""
    from vllm_deploy_wizard.common.errors import SelectionError
    from vllm_deploy_wizard.common.suggest import casefold_key, did_you_mean

    hit = casefold_key(value, choices)
    if hit in choices:
        return str(hit)
    hint = did_you_mean(value, choices, n=3)
    tail = f" (`{lister}` lists them)" if lister else ""
    raise SelectionError(f"{flag} {value!r}: unknown {kind} in {where}{hint}. Valid: {', '.join(choices)}{tail}")


def _hardware_id(cat: Any, value: str | None) -> str | None:
    """The ``--hardware`` value as a profile id of ``cat`` (None stays None)."""
    if value is None:
        return None
    return _known("--hardware", "hardware profile", value, list(cat.taxonomy.hardware_profiles),
                  f"the {cat.source} catalog", "vllm-wizard catalog hardware")


def _detection(args: argparse.Namespace, cat: Any, data: dict[str, Any]) -> dict[str, Any] | None:
    """With ``--detect``/``--replay``: detect (:func:`~vllm_deploy_wizard.workflows.planning.detect_defaults`:
    ``data["hardware"]`` defaults to the matched profile) and return its snapshot; else None."""
    from vllm_deploy_wizard.common.errors import SelectionError

    if args.scenario and args.replay is None:
        raise SelectionError("--scenario needs --replay FILE (a scenario file such as failure_modes.yaml)")
    if not (args.detect or args.replay is not None):
        return None
    from vllm_deploy_wizard.workflows.planning import detect_defaults

    return detect_defaults(cat, data, args.replay, getattr(args, "scenario", None))


def _one_line(text: str | None) -> str:
    return " ".join((text or "").split())


def _print_rows(header: list[str], rows: list[list[Any]]) -> None:
    from vllm_deploy_wizard.common import tables

    tables.print_table([header, *rows], indent=0)


def _print_json(objects: list[dict[str, Any]]) -> None:
    sys.stdout.write(json.dumps(objects, indent=1, ensure_ascii=False) + "\n")


# ---------------------------------------------------------------------------------------------
# catalog models


def handle_models(args: argparse.Namespace) -> int:
    """Handler of ``catalog models``; returns 0. Raises SelectionError for an unknown --hardware/--task."""
    from vllm_deploy_wizard.catalog.listing import listing_for, model_rows, verified_profiles

    cat = _load(args)
    data: dict[str, Any] = {}
    hw = _hardware_id(cat, args.hardware)
    if hw is not None:
        data["hardware"] = hw
    task = ""
    if args.task is not None:
        task = _known("--task", "task", args.task, _task_ids(cat), f"the {cat.source} catalog")
    snapshot = _detection(args, cat, data)
    detected = snapshot.get("matched_profile") if snapshot else None
    hw = data.get("hardware")
    profiles = list(cat.taxonomy.hardware_profiles)
    rows = model_rows(cat.recipes, hw, args.search or "", task, args.arch or "",
                      listing_for(cat, hw, detected) if hw else None)
    objects = []
    for r in rows:
        obj: dict[str, Any] = {"hf_id": r.hf_id, "title": r.title, "provider": r.provider, "tasks": list(r.tasks),
                               "architecture": r.architecture, "variants": list(r.variants),
                               "verified_on": list(verified_profiles(r.recipe, profiles))}
        if hw:
            obj.update(hardware=hw, status=r.status, reason=r.listing_reason or None)
        objects.append(obj)
    if args.json:
        _print_json(objects)
        return 0
    hidden = 0
    if hw:  # the filtered recipes the profile leaves out (H1), counted apart
        shown = {r.hf_id for r in rows}
        hidden = sum(1 for r in model_rows(cat.recipes, hw, args.search or "", task, args.arch or "")
                     if r.hf_id not in shown)
    if not objects and hidden:  # everything the filters match is hidden there: say why, as with some shown
        print(_models_summary(cat, rows, hw, hidden))
        return 0
    if not objects:
        print("no model matches" + (f" --search {args.search!r}" if args.search else "")
              + (f" --task {task}" if task else "") + (f" --arch {args.arch}" if args.arch else ""),
              file=sys.stderr)
        return 0
    why = any(o.get("reason") for o in objects)  # a WHY column only when some row has a reason
    header = ["HF ID", *(["STATUS"] if hw else []), "TASKS", "ARCH", "VARIANTS", "VERIFIED ON",
              *(["WHY"] if why else [])]
    _print_rows(header, [[o["hf_id"], *([o["status"]] if hw else []), ",".join(o["tasks"]) or "-",
                          o["architecture"] or "-", ",".join(o["variants"]), ",".join(o["verified_on"]) or "-",
                          *([_one_line(o["reason"])] if why else [])] for o in objects])
    print(_models_summary(cat, rows, hw, hidden))
    return 0


def _task_ids(cat: Any) -> list[str]:
    """Task ids: the taxonomy's, then any other a recipe names."""
    ids = [t.id for t in cat.taxonomy.tasks]
    for rec in cat.recipes.values():
        ids += [t for t in rec.meta.tasks if t not in ids]
    return ids


def _models_summary(cat: Any, rows: list[Any], hw: str | None, hidden: int) -> str:
    """The line under the table: how many models, per status on ``hw``, and how many ``hw`` hides."""
    total = len(cat.recipes)
    if hw is None:
        return f"{len(rows)} of {total} models"
    from collections import Counter

    counts = Counter(r.status for r in rows)
    name = cat.taxonomy.hardware_profiles[hw].display_name or hw
    parts = [f"{counts[s]} {s}" for s in ("verified", "available", "unlisted", "unsupported") if counts[s]]
    line = f"{len(rows)} of {total} models on {name} ({', '.join(parts) or 'none'})"
    if hidden:
        line += (f"; {hidden} hidden: {name} is a restricted profile their recipe does not list (rule H1) — "
                 "offered on a node detected as it (--detect), or planned with --allow-unverified")
    return line


# ---------------------------------------------------------------------------------------------
# catalog hardware


def handle_hardware(args: argparse.Namespace) -> int:
    """Handler of ``catalog hardware``; returns 0. Detects this node (or replays ``--replay``)."""
    from vllm_deploy_wizard.catalog.listing import hardware_status, profile_selectable
    from vllm_deploy_wizard.common.errors import SelectionError
    from vllm_deploy_wizard.detect import detect, match_profiles

    if args.scenario and args.replay is None:
        raise SelectionError("--scenario needs --replay FILE (a scenario file such as failure_modes.yaml)")
    cat = _load(args)
    facts = None
    if args.replay is not None:
        from vllm_deploy_wizard.detect.fixture import FixtureFacts

        facts = FixtureFacts.load(args.replay, args.scenario)
    profiles = cat.taxonomy.hardware_profiles
    candidates = [c for c in match_profiles(detect(facts), profiles) if c.profile_id is not None]
    detected = candidates[0].profile_id if candidates else None
    rank = {c.profile_id: (i, c.quality) for i, c in enumerate(candidates)}
    recipes = list(cat.recipes.values())
    objects = []
    for hw, p in profiles.items():
        statuses = [hardware_status(cat, rec, hw, detected)[0] for rec in recipes]
        i, quality = rank.get(hw, (None, None))
        objects.append({
            "id": hw, "brand": p.brand, "name": p.display_name or hw, "devices": p.gpu_count,
            "memory_per_device_gb": p.vram_per_device_gb, "restricted": p.restricted,
            "selectable": profile_selectable(p, hw, detected),
            "models": sum(1 for s in statuses if s in ("verified", "available", "unlisted")),
            "verified_models": statuses.count("verified"),
            "unlisted_models": statuses.count("unlisted"),  # offered only because detected here (H1)
            "detected": None if i is None else "preselected" if i == 0 else "alternative",
            "match": quality,
        })
    if args.json:
        _print_json(objects)
        return 0
    rows = []
    for o in objects:
        mem = f"{o['memory_per_device_gb']:g} GB" if o["memory_per_device_gb"] else "?"
        selectable = "yes" if o["selectable"] else "restricted"
        if o["restricted"] and o["selectable"]:
            selectable = "yes (detected)"
        mark = {"preselected": f"★ preselected ({o['match']})", "alternative": f"alternative ({o['match']})"}
        unlisted = f", {o['unlisted_models']} unlisted" if o["unlisted_models"] else ""
        rows.append([o["id"], o["brand"], o["name"], o["devices"] or "?", mem, selectable,
                     f"{o['models']} ({o['verified_models']} verified{unlisted})", mark.get(o["detected"] or "", "")])
    _print_rows(["ID", "BRAND", "NAME", "DEVICES", "MEM/DEVICE", "SELECTABLE", "MODELS", "DETECTED"], rows)
    where = f"on {args.replay}" if args.replay is not None else "on this machine"
    print(f"{len(objects)} profiles; detect preselects {detected or 'none'} {where}. "
          "restricted: offered only to the models whose recipe lists it (rule H1), unless detected"
          + ("; unlisted: offered only because detected — `catalog models --hardware ID --detect` lists them"
             if any(o["unlisted_models"] for o in objects) else ""))
    return 0


# ---------------------------------------------------------------------------------------------
# catalog show


def handle_show(args: argparse.Namespace) -> int:
    """Handler of ``catalog show``; returns 0. Raises SelectionError for an unknown MODEL/--hardware
    or a --nodes out of range."""
    from vllm_deploy_wizard.catalog.listing import hardware_status
    from vllm_deploy_wizard.catalog.planner import options_for
    from vllm_deploy_wizard.common.errors import SelectionError

    cat = _load(args)
    try:
        recipe, _ = cat.resolve_model(args.model)
    except SelectionError:
        from vllm_deploy_wizard.common.suggest import did_you_mean

        hint = did_you_mean(args.model, cat.recipes, n=3)
        raise SelectionError(f"MODEL {args.model!r}: no recipe in the {cat.source} catalog has that id{hint}; "
                             "`vllm-wizard catalog models` lists them") from None
    data: dict[str, Any] = {"model": args.model}
    hw = _hardware_id(cat, args.hardware)
    if hw is not None:
        data["hardware"] = hw
    if args.nodes is not None:
        if not 1 <= args.nodes <= MAX_NODES:
            raise SelectionError(f"--nodes {args.nodes}: expected a node count 1..{MAX_NODES}")
        data["nodes"] = args.nodes
    snapshot = _detection(args, cat, data)
    detected = snapshot.get("matched_profile") if snapshot else None
    host = None
    if snapshot is not None and data.get("hardware") is not None and data["hardware"] == detected:
        from vllm_deploy_wizard.catalog.hostfit import HostCapacity

        host = HostCapacity(**snapshot["host_capacity"])  # planning for this node: its facts apply
    opts = options_for(cat, data, detected_profile=detected, host=host)
    res = opts.resolved
    hw = res["hardware"]
    status, reason = hardware_status(cat, recipe, hw, detected)
    if status == "hidden":
        reason = opts.choice("hardware", hw).reason
    objects = [{"model": recipe.hf_id, "hardware": hw, "axis": axis, "id": c.id, "label": c.label,
                "state": c.state, "reason": c.reason, "warning": c.warning, "unverified": c.unverified}
               for axis, c in _rows(opts)]
    if args.json:
        _print_json(objects)
        return 0
    profile = cat.taxonomy.hardware_profiles[hw]
    arch = recipe.model.architecture or "-"
    print(f"{recipe.hf_id}: {recipe.meta.title or recipe.hf_id} · {', '.join(recipe.meta.tasks) or '-'} · {arch}")
    print(f"hardware: {hw} ({profile.display_name or hw}) — {status}" + (f": {_one_line(reason)}" if reason else ""))
    if recipe.is_omni:
        print(f"rows for variant {res['variant']}, install {res['install_mode']} "
              "(an omni recipe has no strategy, KV offload or feature rows)")
    else:
        print(f"rows for variant {res['variant']}, strategy {res['strategy']}, {res['nodes']} node(s) of "
              f"{res['gpus']} device(s), KV offload {res['kv_offload']} (--hardware / --nodes change them)")
    print()
    rows = []
    for o in objects:
        if o["state"] == "hidden" and not o["reason"]:
            continue  # a row the wizard never shows and has nothing to say about (a mode row of one mode)
        why = _one_line(o["reason"]) if o["state"] != "available" else ("⚠ " + _one_line(o["warning"])
                                                                        if o["warning"] else "")
        rows.append([o["axis"], o["id"], o["state"], why])
    _print_rows(["ROW", "ID", "STATE", "WHY"], rows)
    for w in opts.warnings:
        print(f"warning: {_one_line(w)}")
    return 0


def _rows(opts: Any) -> list[tuple[str, Any]]:
    """``(row name, Choice)`` for the variant, strategy, KV offload (with group members and Mooncake
    topologies) and feature (with modes) rows of ``opts``, in configure-screen order.

    Every ``kv_offload`` row's id is a value ``plan --kv-offload`` takes; a configure-screen pill that
    only groups them (OffloadingConnector's tiers, Mooncake's topologies) is a ``kv_offload_group`` row
    followed by its members."""
    out: list[tuple[str, Any]] = [("variant", c) for c in opts.variant]
    out += [("strategy", c) for c in opts.strategy]
    for c in opts.kv_offload:
        members = list(opts.kv_offload_members.get(c.id, []))
        if c.id == "mooncake":
            members += list(opts.mooncake_topology)
        out.append(("kv_offload_group" if members else "kv_offload", c))
        out += [("kv_offload", m) for m in members]
    for c in opts.features:
        out.append(("feature", c))
        out += [(f"feature.{c.id}", m) for m in opts.feature_modes.get(c.id, [])]
    return out
