"""Kubernetes manifests from a plan file (``vllm-wizard plan … --k8s DIR``; docs/multi-node.md §3).

Mapping of the plan's processes (docs/contracts.md §2 data, with the ``group`` marks of
docs/multi-node.md §1):

* a multi-node group (``group`` on its members: TP/PP/DP over nodes, a multi-node PD pool) → one
  ``LeaderWorkerSet`` (leaderworkerset.x-k8s.io/v1): the leader runs the head's command, the
  worker template the first worker's with ``--node-rank $(LWS_WORKER_INDEX)`` and the master
  address ``$(LWS_LEADER_ADDRESS)``; ``size`` = the group's nodes; ``restartPolicy:
  RecreateGroupOnPodRestart`` (a lost pod recreates the whole group — no head left on a dead
  collective) and ``startupPolicy: LeaderCreated`` (the head only becomes ready once its workers
  joined, so waiting for a ready leader would deadlock);
* every other process (single-node server, a single-node PD pool, router, LMCache server, Mooncake
  master/store, etcd) → one ``Deployment``;
* a ``Service`` per workload that listens (every plan port, its health URL's port, its NIXL side
  channel), selecting the leader pod of a group — every pod when each member serves the API (data
  parallel with hybrid load balancing); a group's side channels in a headless Service.

Each container: the plan's image (docker plans: the argv after the image in ``docker run``), the
vendor's device resource (:data:`DEVICE_RESOURCES`) for engines, as many as the process uses on
its node (a ``*_VISIBLE_DEVICES`` pin's ids, else its parallel-size flags, else the plan's
``device_count``; the pin itself is dropped: the pod's devices are numbered from 0), ``/dev/shm``
as a memory ``emptyDir``, readiness/startup/liveness probes on the process's health path (a TCP probe on its
first port when it has none), ``HF_TOKEN`` and every secret-named env or secret flag value
(``--api-key``) from a ``Secret`` reference (:data:`SECRET_NAME`), never inline; engines mount the
Hugging Face cache (:data:`HF_CACHE_DIR`, a hostPath or ``--k8s-hf-cache-claim``) so a restart does not
download again; a pod without devices requests CPU and memory; a router image without the router
installs the plan's router package first (``--k8s-router-image`` otherwise). What depends on
another workload (``depends_on``: an engine on its companions, a router on its engines) gets an
init container waiting until that Service answers — Kubernetes starts everything at once otherwise.

Placeholders: ``$HEAD_IP``-like master addresses become the group's leader address inside the
group and the leader Service's DNS name elsewhere (a PD router's ``--prefill http://$PREFILL_NODE_1…``);
``$NODE_IP`` and ``VLLM_HOST_IP`` the pod IP (downward API); ``$IFACE_NAME`` the pod's ``eth0``;
``$ROUTER_HOST`` 0.0.0.0 (over the plan's one-machine default ``localhost``; a vllm-router's metrics
bind every address too); ``VLLM_NIXL_SIDE_CHANNEL_HOST`` the pod IP (a Service's ClusterIP is no
address to bind); other machines' addresses (``$MOONCAKE_MASTER_IP``, ``$VLLM_INSTANCE_<i>``,
``$PREFILL_NODE_<k>``) their Service; a config file (``$MOONCAKE_CONFIG_PATH``) its path in a
``ConfigMap`` mounted at :data:`CONFIG_DIR`; ``$…_DP_RPC_PORT`` vLLM's default RPC port; others the
``--k8s-set`` values, then the plan's ``placeholder_defaults``. One left over is an
:class:`ExportError` naming it and the flag.
"""

from __future__ import annotations

import copy
import re
from collections.abc import Mapping
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

from vllm_deploy_wizard.common.errors import LaunchError
from vllm_deploy_wizard.common.flags import last_flag_value, set_flag
from vllm_deploy_wizard.common.parallelism import devices_on_node
from vllm_deploy_wizard.common.placeholders import fill
from vllm_deploy_wizard.common.placeholders import names as placeholders_in
from vllm_deploy_wizard.launcher.engines.kubernetes_containers import (  # noqa: F401 - DEVICE_RESOURCES re-exported
    DEVICE_RESOURCES,
    container_command,
    device_resource,
    docker_image,
    kv_ports,
    port_of,
    runs_vllm,
)
from vllm_deploy_wizard.launcher.logs import SECRET_NAME_RE, secret_argv_values
from vllm_deploy_wizard.launcher.spec import PHASES

#: The Secret every sensitive value is read from (``kubectl create secret generic …``).
SECRET_NAME = "vllm-wizard-secrets"
#: Roles that run on accelerators (get the device resource and /dev/shm).
ENGINE_ROLES = ("serve", "head", "worker", "prefill", "decode")
#: Seconds a server may take to start (model download and load) before liveness applies.
STARTUP_BUDGET_S = 1800
#: Init container script: wait until TCP host:port accepts, or an HTTP path answers 200.
WAIT_SCRIPT = (
    "import sys, time, socket, urllib.request\n"
    "host, port, path = sys.argv[1], int(sys.argv[2]), sys.argv[3]\n"
    "while True:\n"
    "    try:\n"
    "        if path:\n"
    "            urllib.request.urlopen(f'http://{host}:{port}{path}', timeout=3)\n"
    "        else:\n"
    "            socket.create_connection((host, port), timeout=3).close()\n"
    "        break\n"
    "    except Exception as exc:\n"
    "        print(f'waiting for {host}:{port}{path}: {exc}', flush=True)\n"
    "        time.sleep(3)\n"
)
#: Where config files of the plan (Mooncake's JSON) are mounted from their ConfigMap.
CONFIG_DIR = "/etc/vllm-wizard"
#: A data-parallel RPC port placeholder's value: vLLM's default ``--data-parallel-rpc-port``.
DP_RPC_PORT = "29550"
#: Where an engine container keeps the Hugging Face cache (``HF_HOME``): a volume that outlives the
#: pod (a hostPath on the node, or ``--k8s-hf-cache-claim``'s PersistentVolumeClaim), so a restarted
#: pod loads the weights it already downloaded.
HF_CACHE_DIR = "/root/.cache/huggingface"
#: The node folder of the default Hugging Face cache volume (hostPath, created when missing).
HF_CACHE_HOST_PATH = "/var/lib/vllm-wizard/hf-cache"
#: Requests of a pod without accelerators: a CPU engine (``cpu`` cores, ``memory``), and every
#: other workload (router, companions, infra) — the scheduler places pods by their requests.
CPU_ENGINE_REQUESTS = {"cpu": "8", "memory": "32Gi"}
SERVICE_REQUESTS = {"cpu": "500m", "memory": "1Gi"}


class ExportError(LaunchError):
    """The plan cannot be written as manifests; the message names the process and what is missing."""


def dns_name(text: str) -> str:
    """``text`` as a DNS-1123 label (lower case, ``-``, at most 63 characters)."""
    out = re.sub(r"[^a-z0-9-]+", "-", text.lower()).strip("-")
    return (out or "vllm")[:63].rstrip("-")


#: A DNS-1123 label, as Kubernetes requires of a namespace (``metadata.namespace``).
DNS_LABEL = re.compile(r"[a-z0-9]([-a-z0-9]*[a-z0-9])?")


def dns_label_problem(text: str) -> str | None:
    """Why ``text`` is no DNS-1123 label (lowercase alphanumerics and ``-``, at most 63 characters,
    starting and ending alphanumeric), or None when it is one."""
    if len(text) > 63:
        return f"{len(text)} characters; a Kubernetes namespace has at most 63"
    if not DNS_LABEL.fullmatch(text):
        return ("not a DNS-1123 label: use lowercase letters, digits and '-', starting and ending with a "
                "letter or digit (e.g. vllm-serving)")
    return None


class _Exporter:
    def __init__(self, data: Mapping[str, Any], image: str, vendor: str | None, arch: str | None, name: str,
                 namespace: str | None, values: Mapping[str, str] | None = None, router_image: str | None = None,
                 hf_cache_claim: str | None = None, cpu_requests: Mapping[str, str] | None = None,
                 node_selector: Mapping[str, str] | None = None, devices_per_unit: int = 1,
                 model_claim: tuple[str, str] | None = None):
        if not isinstance(data, Mapping) or not isinstance(data.get("plan"), Mapping):
            raise ExportError("not a plan file: expected a mapping with a 'plan' key (docs/contracts.md §2)")
        self.plan = data["plan"]
        self.procs: list[dict[str, Any]] = [dict(p) for p in self.plan.get("processes") or []]
        self.image = image
        self.resource = device_resource(vendor, arch)
        self.devices = int(self.plan.get("device_count") or 1)
        self.name = dns_name(name)
        if namespace is not None and (why := dns_label_problem(namespace)):
            raise ExportError(f"namespace {namespace!r}: {why}")
        self.namespace = namespace
        self.defaults = {str(k): str(v) for k, v in (self.plan.get("placeholder_defaults") or {}).items()}
        self.values = {str(k): str(v) for k, v in (values or {}).items()}
        self.router_image = router_image
        self.hf_cache_claim = hf_cache_claim
        self.model_claim = model_claim  # (PVC, the local model path it is mounted at)
        self.node_selector = dict(node_selector or {})
        self.devices_per_unit = max(1, int(devices_per_unit))
        self.cpu_requests = {**CPU_ENGINE_REQUESTS, **(cpu_requests or {})}
        self.install = [str(x) for x in self.plan.get("install") or []]
        self.configs = {str(k): v for k, v in (self.plan.get("config_files") or {}).items()}
        self.groups: dict[str, list[dict[str, Any]]] = {}
        for p in self.procs:
            if p.get("group"):
                self.groups.setdefault(p["group"]["id"], []).append(p)
        for members in self.groups.values():
            members.sort(key=lambda p: p["group"]["rank"])
        # a group's master address placeholder → its leader Service (seen from other workloads)
        self.leader_host: dict[str, str] = {}
        for gid, members in self.groups.items():
            addr = self._master_addr(members[0])
            for ph in placeholders_in(addr or ""):
                self.leader_host[ph] = self._workload(gid)

    # -- naming
    def _workload(self, key: str) -> str:
        key = dns_name(key)
        return key if key == self.name or key.startswith(self.name + "-") else dns_name(f"{self.name}-{key}")

    def _master_addr(self, proc: Mapping[str, Any]) -> str | None:
        argv = [str(a) for a in proc.get("argv") or []]
        return last_flag_value(argv, "--master-addr") or last_flag_value(argv, "--data-parallel-address")

    # -- values
    def _host_of(self, name: str) -> str | None:
        """The Service for a placeholder naming another machine's address, or None."""
        names = {str(p["name"]): p for p in self.procs}

        def svc(proc_name: str) -> str | None:
            p = names.get(proc_name)
            if p is None:
                return None
            return self._workload(p["group"]["id"] if p.get("group") else proc_name)

        if name == "MOONCAKE_MASTER_IP":
            return next((svc(str(p["name"])) for p in self.procs if p.get("role") == "mooncake_master"), None)
        if name == "DYN_CONTROL_IP":  # Dynamo's control plane: its etcd
            return next((svc(str(p["name"])) for p in self.procs if p.get("role") == "infra"), None)
        m = re.fullmatch(r"VLLM_INSTANCE_(\d+)", name)
        if m:  # 1-based: the instance-<i-1> workload
            k = int(m.group(1)) - 1
            return svc(f"instance-{k}-head") or svc(f"instance-{k}")
        m = re.fullmatch(r"(PREFILL|DECODE)_NODE_(\d+)", name)
        if m:
            return svc(f"{m.group(1).lower()}-{int(m.group(2)) - 1}")
        return None

    def _value(self, name: str, inside: dict[str, str]) -> str | None:
        """A placeholder's value: the group's own (``inside``), ``--k8s-set``, what the cluster
        gives (leader Service, pod IP, ``eth0``, the router bound on every pod address, config
        paths, Services of other machines), then the plan's ``placeholder_defaults`` — a
        default such as ``ROUTER_HOST=localhost`` (one machine) is wrong in a pod."""
        if name in inside:
            return inside[name]
        if name in self.values:
            return self.values[name]
        if name in self.leader_host:
            return self.leader_host[name]
        if name in self.configs:
            return f"{CONFIG_DIR}/{name.lower()}.json"
        fixed = {"ROUTER_HOST": "0.0.0.0", "IFACE_NAME": "eth0", "NODE_IP": "$(POD_IP)"}
        if name in fixed:
            return fixed[name]
        if name.endswith("_DP_RPC_PORT"):
            return DP_RPC_PORT
        return self._host_of(name) or self.defaults.get(name)

    def _fill(self, where: str, text: str, inside: dict[str, str]) -> str:
        names = placeholders_in(text)
        values = {n: v for n in names if (v := self._value(n, inside)) is not None}
        missing = [n for n in names if n not in values]
        if missing:
            raise ExportError(f"{where}: placeholder ${missing[0]} has no value on Kubernetes; give it with "
                              f"--k8s-set {missing[0]}=VALUE (addresses, ports, interfaces and config paths "
                              "are filled from the cluster)")
        return fill(text, values)

    def _config_map(self) -> dict[str, Any]:
        import json

        data = {}
        for name, content in self.configs.items():
            text = json.dumps(content, indent=2) if not isinstance(content, str) else content
            data[f"{name.lower()}.json"] = self._fill(f"config file {name}", text, {})
        return {"apiVersion": "v1", "kind": "ConfigMap",
                "metadata": self._meta(self._workload("config"), {"app.kubernetes.io/part-of": self.name}),
                "data": data}

    def _uses_config(self, proc: Mapping[str, Any]) -> bool:
        texts = [*(proc.get("argv") or []), *(proc.get("env") or {}).values()]
        return any(n in self.configs for t in texts for n in placeholders_in(str(t)))

    def _env(self, name: str, env: dict[str, str], inside: dict[str, str]) -> list[dict[str, Any]]:
        out: list[dict[str, Any]] = [{"name": "POD_IP", "valueFrom": {"fieldRef": {"fieldPath": "status.podIP"}}}]
        for k, v in env.items():
            # the address this pod advertises to its group, and where a KV side channel listens
            # for its peers: its own IP (a Service's ClusterIP is no address a process can bind)
            if k == "VLLM_HOST_IP" or k.endswith("_SIDE_CHANNEL_HOST"):
                out.append({"name": k, "value": "$(POD_IP)"})
            elif SECRET_NAME_RE.search(k):
                out.append({"name": k, "valueFrom": {"secretKeyRef": {"name": SECRET_NAME, "key": k}}})
            else:
                out.append({"name": k, "value": self._fill(f"process {name!r} env {k}", v, inside)})
        if "HF_TOKEN" not in env:
            out.append({"name": "HF_TOKEN", "valueFrom": {"secretKeyRef": {"name": SECRET_NAME, "key": "HF_TOKEN",
                                                                           "optional": True}}})
        return out

    def _secret_args(self, argv: list[str], env: list[dict[str, Any]]) -> list[str]:
        secrets = set(secret_argv_values(argv))
        if not secrets:
            return argv
        out, prev = [], ""
        for tok in argv:
            flag, eq, val = tok.partition("=")
            if tok in secrets and prev.startswith("--"):
                key = dns_name(prev).replace("-", "_").upper()
                out.append(f"$({key})")
                self._secret_env(env, key)
            elif eq and flag.startswith("--") and val in secrets:
                key = dns_name(flag).replace("-", "_").upper()
                out.append(f"{flag}=$({key})")
                self._secret_env(env, key)
            else:
                out.append(tok)
            if tok.startswith("--"):
                prev = tok
        return out

    @staticmethod
    def _secret_env(env: list[dict[str, Any]], key: str) -> None:
        if not any(e["name"] == key for e in env):
            env.append({"name": key, "valueFrom": {"secretKeyRef": {"name": SECRET_NAME, "key": key}}})

    # -- pieces
    def _probes(self, proc: Mapping[str, Any], inside: dict[str, str]) -> dict[str, Any]:
        """Startup/readiness/liveness probes from the process's health URL (placeholders filled,
        e.g. the router's ``$ROUTER_PORT``), else a TCP probe on its first port; {} without either."""
        name = proc.get("name")
        health = proc.get("health") or {}
        url = health.get("url")
        # the plan's own ports first (a side channel is no sign of a serving API)
        ports = self._plan_ports(proc, inside) or self._ports(proc, inside)
        if url and not health.get("remote"):
            u = urlsplit(self._fill(f"process {name!r} health.url", str(url), inside))
            action = {"httpGet": {"path": u.path or "/", "port": u.port or 80}}
        elif ports:
            action = {"tcpSocket": {"port": ports[0]}}
        else:
            return {}
        period = 10
        fresh = lambda: copy.deepcopy(action)  # noqa: E731 - no YAML anchors between the probes
        return {
            "startupProbe": {**fresh(), "periodSeconds": period, "failureThreshold": STARTUP_BUDGET_S // period},
            "readinessProbe": {**fresh(), "periodSeconds": 5, "failureThreshold": 3},
            "livenessProbe": {**fresh(), "periodSeconds": period, "timeoutSeconds": 5, "failureThreshold": 3},
        }

    def _plan_ports(self, proc: Mapping[str, Any], inside: dict[str, str]) -> list[int]:
        """The plan's ``ports`` of ``proc`` (placeholders filled), sorted."""
        filled = (self._fill(f"process {proc.get('name')!r} ports", str(p), inside) for p in proc.get("ports") or [])
        return sorted({int(s) for s in filled if s.isdigit()})

    def _ports(self, proc: Mapping[str, Any], inside: dict[str, str]) -> list[int]:
        """Every port ``proc`` listens on in its pod: the plan's ``ports``, the port of its own
        health URL (a plan file that lists only a router's metrics port still exposes its API), its
        KV connector's ports (:func:`kv_ports`) and an etcd's client URLs' ports."""
        name = proc.get("name")
        out = self._plan_ports(proc, inside)
        health = proc.get("health") or {}
        if health.get("url") and not health.get("remote"):
            port = port_of(self._fill(f"process {name!r} health.url", str(health["url"]), inside))
            if port:
                out.append(port)
        argv, env = container_command(proc, self.image)
        out += kv_ports(argv, env)
        for url in (last_flag_value(argv, "--listen-client-urls") or "").split(","):  # etcd
            if url and (port := port_of(url)):
                out.append(port)
        return sorted(set(out))

    def _devices(self, argv: list[str], env: dict[str, str]) -> int:
        """Accelerators one engine container requests: the count of ids a ``*_VISIBLE_DEVICES``
        pin lists (a co-located PD pool), else what its parallel-size flags use on its node
        (:func:`~vllm_deploy_wizard.common.parallelism.devices_on_node`), else the plan's ``device_count``."""
        for key, visible in env.items():
            if key.endswith("_VISIBLE_DEVICES") and visible and not placeholders_in(visible):
                return len([x for x in visible.split(",") if x.strip()])
        return devices_on_node(argv) or self.devices

    def _container(self, proc: dict[str, Any], inside: dict[str, str], argv_edit=None) -> dict[str, Any]:
        name = str(proc["name"])
        router = next((p for p in self.procs if p.get("role") == "router"), None)
        if router is not None and proc is not router and "ROUTER_HOST" not in self.values:
            # the router binds every address of its pod; the others reach it at its Service
            # (MoRIIO engines ping it at ``proxy_ip: $ROUTER_HOST``)
            inside = {**inside, "ROUTER_HOST": self._workload(str(router["name"]))}
        argv, env = container_command(proc, self.image)
        devices = self._devices(argv, env)
        if self.resource and proc.get("role") in ENGINE_ROLES:
            # the device plugin gives the pod exactly its devices, numbered from 0: a host's pin
            # (a co-located pool's 4,5,6,7) would name devices the pod does not have
            env = {k: v for k, v in env.items() if not k.endswith("_VISIBLE_DEVICES")}
        if argv_edit is not None:
            argv = argv_edit(argv)
        if proc.get("setup"):
            raise ExportError(f"process {name!r}: has a setup prelude ({str(proc['setup'])[:60]!r}…); bake it into "
                              "the image and export again without it")
        env_list = self._env(name, env, inside)
        engine = proc.get("role") in ENGINE_ROLES
        if engine:
            env_list.append({"name": "HF_HOME", "value": HF_CACHE_DIR})
        argv = self._secret_args(argv, env_list)
        argv = [self._fill(f"process {name!r} argv", a, inside) for a in argv]
        image = self.image
        if (own := docker_image(proc)) is not None and not runs_vllm(own):  # another program's image (Dynamo's etcd)
            image = own
        if proc.get("role") == "router":
            image, argv = self._router_image(argv)
        c: dict[str, Any] = {"name": dns_name(name), "image": image, "command": argv[:1], "args": argv[1:],
                             "env": env_list}
        ports = self._ports(proc, inside)
        if ports:
            c["ports"] = [{"containerPort": p, "name": f"p{p}"} for p in ports]
        c.update(self._probes(proc, inside))
        mounts = []
        if self._uses_config(proc):
            mounts.append({"name": "config", "mountPath": CONFIG_DIR, "readOnly": True})
        if engine:
            mounts.append({"name": "dshm", "mountPath": "/dev/shm"})
            mounts.append({"name": "hf-cache", "mountPath": HF_CACHE_DIR})
            if self.model_claim:
                mounts.append({"name": "model", "mountPath": self.model_claim[1], "readOnly": True})
        if mounts:
            c["volumeMounts"] = mounts
        if engine and self.resource:
            units = max(1, -(-devices // self.devices_per_unit))  # TPU7x: 2 TensorCores per chip
            c["resources"] = {"limits": {self.resource: units}, "requests": {self.resource: units}}
        else:  # no device to place it by: what it needs of the node's CPUs and memory
            c["resources"] = {"requests": dict(self.cpu_requests if engine else SERVICE_REQUESTS)}
        return c

    def _router_image(self, argv: list[str]) -> tuple[str, list[str]]:
        """(image, argv) of a router container: ``--k8s-router-image`` as given; else the engine
        image with the plan's install line of the router's package run first (the vLLM image has
        no ``vllm-router``): ``/bin/sh -c 'python3 -m pip install PKG && exec "$0" "$@"' ARGV``."""
        exe = Path(argv[0]).name if argv else ""
        if exe == "vllm-router" and last_flag_value(argv, "--prometheus-host") is None:
            # its metrics port (29000 unless --prometheus-port) binds 127.0.0.1 by default
            # (vllm-router 0.1.17 --help): unreachable for a scraper or the Service that lists it
            argv = [*argv, "--prometheus-host", "0.0.0.0"]
        if self.router_image:
            return self.router_image, argv
        lines = [ln for ln in self.install if exe and exe in ln.split()]
        if not lines:
            return self.image, argv
        line = lines[0]
        for pip in ("uv pip install", "pip install"):
            if line.startswith(pip):
                line = "python3 -m pip install --no-cache-dir" + line[len(pip):]
                break
        # $$ is Kubernetes' escape for a literal $ (it expands $(VAR) in command/args itself)
        return self.image, ["/bin/sh", "-c", f'{line} && exec "$$0" "$$@"', *argv]

    def _pod(self, proc: dict[str, Any], labels: dict[str, str], container: dict[str, Any],
             init: list[dict[str, Any]]) -> dict[str, Any]:
        spec: dict[str, Any] = {"containers": [container]}
        if init:
            spec["initContainers"] = init
        volumes = []
        if self._uses_config(proc):
            volumes.append({"name": "config", "configMap": {"name": self._workload("config")}})
        if proc.get("role") in ENGINE_ROLES:
            volumes.append({"name": "dshm", "emptyDir": {"medium": "Memory"}})
            volumes.append({"name": "hf-cache", **(
                {"persistentVolumeClaim": {"claimName": self.hf_cache_claim}} if self.hf_cache_claim
                else {"hostPath": {"path": HF_CACHE_HOST_PATH, "type": "DirectoryOrCreate"}})})
            if self.model_claim:
                volumes.append({"name": "model", "persistentVolumeClaim": {"claimName": self.model_claim[0],
                                                                           "readOnly": True}})
        if volumes:
            spec["volumes"] = volumes
        if self.node_selector and proc.get("role") in ENGINE_ROLES:
            spec["nodeSelector"] = dict(self.node_selector)
        return {"metadata": {"labels": labels}, "spec": spec}

    def _meta(self, name: str, labels: dict[str, str]) -> dict[str, Any]:
        m: dict[str, Any] = {"name": name, "labels": labels}
        if self.namespace:
            m["namespace"] = self.namespace
        return m

    def _service(self, name: str, selector: dict[str, str], ports: list[int]) -> dict[str, Any]:
        return {"apiVersion": "v1", "kind": "Service",
                "metadata": self._meta(name, {"app.kubernetes.io/part-of": self.name}),
                "spec": {"selector": selector,
                         "ports": [{"name": f"p{p}", "port": p, "targetPort": p, "protocol": "TCP"} for p in ports]}}

    def _waits(self, proc: Mapping[str, Any], owner: dict[str, str]) -> list[dict[str, Any]]:
        """Init containers waiting for the Services of what ``proc`` depends on (other workloads)."""
        by_name = {p["name"]: p for p in self.procs}
        deps = proc.get("depends_on")
        if deps is None:  # contracts §2: every process of earlier phases
            mine = PHASES.index(proc.get("phase") or "engine") if (proc.get("phase") or "engine") in PHASES else 2
            deps = [p["name"] for p in self.procs if (p.get("phase") or "engine") in PHASES
                    and PHASES.index(p.get("phase") or "engine") < mine]
        out, seen = [], set()
        for dep in deps:
            d = by_name.get(dep)
            if d is None or owner.get(dep) == owner.get(str(proc["name"])):
                continue
            svc = owner[dep]
            if svc in seen:
                continue
            health = d.get("health") or {}
            url = health.get("url") if not health.get("remote") else None
            ports = self._ports(d, {})
            port = port_of(url) if url else (ports[0] if ports else None)
            if port is None:
                continue
            seen.add(svc)
            out.append({"name": dns_name(f"wait-{svc}")[:63], "image": self.image,
                        "command": ["python3", "-c", WAIT_SCRIPT],
                        "args": [svc, str(port), urlsplit(url).path if url else ""]})
        return out

    def build(self) -> list[tuple[str, list[dict[str, Any]]]]:
        owner: dict[str, str] = {}
        for p in self.procs:
            g = p.get("group")
            owner[str(p["name"])] = self._workload(g["id"] if g else str(p["name"]))
        files: list[tuple[str, list[dict[str, Any]]]] = []
        if self.configs:
            files.append((f"00-{self._workload('config')}.yaml", [self._config_map()]))
        done: set[str] = set()
        for p in self.procs:
            g = p.get("group")
            key = g["id"] if g else str(p["name"])
            if key in done:
                continue
            done.add(key)
            phase = p.get("phase") or "engine"
            order = PHASES.index(phase) if phase in PHASES else 2
            docs = self._group(key, self.groups[key]) if g else self._deployment(p)
            files.append((f"{order + 1}0-{self._workload(key)}.yaml", docs))
        return files

    def _deployment(self, proc: dict[str, Any]) -> list[dict[str, Any]]:
        name = self._workload(str(proc["name"]))
        labels = {"app.kubernetes.io/name": name, "app.kubernetes.io/part-of": self.name}
        owner = {str(p["name"]): self._workload(p["group"]["id"] if p.get("group") else str(p["name"]))
                 for p in self.procs}
        c = self._container(proc, {})
        dep = {"apiVersion": "apps/v1", "kind": "Deployment", "metadata": self._meta(name, labels),
               "spec": {"replicas": 1, "selector": {"matchLabels": {"app.kubernetes.io/name": name}},
                        "strategy": {"type": "Recreate"},
                        "template": self._pod(proc, labels, c, self._waits(proc, owner))}}
        docs = [dep]
        ports = self._ports(proc, {})
        if ports:
            docs.append(self._service(name, {"app.kubernetes.io/name": name}, ports))
        return docs

    def _group(self, gid: str, members: list[dict[str, Any]]) -> list[dict[str, Any]]:
        name = self._workload(gid)
        head, workers = members[0], members[1:]
        addr = self._master_addr(head) or ""
        inside = {ph: "$(LWS_LEADER_ADDRESS)" for ph in placeholders_in(addr)}
        labels = {"app.kubernetes.io/name": name, "app.kubernetes.io/part-of": self.name}
        owner = {str(p["name"]): self._workload(p["group"]["id"] if p.get("group") else str(p["name"]))
                 for p in self.procs}

        def worker_argv(argv: list[str]) -> list[str]:
            out = set_flag(argv, "--node-rank", "$(LWS_WORKER_INDEX)")
            start = last_flag_value(argv, "--data-parallel-start-rank")
            if start is not None and len(members) > 2:
                step = int(start)  # worker k starts at k * (local DP size)
                rest = [a for i, a in enumerate(out) if not (a == "--data-parallel-start-rank"
                        or (i and out[i - 1] == "--data-parallel-start-rank")
                        or a.startswith("--data-parallel-start-rank="))]
                # $$ is Kubernetes' escape for a literal $ (it expands $(VAR) in args itself)
                return ["/bin/sh", "-c", f'exec "$0" "$@" --data-parallel-start-rank $$((LWS_WORKER_INDEX * {step}))',
                        *rest]
            return out

        leader_c = self._container(head, inside)
        worker_c = self._container(workers[0], inside, worker_argv)
        # one worker template for every worker: its side-channel ports are those of all their ranks
        worker_sc = sorted({p for w in workers for p in kv_ports(*container_command(w, self.image))})
        if worker_sc:
            have = {p["containerPort"] for p in worker_c.get("ports", [])}
            worker_c["ports"] = sorted([*worker_c.get("ports", []), *({"containerPort": p, "name": f"p{p}"}
                                                                       for p in worker_sc if p not in have)],
                                       key=lambda x: x["containerPort"])
        leader_labels = {**labels, "vllm-wizard/group-role": "leader"}
        worker_labels = {**labels, "vllm-wizard/group-role": "worker"}
        lws = {
            "apiVersion": "leaderworkerset.x-k8s.io/v1", "kind": "LeaderWorkerSet",
            "metadata": self._meta(name, labels),
            "spec": {
                "replicas": 1,
                "startupPolicy": "LeaderCreated",
                "leaderWorkerTemplate": {
                    "size": len(members),
                    "restartPolicy": "RecreateGroupOnPodRestart",
                    "leaderTemplate": self._pod(head, leader_labels, leader_c, self._waits(head, owner)),
                    "workerTemplate": self._pod(workers[0], worker_labels, worker_c, []),
                },
            },
        }
        docs = [lws]
        ports = self._ports(head, inside)
        if worker_sc:  # the side channels are in the group's headless Service below
            ports = [p for p in ports if p not in kv_ports(*container_command(head, self.image))]
        if ports:
            # every member serving the API (data parallel with hybrid load balancing: one API server
            # per node, each in front of its local ranks) takes traffic; else the leader alone
            api_port = port_of(str((head.get("health") or {}).get("url") or ""))
            every = api_port is not None and all(api_port in self._ports(w, inside) for w in workers)
            selector = {"app.kubernetes.io/name": name}
            if not every:
                selector["vllm-wizard/group-role"] = "leader"
            docs.append(self._service(name, selector, ports))
        if worker_sc:  # peers reach each member's side channel at its pod IP: a headless Service names them
            svc = self._service(dns_name(f"{name}-side-channel"), {"app.kubernetes.io/name": name},
                                sorted({*worker_sc, *kv_ports(*container_command(head, self.image))}))
            svc["spec"]["clusterIP"] = "None"
            docs.append(svc)
        return docs


def kubernetes_manifests(data: Mapping[str, Any], image: str, vendor: str | None = None, arch: str | None = None,
                         name: str = "vllm", namespace: str | None = None,
                         values: Mapping[str, str] | None = None, router_image: str | None = None,
                         hf_cache_claim: str | None = None,
                         cpu_requests: Mapping[str, str] | None = None, node_selector: Mapping[str, str] | None = None,
                         devices_per_unit: int = 1,
                         model_claim: tuple[str, str] | None = None) -> list[tuple[str, list[dict[str, Any]]]]:
    """The manifests of plan-file ``data``: ``[(file name, [manifest dict, …]), …]`` in start order
    (``10-`` infra, ``20-`` companions, ``30-`` engines, ``40-`` routers).

    ``image``: the container image of every workload; ``vendor``/``arch``: hardware brand and
    compute arch for the device resource (:func:`device_resource`); ``name``: prefix of every
    object name; ``namespace``: set on every object when given; ``values``: placeholder values
    (``--k8s-set``), before anything derived; ``router_image``: the router's image (default: ``image``
    with the plan's router install run first); ``hf_cache_claim``: a PersistentVolumeClaim for the
    Hugging Face cache (default: a hostPath on the node); ``cpu_requests``: ``{"cpu", "memory"}`` of a
    CPU engine pod (default :data:`CPU_ENGINE_REQUESTS`); ``node_selector``: labels every engine pod
    selects (TPU node pools); ``devices_per_unit``: devices vLLM counts per requested resource (TPU7x: 2
    TensorCores per ``google.com/tpu`` chip); ``model_claim``: ``(PVC, path)``, a PersistentVolumeClaim
    mounted read-only at ``path`` in every engine pod (a model served from a local path). Raises
    :class:`ExportError`.
    """
    return _Exporter(data, image, vendor, arch, name, namespace, values, router_image, hf_cache_claim,
                     cpu_requests, node_selector, devices_per_unit, model_claim).build()
