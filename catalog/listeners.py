"""Which HTTP listeners of a plan are open to every network interface without an API key.

vLLM 0.32.0 binds every interface when ``--host`` is not given: ``vllm/entrypoints/launchers/
cli_args.py`` declares ``host: str | None = None`` and ``launchers/launcher.py`` binds
``(args.host or "", args.port)`` — ``""`` is INADDR_ANY. The recipes never pass ``--host`` to an
engine, so every planned ``vllm serve`` that runs an API server (not ``--headless``) listens on all
interfaces; without ``--api-key`` (or ``VLLM_API_KEY``, ``vllm/entrypoints/serve/middleware/
register.py``) anyone who reaches the machine can use the model. A router only when its host is
one of :data:`ALL_INTERFACES` literally (``--router-host 0.0.0.0``): the plan's own default
``$ROUTER_HOST`` is ``localhost`` (docs/synthesis.md §2.13).

Decision: a plan warning, not a changed argv — the commands stay the recipes' (the goldens pin
them), and an engine another machine's router must reach can't simply move to 127.0.0.1. The fix
named depends on the shape: pip → ``--arg --host 127.0.0.1`` or an API key; docker (``-p``
publishes the container's port, so the server must bind every address inside it) or a router in
front of engines on other machines (it reaches them over the network) → an API key (clients send
it through the router, which forwards the ``Authorization`` header) or a private network.
"""

from __future__ import annotations

from vllm_deploy_wizard.common.flags import flag_values, last_flag_value

from .corrections import on_host_network
from .plan import LaunchPlan, PlanProcess, node_label

#: ``--host`` values that bind every interface (``""`` and None: vLLM's default).
ALL_INTERFACES = frozenset({"", "0.0.0.0", "::", "[::]"})
#: Roles whose processes run a vLLM engine (an API server unless ``--headless``).
ENGINE_ROLES = frozenset({"serve", "head", "worker", "prefill", "decode"})
#: Router executables whose ``--host`` is their client API's bind address.
ROUTER_EXECUTABLES = frozenset({"vllm-router", "smg"})


def _has_api_key(proc: PlanProcess) -> bool:
    """Whether vLLM would require a bearer token: a non-empty ``--api-key`` or ``VLLM_API_KEY`` (in
    the process's env, or a docker ``-e VLLM_API_KEY=…``)."""
    return (any(flag_values(proc.argv, "--api-key")) or bool(proc.env.get("VLLM_API_KEY"))
            or any(t.startswith("VLLM_API_KEY=") and len(t) > len("VLLM_API_KEY=") for t in proc.argv))


def open_engines(plan: LaunchPlan) -> list[PlanProcess]:
    """The engine processes that serve the OpenAI API on every interface without an API key: a
    health URL (headless followers and Dynamo workers have none), no ``--host`` or one of
    :data:`ALL_INTERFACES`, no ``--api-key`` / ``VLLM_API_KEY``."""
    out = []
    for proc in plan.processes:
        if proc.role not in ENGINE_ROLES or proc.health is None:
            continue
        host = last_flag_value(proc.argv, "--host")
        if (host is None or host in ALL_INTERFACES) and not _has_api_key(proc):
            out.append(proc)
    return out


def open_routers(plan: LaunchPlan) -> list[PlanProcess]:
    """Routers (vllm-router, SMG) whose ``--host`` is literally every interface."""
    return [p for p in plan.processes if p.role == "router"
            and any(t in ROUTER_EXECUTABLES for t in p.argv[:6])
            and last_flag_value(p.argv, "--host") in ALL_INTERFACES]


def _port(proc: PlanProcess) -> str:
    """`` (port N)``: the API port (``--port``; an engine without one: its only listening port);
    nothing for a placeholder port (``$ROUTER_PORT``)."""
    port = last_flag_value(proc.argv, "--port")
    if port is None and proc.role != "router" and proc.ports:
        port = str(proc.ports[-1])
    return f" (port {port})" if port is not None and port.isdigit() else ""


def listener_notes(plan: LaunchPlan) -> list[str]:
    """``warning: …`` notes for :func:`open_engines` and :func:`open_routers`, each naming the
    processes and the fix for the plan's shape (module docstring)."""
    notes = []
    engines = open_engines(plan)
    if engines:
        names = ", ".join(p.name + _port(p) for p in engines)
        machines = {node_label(plan, p) for p in plan.processes if p.role != "router"}
        routed = any(p.role == "router" for p in plan.processes) and len(machines) > 1
        key = ("`--api-key KEY` (`plan --arg=--api-key=KEY`, one `--arg=` per flag; the wizard's advanced "
               "args; or VLLM_API_KEY in its environment)")
        if routed:
            fix = (f"add the vLLM arg {key}; clients then send it through the router. Not "
                   "--host 127.0.0.1: the router reaches the engines from its machine; else keep their ports "
                   "on a private network")
        elif plan.install_mode == "docker" and not all(on_host_network(p.argv) for p in engines):
            fix = ("add the vLLM arg `--api-key KEY` (`plan --arg=--api-key=KEY`, the wizard's advanced args). Not "
                   "--host 127.0.0.1: docker publishes the "
                   "container's port, which that would cut off")
        else:
            fix = f"add the vLLM arg `--host 127.0.0.1` (this machine only; `plan --arg=--host=127.0.0.1`) or {key}"
        notes.append(f"warning: {names} serve{'s' if len(engines) == 1 else ''} the model's API on every "
                     "network interface with no API key (vLLM binds all addresses without --host): anyone who "
                     f"reaches the machine can use it. Fix: {fix}")
    for router in open_routers(plan):
        notes.append(f"warning: {router.name}{_port(router)} listens on every network interface (--host "
                     f"{last_flag_value(router.argv, '--host')}): anyone who reaches the machine can send "
                     "requests through it; `--router-host ADDRESS` binds one address (127.0.0.1: this "
                     "machine only)")
    return notes


def listener_note_set(plan: object) -> set[str]:
    """:func:`listener_notes` of ``plan`` as a set (the wizard's configure pane leaves them to review);
    none for an object that is no :class:`LaunchPlan` (test fakes)."""
    return set(listener_notes(plan)) if isinstance(plan, LaunchPlan) else set()
