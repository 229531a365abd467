"""Serve processes of the single-node and multi-node shapes (``docs/synthesis.md`` §2.11).

One engine process from a context's raw argument tokens (dedupe §2.5, the backend's serve args), the
single-node shape or head + per-rank workers (§2.6), the single-node companions of features and the
KV option (§2.11) and the strategy's own companion (docs/synthesis.md §4.5–4.6). The PD and Mooncake shapes
(:mod:`.disaggregation`) build their engines with the same :func:`serve_process`.
"""

from __future__ import annotations

from vllm_deploy_wizard.common.flags import last_flag_value

from . import args as A
from . import backends as B
from .backends import last_port
from .plan import PlanProcess
from .synthesis_context import SynthesisContext


def serve_process(ctx: SynthesisContext, name: str, role: str, node_rank: int | None, toks: list[str],
                  env: dict[str, str], instance: int | None = None, launcher: list[str] | None = None,
                  remove: list[str] | None = None) -> PlanProcess:
    """One ``vllm serve`` (or launcher) process from raw tokens: deduped (§2.5), strategy removals applied."""
    kept = A.typed_last(A.dedupe_units(toks + B.serve_args(ctx.profile, toks)), list(ctx.sel.advanced_args))
    removals = list(ctx.strategy.remove_args) if ctx.strategy else []
    removals += remove or []
    kept = A.remove_flags(kept, removals)
    if launcher:  # seed Dynamo workers: `python3 -m dynamo.vllm --model <id> …`
        argv = [*launcher, "--model", ctx.model_id, *A.argv_tokens(kept)]
    else:
        argv = ["vllm", "serve", ctx.model_id, *A.argv_tokens(kept)]
    return PlanProcess(name=name, role=role, node_rank=node_rank, instance=instance, argv=argv, env=env)


def single_or_multi(ctx: SynthesisContext, procs: list[PlanProcess], instance: int | None = None,
                     prefix: str = "") -> None:
    """Single-node shape (also a multi-node strategy at 1 node) or head + per-rank workers."""
    addr = f"$VLLM_INSTANCE_{instance + 1}" if instance is not None and ctx.kv_count >= 2 else "$HEAD_IP"
    env = ctx.build_env()
    base = prefix or "vllm"
    if ctx.deploy == "multi_node" and ctx.nodes > 1:
        procs.append(serve_process(ctx, f"{base}-head", "head", 0, ctx.build_args("head", 0, addr), dict(env),
                                   instance))
        for r in range(1, ctx.nodes):
            procs.append(serve_process(ctx, f"{base}-worker-{r}", "worker", r, ctx.build_args("worker", r, addr),
                                dict(env), instance))
    else:
        procs.append(serve_process(ctx, prefix or "vllm", "serve", 0, ctx.build_args("serve", 0, addr), env, instance))


def companions(ctx: SynthesisContext) -> tuple[list[PlanProcess], list[PlanProcess]]:
    """Single-node companions (§2.11): features then the KV option's; seed strategy companion after."""
    before: list[PlanProcess] = []
    after: list[PlanProcess] = []
    enabled = set(ctx.features)
    for key, feat in ctx.recipe.features.items():
        comp = feat.companion
        if key not in enabled or comp is None or not comp.command:
            continue
        if feat.strategies is not None and ctx.strategy_id not in feat.strategies:
            continue
        proc = PlanProcess(name=key, role="companion", node_rank=0, argv=A.split_shell_text(comp.command),
                           env={}, label=comp.label, description=comp.description)
        (after if comp.start == "after" else before).append(proc)
    opt = ctx.kv_option
    if opt is not None and opt.companion is not None and opt.companion.command:
        comp = opt.companion
        desc = comp.description + (f" Requires: {opt.install}" if opt.install else "")
        before.append(PlanProcess(name=f"kv_offload:{ctx.kv_key}", role="companion", node_rank=0,
                                  argv=A.split_shell_text(comp.command.rstrip()), env={}, label=comp.label,
                                  description=desc))
    return before, after


def strategy_companion(ctx: SynthesisContext, serve: PlanProcess) -> PlanProcess | None:
    """Seed §4.5/§4.6: the strategy's companion (vLLM Router after single-node DEP / DPA+TP)."""
    comp = ctx.strategy.companion if ctx.strategy else None
    if comp is None or not comp.command:
        return None
    argv = serve.argv
    dp = last_flag_value(argv, "--data-parallel-size")
    if dp is None:
        dp = str(ctx.gpu_count)
    text = comp.command.replace("{dp_size}", dp).replace("{port}", str(last_port(argv)))
    text = text.replace("{tp_size}", str(ctx.checks.get("single_node_tp", ctx.gpu_count)))
    role = "router" if "router" in comp.label.lower() else "companion"
    return PlanProcess(name="router" if role == "router" else f"strategy:{ctx.strategy_id}", role=role,
                       node_rank=0, argv=A.split_shell_text(text), env={}, label=comp.label,
                       description=comp.description, phase="after" if comp.start == "after" else "before")
