"""A prefill/decode plan on two network-namespace hosts with the real vLLM Router, twice:

* ``plan … --slurm`` submitted to a real Slurm cluster (slurmctld + a slurmd per host): two nodes,
  the router a step beside the prefill engine, every pool address passed to every task;
* ``launch plan.yaml --all-nodes`` over real OpenSSH, the machines' addresses taken from ``--host``.

The engines are OpenAI-compatible stand-ins (:mod:`pd_standin_engine`; no GPU here) that relay the
NIXL side channel as vLLM does: a request through the router reaches prefill, then decode, which
reads the prefill's side channel at the address the plan gave it. Both paths (completions, chat)
serve; ``scancel`` and ``stop --all-nodes`` leave nothing running."""

from __future__ import annotations

import shlex
import subprocess
import sys
import time
from pathlib import Path

import httpx
import netns_hosts
import pytest
import slurm_cluster
import sshd_hosts
import yaml
from e2e_env import E2EUnavailable, router_env
from multinode_e2e_support import WIZARD, kill_namespace, netns_pids, wait_for

pytestmark = pytest.mark.e2e

STANDIN = Path(__file__).with_name("pd_standin_engine.py")
#: Seconds the router may take to answer once the engines are up (it checks its workers every 30 s).
READY_S = 180.0
PORTS = {"prefill": 8001, "decode": 8002}


def _plan(tmp_path: Path) -> tuple[Path, Path]:
    """The PD plan (2 nodes, NIXL, vLLM Router) with its sbatch script; each engine's argv replaced
    by the stand-in (its env — the side-channel host and port — kept)."""
    plan, script = tmp_path / "plan.yaml", tmp_path / "job.sbatch"
    r = subprocess.run([*WIZARD, "plan", "--model", "deepseek-ai/DeepSeek-V3", "--hardware", "xeon6", "--strategy",
                        "pd_cluster", "--nodes", "2", "--allow-unverified", "--out", str(plan), "--slurm", str(script)],
                       capture_output=True, text=True, timeout=120)
    assert r.returncode == 0, r.stderr
    data = yaml.safe_load(plan.read_text())
    for p in data["plan"]["processes"]:
        if p["role"] in PORTS:
            p["argv"] = [sys.executable, str(STANDIN), "--role", p["role"], "--port", str(PORTS[p["role"]])]
    plan.write_text(yaml.safe_dump(data, sort_keys=False))
    return plan, script


def _env(router_bin: Path, state: Path) -> dict[str, str]:
    import os

    return dict(os.environ, PATH=f"{router_bin}:{os.environ['PATH']}", XDG_STATE_HOME=str(state), NO_COLOR="1")


def _left(hosts: list[netns_hosts.Host]) -> list[str]:
    """Wizard, router and stand-in processes still running in the hosts (the test's daemons excluded)."""
    import psutil

    out = []
    for h in hosts:
        for pid in netns_pids(h):
            try:
                cmd = " ".join(psutil.Process(pid).cmdline())
            except psutil.Error:
                continue
            if any(k in cmd for k in ("vllm_deploy_wizard", "vllm-router", STANDIN.name)):
                out.append(f"{h.name}: {pid} {cmd[:120]}")
    return out


def _serves_both_paths(router: str, hosts: list[netns_hosts.Host]) -> None:
    """One completion and one chat through ``router`` (engines just started): each reached prefill
    (on hosts[0]) and decode (on hosts[1]), which read the prefill's side channel each time."""
    c = httpx.post(f"{router}/v1/completions", json={"model": "standin-model", "prompt": "Hi", "max_tokens": 4},
                   timeout=60, trust_env=False)
    assert c.status_code == 200 and "decoded by" in c.json()["choices"][0]["text"], c.text
    c = httpx.post(f"{router}/v1/chat/completions", timeout=60, trust_env=False,
                   json={"model": "standin-model", "messages": [{"role": "user", "content": "Hi"}], "max_tokens": 4})
    assert c.status_code == 200 and "decoded by" in c.json()["choices"][0]["message"]["content"], c.text
    stats = {role: httpx.get(f"http://{h.ip}:{PORTS[role]}/stats", timeout=10, trust_env=False).json()
             for role, h in zip(("prefill", "decode"), hosts, strict=True)}
    for role in PORTS:
        assert stats[role]["completions"] == 1 and stats[role]["chat"] == 1, stats
    assert stats["decode"]["kv_pulls"] == 2, stats


def _answers(url: str, check=None) -> bool:
    try:
        return httpx.get(url, timeout=2, trust_env=False).status_code == 200
    except httpx.HTTPError:
        if check is not None:
            check()
        return False


def test_pd_plan_serves_through_the_real_router_on_slurm_and_over_ssh(tmp_path) -> None:
    for why in (netns_hosts.unavailable(), slurm_cluster.unavailable(), sshd_hosts.unavailable()):
        if why:
            pytest.skip(why)
    try:
        router_bin = router_env()
    except E2EUnavailable as exc:
        pytest.skip(f"vllm-router unavailable: {exc}")
    plan, script = _plan(tmp_path)
    assert "#SBATCH --nodes=2" in script.read_text()  # the router takes no node of its own
    with netns_hosts.netns_hosts(2) as hosts:
        head, other = hosts
        router = f"http://{head.ip}:30000"
        try:
            bridge = head.ip.rsplit(".", 1)[0] + ".1"
            with slurm_cluster.slurm_cluster(hosts, bridge, tmp_path / "slurm") as cluster:
                env = {**_env(router_bin, tmp_path / "slurm-state"), "SLURM_CONF": cluster.env["SLURM_CONF"],
                       "WIZARD_BIN": str(Path(sys.executable).parent / "vllm-wizard")}
                out = tmp_path / "job.out"
                t0 = time.monotonic()
                sub = subprocess.run(["sbatch", "--parsable", f"--output={out}", str(script)], env=env,
                                     capture_output=True, text=True, timeout=30)
                assert sub.returncode == 0, sub.stderr
                job = sub.stdout.strip().split(";")[0]

                def running() -> None:
                    assert cluster.run("squeue", "-h", "-j", job).stdout.strip(), \
                        f"job ended early:\n{out.read_text(errors='replace')[-3000:] if out.exists() else ''}"

                wait_for(lambda: _answers(f"{router}/health", running), READY_S, "the router to answer on the head")
                t_ready = time.monotonic() - t0
                _serves_both_paths(router, hosts)
                log = out.read_text(errors="replace")
                assert f"PREFILL_NODE_1={head.ip}" in log and f"DECODE_NODE_1={other.ip}" in log, log[-3000:]
                t1 = time.monotonic()
                assert cluster.run("scancel", job).returncode == 0
                wait_for(lambda: not cluster.run("squeue", "-h", "-j", job).stdout.strip(), 120, "the job to end")
                wait_for(lambda: not _left(hosts), 60, "nothing left on either node after scancel")
                t_cancel = time.monotonic() - t1
                log = out.read_text(errors="replace")
                assert log.count("run finished: stopped") == 3, log[-3000:]  # prefill, decode, router
            with sshd_hosts.sshd_hosts(hosts, tmp_path / "ssh") as ssh_config:
                env = _env(router_bin, tmp_path / "head-state")
                remote_env = _env(router_bin, tmp_path / "other-state")
                keep = ("PATH", "XDG_STATE_HOME", "NO_COLOR")
                remote = shlex.join(["env", *(f"{k}={remote_env[k]}" for k in keep), *WIZARD])

                def wizard(*args: str, timeout: float = 300) -> subprocess.CompletedProcess:
                    return subprocess.run(head.argv(*WIZARD, *args), env=env, capture_output=True, text=True,
                                          timeout=timeout)

                t2 = time.monotonic()
                r = wizard("launch", str(plan), "--all-nodes", "--node", "prefill-node-0",
                           "--host", f"decode-node-0={other.ip}", "--host", f"router={head.ip}",
                           "--ssh-config", str(ssh_config), "--remote-wizard", remote)
                assert r.returncode == 0, r.stdout + r.stderr
                assert f"PREFILL_NODE_1={head.ip}" in r.stderr and f"DECODE_NODE_1={other.ip}" in r.stderr, r.stderr
                wait_for(lambda: _answers(f"{router}/health"), READY_S, "the router started over ssh to answer")
                t_ssh = time.monotonic() - t2
                _serves_both_paths(router, hosts)
                s = wizard("stop", "--all-nodes", timeout=200)
                assert s.returncode == 0, s.stdout + s.stderr
                wait_for(lambda: not _left(hosts), 60, "nothing left on either node after stop --all-nodes")
            print(f"\npd figures: sbatch → router serving {t_ready:.1f} s, scancel → nothing left {t_cancel:.1f} s; "
                  f"launch --all-nodes → serving {t_ssh:.1f} s")
        finally:
            for h in hosts:
                kill_namespace(h)
