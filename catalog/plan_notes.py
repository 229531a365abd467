"""What a plan says about itself besides its processes: ``resolved``, config files, notes, defaults.

The ``resolved`` block and Mooncake config files (docs/plan-file.md §3.1); notes: one ``warning: …``
line per failed gate (docs/plan-file.md §3.7 ``checks``, rules of docs/constraints.md §3.1), per
selection key the resolved shape ignores, install and TPU-slice notes (``docs/synthesis.md`` §4.1);
the defaults of the placeholders a plan still has (§2.13, contracts §2 ``placeholder_defaults``).
"""

from __future__ import annotations

from typing import Any

from vllm_deploy_wizard.common import suggest
from vllm_deploy_wizard.common.flags import flag_values, last_flag_value
from vllm_deploy_wizard.common.vllm_source import UNKNOWN_VERSION, fetch_command, is_checkout_path

from . import backends as B
from . import gates as G
from .plan import pd_engine_machines
from .synthesis_context import PD_ROLES, SynthesisContext


def resolved(ctx: SynthesisContext, omni: bool, task_key: str | None) -> dict[str, Any]:
    """docs/plan-file.md §3.1 ``resolved`` (+ the product extensions actually in use)."""
    resolved: dict[str, Any] = {
        "model": ctx.recipe.hf_id,
        "variant": ctx.variant_key,
        "hardware": ctx.hw,
        "strategy": None if omni else ctx.strategy_id,
        "nodes": 1 if omni else ctx.nodes,
        "features": [] if omni else list(ctx.features),
        "task": task_key,
    }
    if ctx.sel.frontend:
        resolved["frontend"] = ctx.sel.frontend
    if ctx.connector_id:
        resolved["connector"] = ctx.connector_id
    if ctx.is_pd:
        resolved["router"] = ctx.router
        resolved["pd_modes"] = {r: ctx.pools[r].mode for r in PD_ROLES}  # snapped pool modes (§2.6)
    if ctx.sel.gpus:
        resolved["gpus"] = ctx.gpu_count
    return resolved


def config_files(ctx: SynthesisContext) -> dict[str, Any]:
    """Mooncake config files keyed by the env var naming their path (docs/plan-file.md §3.1)."""
    store = ctx.kv_store
    files: dict[str, Any] = {}
    if store is None or (ctx.is_pd and store.pd is None):
        return files
    if store.mooncake_vllm_config is not None:
        files["MOONCAKE_CONFIG_PATH"] = store.mooncake_vllm_config.template
    if store.mooncake_store_config is not None and store.mooncake_store_config.config is not None:
        files["MOONCAKE_STORE_CONFIG_PATH"] = store.mooncake_store_config.config
    return files


def notes(ctx: SynthesisContext) -> list[str]:
    """Gate warnings, install notes (recipe, seed profile), TPU slice shape, recipe hardware note."""
    notes = _gate_warnings(ctx)
    for source in (ctx.recipe.model.install, ctx.profile.install):  # recipe, then seed profile (§4.1)
        mode_block = (source or {}).get(ctx.install_mode)
        if isinstance(mode_block, dict) and mode_block.get("note"):
            notes.append(str(mode_block["note"]))
    notes += B.install_notes(ctx.profile, ctx.install_mode)
    if ctx.profile.slice_topology:  # docs/synthesis.md §4.1: TPU slice shape, {n} = node count
        topo = ctx.profile.slice_topology.replace("{n}", str(ctx.nodes))
        notes.append(f"TPU slice topology {topo} ({ctx.profile.chips_per_node or ctx.gpu_count} chips per node)")
    hw_note = ctx.recipe.hardware_notes.get(ctx.hw)
    if isinstance(hw_note, str):
        notes.append(hw_note)
    elif isinstance(hw_note, dict):
        notes.append(str(hw_note.get("body") or hw_note.get("description") or hw_note.get("title") or ""))
    return [n for n in notes if n]


#: Plain-words reason for each failed KV-option fact (docs/constraints.md §3.1 rules K1–K6, docs/synthesis.md §4.3).
_KV_REASONS = {
    "kv_allowed_for_strategy": ("", ""),  # see _kv_strategy_reason
    "kv_supported_for_recipe": ("this recipe marks it unsupported or not yet verified", "K2/K3"),
    "kv_brand_ok": ("it needs another accelerator brand than {brand}", "K4"),
    "kv_hardware_ok": ("it is not available on {hw}", "K1"),
    "kv_docker_ok": ("it is not available in docker install mode", "docs/synthesis.md §4.3"),
}


def _gate_warnings(ctx: SynthesisContext) -> list[str]:
    """One ``warning: …`` line per gate that fails (docs/plan-file.md §3.7 ``checks``), plus one per
    selection key that the resolved shape ignores (:func:`_ignored_selection`).

    The reference renders such selections anyway (goldens contain only passing ones), so the plan
    is still produced; these lines say in plain words why it may not run, each ending with the
    §3.1 rule it comes from as ``(rule X1)``.
    """
    c, hw, p = ctx.checks, ctx.hw, ctx.profile
    name = f"{p.display_name or hw} ({hw})"
    out = []
    if c.get("precision_ok") is False:
        out.append(f"{ctx.variant.precision.upper()} is not supported on {name} (rule P1)")
    if c.get("hw_not_unsupported") is False:
        out.append(f"{ctx.recipe.hf_id} is marked unsupported on {name} (rule H2)")
    if c.get("variant_hw_allowed") is False:
        out.append(f"variant {ctx.variant_key} only runs on {', '.join(ctx.variant.supported_hardware or [])} "
                   "(rule H5)")
    if c.get("restricted_hidden"):
        out.append(G.unlisted_restricted_text(ctx.recipe, name))
    if ctx.nodes > 1 and c.get("scalable") is False:
        out.append(f"{name} can't be clustered into multiple nodes (rule N2)")
    single = ctx.strategy is not None and ctx.deploy == "single_node"
    if single and c.get("fits_single_node") is False:
        per = p.vram_per_device_gb or 0
        ram = " of RAM" if p.memory_term == "RAM" else ""  # a CPU profile's memory is host RAM, not VRAM
        out.append(f"Insufficient {p.memory_term} for single-node: {name} provides {ctx.gpu_count}×{per:g}G = "
                   f"{per * ctx.gpu_count:g}GB{ram}, but this variant needs at least "
                   f"{ctx.variant.vram_minimum_gb:g}GB for weights alone (rule N5)")
    by_match = c.get("strategy_offered_by_hardware_match")  # unverified instead (docs/constraints.md §3.2)
    if c.get("strategy_offered") is False and not by_match:
        out.append(f"{ctx.recipe.hf_id} does not offer strategy {ctx.strategy_id} (rule S3)")
    if c.get("strategy_supported_on_hw") is False and not by_match:
        out.append(f"{ctx.strategy_id} isn't supported on {name} for this model (rule S5)")
    if c.get("strategy_reachable") is False:
        out.append(f"{ctx.strategy_id} can't reach this recipe's GPU floor on {name} (rule S4)")
    elif ctx.deploy == "multi_node" and ctx.nodes < c.get("strategy_min_nodes", 1):
        out.append(f"{ctx.strategy_id} needs at least {c['strategy_min_nodes']} nodes on {name} (§2.3)")
    for key in ctx.features:
        if key not in ctx.recipe.features:
            hint = suggest.did_you_mean(key, ctx.recipe.features)
            out.append(f"unknown feature {key!r} ignored{hint}; this recipe has: "
                       f"{', '.join(ctx.recipe.features) or 'none'}")
    if c.get("features_skipped_by_strategy"):
        out.append(f"features not available with {ctx.strategy_id}, skipped: "
                   f"{', '.join(c['features_skipped_by_strategy'])} (rule F1)")
    for key, (why, rule) in _KV_REASONS.items():
        if c.get(key) is False:
            reason = why.format(strategy=ctx.strategy_id, brand=ctx.brand, hw=name)
            if key == "kv_allowed_for_strategy":
                reason, rule = _kv_strategy_reason(ctx)
            ref = f"rule {rule}" if rule[:1].isupper() else rule  # §3.1 rule id, or a seed section
            out.append(f"KV offload {ctx.kv_key!r} dropped: {reason} ({ref})")
            break
    if c.get("kv_store_brand_ok") is False or c.get("kv_store_not_opted_out") is False:
        out.append(f"Mooncake is not supported on {name} (rule M2/M4)")
    if c.get("kv_offload_unknown"):
        valid = sorted([*ctx.cat.taxonomy.kv_offload, *ctx.cat.kv_stores])
        hint = suggest.did_you_mean(ctx.kv_key or "", valid, n=3)
        out.append(f"unknown kv_offload {ctx.kv_key!r} ignored{hint}; valid: {', '.join(valid) or 'none'}")
    kv_opt = ctx.cat.taxonomy.kv_offload.get(ctx.kv_key or "")
    kv_name = (kv_opt.display_name or ctx.kv_key) if kv_opt is not None else (
        "Mooncake" if ctx.kv_key in ctx.cat.kv_stores else None)
    out += B.plan_warnings(ctx.profile, kv_name, ctx.kv_key in ctx.cat.kv_stores, ctx.nodes)
    out += _ignored_selection(ctx)
    return ["warning: " + line for line in out]


def _kv_strategy_reason(ctx: SynthesisContext) -> tuple[str, str]:
    """Why the strategy refuses the KV option, and the rule: PD owns the KV connector (K5), the
    option lists other strategies (K6), or the strategy opts out of KV offload (docs/synthesis.md §4.6)."""
    opt = ctx.cat.taxonomy.kv_offload.get(ctx.kv_key or "")
    if ctx.deploy in ("pd_cluster", "kv_store_lb"):
        return (f"it can't compose with {ctx.strategy_id}, which owns --kv-transfer-config (Mooncake "
                "kv_store ids compose with PD instead)", "K5")
    if opt is not None and opt.strategies is not None and ctx.strategy_id not in opt.strategies:
        return f"it works with {', '.join(opt.strategies)} only, not {ctx.strategy_id}", "K6"
    return f"strategy {ctx.strategy_id} does not compose with KV offload", "docs/synthesis.md §4.6"


def _ignored_selection(ctx: SynthesisContext) -> list[str]:
    """Selection keys the resolved deployment shape does not use, in plain words (product rule:
    nothing a user asks for is dropped silently):

    * ``pd`` pools, ``connector``, ``router`` without the ``pd_cluster`` strategy;
    * ``task`` on a recipe that is not omni (§2.12);
    * ``kv_instances`` without a non-PD Mooncake kv_store deployment (§2.9);
    * ``nodes`` > 1 with a ``single_node_*`` strategy (the plan is one node);
    * ``nodes`` under ``pd_cluster`` when the pools take another number of engine machines: the
      pools size a PD plan, ``nodes`` only picks the legacy default of a pool left unsized
      (docs/synthesis.md §2.6 PD role: 1 → co-located, > 1 → one node); ``plan --nodes`` with a
      ``--pd-prefill``/``--pd-decode`` size refuses the conflict instead (commands/plan.py);
    * ``gpus`` above the profile's ``gpu_count`` (planned as asked, but the profile has fewer).
    """
    sel, out = ctx.sel, []
    if not ctx.is_pd:
        dropped = [flag for flag, on in (("pd prefill pool (--pd-prefill)", sel.pd and sel.pd.prefill),
                                         ("pd decode pool (--pd-decode)", sel.pd and sel.pd.decode),
                                         (f"connector {sel.connector!r}", sel.connector),
                                         (f"router {sel.router!r}", sel.router)) if on]
        if dropped:
            shape = f"strategy {ctx.strategy_id}" if ctx.strategy_id else "an omni model"
            out.append(f"{', '.join(dropped)} ignored: they apply to the pd_cluster strategy only, this plan "
                       f"uses {shape}")
    if sel.task and not ctx.recipe.is_omni:
        out.append(f"task {sel.task!r} ignored: {ctx.recipe.hf_id} is not an omni model (tasks pick an omni "
                   "model's pipeline)")
    if sel.kv_instances is not None and not (ctx.kv_store is not None and not ctx.is_pd):
        out.append(f"kv_instances {sel.kv_instances.count} ignored: instances apply to a Mooncake kv_store "
                   "deployment (kv_offload kv_store_*) without PD")
    if ctx.nodes > 1 and ctx.strategy_id and ctx.deploy == "single_node":
        out.append(f"nodes {ctx.nodes} ignored: {ctx.strategy_id} runs on one node; pick a multi_node_* or "
                   "pd_cluster strategy to use more")
    if ctx.is_pd and sel.nodes is not None:
        out += pd_nodes_note(sel.nodes, {role: ctx.pools[role].nodes for role in PD_ROLES})
    if sel.gpus and sel.gpus > ctx.profile.gpu_count:
        out.append(f"the {ctx.hw} profile has {ctx.profile.gpu_count} devices per node; planning for {sel.gpus}")
    return out


def pd_machines_words(pool_nodes: dict[str, int]) -> str:
    """``3 prefill + 1 decode = 4 engine machines`` (a co-located pool is ``co-located``)."""
    parts = [f"{n} {role}" if n else f"{role} co-located" for role, n in pool_nodes.items()]
    total = pd_engine_machines(pool_nodes)
    return f"{' + '.join(parts)} = {total} engine machine{'s' if total != 1 else ''}"


def pd_nodes_note(nodes: int, pool_nodes: dict[str, int]) -> list[str]:
    """The warning for a PD selection whose ``nodes`` differs from its pools' engine machines
    (:func:`~vllm_deploy_wizard.catalog.plan.pd_engine_machines`); none when they agree."""
    if pd_engine_machines(pool_nodes) == nodes:
        return []
    return [f"nodes {nodes} ignored: pd_cluster is sized by its pools, {pd_machines_words(pool_nodes)}, plus "
            "the router (nodes only picks the default of a pool left unsized: 1 = co-located on one "
            "machine, more = one node per pool); size the pools with --pd-prefill N --pd-decode M "
            "(selection key pd.<role>.nodes)"]


#: Address a placeholder for a machine of a one-machine plan defaults to: every process is local.
LOCAL_ADDRESS = "127.0.0.1"


def checkout_file_notes(processes: list[Any], install_mode: str) -> list[str]:
    """One note per ``--chat-template`` a pip-mode plan passes as a vLLM source checkout path
    (``examples/….jinja``, :func:`~vllm_deploy_wizard.common.vllm_source.is_checkout_path`): a pip
    install has no ``examples/``, so the note gives the fetch command the launch preflight gives
    (:func:`~vllm_deploy_wizard.common.vllm_source.fetch_command`, docs/plan-file.md §3.4). Docker
    plans get none: the vLLM images have ``examples/``."""
    if install_mode == "docker":
        return []
    paths = dict.fromkeys(path for proc in processes for path in flag_values(list(proc.argv), "--chat-template")
                          if is_checkout_path(path))
    return [f"--chat-template {path} is a file of a vLLM source checkout, which a pip-installed vLLM does not "
            f"have: before launch, in the folder vLLM starts in, run {fetch_command(path, None)} "
            f"({UNKNOWN_VERSION} = the installed vLLM's release, `vllm --version`, e.g. 0.32.0; `launch` checks "
            "for the file and prints this line with the version filled in)" for path in paths]


def placeholder_defaults(deploy: str, holes: list[str], pools: dict[str, int] | None = None) -> dict[str, str]:
    """Defaults for the placeholders a plan still has (contracts §2 ``placeholder_defaults``):

    * docs/synthesis.md §2.13: PD router ``ROUTER_HOST=localhost``, ``ROUTER_PORT=30000``; Mooncake
      router localhost:30080;
    * PD with **every** pool co-located (``pools`` = ``pd_pool_nodes``, all 0: prefill and decode
      share node-0, docs/plan-file.md §3.1): the pool addresses ``PREFILL_NODE_1`` / ``DECODE_NODE_1`` (NIXL
      side-channel host, router ``--prefill``/``--decode`` URLs) are this machine,
      :data:`LOCAL_ADDRESS`. The command text keeps the placeholders (the goldens pin them); with one
      pool on its own nodes the addresses must be reachable from another machine, so no default.
    """
    defaults = {"ROUTER_HOST": "localhost",
                "ROUTER_PORT": "30080" if deploy == "kv_store_lb" else "30000"}
    if deploy == "pd_cluster" and pools and all(n == 0 for n in pools.values()):
        defaults.update({f"{role.upper()}_NODE_1": LOCAL_ADDRESS for role in pools})
    return {k: v for k, v in defaults.items() if k in holes}


def mixed_pools_note(plan: Any) -> list[str]:
    """The note for a PD plan with one pool co-located (``0`` nodes) and the other on nodes of its own
    (``--pd-prefill 3 --pd-decode 0``): nothing shares ``node-0`` with the co-located pool, which runs
    alone on a machine apart from the other pool's nodes, on half its devices. The layout runs (the
    planner has refused it when the half can't hold the variant, docs/constraints.md §3.2 N6); the
    note says which machine the pool's address placeholder stands for and how to use the whole node."""
    pools = plan.pd_pool_nodes or {}
    alone = [role for role in PD_ROLES if pools.get(role) == 0]
    if len(alone) != 1 or not pools.get(next(r for r in PD_ROLES if r not in alone)):
        return []
    role = alone[0]
    other = next(r for r in PD_ROLES if r != role)
    proc = next((p for p in plan.processes if p.role == role), None)
    if proc is None:
        return []
    pins = proc.env.get("CUDA_VISIBLE_DEVICES")
    host = proc.env.get("VLLM_NIXL_SIDE_CHANNEL_HOST", "")
    where = f" ({host} is its address)" if host.startswith("$") else ""
    devices = f" (CUDA_VISIBLE_DEVICES={pins}; the other half stays idle)" if pins else ""
    return [f"the {role} pool is co-located (--pd-{role} 0) but the {other} pool has nodes of its "
            f"own: {proc.name} runs alone on node-0, a machine apart from the {other} nodes{where}, on "
            f"half its devices{devices}; --pd-{role} 1 gives the pool the whole node"]


def single_node_tp_hint(recipe: Any, variant: Any, strategy_id: str | None, nodes: int, hw_id: str,
                        profile: Any, gpus: int, advanced_args: list[str] | tuple[str, ...] = ()) -> str | None:
    """The §2.2 [UI] hint when a ``single_node_tp`` plan on one node runs on fewer devices than the
    node has: the TP is the recipe's (:func:`.gates.single_node_tp`) or a ``--tensor-parallel-size``
    in the advanced args (``plan --arg``). The wizard's constraints panel (constraints/banners.py)
    and ``vllm-wizard plan``'s notes (the planner) both print this text. None when TP ≥ devices."""
    if strategy_id != "single_node_tp" or nodes != 1:
        return None
    given = last_flag_value(list(advanced_args), "--tensor-parallel-size", "-tp")
    tp = int(given) if given is not None and given.isdigit() else \
        G.single_node_tp(recipe, variant, "single_node_tp", hw_id, profile, gpus)
    if tp >= gpus:
        return None
    unit = "CPU NUMA node(s)" if profile.gen == "cpu" else "GPUs"
    return (f"This recipe runs on {tp} of {gpus} {unit} on the selected node — "
            "add --tensor-parallel-size N via Advanced to scale up.")
