"""Plan synthesis: a :class:`Selection` over a :class:`Catalog` → a :class:`LaunchPlan`.

A port of the reference builder's ``resolveCommand`` / ``resolveOmniCommand`` as specified in
``docs/synthesis.md`` §2 (docker/install §2.10, shapes §2.11) and shaped as ``docs/plan-file.md`` §3.
The golden corpus (docs/plan-file.md §4) is the judge of the snapshot semantics; the seed extensions
of §4 are layered on top and only fire when the catalog carries the seed fields (a recipes checkout
replaces the seeds, so goldens never see them).

Structure: :func:`synthesize` resolves the selection into a
:class:`~.resolution.SynthesisContext` (:mod:`.resolution`: defaults, gates, device count, argument
and env assembly), then one builder per shape produces processes: single/multi-node
(:mod:`.processes`), PD and Mooncake (:mod:`.disaggregation`), omni (:mod:`.omni`). This module adds
the install steps (docs/plan-file.md §3.5), docker wrapping and the extras of ``docs/contracts.md``
§2 (phase, ports, health, depends_on, companion args) in one pass at the end; the plan's
``resolved`` block, notes and placeholder defaults come from :mod:`.plan_notes`.
"""

from __future__ import annotations

from vllm_deploy_wizard.common import versions as vllm_versions
from vllm_deploy_wizard.common.errors import SelectionError
from vllm_deploy_wizard.common.flags import flag_values, last_flag_value, set_flag
from vllm_deploy_wizard.common.placeholders import is_placeholder
from vllm_deploy_wizard.common.placeholders import names_in as placeholder_names

from . import backends as B
from .backends import last_port
from .disaggregation import kv_store_lb_processes, pd_processes
from .loader import Catalog
from .models import DynamoRouter
from .omni import omni_processes
from .plan import PHASES, Health, LaunchPlan, PlanProcess, find_placeholders
from .plan_notes import checkout_file_notes, config_files, notes, placeholder_defaults, resolved
from .processes import companions, single_or_multi, strategy_companion
from .resolution import did_you_mean, resolve
from .selection import Selection
from .synthesis_context import PD_ROLES, SynthesisContext

ROUTER_INSTALL = "uv pip install vllm-router"


# ---------------------------------------------------------------------------------------------
# install, docker, extras


def _dynamo(ctx: SynthesisContext) -> DynamoRouter:
    """The PD strategy's Dynamo block, for a plan routed by ``dynamo`` (resolution.py offers that
    router only when the strategy declares it)."""
    dynamo = ctx.serving_strategy.dynamo
    assert dynamo is not None, "router 'dynamo' is offered only by a strategy that declares it"
    return dynamo


def _install(ctx: SynthesisContext, has_router: bool, extra_router: str | None = None) -> list[str]:
    """Extra install snippets (docs/plan-file.md §3.5)."""
    brand = ctx.brand
    items: list[tuple[str, bool, list[str] | None]] = []
    for dep in ctx.recipe.dependencies:
        if dep.brand is not None:
            brands = dep.brand if isinstance(dep.brand, list) else [dep.brand]
            if brand not in brands:
                continue
        items.append((dep.command, dep.optional, dep.install_modes))
    if ctx.kv_option is not None:
        if ctx.kv_option.install:
            items.append((ctx.kv_option.install, False, None))
        ho = ctx.kv_option_override()
        if ho is not None:
            for step in ho.install:
                items.append((step.command, step.optional, ["pip", "docker"]))
    if ctx.kv_store is not None:
        cmd = ctx.kv_store.vllm.install.get(brand.lower())
        if cmd:
            items.append((cmd, False, None))
    if ctx.connector is not None:  # pip-only like every entry without install_modes (§3.5)
        for step in ctx.connector.install:
            items.append((step.command, step.optional, None))
    if ctx.is_pd and ctx.router == "dynamo":  # docs/synthesis.md §4.8: runtime on every worker and the frontend
        # docker mode: the Dynamo runtime image has it. pip: the ``ai-dynamo[vllm]`` extra pins the vLLM
        # that Dynamo release is built against (docs/backends.md §14); the seed's runtime-only steps
        # (``ai-dynamo-runtime``/``ai-dynamo`` beside an unpinned vLLM) are replaced by it
        items.append((B.dynamo_pip_install(_dynamo(ctx).version), False, ["pip"]))
    out: list[str] = []
    for cmd, optional, modes in items:
        if optional:
            continue
        if ctx.install_mode not in (modes if modes is not None else ["pip"]):
            continue
        cmd = B.extra_install(ctx.profile, cmd)
        if cmd not in out:
            out.append(cmd)
    if has_router:
        router_cmd = B.extra_install(ctx.profile, extra_router or ROUTER_INSTALL)
        if router_cmd not in out:
            out.append(router_cmd)
    return out


_SERVE_ROLES = ("serve", "head", "worker", "prefill", "decode")


#: vllm-router always serves Prometheus metrics, on this port unless ``--prometheus-port`` is given.
ROUTER_PROMETHEUS_PORT = 29000


def _port_values(argv: list[str]) -> list[int | str]:
    """Listening ports named by ``--port``/``--http-port``/``--prometheus-port``/``-rpc_port`` (each
    ``FLAG N`` or ``FLAG=N``);
    a ``vllm-router`` without ``--prometheus-port`` also listens on :data:`ROUTER_PROMETHEUS_PORT`
    (listed rather than added to argv so reference-shaped router commands stay byte-identical; the
    launcher's preflight then reports two routers on one host colliding on it)."""
    numbers: set[int] = set()
    if argv[:1] == ["vllm-router"] and last_flag_value(argv, "--prometheus-port") is None:
        numbers.add(ROUTER_PROMETHEUS_PORT)
    values = flag_values(argv, "--port", "--http-port", "--prometheus-port", "-rpc_port")
    numbers.update(int(v) for v in values if v.isdigit())
    # a placeholder port ($ROUTER_PORT) is listed as written, after the numbers: launch fills it,
    # and its preflight then checks the port the process really binds
    return [*sorted(numbers), *dict.fromkeys(v for v in values if is_placeholder(v))]


#: ``Selection.companion_args`` keys → what they set (docs/catalog.md §6).
COMPANION_ARGS = {
    "l1_size_gb": "LMCache server --l1-size-gb (GiB of host RAM for its L1 cache)",
    "max_cpu_workers": "LMCache server --max-cpu-workers",
    "router_host": "the router's --host ($ROUTER_HOST)",
    "router_port": "the router's --port ($ROUTER_PORT)",
    "prometheus_port": "every vllm-router's --prometheus-port",
}


def _apply_companion_args(ctx: SynthesisContext, procs: list[PlanProcess]) -> None:
    """Apply ``sel.companion_args`` to the companion processes (before ports are read).

    Raises SelectionError for an unknown key or a non-numeric size/count/port."""
    given = {k: str(v) for k, v in ctx.sel.companion_args.items()}
    if not given:
        return
    unknown = [k for k in given if k not in COMPANION_ARGS]
    if unknown:
        raise did_you_mean("companion arg", unknown[0], COMPANION_ARGS, "(companion_args)", list_all=True)
    for key in ("l1_size_gb", "max_cpu_workers", "router_port", "prometheus_port"):
        if key not in given:
            continue
        where, value = f"--{key.replace('_', '-')} {given[key]!r} (companion arg {key})", given[key]
        if key.endswith("_port") and not (value.isdigit() and 0 < int(value) < 65536):
            raise SelectionError(f"{where}: expected a port 1–65535")
        if key == "l1_size_gb" and not (value.replace(".", "", 1).isdigit() and float(value) > 0):
            raise SelectionError(f"{where}: expected a positive number of GB (e.g. 16)")
        if key == "max_cpu_workers" and not (value.isdigit() and int(value) >= 1):
            raise SelectionError(f"{where}: expected a whole number ≥ 1")
    fill = {"$ROUTER_HOST": given.get("router_host"), "$ROUTER_PORT": given.get("router_port")}
    for p in procs:
        if p.name.startswith("kv_offload:lmcache"):
            if "l1_size_gb" in given:
                p.argv = set_flag(p.argv, "--l1-size-gb", given["l1_size_gb"])
                init = last_flag_value(p.argv, "--l1-init-size-gb")
                if init is not None and init.replace(".", "", 1).isdigit() and float(init) > float(given["l1_size_gb"]):
                    p.argv = set_flag(p.argv, "--l1-init-size-gb", given["l1_size_gb"])
            if "max_cpu_workers" in given:
                p.argv = set_flag(p.argv, "--max-cpu-workers", given["max_cpu_workers"])
        if p.argv[:1] == ["vllm-router"] and "prometheus_port" in given:
            p.argv = set_flag(p.argv, "--prometheus-port", given["prometheus_port"], add=True)
        for hole, filled in fill.items():
            if filled is not None:
                p.argv = [tok.replace(hole, filled) for tok in p.argv]
                p.env = {k: v.replace(hole, filled) for k, v in p.env.items()}


def _check_router_ports(ctx: SynthesisContext, procs: list[PlanProcess]) -> None:
    """A ``--router-port``/``--prometheus-port`` that another process of the plan (or the router's
    other port) already listens on is refused: the Slurm and ``--all-nodes`` exports run the router
    beside the first prefill engine, where the two would collide. Raises SelectionError naming the flag."""
    given = {k: str(v) for k, v in ctx.sel.companion_args.items() if k in ("router_port", "prometheus_port")}
    routers = [p for p in procs if p.role == "router"]
    for key, value in given.items():
        flag, port = "--" + key.replace("_", "-"), int(value)
        for r in routers:
            if key == "router_port" and r.argv[:1] == ["vllm-router"]:
                metrics = last_flag_value(r.argv, "--prometheus-port") or str(ROUTER_PROMETHEUS_PORT)
                if metrics == value:
                    raise SelectionError(f"{flag} {value}: the router's metrics port (--prometheus-port) is "
                                         f"{value} too; pick another port")
            for q in procs:
                if q is not r and port in q.ports:
                    raise SelectionError(f"{flag} {value}: {q.name} listens on {value} already; pick another "
                                         "port for the router")


def _finish(ctx: SynthesisContext, procs: list[PlanProcess]) -> None:
    """Companion args, docker wrapping, phases, ports, health, setup, depends_on (contracts §2)."""
    _apply_companion_args(ctx, procs)
    image = ctx.image
    extra_flags: list[str] = []
    if ctx.connector is not None and ctx.connector.docker is not None:
        if ctx.connector.docker.host_network:
            extra_flags += ["--network", "host"]
        extra_flags += ctx.connector.docker.flags
    setup = ctx.kv_option.setup if ctx.kv_option is not None and ctx.kv_option.setup else None
    multi_node = ((ctx.deploy == "multi_node" and ctx.nodes > 1)
                  or (ctx.is_pd and any(q.nodes >= 2 for q in ctx.pools.values())))
    for p in procs:
        if p.role in _SERVE_ROLES:
            port = last_port(p.argv)
            # headless followers and seed Dynamo workers (no HTTP server) are ready when started
            headless = "--headless" in p.argv or p.argv[:2] != ["vllm", "serve"]
            p.ports = [] if headless else [port]
            p.health = None if headless else Health(url=f"http://127.0.0.1:{port}/health")
            if multi_node and p.argv[:2] == ["vllm", "serve"]:
                p.env.update({k: v for k, v in B.multi_node_env(ctx.profile).items() if k not in p.env})
            if ctx.install_mode == "docker" and image and p.argv[:3] == ["python3", "-m", "dynamo.vllm"]:
                p.argv = B.docker_command_argv(p.argv, p.env, image, ctx.profile)
            elif ctx.install_mode == "docker" and image and p.argv[:2] == ["vllm", "serve"]:
                p.argv = B.docker_argv(p.argv, p.env, image, ctx.profile, extra_flags, device_count=ctx.gpu_count,
                                       multi_node=multi_node)
            if setup and p.argv[:2] == ["vllm", "serve"]:
                p.setup = setup
            p.phase = "engine"
        elif p.role in ("mooncake_master", "mooncake_store", "infra"):
            p.phase = "infra"
            p.argv = B.foreground(p.argv)  # supervised: no detached container
            p.ports = _port_values(p.argv)
        elif p.role == "companion":
            if p.phase == "engine":
                p.phase = "before"
            p.ports = _port_values(p.argv)
            if p.name.startswith("kv_offload:lmcache") and p.ports:
                http_port = last_flag_value(p.argv, "--http-port")
                http = int(http_port) if http_port is not None else None
                if http:
                    p.health = Health(url=f"http://127.0.0.1:{http}/healthcheck")
        elif p.role == "router":
            p.phase = "after"
            if ctx.install_mode == "docker" and image and p.argv[:3] == ["python3", "-m", "dynamo.frontend"]:
                p.argv = B.docker_command_argv(p.argv, p.env, image, ctx.profile)
            p.ports = _port_values(p.argv)
            # a placeholder port ($ROUTER_PORT) is filled at launch, the health URL with it
            listen_port = next((v for v in reversed(flag_values(p.argv, "--port", "--http-port"))
                                if not v.startswith("-")), None)
            host = last_flag_value(p.argv, "--host")
            if host is None:
                host = "127.0.0.1"
            if listen_port:  # probed where it binds ($ROUTER_HOST when it binds that address)
                bind = '127.0.0.1' if host in ('0.0.0.0', '::') else host
                p.health = Health(url=f"http://{bind}:{listen_port}/health")
    _check_router_ports(ctx, procs)
    procs.sort(key=lambda p: PHASES.index(p.phase))
    for i, p in enumerate(procs):
        # Only processes a per-node launcher starts together can be waited for: same node rank,
        # node_rank null counting as node 0 (contracts §2). Cross-node order is the operator's.
        node = p.node_rank or 0
        p.depends_on = [q.name for q in procs[:i]
                        if (q.node_rank or 0) == node and PHASES.index(q.phase) < PHASES.index(p.phase)]


def _placeholders(procs: list[PlanProcess], files: dict) -> list[str]:
    """"Fill before launch" names: those of the processes and those inside the plan's config files
    (Mooncake's ``$MOONCAKE_MASTER_IP``, ``$MOONCAKE_DEVICE_NAME``); a config file's own path
    placeholder (``MOONCAKE_CONFIG_PATH``) is where the launcher writes it, not a value to give."""
    import json

    inside = placeholder_names(json.dumps(content) if not isinstance(content, str) else content
                               for content in files.values())
    return sorted(set(find_placeholders(procs)) | {n for n in inside if n not in files})


def synthesize(cat: Catalog, sel: Selection) -> LaunchPlan:
    """Turn ``sel`` into a :class:`LaunchPlan` (docs/plan-file.md §3; docs/synthesis.md §2 and §4).

    Raises :class:`SelectionError` for an unknown model, variant, hardware, strategy, task,
    frontend, connector or router (with "did you mean"), or a seed combination that can't be built.
    Gated-off combinations the reference still renders are planned, with the facts in ``checks``.
    """
    ctx = resolve(cat, sel)
    omni = ctx.recipe.is_omni
    procs: list[PlanProcess] = []
    task_key = None
    install_router = False
    router_install: str | None = None
    if omni:
        deploy = "omni"
        procs, task_key = omni_processes(ctx)
    elif ctx.is_pd:
        deploy = "pd_cluster"
        pd_processes(ctx, procs)
        install_router = ctx.router == "vllm"
        smg = ctx.serving_strategy.smg
        if ctx.router == "smg" and smg is not None:
            install_router, router_install = True, smg.install
    elif ctx.kv_store is not None:
        deploy = "kv_store_lb"
        kv_store_lb_processes(ctx, procs)
        install_router = ctx.kv_count >= 2
        router_install = ctx.kv_store.router.install or ROUTER_INSTALL
    else:
        deploy = ctx.deploy
        before, after = companions(ctx)
        procs.extend(before)
        single_or_multi(ctx, procs)
        if ctx.deploy == "single_node" or ctx.nodes <= 1:
            comp = strategy_companion(ctx, procs[-1])
            if comp is not None:
                after.insert(0, comp)
                companion = ctx.serving_strategy.companion  # set: strategy_companion returned one
                if companion is not None and companion.install:
                    router_install = companion.install
                    install_router = True
        procs.extend(after)
    install = _install(ctx, install_router, router_install)
    if ctx.install_mode == "docker":
        ctx.image = B.docker_image(ctx.profile, ctx.hw, ctx.recipe.model, ctx.variant)
        if ctx.is_pd and ctx.router == "dynamo":  # workers and frontend run where Dynamo is installed
            ctx.image = B.dynamo_image(_dynamo(ctx).version)
    image = ctx.image
    _finish(ctx, procs)
    files = config_files(ctx)
    versions = [x for x in (ctx.recipe.model.min_vllm_version, ctx.variant.min_vllm_version,
                            ctx.kv_store.min_vllm_version if ctx.kv_store else None) if x]
    return LaunchPlan(
        deploy_type=deploy,
        # resolve_install_mode returns str: it passes on the Selection's (pydantic-checked) pip|docker
        install_mode=ctx.install_mode,  # pip|docker, see above
        pd_pool_nodes={r: ctx.pools[r].nodes for r in PD_ROLES} if ctx.is_pd else None,
        resolved=resolved(ctx, omni, task_key),
        processes=procs,
        install=install,
        docker={"image": image} if ctx.install_mode == "docker" and image else None,
        config_files=files,
        checks=ctx.checks,
        placeholders=(holes := _placeholders(procs, files)),
        placeholder_defaults=placeholder_defaults(deploy, holes, {r: ctx.pools[r].nodes for r in PD_ROLES}
                                                   if ctx.is_pd else None),
        base_install=B.base_install(ctx.profile, ctx.recipe, ctx.variant, ctx.install_mode, image,
                                    dynamo=ctx.is_pd and ctx.router == "dynamo"),
        notes=notes(ctx) + checkout_file_notes(procs, ctx.install_mode),
        device_count=ctx.gpu_count,
        accelerator=B.backend_for(ctx.profile).key,
        min_vllm_version=vllm_versions.highest(versions),
        unverified=list(ctx.unverified),
    )
