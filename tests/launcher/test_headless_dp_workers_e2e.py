"""The corrected TP+DP worker (docs/synthesis.md §7.1) against the real vLLM CPU build's own rules.

The planner's multi-node TP+DP plan (Inkling on GB200: DP = 2 nodes, one DP rank per node, no
hybrid-LB flag) is read by vLLM 0.32.0's own parser and ``EngineArgs.create_engine_config`` — the
data-parallel flags of each process as the plan writes them, on the tiny model at TP 1:

* the head resolves to internal load balancing (neither hybrid nor external LB), so its handshake
  requires every remote engine to be headless (``vllm/v1/engine/utils.py`` ``remote_should_be_headless``);
* the builder's worker (``--data-parallel-start-rank 1``, no ``--headless``) resolves to an
  external-LB rank of its own (``vllm/engine/arg_utils.py``: hybrid inferred, switched to external at
  local size 1) — a front-end whose engines that head refuses;
* the corrected worker (``--headless``) resolves to a headless rank 1 in no LB mode: what the head expects.

What this does not run: the handshake itself (two engines loading a model would cost minutes here).
One vLLM import, three config resolutions: about 1–2 minutes on a busy 2-core box.
"""

from __future__ import annotations

import json
import subprocess

import pytest

from vllm_deploy_wizard.catalog import Selection, load_catalog, synthesize
from vllm_deploy_wizard.catalog.planner import plan_selection

pytestmark = pytest.mark.e2e

#: Resolves each argv (JSON list on stdin, ``{name: argv}``) with vLLM's parser and engine config.
PROBE = """
import json, sys
from vllm.engine.arg_utils import EngineArgs
from vllm.entrypoints.launchers.cli_args import make_arg_parser
from vllm.utils.argparse_utils import FlexibleArgumentParser
out = {}
for name, argv in json.load(sys.stdin).items():
    args = make_arg_parser(FlexibleArgumentParser()).parse_args(argv)
    args.model = args.model_tag
    pc = EngineArgs.from_cli_args(args).create_engine_config(headless=args.headless).parallel_config
    out[name] = {"headless": bool(args.headless), "hybrid": pc.data_parallel_hybrid_lb,
                 "external": pc.data_parallel_external_lb, "rank": pc.data_parallel_rank}
print("RESULT " + json.dumps(out))
"""

TP_DP = Selection(model="thinkingmachines/Inkling", hardware="gb200", strategy="multi_node_tp_dp", nodes=2,
                  install_mode="pip")


def _dp_flags(argv: list[str]) -> list[str]:
    """The data-parallel flags (and ``--headless``) of a plan argv, ``$HEAD_IP`` as loopback."""
    out, keep = [], False
    for tok in argv:
        if tok.startswith("--"):
            keep = tok.startswith("--data-parallel") or tok == "--headless"
            if keep:
                out.append(tok)
        elif keep:
            out.append("127.0.0.1" if tok == "$HEAD_IP" else tok)
            keep = False
    return out



def test_vllm_takes_the_builders_worker_as_its_own_front_end_and_the_corrected_one_as_a_headless_rank(real):
    cat = load_catalog()
    builder = {p.name: p for p in synthesize(cat, TP_DP).processes}
    planned = {p.name: p for p in plan_selection(cat, TP_DP).plan.processes}
    base = [str(real["model"]), "--tensor-parallel-size", "1", "--max-model-len", "256"]
    forms = {"head": base + _dp_flags(planned["vllm-head"].argv),
             "builder worker": base + _dp_flags(builder["vllm-worker-1"].argv),
             "corrected worker": base + _dp_flags(planned["vllm-worker-1"].argv)}
    assert "--headless" in forms["corrected worker"] and "--headless" not in forms["builder worker"]
    r = subprocess.run([str(real["vllm"] / "python"), "-c", PROBE], input=json.dumps(forms), capture_output=True,
                       text=True, timeout=300)
    line = next((ln for ln in r.stdout.splitlines() if ln.startswith("RESULT ")), None)
    assert line is not None, (r.stdout + r.stderr)[-3000:]
    got = json.loads(line.removeprefix("RESULT "))
    # the head balances internally: its handshake wants headless remote engines
    assert got["head"] == {"headless": False, "hybrid": False, "external": False, "rank": 0}
    # the builder's worker: an external-LB rank with its own API server, refused by that head
    assert got["builder worker"] == {"headless": False, "hybrid": False, "external": True, "rank": 1}
    # corrected: a headless rank 1, no LB mode of its own
    assert got["corrected worker"] == {"headless": True, "hybrid": False, "external": False, "rank": 1}
