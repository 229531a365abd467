"""Disaggregated and shared-KV shapes: prefill/decode pools and the Mooncake kv_store deployment.

The PD shape (``docs/synthesis.md`` §2.6 PD role, §2.11, §2.14): one engine per pool node and role, the
vLLM Router over the pool URLs (§2.13 placeholders), the SMG router and the Dynamo frontend and its
etcd infra (docs/synthesis.md §4.8), Mooncake master/store infra when a kv_store composes with PD (§2.9). The
kv_store load-balanced shape: Mooncake infra, N serve instances and a vllm-router in front of them.
Pools, connector and router are resolved in :mod:`.resolution`.
"""

from __future__ import annotations

from . import args as A
from .models import KvStore
from .plan import PlanProcess
from .processes import serve_process, single_or_multi
from .synthesis_context import PD_PORTS, PD_ROLES, SynthesisContext


def _mooncake_infra(store: KvStore, procs: list[PlanProcess]) -> None:
    """Append the Mooncake master / store processes ``store`` declares (those with a command)."""
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
    strategy = ctx.serving_strategy
    policy = (strategy.router.policy if strategy.router else None) or "round_robin"
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
        _mooncake_infra(ctx.kv_store, procs)
    router = ctx.router
    dyn = ctx.serving_strategy.dynamo if router == "dynamo" else None
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


#: Shell run as the SMG router process (``sh -c SCRIPT smg ARGS…``): start ``smg ARGS`` (PD mode, no
#: startup workers), wait until it answers, register each worker with its KV connector (``POST
#: /workers``; the ``REGISTER`` lines), then stay on the router; a TERM/INT stops it.
SMG_SCRIPT = (
    'smg "$@" & router=$!; trap \'kill $router 2>/dev/null\' TERM INT; '
    'host=$ROUTER_HOST; [ "$host" = 0.0.0.0 ] && host=127.0.0.1; '
    'until curl -fsS -o /dev/null "http://$host:$ROUTER_PORT/health"; do '
    'kill -0 $router 2>/dev/null || exit 1; sleep 1; done; '
    'REGISTER'
    'wait $router'
)


def _smg_argv(ctx: SynthesisContext) -> list[str]:
    """SMG PD router (docs/synthesis.md §4.8; docs/backends.md §14).

    SMG's "vLLM PD over HTTP" (SMG 1.11 docs, getting-started/pd-disaggregation): vLLM's HTTP server
    does not report its KV connector, so workers given as ``--prefill URL --decode URL`` run in
    passthrough mode (decode recomputes every prompt). SMG is started in PD mode with no workers
    and each worker is registered with ``{"url", "worker_type", "kv_connector"}``: the process is
    ``sh -c`` :data:`SMG_SCRIPT` with ``smg launch --pd-disaggregation …`` as its arguments."""
    smg = ctx.serving_strategy.smg
    assert smg is not None, "router 'smg' is offered only by a strategy that declares it (resolution.py)"
    connector = "NixlConnector"
    if ctx.connector is not None:
        connector = str(ctx.connector.prefill.config.get("kv_connector") or connector)
    register = ""
    for role in PD_ROLES:
        body = (f'{{"url":"http://${role.upper()}_NODE_1:{PD_PORTS[role]}","worker_type":"{role}",'
                f'"kv_connector":"{connector}"}}')
        register += (f'curl -fsS -X POST "http://$host:$ROUTER_PORT/workers" -H "Content-Type: application/json" '
                     f"-d '{body}' || {{ kill $router; exit 1; }}; ")
    script = SMG_SCRIPT.replace("REGISTER", register)
    return ["sh", "-c", script, "smg", "launch", "--pd-disaggregation", "--policy", smg.policy,
            "--host", "$ROUTER_HOST", "--port", "$ROUTER_PORT"]


def kv_store_lb_processes(ctx: SynthesisContext, procs: list[PlanProcess]) -> None:
    """Append the Mooncake kv_store shape to ``procs``: infra, the instances, a load balancer for 2+."""
    store = ctx.kv_store
    assert store is not None, "the kv_store_lb shape is planned only with a kv_store selected"
    _mooncake_infra(store, procs)
    for i in range(ctx.kv_count):
        single_or_multi(ctx, procs, instance=i, prefix=f"instance-{i}")
    if ctx.kv_count >= 2:
        argv = ["vllm-router", "--policy", store.router.policy]
        for i in range(1, ctx.kv_count + 1):
            argv += ["--backend-url", f"http://$VLLM_INSTANCE_{i}:{store.vllm.port}"]
        argv += ["--host", "$ROUTER_HOST", "--port", "$ROUTER_PORT", "--cache-threshold", "0.5",
                 "--balance-abs-threshold", "4", "--balance-rel-threshold", "1.1"]
        procs.append(PlanProcess(name="router", role="router", node_rank=None, argv=argv, env={},
                                 label="vLLM Router"))
