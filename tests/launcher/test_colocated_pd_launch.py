"""The recipes' co-located prefill/decode plan (one node, prefill TP 4 on side channel 5557, decode TP
4 on 5558) passes preflight and starts its engines: fake engines that bind what vLLM 0.32 binds (the
API port and one NIXL handshake listener per DP rank, nixl/base_scheduler.py) all come up."""

from __future__ import annotations

import asyncio
import json
import re
import sys
import time

import pytest
from children import cleanup_runs, until

from vllm_deploy_wizard.launcher import RunClient
from vllm_deploy_wizard.launcher.launch import launch, prepare
from vllm_deploy_wizard.launcher.plan_file import plan_placeholders
from vllm_deploy_wizard.launcher.ports import free_port, port_free

#: ``vllm serve MODEL …`` as far as ports go: binds one NIXL listener per local DP rank from
#: ``VLLM_NIXL_SIDE_CHANNEL_PORT`` (exiting 1 with "Address already in use" like vLLM when taken),
#: then serves ``/health`` on ``--port``. ``vllm-router`` serves ``/health`` on ``--port``.
FAKE = r"""
import http.server, os, socket, sys
argv = sys.argv[1:]
def flag(name, default=None):
    return argv[argv.index(name) + 1] if name in argv else default
held = []
if os.path.basename(sys.argv[0]) == "vllm" and "NixlConnector" in " ".join(argv):
    size = int(flag("--data-parallel-size", "1"))
    start = int(flag("--data-parallel-start-rank", "0"))
    for rank in range(start, start + int(flag("--data-parallel-size-local", size))):
        s = socket.socket()
        try:
            s.bind(("0.0.0.0", int(os.environ["VLLM_NIXL_SIDE_CHANNEL_PORT"]) + rank))
        except OSError as exc:
            print("NIXL side channel:", exc, flush=True)
            sys.exit(1)
        s.listen()
        held.append(s)
class H(http.server.BaseHTTPRequestHandler):
    def do_GET(self):
        body = b"ok"
        if self.path == "/v1/models" and len(argv) > 1:  # the served model, as vLLM lists it
            body = ('{"object":"list","data":[{"id":"%s","object":"model"}]}' % argv[1]).encode()
        self.send_response(200 if self.path in ("/health", "/v1/models") else 404)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)
    def log_message(self, *a):
        pass
print("listening", flush=True)
http.server.HTTPServer(("0.0.0.0", int(flag("--port"))), H).serve_forever()
"""


@pytest.fixture
def state_home(tmp_path, monkeypatch):
    monkeypatch.setenv("XDG_STATE_HOME", str(tmp_path / "state"))
    yield tmp_path / "state"
    cleanup_runs(tmp_path / "state")


def _colocated_pd_plan() -> dict:
    from vllm_deploy_wizard.catalog import Selection, load_catalog
    from vllm_deploy_wizard.catalog.planner import plan_selection
    from vllm_deploy_wizard.catalog.render import plan_file

    selection = Selection(model="MiniMaxAI/MiniMax-M2", hardware="h200", strategy="pd_cluster", install_mode="pip")
    planned = plan_selection(load_catalog(), selection)
    return plan_file(planned.plan, {"catalog_source": "bundled"}, "test")


def _adjacent_free() -> int:
    return next(b for b in iter(free_port, None) if port_free(b + 1))


async def test_the_recipes_colocated_pd_plan_starts_its_engines(tmp_path, monkeypatch, state_home):
    doc = _colocated_pd_plan()
    pools = {p["name"]: p for p in doc["plan"]["processes"] if p.get("role") in ("prefill", "decode")}
    assert {p["env"]["VLLM_NIXL_SIDE_CHANNEL_PORT"] for p in pools.values()} == {"5557", "5558"}
    assert all(p["argv"][p["argv"].index("--tensor-parallel-size") + 1] == "4" for p in pools.values())
    assert len({p.get("node") for p in pools.values()}) == 1  # co-located
    # the same plan on ports free on this shared machine (side channels still one apart)
    side = _adjacent_free()
    remap = {"5557": side, "5558": side + 1, "8001": free_port(), "8002": free_port(), "29000": free_port()}
    text = re.sub(r"\b(5557|5558|8001|8002|29000)\b", lambda m: str(remap[m.group(1)]), json.dumps(doc))
    doc = json.loads(text)
    bindir = tmp_path / "bin"
    bindir.mkdir()
    for name in ("vllm", "vllm-router"):
        (bindir / name).write_text(f"#!{sys.executable}\n{FAKE}")
        (bindir / name).chmod(0o755)
    monkeypatch.setenv("PATH", f"{bindir}:/usr/bin:/bin")
    values = {"ROUTER_PORT": str(free_port())}
    values.update({n: str(free_port()) for n in plan_placeholders(doc) if "PORT" in n and n not in values})
    prepared = prepare(doc, values=values, check_flags=False)
    assert prepared.problems == []
    info = launch(doc, values=values, check_flags=False)
    client = RunClient(info.run_id)
    states: dict = {}
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:  # polled to a deadline: each fake starts in well under a second
        snap = await client.status()
        states = {p["name"]: p["state"] for p in snap.processes}
        if states and all(s == "READY" for s in states.values()):
            break
        assert not any(s in ("FATAL", "EXITED", "BACKOFF") for s in states.values()), states
        await asyncio.sleep(0.2)
    assert states and all(s == "READY" for s in states.values()), states
    await client.stop()
    await until(lambda: port_free(side) and port_free(side + 1), 15, "side channels released")
