"""``vllm-wizard plan``: synthesize the commands for a selection and print / save them.

Inputs: ``--selection FILE`` (YAML/JSON, ``docs/plan-file.md`` §2) and/or flags for humans;
a flag wins over the same key of the file. The catalog is ``--recipes DIR`` (replacing the bundled
one), else the remembered recipes dir of the user config, else the bundled catalog.

Outputs (combinable, except that ``--json`` owns stdout):

* default: readable commands per node in launch order with ``export`` lines;
* ``--json``: exactly one JSON object, docs/plan-file.md §3 (+ the contract extras), nothing else on stdout;
* ``--out FILE``: the plan file of ``docs/contracts.md`` §2 (YAML, or JSON for ``*.json``) with
  provenance (catalog source and revision, hardware profile, device count, tool version, selection);
* ``--script DIR``: one executable bash script per node;
* ``--k8s DIR`` / ``--slurm FILE``: the plan for Kubernetes or Slurm (:mod:`.plan_engines`).

Both are written atomically (temporary file + rename) with owner-only permissions — plan files 0600,
scripts 0700 — because they carry the argv/env to run, secrets such as ``--api-key`` or
``HF_TOKEN`` included (run directories mask them, these files cannot).

Warnings (gated-off combinations, flags the resolved shape ignores, ``--arg`` values with blanks)
are ``# warning:`` lines of the text output; whenever the text plan is not printed (``--json``,
``--out``, ``--script``) they go to stderr, so ``--json`` keeps stdout pure JSON.

Errors (unknown model/variant/hardware/strategy/kv offload id, malformed selection, bad flag
values, an output path that can't be written) are :class:`~vllm_deploy_wizard.common.errors.WizardError` s: one
message on stderr naming the flag, exit status 2.
"""

from __future__ import annotations

import argparse
import copy
import sys
from pathlib import Path
from typing import Any

from vllm_deploy_wizard.commands import add_recipes_flag
from vllm_deploy_wizard.common.contract import VLLM_FLAG_PROBE_S
from vllm_deploy_wizard.workflows.planning import (
    detect_defaults,
    host_capacity,
    host_for_exports,
    node_plan_warnings,
    plan_document,
)


def register(subparsers: argparse._SubParsersAction) -> None:
    """Add the ``plan`` sub-command."""
    p = subparsers.add_parser(
        "plan",
        help="print the exact vLLM commands for a model on a hardware profile",
        description="Synthesize the commands the vLLM recipes builder prints for a selection (model, "
        "variant, hardware, strategy, nodes, PD pools, KV offload, features, …) and print them, as JSON "
        "(--json), as a plan file for `vllm-wizard launch` (--out) or as per-node scripts (--script).",
    )
    add_recipes_flag(p)
    p.add_argument("--selection", type=Path, metavar="FILE", help="selection file (YAML or JSON, docs/plan-file.md §2)")
    p.add_argument("--model", help="recipe HF id (case-insensitive), a variant's model id, or a custom model: an HF id "
                   "whose config.json is in the local HF cache, or a local folder holding config.json "
                   "(relative paths are fine; it is served by its absolute path)")
    p.add_argument("--variant", help="variant key, case-insensitive (default: the recipe's default variant)")
    p.add_argument("--hardware", help="hardware profile id, case-insensitive (default: the recipe's landing hardware)")
    p.add_argument("--strategy", help="serving strategy id (default: the recommended one)")
    p.add_argument("--nodes", type=int, help="node count (for Mooncake: nodes per instance)")
    p.add_argument("--gpus", type=int, help="devices per node (default: the profile's gpu_count)")
    p.add_argument("--devices", metavar="I,J", help="device indexes of this node to run on, as `vllm-wizard detect` "
                   "lists them (e.g. 0,2): the plan pins them (CUDA_DEVICE_ORDER=PCI_BUS_ID + the backend's "
                   "visibility variable) and --gpus defaults to their count")
    p.add_argument("--kv-offload", metavar="KEY", help="KV offload option or kv_store id; 'none' = off")
    p.add_argument("--kv-instances", type=int, metavar="N", help="Mooncake instance count")
    p.add_argument("--feature", action="append", metavar="NAME[=MODE]",
                   help="enable a feature (repeatable); NAME=MODE picks a mode; 'none' = no features, "
                   "'default' = the recipe's defaults")
    p.add_argument("--frontend", help="API frontend (seed catalogs: rust, python)")
    mode = p.add_mutually_exclusive_group()
    mode.add_argument("--install-mode", choices=("pip", "docker"), help="how serve processes run")
    mode.add_argument("--docker", action="store_const", const="docker", dest="install_mode",
                      help="same as --install-mode docker")
    p.add_argument("--pd-prefill", metavar="N[:MODE]", help="PD prefill pool: nodes (0 = co-located) and tp|tep|dep")
    p.add_argument("--pd-decode", metavar="N[:MODE]", help="PD decode pool: nodes (0 = co-located) and tp|tep|dep")
    p.add_argument("--connector", help="PD KV connector (seed catalogs: nixl, mooncake, moriio)")
    p.add_argument("--router", help="PD router (vllm; seed catalogs also smg, dynamo)")
    p.add_argument("--arg", action="append", metavar="ARG", dest="args",
                   help="raw vLLM argument appended as an advanced arg (repeatable; use --arg=--flag). "
                   "'--flag value' in one ARG is split at the first blank; '--flag=value' never inside the "
                   "value; a value containing blanks is passed as one argument (with a warning)")
    p.add_argument("--task", help="omni task key")
    comp = p.add_argument_group("companion arguments (docs/catalog.md §6)")
    comp.add_argument("--l1-size-gb", metavar="GIB", help="LMCache server --l1-size-gb (host RAM for its L1 cache)")
    comp.add_argument("--max-cpu-workers", metavar="N", help="LMCache server --max-cpu-workers")
    comp.add_argument("--router-host", metavar="HOST", help="the router's --host (fills $ROUTER_HOST)")
    comp.add_argument("--router-port", metavar="PORT", help="the router's --port (fills $ROUTER_PORT)")
    comp.add_argument("--prometheus-port", metavar="PORT", help="every vllm-router's --prometheus-port")
    p.add_argument("--allow-unverified", action="store_true", default=None,
                   help="plan choices that lack only a recorded verified run (an opt-in KV option such as IAXL "
                   "the recipe has not verified; a restricted profile the recipe does not list); the plan "
                   "and the plan file mark them unverified. Hard incompatibilities are still refused")
    p.add_argument("--detect", action="store_true",
                   help="detect this node: default --hardware to the best-matching profile and --gpus to the "
                   "detected device count (when it differs from the profile's), record the snapshot in --out")
    p.add_argument("--replay", type=Path, metavar="FIXTURE", help="like --detect, replaying a detect fixture file")
    p.add_argument("--scenario", metavar="ID",
                   help="with --replay: scenario id inside a scenario file (failure_modes.yaml)")
    p.add_argument("--json", action="store_true", help="print the plan as JSON (docs/plan-file.md §3) and nothing else")
    p.add_argument("--out", type=Path, metavar="FILE",
                   help="write the plan file for `vllm-wizard launch` (YAML, or JSON for *.json); missing "
                   "parent folders are created. Written atomically, readable by you only (mode 0600): it "
                   "holds the argv/env to run, API keys and tokens included")
    p.add_argument("--script", type=Path, metavar="DIR",
                   help="write one executable bash script per node into DIR (created when missing); each "
                   "written atomically, for you only (mode 0700: it may hold API keys)")
    p.add_argument("--download", action="store_true",
                   help="download the model (and every model the plan serves) into the Hugging Face cache "
                   "when it is not there yet (huggingface_hub snapshot_download: resumable, HF_TOKEN honoured)")
    p.add_argument("--skip-flag-check", action="store_true",
                   help="do not check the --arg flags against the installed vLLM (`vllm serve --help=all`, "
                   f"read once and cached; ~{VLLM_FLAG_PROBE_S} s the first time)")
    p.add_argument("--save", metavar="NAME",
                   help="also save the selection as NAME (under the XDG config dir) for `vllm-wizard wizard "
                   "--open NAME` and the wizard's first screen")
    from vllm_deploy_wizard.commands.plan_engines import add_flags

    add_flags(p)
    p.set_defaults(handler=handle)


def _pool(value: str, flag: str) -> dict[str, Any]:
    from vllm_deploy_wizard.common.errors import SelectionError

    nodes, _, mode = value.partition(":")
    try:
        n = int(nodes)
    except ValueError:
        raise SelectionError(f"{flag} {value!r}: expected N[:MODE] with N a node count (0 = co-located) "
                             "and MODE one of tp, tep, dep") from None
    out: dict[str, Any] = {"nodes": n}
    if mode:
        out["mode"] = mode
    return out


#: Selection key → the flag that sets it (error messages name the flag, not the field).
FLAG_OF = {"model": "--model", "variant": "--variant", "hardware": "--hardware", "strategy": "--strategy",
           "nodes": "--nodes", "gpus": "--gpus", "devices": "--devices", "kv_offload": "--kv-offload",
           "frontend": "--frontend",
           "install_mode": "--install-mode", "connector": "--connector", "router": "--router", "task": "--task",
           "kv_instances": "--kv-instances", "features": "--feature", "feature_modes": "--feature",
           "pd.prefill": "--pd-prefill", "pd.decode": "--pd-decode", "advanced_args": "--arg",
           "allow_unverified": "--allow-unverified", "companion_args": "--l1-size-gb/--max-cpu-workers/"
           "--router-host/--router-port/--prometheus-port"}


def selection_data(args: argparse.Namespace, warnings: list[str] | None = None) -> dict[str, Any]:
    """The selection mapping: the ``--selection`` file's keys overlaid with the flags given.

    ``--arg`` values go through :func:`vllm_deploy_wizard.catalog.args.user_args` (its warnings are
    appended to ``warnings``); :func:`flags_given` says which keys came from flags.
    """
    from vllm_deploy_wizard.catalog.args import user_args
    from vllm_deploy_wizard.catalog.selection import load_selection
    from vllm_deploy_wizard.common.errors import SelectionError

    data: dict[str, Any] = {}
    if args.selection is not None:
        data = load_selection(args.selection).model_dump(exclude_none=True, exclude_defaults=True)
    for key in ("model", "variant", "hardware", "strategy", "nodes", "gpus", "kv_offload", "frontend",
                "install_mode", "connector", "router", "task", "allow_unverified"):
        value = getattr(args, key, None)
        if value is not None:
            data[key] = value
    if args.kv_instances is not None:
        data["kv_instances"] = {"count": args.kv_instances}
    if getattr(args, "devices", None) is not None:
        from vllm_deploy_wizard.catalog.device_pick import parse_devices

        data["devices"] = parse_devices(args.devices)
    companion = {key: getattr(args, key) for key in ("l1_size_gb", "max_cpu_workers", "router_host",
                                                      "router_port", "prometheus_port")
                 if getattr(args, key, None) is not None}
    if companion:
        data["companion_args"] = {**data.get("companion_args", {}), **companion}
    if args.feature:
        names = list(args.feature)
        if names in (["none"], ["default"]):
            data["features"] = names[0]
        else:
            if {"none", "default"} & set(names):
                raise SelectionError("--feature none/default stand alone; to pick features, list each "
                                     "one (--feature NAME[=MODE], repeatable)")
            feats, modes = [], {}
            for item in names:
                name, _, mode = item.partition("=")
                feats.append(name)
                if mode:
                    modes[name] = mode
            data["features"] = feats
            if modes:
                data["feature_modes"] = {**data.get("feature_modes", {}), **modes}
    pd: dict[str, Any] = dict(data.get("pd") or {})
    if args.pd_prefill:
        pd["prefill"] = _pool(args.pd_prefill, "--pd-prefill")
    if args.pd_decode:
        pd["decode"] = _pool(args.pd_decode, "--pd-decode")
    if pd:
        data["pd"] = pd
    if args.args:
        tokens, notes = user_args(args.args)
        if warnings is not None:
            warnings += notes
        data["advanced_args"] = [*data.get("advanced_args", []), *tokens]
    return data


def flags_given(args: argparse.Namespace) -> dict[str, str]:
    """``{selection key: flag}`` for the keys this command line set by flag (for error messages)."""
    dests = {"pd.prefill": "pd_prefill", "pd.decode": "pd_decode", "advanced_args": "args",
             "features": "feature", "feature_modes": "feature"}
    return {key: flag for key, flag in FLAG_OF.items() if getattr(args, dests.get(key, key), None) is not None}


def _check_outputs(args: argparse.Namespace) -> None:
    """Refuse output paths that can't be written, before any work (no tracebacks).

    Raises:
        SelectionError: ``--out`` is a folder or its parent is a file; ``--script`` is a file.
    """
    from vllm_deploy_wizard.common.errors import SelectionError

    if args.out is not None:
        if args.out.is_dir():
            raise SelectionError(f"--out {args.out}: is a folder; --out takes the plan FILE to write "
                                 "(e.g. {}/plan.yaml)".format(args.out))
        parent = next((p for p in args.out.parents if p.exists()), None)
        if parent is not None and not parent.is_dir():
            raise SelectionError(f"--out {args.out}: {parent} is a file, not a folder")
    if args.script is not None:
        if args.script.exists() and not args.script.is_dir():
            raise SelectionError(f"--script {args.script}: is a file; --script takes a FOLDER for the "
                                 "per-node scripts")
        parent = next((p for p in args.script.parents if p.exists()), None)
        if parent is not None and not parent.is_dir():
            raise SelectionError(f"--script {args.script}: {parent} is a file, not a folder")


#: Plan files hold the argv and env to run, which may carry secrets (``--api-key``, ``HF_TOKEN``),
#: so they are readable by their owner only; scripts too, and executable.
PLAN_FILE_MODE = 0o600
SCRIPT_MODE = 0o700


def _write(flag: str, path: Path, text: str, mode: int) -> None:
    """Write ``text`` to ``path`` atomically with permissions ``mode`` (parents created).

    The text goes to a temporary file in the same folder, created with ``mode`` (never briefly
    wider: ``mkstemp`` makes it 0600, ``fchmod`` sets ``mode`` before the first byte), flushed to
    disk, then renamed over ``path``: a reader sees the old file or the whole new one, and an
    existing file's wider mode is not kept. OSError → SelectionError naming the flag.
    """
    from vllm_deploy_wizard.common.errors import SelectionError
    from vllm_deploy_wizard.common.files import write_atomic

    try:
        write_atomic(path, text, mode=mode)
    except OSError as exc:
        raise SelectionError(f"{flag} {path}: cannot write: {exc.strerror or exc}") from None


def download_missing(models: list[str], done: set[str] | None = None) -> None:
    """Download each Hugging Face id of ``models`` not yet in the local cache nor in ``done`` (the ids
    this command already fetched; updated), saying so on stderr (workflows/model_download.py).
    Raises DownloadError with the cause and its fix."""
    from vllm_deploy_wizard.workflows.model_download import download_model, hf_id_of, is_cached

    done = set() if done is None else done
    for model in models:
        hf = hf_id_of(model)
        if hf is None or hf in done or is_cached(hf):
            continue
        done.add(hf)
        print(f"downloading {hf} into the Hugging Face cache …", file=sys.stderr)
        path = download_model(hf)
        print(f"downloaded {hf} to {path}", file=sys.stderr)


def _is_recipe(cat: Any, model: str) -> bool:
    """Whether ``model`` names a recipe of ``cat`` (its id or a variant's ``model_id``, any case)."""
    from vllm_deploy_wizard.common.errors import SelectionError

    try:
        cat.resolve_model(model)
    except SelectionError:
        return False
    return True


def check_typed_input(typed: list[str], plan_json: dict, flags: bool = True) -> None:
    """Refuse typed ``--arg`` flags the installed vLLM lacks, a typed ``--port`` that is not a port
    (1–65535) and a ``--max-model-len`` above the model's limit (workflows/plan_checks.py):
    SelectionError listing each with its did-you-mean / limit.
    Warnings (an abbreviated flag) go to stderr."""
    from vllm_deploy_wizard.common.errors import SelectionError
    from vllm_deploy_wizard.workflows.plan_checks import typed_input_problems

    problems, warnings = typed_input_problems(typed, plan_json, flags=flags,
                                              notice=lambda text: print(text + " …", file=sys.stderr))
    for w in warnings:
        print(f"warning: {w}", file=sys.stderr)
    if problems:
        raise SelectionError(f"{len(problems)} problem(s) in the typed input:\n"
                             + "\n".join(f"  - {p}" for p in problems))


def check_pd_nodes(args: argparse.Namespace, selection: Any, plan: Any) -> None:
    """Refuse ``--nodes N`` with a PD pool sized (``--pd-prefill``/``--pd-decode``, or ``pd.<role>.nodes``
    of the ``--selection`` file) when the pools take another number of engine machines.

    Why an error, not the plan's warning: a pd_cluster plan is sized by its pools (docs/synthesis.md
    §2.6 PD role); ``--nodes`` only picks the default of a pool left unsized (1 = co-located, more =
    one node per pool), so ``--nodes 2 --pd-prefill 3`` would silently plan 3 prefill + 1 decode
    machines. Typed on one command line, the two flags disagree; the message names both and the
    valid forms. Without a pool size (``--nodes 3`` alone) the plan's ``nodes … ignored`` warning says
    it instead (catalog/plan_notes.py ``pd_nodes_note``).

    Raises:
        SelectionError: the conflict, with the machines the pools take and what would be valid.
    """
    from vllm_deploy_wizard.catalog.plan import pd_engine_machines
    from vllm_deploy_wizard.catalog.plan_notes import pd_machines_words
    from vllm_deploy_wizard.common.errors import SelectionError

    pools = plan.pd_pool_nodes
    if args.nodes is None or pools is None or selection.pd is None:
        return
    sized = [(role, pool.nodes) for role in ("prefill", "decode")
             if (pool := getattr(selection.pd, role)) is not None and pool.nodes is not None]
    machines = pd_engine_machines(pools)
    if not sized or machines == args.nodes:
        return
    file = f" (in {args.selection})" if args.selection is not None else ""
    given = ", ".join(f"--pd-prefill {n}" if role == "prefill" and args.pd_prefill else
                      f"--pd-decode {n}" if role == "decode" and args.pd_decode else
                      f"pd.{role}.nodes {n}{file}" for role, n in sized)
    fit = ("--pd-prefill 0 --pd-decode 0: both co-located on one machine" if args.nodes == 1 else
           f"--pd-prefill {args.nodes // 2} --pd-decode {args.nodes - args.nodes // 2}")
    raise SelectionError(
        f"--nodes {args.nodes} conflicts with {given}: pd_cluster is sized by its pools, "
        f"{pd_machines_words(pools)} plus the router (--nodes only picks the default of a pool left "
        "unsized: 1 = co-located, more = one node per pool). Valid: drop --nodes (plans those "
        f"{machines}), --nodes {machines}, or pools that add up to {args.nodes} (e.g. {fit})")


def detected_way_out(args: argparse.Namespace, cat: Any, data: dict[str, Any], where: str,
                     refused: Any) -> str | None:
    """The way out of an H1 refusal of the hardware given (docs/constraints.md §3.1 H1) that needs no
    ``--allow-unverified``, as one line, or None when there is none.

    H1 exempts the detected profile. So when ``refused`` (a :class:`PlanRefused`) holds an H1 refusal of
    ``--hardware``, this node is detected (or the ``--replay`` fixture replayed) and ``data`` (the
    selection mapping before detection filled it) is planned again, strictly, for the detected profile
    the way ``plan --detect`` without ``--hardware`` would plan it. Only when that plans is its line
    returned ("--detect plans for this node's detected profile Xeon 6 (xeon6), which rule H1 allows:
    pass --detect in place of --hardware xeon5"); the rule itself stays in the planner. Detection that
    fails, finds no profile, or a plan that is refused or invalid there gives None."""
    from vllm_deploy_wizard.catalog.planner import plan_selection
    from vllm_deploy_wizard.catalog.selection import selection_from_data
    from vllm_deploy_wizard.common.errors import WizardError

    hw = next((r for r in refused.refusals if r.key == "hardware" and r.unverified and "(rule H1)" in r.reason),
              None)
    if hw is None:
        return None
    retry = {k: v for k, v in copy.deepcopy(data).items() if k != "hardware"}
    try:
        snapshot = detect_defaults(cat, retry, args.replay, getattr(args, "scenario", None))
    except Exception:  # noqa: BLE001 — no detection here: no way to offer
        return None
    detected = snapshot.get("matched_profile")
    if not detected or detected not in cat.taxonomy.hardware_profiles:
        return None
    try:
        selection = selection_from_data(retry, where, flags=flags_given(args))
        host, _ = host_for_exports(host_capacity(snapshot, selection.hardware),
                                   [f for f in ("--k8s", "--slurm") if getattr(args, f[2:], None) is not None])
        planned = plan_selection(cat, selection, host, detected_profile=detected)
        check_pd_nodes(args, planned.selection, planned.plan)
    except WizardError:
        return None
    profile = cat.taxonomy.hardware_profiles[detected]
    label = f"{profile.display_name or detected} ({detected})"
    if args.replay is not None:
        return (f"--replay {args.replay} plans for the replayed node's detected profile {label}, which rule H1 "
                f"allows: drop --hardware {hw.value}")
    if args.detect:
        return (f"--detect plans for this node's detected profile {label}, which rule H1 allows: "
                f"drop --hardware {hw.value}")
    return (f"--detect plans for this node's detected profile {label}, which rule H1 allows: "
            f"pass --detect in place of --hardware {hw.value}")


def handle(args: argparse.Namespace) -> int:
    """Plan and print/write; returns 0. Raises WizardError subclasses for bad input."""
    import json

    from vllm_deploy_wizard.catalog import plan_to_json
    from vllm_deploy_wizard.catalog.loader import load_for_source
    from vllm_deploy_wizard.catalog.planner import PlanRefused, plan_selection
    from vllm_deploy_wizard.catalog.render import node_scripts, plan_text
    from vllm_deploy_wizard.catalog.selection import selection_from_data
    from vllm_deploy_wizard.catalog.sources import resolve_source
    from vllm_deploy_wizard.common.errors import SelectionError
    from vllm_deploy_wizard.workflows.model_download import served_models

    if getattr(args, "scenario", None) and args.replay is None:
        raise SelectionError("--scenario needs --replay FILE (a scenario file such as failure_modes.yaml)")
    _check_outputs(args)
    from vllm_deploy_wizard.commands.plan_engines import check_flags

    check_flags(args)
    if getattr(args, "save", None) is not None:
        from vllm_deploy_wizard.workflows.saved_selections import check_name

        check_name(args.save)
    source = resolve_source(args.recipes)
    cat = load_for_source(source)
    warnings: list[str] = []
    data = selection_data(args, warnings)
    typed_data = copy.deepcopy(data)  # before detection fills it: the H1 way out plans it again
    snapshot = (detect_defaults(cat, data, args.replay, getattr(args, "scenario", None))
                if (args.detect or args.replay) else None)
    if "model" not in data:
        raise SelectionError("no model: pass --model ID or a --selection file with a `model` key")
    fetched: set[str] = set()
    if getattr(args, "download", False) and not _is_recipe(cat, str(data["model"])):
        # a custom model: its config.json is needed to plan it. A recipe's served models come after
        # planning (served_models below): the typed id may differ from what vLLM loads in case
        # (Google/gemma-… serves google/gemma-…) and the cache folder keeps the case given
        download_missing([str(data["model"])], fetched)
    where = str(args.selection) if args.selection else "flags"
    selection = selection_from_data(data, where, flags=flags_given(args))
    detected = snapshot.get("matched_profile") if snapshot is not None else None
    host = host_capacity(snapshot, selection.hardware)  # node facts only when planning for this node
    host, off_node = host_for_exports(host, [f for f in ("--k8s", "--slurm") if getattr(args, f[2:], None) is not None])
    warnings += off_node
    # an exact --recipes checkout is the reference builder's view: gated selections plan with warnings
    try:
        planned = plan_selection(cat, selection, host, detected_profile=detected, strict=source.kind != "dir")
    except PlanRefused as refused:
        way = detected_way_out(args, cat, typed_data, where, refused)
        if way is None:
            raise
        raise PlanRefused(refused.refusals, ways=[way]) from None
    typed = selection  # what the person asked for; --save keeps it (defaults resolve again when opened)
    cat, selection, plan = planned.catalog, planned.selection, planned.plan
    check_pd_nodes(args, selection, plan)
    plan.notes += ["warning: " + w for w in warnings]
    plan.notes += node_plan_warnings(cat, plan, snapshot)

    if getattr(args, "download", False):
        download_missing(served_models(plan_to_json(plan)), fetched)
    check_typed_input(list(selection.advanced_args or []), plan_to_json(plan),
                      flags=not getattr(args, "skip_flag_check", False))
    engines = getattr(args, "k8s", None) is not None or getattr(args, "slurm", None) is not None
    if args.out is not None or engines:
        doc = plan_document(plan, selection, cat, source, snapshot)
    if args.out is not None:
        import yaml

        text = (json.dumps(doc, indent=2) + "\n" if args.out.suffix == ".json"
                else yaml.safe_dump(doc, sort_keys=False, allow_unicode=True))
        _write("--out", args.out, text, PLAN_FILE_MODE)
    if engines:
        from vllm_deploy_wizard.commands.plan_engines import export

        export(args, cat, selection, doc)
    if args.script is not None:
        for name, text in node_scripts(plan).items():
            _write("--script", args.script / name, text, SCRIPT_MODE)
    if args.json:
        sys.stdout.write(json.dumps(plan_to_json(plan), ensure_ascii=False) + "\n")
    elif args.out is None and args.script is None and not engines:
        sys.stdout.write(plan_text(plan))
    if args.json or args.out is not None or args.script is not None or engines:
        for note in plan.notes:  # the text plan shows them inline; elsewhere stderr
            if note.startswith("warning:"):
                print(note, file=sys.stderr)
    if args.out is not None or args.script is not None:
        written = [str(p) for p in (args.out, args.script) if p is not None]
        print(f"wrote {', '.join(written)}", file=sys.stderr)
    if getattr(args, "save", None) is not None:
        from vllm_deploy_wizard.workflows.saved_selections import save

        path = save(args.save, typed.model_dump(exclude_none=True, exclude_defaults=True))
        print(f"saved selection {args.save} to {path} (`vllm-wizard wizard --open {args.save}` opens it)",
              file=sys.stderr)
    return 0
