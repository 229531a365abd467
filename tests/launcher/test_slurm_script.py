"""``plan … --slurm FILE``: the sbatch script (docs/multi-node.md §4) — its lines, valid bash, and the
per-task command each node runs (executed with a stand-in wizard)."""

from __future__ import annotations

import json
import re
import shlex
import subprocess
from pathlib import Path

import pytest
import yaml

from vllm_deploy_wizard.cli import main

RECIPES = Path(__file__).resolve().parents[3] / "shared" / "recipes-snapshot"
#: The scripts are planned from ../shared's recipes snapshot: the ``shared`` fixture skips every test
#: (counted in the summary) where it is missing.
pytestmark = pytest.mark.usefixtures("shared")


def _script(tmp_path, *args) -> tuple[str, Path]:
    script = tmp_path / "job.sbatch"
    assert main(["plan", "--recipes", str(RECIPES), *args, "--slurm", str(script)]) == 0
    return script.read_text(), script


def _task(text: str) -> str:
    """The ``bash -c`` text srun runs on every engine node (the last srun's)."""
    lines = [ln for ln in text.splitlines() if ln.lstrip().startswith("bash -c ")]
    words = shlex.split(lines[-1].rstrip(" &"))
    assert words[0] == "bash" and words[1] == "-c"
    return words[2]


def _sets(text: str) -> str:
    """The ``WIZARD_SETS`` the script exports (names of the ``--set`` values every task passes)."""
    line = next(ln for ln in text.splitlines() if ln.startswith("export WIZARD_SETS="))
    return shlex.split(line.partition("=")[2])[0]


#: Stand-ins for the Slurm and resolver commands the script calls: an allocation of nodes n0…
#: (NodeAddr 10.0.0.<k>); ``srun`` runs its task once per node with SLURM_NODEID set, or once on
#: the node ``--nodelist`` names, printing ``[node] argv`` per launch (``WIZARD_BIN=echo``).
FAKE_SLURM = {
    "scontrol": """#!/bin/bash
if [ "$1 $2" = "show hostnames" ]; then for ((k = 0; k < NODES; k++)); do echo "n$k"; done
elif [ "$1 $2" = "show node" ]; then echo "NodeName=$3 Arch=x86_64"; echo "   NodeAddr=10.0.0.${3#n} NodeHostName=$3"
fi
""",
    "getent": """#!/bin/bash
echo "$2 STREAM $2"
""",
    "srun": """#!/bin/bash
nodes=1; list=""
while [[ $1 == -* ]]; do
  case $1 in --nodes=*) nodes=${1#--nodes=};; --nodelist=*) list=${1#--nodelist=};; esac; shift
done
if [ -n "$list" ]; then  # the router step: it stays up until the engine step has run (as a server would)
  SLURM_NODEID=${list#n} WIZARD_BIN=echo "$@" | sed "s/^/[$list] /"
  for ((i = 0; i < 200; i++)); do [ -e "$ENGINES_DONE" ] && break; sleep 0.1; done
else for ((k = 0; k < nodes; k++)); do SLURM_NODEID=$k WIZARD_BIN=echo "$@" | sed "s/^/[n$k] /"; done
  touch "$ENGINES_DONE"
fi
""",
}


def _run_script(tmp_path: Path, script: Path, nodes: int, **env: str) -> list[list[str]]:
    """``script`` run with :data:`FAKE_SLURM` on an allocation of ``nodes``: each launch's words,
    ``[node, "launch", …]``, sorted by node."""
    bin_dir = tmp_path / "fake-bin"
    bin_dir.mkdir(exist_ok=True)
    for name, text in FAKE_SLURM.items():
        (bin_dir / name).write_text(text)
        (bin_dir / name).chmod(0o755)
    r = subprocess.run(["bash", str(script)], capture_output=True, text=True, timeout=30,
                       env={"PATH": f"{bin_dir}:/usr/bin:/bin", "NODES": str(nodes), "SLURM_JOB_NODELIST": "n[0-9]",
                            "SLURM_JOB_NUM_NODES": str(nodes),
                            "ENGINES_DONE": str(tmp_path
                                                / f"engines-done-{len(list(tmp_path.glob('engines-done-*')))}"),
                            **env})
    assert r.returncode == 0, r.stderr
    return sorted([ln.split()[0].strip("[]"), *ln.split()[1:]] for ln in r.stdout.splitlines() if "launch" in ln)


def test_multi_node_script_runs_one_task_per_node(tmp_path) -> None:
    text, script = _script(tmp_path, "--model", "ByteDance-Seed/Seed-OSS-36B-Instruct", "--hardware", "b200",
                           "--strategy", "multi_node_tp", "--nodes", "3")
    assert "#SBATCH --nodes=3" in text and "#SBATCH --ntasks-per-node=1" in text
    assert "srun --nodes=3 --ntasks=3 --ntasks-per-node=1 --kill-on-bad-exit=1" in text
    assert script.stat().st_mode & 0o777 == 0o700
    plan = script.with_name("job.sbatch.plan.yaml")
    assert yaml.safe_load(plan.read_text())["plan"]["processes"][0]["name"] == "vllm-head"
    assert plan.stat().st_mode & 0o777 == 0o600  # the plan holds what was typed, API keys included
    assert f"export WIZARD_PLAN={plan}" in text
    assert subprocess.run(["bash", "-n", str(script)]).returncode == 0
    out = subprocess.run(["bash", "-c", _task(text)], capture_output=True, text=True,
                         env={"PATH": "/usr/bin:/bin", "SLURM_NODEID": "2", "WIZARD_BIN": "echo",
                              "WIZARD_PLAN": "/shared/plan.yaml", "HEAD_IP": "10.1.0.5", "WIZARD_SETS": _sets(text)})
    assert out.stdout.split() == ["launch", "/shared/plan.yaml", "--node", "node-2", "--foreground",
                                  "--set", "HEAD_IP=10.1.0.5"]


def test_pd_labels_are_mapped_from_the_node_id_and_the_router_needs_no_node_of_its_own(tmp_path) -> None:
    text, _ = _script(tmp_path, "--model", "Qwen/Qwen3-Coder-480B-A35B-Instruct", "--hardware", "h200",
                      "--strategy", "pd_cluster", "--pd-prefill", "2", "--pd-decode", "2")
    labels = ["prefill-node-0", "prefill-node-1", "decode-node-0", "decode-node-1"]
    assert f"export WIZARD_NODES='{' '.join(labels)}'" in text and "#SBATCH --nodes=4" in text
    for k, label in enumerate(labels):
        out = subprocess.run(["bash", "-c", _task(text)], capture_output=True, text=True,
                             env={"PATH": "/usr/bin:/bin", "SLURM_NODEID": str(k), "WIZARD_BIN": "echo",
                                  "WIZARD_PLAN": "p.yaml", "HEAD_IP": "h", "WIZARD_NODES": " ".join(labels)})
        assert out.stdout.split()[3] == label


def test_pd_router_runs_beside_the_first_prefill_node_and_every_pool_address_is_passed(tmp_path) -> None:
    text, script = _script(tmp_path, "--model", "deepseek-ai/DeepSeek-V3", "--hardware", "h200",
                           "--strategy", "pd_cluster", "--nodes", "2")
    assert "#SBATCH --nodes=2" in text  # prefill + decode; the router takes no exclusive GPU node
    assert subprocess.run(["bash", "-n", str(script)]).returncode == 0
    launches = _run_script(tmp_path, script, nodes=2)
    addresses = ["--set", "HEAD_IP=10.0.0.0", "--set", "PREFILL_NODE_1=10.0.0.0", "--set", "DECODE_NODE_1=10.0.0.1",
                 "--set", "ROUTER_HOST=10.0.0.0"]  # the router's node: it binds it, engines reach it
    plan = str(script.with_name("job.sbatch.plan.yaml"))
    assert launches == [
        ["n0", "launch", plan, "--node", "prefill-node-0", "--foreground", *addresses],
        ["n0", "launch", plan, "--node", "router", "--foreground", *addresses],
        ["n1", "launch", plan, "--node", "decode-node-0", "--foreground", *addresses],
    ]
    # an address already in the environment wins (a node with several interfaces)
    launches = _run_script(tmp_path, script, nodes=2, DECODE_NODE_1="192.168.7.7", ROUTER_HOST="10.9.9.9")
    assert "DECODE_NODE_1=192.168.7.7" in launches[0] and "ROUTER_HOST=10.9.9.9" in launches[1]


def test_multi_node_pd_pools_number_their_addresses_from_the_labels(tmp_path) -> None:
    text, script = _script(tmp_path, "--model", "Qwen/Qwen3-Coder-480B-A35B-Instruct", "--hardware", "h200",
                           "--strategy", "pd_cluster", "--pd-prefill", "2", "--pd-decode", "2")
    launches = _run_script(tmp_path, script, nodes=4)
    by_label = {w[4]: (w[0], w) for w in launches}
    assert by_label["router"][0] == "n0" and by_label["prefill-node-0"][0] == "n0"
    words = by_label["router"][1]
    sets = dict(words[i + 1].split("=", 1) for i, w in enumerate(words) if w == "--set")
    plan = yaml.safe_load(script.with_name("job.sbatch.plan.yaml").read_text())["plan"]
    for name in plan["placeholders"]:
        m = re.fullmatch(r"(PREFILL|DECODE)_NODE_(\d+)", name)
        if m:  # prefill-node-<k> is $PREFILL_NODE_<k+1>: that node's NodeAddr
            node = by_label[f"{m.group(1).lower()}-node-{int(m.group(2)) - 1}"][0]
            assert sets[name] == f"10.0.0.{node[1:]}", (name, sets)


def test_out_is_the_plan_the_nodes_read(tmp_path) -> None:
    out = tmp_path / "shared" / "plan.yaml"
    text, script = _script(tmp_path, "--model", "Qwen/Qwen3-32B", "--hardware", "h200", "--out", str(out))
    assert f"export WIZARD_PLAN={out.resolve()}" in text and "#SBATCH --nodes=1" in text
    assert not script.with_name("job.sbatch.plan.yaml").exists()


def test_slurm_into_a_folder_is_refused(tmp_path, capsys) -> None:
    assert main(["plan", "--recipes", str(RECIPES), "--model", "Qwen/Qwen3-32B", "--slurm", str(tmp_path)]) == 2
    assert "--slurm" in capsys.readouterr().err


def test_gpu_plans_request_each_nodes_gpus_and_the_router_step_none(tmp_path) -> None:
    text, script = _script(tmp_path, "--model", "deepseek-ai/DeepSeek-V3", "--hardware", "h200",
                           "--strategy", "pd_cluster", "--nodes", "2")
    plan = yaml.safe_load(script.with_name("job.sbatch.plan.yaml").read_text())["plan"]
    pins = {p["env"]["CUDA_VISIBLE_DEVICES"] for p in plan["processes"] if p["role"] in ("prefill", "decode")}
    assert pins == {"0,1,2,3,4,5,6,7"}  # what each engine uses on its node
    assert re.findall(r"^#SBATCH --gpus[-=a-z]*\S*", text, re.M) == ["#SBATCH --gpus-per-node=8"]
    router = next(ln for ln in text.splitlines() if "--nodelist=" in ln)
    assert "--gres=none" in router and "env -u SLURM_GPUS_PER_NODE srun --overlap" in router
    assert subprocess.run(["bash", "-n", str(script)]).returncode == 0
    assert len(_run_script(tmp_path, script, nodes=2)) == 3  # the stand-in srun still runs every launch


def test_co_located_pools_request_the_union_of_their_pins(tmp_path) -> None:
    text, _ = _script(tmp_path, "--model", "Qwen/Qwen3-Coder-480B-A35B-Instruct", "--hardware", "h200",
                      "--strategy", "pd_cluster", "--pd-prefill", "0", "--pd-decode", "0")
    assert "#SBATCH --gpus-per-node=8" in text  # prefill 0-3 and decode 4-7 on one node


def test_cpu_plans_request_no_devices(tmp_path) -> None:
    text, _ = _script(tmp_path, "--model", "Qwen/Qwen3-1.7B", "--hardware", "xeon6")
    assert "--gpus" not in text and "--gres" not in text


def test_a_site_specific_accelerator_is_named_in_a_comment(tmp_path) -> None:
    from vllm_deploy_wizard.launcher.engines.slurm import device_request

    data = {"plan": {"accelerator": "ascend", "device_count": 16,
                     "processes": [{"name": "vllm", "node": "node-0", "role": "serve",
                                    "argv": ["vllm", "serve", "m", "--tensor-parallel-size", "8"]}]}}
    (line,) = device_request(data)
    assert line.startswith("# ") and not line.startswith("#SBATCH") and "--gres=npu:8" in line


def test_detected_cpu_facts_stay_out_of_the_plan_the_nodes_read(tmp_path, shared, capsys) -> None:
    fixture = shared / "fixtures" / "detect" / "cpu_xeon6_amx.yaml"
    args = ("--model", "Qwen/Qwen3-1.7B", "--replay", str(fixture))
    assert main(["plan", "--recipes", str(RECIPES), *args, "--json"]) == 0
    assert "VLLM_CPU_OMP_THREADS_BIND" in json.loads(capsys.readouterr().out)["processes"][-1]["env"]
    _, script = _script(tmp_path, *args)
    plan = yaml.safe_load(script.with_name("job.sbatch.plan.yaml").read_text())["plan"]
    assert not [k for p in plan["processes"] for k in p.get("env") or {} if k.startswith("VLLM_CPU_")]
    assert "--slurm: the export is for other machines" in capsys.readouterr().err
