"""``plan … --slurm FILE`` submitted to a real Slurm cluster (slurmctld + one slurmd per netns host):
one task per node runs ``vllm-wizard launch plan.yaml --node node-$SLURM_NODEID --foreground``,
the two-node model serves, and ``scancel`` stops every node's processes cleanly."""

from __future__ import annotations

import subprocess
import sys
import time
from pathlib import Path

import httpx
import netns_hosts
import pytest
import slurm_cluster
from multinode_e2e_support import CPU_ARGS, READY_S, WIZARD, host_env, kill_namespace, real_env, wait_for, wizard_left

pytestmark = pytest.mark.e2e


def test_sbatch_script_serves_on_two_slurm_nodes_and_scancel_stops_clean(tmp_path) -> None:
    for why in (netns_hosts.unavailable(), slurm_cluster.unavailable()):
        if why:
            pytest.skip(why)
    real = real_env()
    plan, script = tmp_path / "plan.yaml", tmp_path / "job.sbatch"
    r = subprocess.run([*WIZARD, "plan", "--model", str(real["model"]), "--hardware", "xeon6", "--strategy",
                        "multi_node_tp", "--nodes", "2", "--gpus", "1", "--allow-unverified", *CPU_ARGS,
                        "--out", str(plan), "--slurm", str(script)], capture_output=True, text=True, timeout=120)
    assert r.returncode == 0, r.stderr
    text = script.read_text()
    assert "#SBATCH --nodes=2" in text and '--node "node-$SLURM_NODEID" --foreground' in text
    with netns_hosts.netns_hosts(2) as hosts:
        try:
            bridge = hosts[0].ip.rsplit(".", 1)[0] + ".1"
            with slurm_cluster.slurm_cluster(hosts, bridge, tmp_path / "slurm") as cluster:
                env = {**host_env(real, tmp_path / "state"), "SLURM_CONF": cluster.env["SLURM_CONF"],
                       "WIZARD_BIN": str(Path(sys.executable).parent / "vllm-wizard")}
                out = tmp_path / "job.out"
                t0 = time.monotonic()
                sub = subprocess.run(["sbatch", "--parsable", f"--output={out}", str(script)], env=env,
                                     capture_output=True, text=True, timeout=30)
                assert sub.returncode == 0, sub.stderr
                job = sub.stdout.strip().split(";")[0]

                def serving() -> bool:
                    try:
                        r = httpx.get(f"http://{hosts[0].ip}:8000/health", timeout=2, trust_env=False)
                        return r.status_code == 200
                    except httpx.HTTPError:
                        assert cluster.run("squeue", "-h", "-j", job).stdout.strip(), \
                            f"job ended early:\n{out.read_text(errors='replace')[-3000:] if out.exists() else ''}"
                        return False

                wait_for(serving, READY_S, "the Slurm job's head to serve")
                t_ready = time.monotonic() - t0
                c = httpx.post(f"http://{hosts[0].ip}:8000/v1/completions", json={"prompt": "Hello", "max_tokens": 4},
                               timeout=120, trust_env=False)
                assert c.status_code == 200 and c.json()["choices"][0]["text"], c.text
                log = out.read_text(errors="replace")
                assert f"head n0 ({hosts[0].ip})" in log

                t1 = time.monotonic()
                assert cluster.run("scancel", job).returncode == 0
                wait_for(lambda: not cluster.run("squeue", "-h", "-j", job).stdout.strip(), 120, "the job to end")
                wait_for(lambda: not wizard_left(hosts), 30, "no vLLM process left on either node")
                t_cancel = time.monotonic() - t1
                log = out.read_text(errors="replace")
                assert log.count("run finished: stopped") == 2, log[-3000:]  # each node's supervisor stopped its run
                print(f"\nslurm figures: sbatch → serving on two nodes {t_ready:.1f} s; scancel → nothing left "
                      f"{t_cancel:.1f} s")
        finally:
            for h in hosts:
                kill_namespace(h)
