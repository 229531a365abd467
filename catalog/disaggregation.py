"""Disaggregated and shared-KV shapes: prefill/decode pools and the Mooncake kv_store deployment.

The PD shape (``docs/synthesis.md`` §2.6 PD role, §2.11, §2.14): one engine per pool node and role, the
vLLM Router over the pool URLs (§2.13 placeholders), the SMG router and the Dynamo frontend and its
etcd infra (docs/synthesis.md §4.8), Mooncake master/store infra when a kv_store composes with PD (§2.9). The
kv_store load-balanced shape: Mooncake infra, N serve instances and a vllm-router in front of them.
Pools, connector and router are resolved in :mod:`.resolution`.
"""

from __future__ import annotations

from . import args as A
from .plan import PlanProcess
from .processes import serve_process, single_or_multi
from .synthesis_context import PD_PORTS, PD_ROLES, SynthesisContext


def _mooncake_infra(ctx: SynthesisContext, procs: list[PlanProcess]) -> None:
    store = ctx.kv_store
    if store.mooncake_master is not None and store.mooncake_master.command:
        procs.append(PlanProcess(name="mooncake-master", role="mooncake_master", node_rank=None,
                                 argv=A.split_shell_text(store.mooncake_master.command), env={},
                                 label="Mooncake master", description=store.mooncake_master.description))
    if store.mooncake_store_config is not None and store.mooncake_store_config.command:
        procs.append(PlanProcess(name="mooncake-store", role="mooncake_store", node_rank=None,
                                 argv=A.split_shell_text(store.mooncake_store_config.command), env={},
                                 label="Mooncake store", description=store.mooncake_store_config.description))


def _pd_router_argv(ctx: SynthesisContext) -> list[str]:
    pools = ctx.pools
    policy = (ctx.strategy.router.policy if ctx.strategy.router else None) or "round_robin"
    argv = ["vllm-router", "--policy", policy, "--vllm-pd-disaggregation"]
    conn = ctx.connector
    if conn is not None and conn.router.get("kv_connector") == "moriio":
        # workers register with the router (vllm-router discovery mode): no endpoint list
        port = conn.router.get("discovery_port", 36367)
        argv += ["--kv-connector", "moriio", "--vllm-discovery-address", f"0.0.0.0:{port}"]
    else:
        for role in PD_ROLES:
            pool = pools[role]
            count = pool.nodes_in_pool if pool.mode == "dep" else 1
            for i in range(1, count + 1):
                argv += [f"--{role}", f"http://${role.upper()}_NODE_{i}:{PD_PORTS[role]}"]
                if role == "prefill" and conn is not None and conn.router.get("bootstrap_port"):
                    argv.append(str(conn.router["bootstrap_port"]))
        if conn is not None and conn.router.get("kv_connector") == "mooncake":
            argv += ["--kv-connector", "mooncake"]
    so_router = (ctx.so.router or {}) if ctx.so else {}
    intra = so_router.get("intra_node_data_parallel_size")
    if intra is None:
        intra = max([p.dp_local for p in pools.values() if p.mode == "dep"] + [1])
    argv += ["--host", "$ROUTER_HOST", "--port", "$ROUTER_PORT", "--intra-node-data-parallel-size", str(intra)]
    return argv


def pd_processes(ctx: SynthesisContext, procs: list[PlanProcess]) -> None:
    """Append the PD shape to ``procs``: infra, one engine per pool node and role, the router."""
    if ctx.kv_store is not None and ctx.kv_store.pd is not None:
        _mooncake_infra(ctx, procs)
    router = ctx.router
    dyn = ctx.strategy.dynamo if router == "dynamo" else None
    if dyn is not None and dyn.infra is not None and dyn.infra.command:
        procs.append(PlanProcess(name="etcd", role="infra", node_rank=None, argv=A.split_shell_text(dyn.infra.command),
                                 env={}, label=dyn.infra.label, description=dyn.infra.description, phase="infra"))
    for role in PD_ROLES:
        pool = ctx.pools[role]
        count = pool.nodes if pool.nodes >= 2 else 1
        for k in range(count):
            toks = ctx.build_args(role, k, role=role)
            env = ctx.build_env(role, k)
            launcher = None
            remove: list[str] = []
            if dyn is not None:
                toks += getattr(dyn, role).vllm_args
                env.update(dyn.env)
                launcher = dyn.launcher.split()
                remove = list(dyn.remove_args)
            procs.append(serve_process(ctx, f"{role}-{k}", role, k, toks, env, launcher=launcher, remove=remove))
    if router == "vllm":
        procs.append(PlanProcess(name="router", role="router", node_rank=None, argv=_pd_router_argv(ctx), env={},
                                 label="vLLM Router"))
    elif router == "smg":
        procs.append(PlanProcess(name="router", role="router", node_rank=None, argv=_smg_argv(ctx), env={},
                                 label="SMG router"))
    elif dyn is not None:
        mode = str(dyn.frontend.get("router_mode", "round-robin"))
        argv = ["python3", "-m", "dynamo.frontend", "--http-port", "$ROUTER_PORT", "--router-mode", mode]
        procs.append(PlanProcess(name="router", role="router", node_rank=None, argv=argv, env=dict(dyn.env),
                                 label=str(dyn.frontend.get("label", "Dynamo frontend"))))


def _smg_argv(ctx: SynthesisContext) -> list[str]:
    """SMG PD router (docs/synthesis.md §4.8; command per SMG's public docs, the seed gives none)."""
    smg = ctx.strategy.smg
    argv = ["smg", "--pd-disaggregation"]
    for role in PD_ROLES:
        argv += [f"--{role}", f"http://${role.upper()}_NODE_1:{PD_PORTS[role]}"]
    argv += ["--policy", smg.policy, "--host", "$ROUTER_HOST", "--port", "$ROUTER_PORT"]
    return argv


def kv_store_lb_processes(ctx: SynthesisContext, procs: list[PlanProcess]) -> None:
    """Append the Mooncake kv_store shape to ``procs``: infra, the instances, a load balancer for 2+."""
    _mooncake_infra(ctx, procs)
    for i in range(ctx.kv_count):
        single_or_multi(ctx, procs, instance=i, prefix=f"instance-{i}")
    if ctx.kv_count >= 2:
        store = ctx.kv_store
        argv = ["vllm-router", "--policy", store.router.policy]
        for i in range(1, ctx.kv_count + 1):
            argv += ["--backend-url", f"http://$VLLM_INSTANCE_{i}:{store.vllm.port}"]
        argv += ["--host", "$ROUTER_HOST", "--port", "$ROUTER_PORT", "--cache-threshold", "0.5",
                 "--balance-abs-threshold", "4", "--balance-rel-threshold", "1.1"]
        procs.append(PlanProcess(name="router", role="router", node_rank=None, argv=argv, env={},
                                 label="vLLM Router"))
