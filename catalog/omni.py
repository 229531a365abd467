"""Omni recipes (``docs/synthesis.md`` §2.12): one ``vllm serve … --omni`` process per plan.

The task (pipeline) pick with its hardware overlay, the env and argument assembly an omni recipe uses
instead of the strategy path (no strategy, features or KV offload), and the process itself.
"""

from __future__ import annotations

from typing import Any

from . import args as A
from . import gates as G
from .plan import PlanProcess
from .resolution import did_you_mean, no_model_id
from .synthesis_context import SynthesisContext


def omni_processes(ctx: SynthesisContext) -> tuple[list[PlanProcess], str | None]:
    """Omni recipes (§2.12): one ``vllm serve … --omni`` process."""
    r, v, p, hw = ctx.recipe, ctx.variant, ctx.profile, ctx.hw
    omni = r.omni
    tasks = omni.tasks if omni else []
    task = None
    if tasks:
        if ctx.sel.task is not None:
            task = next((t for t in tasks if t.selector == ctx.sel.task), None)
            if task is None:
                raise did_you_mean("task", ctx.sel.task, [t.selector for t in tasks], f"for {r.hf_id}")
        else:
            task = tasks[0]
    overlay: dict[str, Any] = {}
    if task is not None:
        overlay = dict(task.hardware_overrides.get(hw) or {})
    non_default = ctx.variant_key != "default"
    env: dict[str, str] = {}
    env.update(r.model.base_env)
    if non_default:
        env.update(v.extra_env)
    rg = G.gen_block(r.hardware_overrides, p)
    vg = G.gen_block(v.hardware_overrides, p)
    vx = v.hardware_overrides.get(hw)
    for b in (rg, vg, vx):
        if b is not None:
            env.update(b.extra_env)
    toks = list(r.model.base_args)
    if non_default:
        toks += v.extra_args
    if task is not None:
        toks += task.extra_args
    toks += [str(t) for t in overlay.get("extra_args") or []]
    for b in (rg, vg, vx):
        if b is not None:
            toks += b.extra_args
    if omni is not None and omni.port:
        toks += ["--port", str(omni.port)]
    toks.append("--omni")
    model = overlay.get("model_id") or (task.model_id if task else None) or r.served_model_id(v)
    if not model:
        raise no_model_id(ctx.cat, r, ctx.variant_key)
    kept = A.dedupe_units(toks)
    argv = ["vllm", "serve", model, *A.argv_tokens(kept)]
    proc = PlanProcess(name="vllm", role="serve", node_rank=0, argv=argv, env=env, label="vLLM-Omni Serve")
    return [proc], (task.selector if task else None)
