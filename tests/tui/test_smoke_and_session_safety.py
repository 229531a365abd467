"""Smoke requests with an API key, smoke on an attached run, stale runs, escape and help, owner-only
plan files, the detected devices and plan warnings, and the monitor at 80×24 (the confirm prompts of
r and s are in test_monitor), each checked against the real thing where it matters: a tiny HTTP server
that demands ``Authorization: Bearer``, runs started by the real launcher (``sys.executable`` children),
a supervisor killed with SIGKILL."""

from __future__ import annotations

import os
import signal
import stat
import subprocess
import sys
from pathlib import Path

import psutil
import pytest
from fakes import FakeCandidate, FakeLauncher
from polling import wait_until, wait_until_async
from textual.binding import Binding
from textual.widgets import Static
from tui_steps import pick_model, settle, until, walk

from vllm_deploy_wizard.catalog import load_catalog
from vllm_deploy_wizard.tui.app import make_app
from vllm_deploy_wizard.tui.constraint_panel import ConstraintPanel
from vllm_deploy_wizard.tui.log_pane import LogPane
from vllm_deploy_wizard.tui.prompts import ConfirmPrompt, HelpPrompt
from vllm_deploy_wizard.tui.screen_configure import ConfigureScreen
from vllm_deploy_wizard.tui.screen_hardware import HardwareScreen
from vllm_deploy_wizard.tui.screen_monitor import MonitorScreen
from vllm_deploy_wizard.tui.screen_review import ReviewScreen
from vllm_deploy_wizard.tui.services import real_services
from vllm_deploy_wizard.tui.smoke import api_key_of, find_target, smoke_request

#: A stand-in for ``vllm serve MODEL --port P [--api-key K]``: /health is open; /v1/completions
#: answers 401 unless ``Authorization: Bearer K`` matches a key from ``--api-key`` or VLLM_API_KEY
#: (like vLLM), else a completion naming the key it saw.
FAKE_VLLM = r'''
import http.server, json, os, sys
args = sys.argv[1:]
port = int(args[args.index("--port") + 1])
keys = set()
if "--api-key" in args:
    keys.add(args[args.index("--api-key") + 1])
keys.update(a.split("=", 1)[1] for a in args if a.startswith("--api-key="))
if os.environ.get("VLLM_API_KEY"):
    keys.add(os.environ["VLLM_API_KEY"])
class H(http.server.BaseHTTPRequestHandler):
    def _send(self, code, body):
        data = json.dumps(body).encode()
        self.send_response(code); self.send_header("Content-Length", str(len(data))); self.end_headers()
        self.wfile.write(data)
    def do_GET(self):
        self._send(200 if self.path == "/health" else 404, {})
    def do_POST(self):
        self.rfile.read(int(self.headers.get("Content-Length") or 0))
        auth = self.headers.get("Authorization", "")
        if keys and auth not in {"Bearer " + k for k in keys}:
            return self._send(401, {"error": "Unauthorized"})
        self._send(200, {"choices": [{"text": " Paris" + (" (key ok)" if keys else "")}]})
    def log_message(self, *a):
        pass
http.server.HTTPServer.allow_reuse_address = True
print("listening", port, flush=True)
http.server.HTTPServer(("127.0.0.1", port), H).serve_forever()
'''


@pytest.fixture
def fake_vllm(tmp_path) -> Path:
    """An executable ``vllm`` (argv ``vllm serve MODEL --port P …``, as plans have it)."""
    path = tmp_path / "bin" / "vllm"
    path.parent.mkdir()
    path.write_text(f"#!{sys.executable}\n{FAKE_VLLM}")
    path.chmod(0o755)
    return path


def free_port() -> int:
    from vllm_deploy_wizard.launcher.ports import free_port as launcher_free_port

    return launcher_free_port()


def _answers_health(port: int) -> bool:
    import httpx

    try:
        return httpx.get(f"http://127.0.0.1:{port}/health", timeout=1).status_code == 200
    except httpx.HTTPError:
        return False


def wait_health(port: int, timeout: float = 15.0) -> None:
    wait_until(lambda: _answers_health(port), timeout, f"fake vllm on {port} to answer /health", interval=0.05)


def in_log(monitor, *texts: str) -> bool:
    """Whether every one of ``texts`` is in the monitor's log pane (the pane wraps long lines, so
    whitespace is ignored on both sides)."""
    shown = "".join("".join(strip.text.split()) for strip in monitor.query_one("#log", LogPane).rendered_rows())
    return all("".join(t.split()) in shown for t in texts)


@pytest.fixture
def state_home(tmp_path, monkeypatch):
    """A private XDG_STATE_HOME; whatever a test left running there is stopped afterwards."""
    home = tmp_path / "state"
    monkeypatch.setenv("XDG_STATE_HOME", str(home))
    yield home
    sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "launcher"))
    from children import cleanup_runs

    cleanup_runs(home)


def serve_spec(vllm: Path, port: int, *extra: str, env: dict | None = None):
    from vllm_deploy_wizard.launcher import Probe, ProcessSpec, RunSpec

    return RunSpec((ProcessSpec(
        name="vllm", role="serve", argv=(str(vllm), "serve", "tiny-model", "--port", str(port), *extra),
        env=env or {}, probe=Probe(f"http://127.0.0.1:{port}/health", interval_s=0.2), ports=(port,),
        stop_timeout_s=3,
    ),))


# ------------------------------------------------------------------ --api-key


def test_api_key_rules():
    assert api_key_of(["vllm", "serve", "m", "--api-key", "k1", "k2"]) == "k1"
    assert api_key_of(["vllm", "serve", "m", "--api-key=k3"]) == "k3"
    assert api_key_of(["vllm", "serve", "m"], {"VLLM_API_KEY": "k4"}) == "k4"
    assert api_key_of(["vllm", "serve", "m", "--api-key", "k5"], {"VLLM_API_KEY": "k4"}) == "k5"
    assert api_key_of(["vllm", "serve", "m", "--api-key", "***"]) is None  # masked by the launcher
    assert api_key_of(["vllm", "serve", "m", "--api-key"]) is None
    assert api_key_of(["vllm", "serve", "m"]) is None


@pytest.mark.parametrize("how", ["flag", "flag=", "env"])
async def test_smoke_sends_the_api_key_the_server_was_started_with(fake_vllm, how):
    port = free_port()
    argv = [str(fake_vllm), "serve", "tiny-model", "--port", str(port)]
    env = {}
    if how == "flag":
        argv += ["--api-key", "sk-Flag111", "sk-Other"]
    elif how == "flag=":
        argv += ["--api-key=sk-Eq222"]
    else:
        env = {"VLLM_API_KEY": "sk-Env333"}
    proc = subprocess.Popen(argv, env={**os.environ, **env}, stdout=subprocess.DEVNULL)
    try:
        wait_health(port)
        plan = {"processes": [{"name": "vllm", "role": "serve", "argv": argv, "env": env,
                               "health": {"url": f"http://127.0.0.1:{port}/health"}}]}
        target = find_target(plan, None, None)
        bare = await smoke_request(target.base_url, target.model)
        assert not bare.ok and bare.text.startswith("HTTP 401")  # without the key the server refuses
        result = await smoke_request(target.base_url, target.model, api_key=target.api_key)
        assert result.ok and result.text == " Paris (key ok)", result
    finally:
        proc.terminate()
        proc.wait(10)


# ------------------------------------------------------------------ smoke on an attached run


async def test_smoke_on_an_attached_run_finds_endpoint_and_masked_key(build_app, state_home, fake_vllm):
    """A run the wizard did not launch (no plan in memory): the endpoint comes from spec.json, the key
    (masked there) from the live process; the answer lands in the log pane."""
    from vllm_deploy_wizard.launcher import start_run
    from vllm_deploy_wizard.tui.launch_port import RealLauncher

    port = free_port()
    info = start_run(serve_spec(fake_vllm, port, "--api-key", "sk-Attach444"))
    assert "sk-Attach444" not in (info.run_dir / "spec.json").read_text()  # masked: not where the key comes from
    app = build_app(launcher=RealLauncher(), attach=info.run_id)
    async with app.run_test(size=(120, 40)) as pilot:
        await until(pilot, lambda: isinstance(app.screen, MonitorScreen), 10, "the monitor")
        monitor = app.screen
        await until(pilot, lambda: monitor.model.procs.get("vllm") is not None and monitor.model.procs["vllm"].ready,
                    20, "vllm READY")
        assert not app.launched_plans  # attached: the wizard has no plan for this run
        assert monitor.smoke_target().source == "the run's spec.json"
        await pilot.press("m")
        await until(pilot, lambda: getattr(monitor, "last_smoke", None) is not None, 20, "the smoke answer")
        assert monitor.last_smoke.ok, monitor.last_smoke
        assert monitor.last_smoke.url == f"http://127.0.0.1:{port}/v1/completions"
        await until(pilot, lambda: in_log(monitor, "SMOKE OK", "Paris (key ok)"), 10, "the answer in the log pane")
        await monitor.client.stop()


async def test_smoke_without_an_endpoint_says_why_in_the_log_pane(build_app):
    app = build_app(launcher=FakeLauncher(events=[]), attach="run-gone")
    async with app.run_test(size=(120, 40)) as pilot:
        await until(pilot, lambda: isinstance(app.screen, MonitorScreen), 10, "the monitor")
        monitor = app.screen
        titles = {c.title: c for c in app.get_system_commands(monitor)}
        assert "Monitor: Smoke test (m)" in titles  # the palette lists the monitor's actions
        app.call_later(titles["Monitor: Smoke test (m)"].callback)  # as the palette runs it
        await until(pilot, lambda: getattr(monitor, "last_smoke_error", None), 5, "the smoke refusal")
        assert monitor.last_smoke_error.startswith("No served endpoint found")
        assert "this wizard did not launch the run" in monitor.last_smoke_error
        assert "the run has no readable spec.json" in monitor.last_smoke_error
        await until(pilot, lambda: in_log(monitor, "SMOKE ERROR No served endpoint found"), 10,
                    "the refusal in the log")


def test_find_target_reads_spec_json_shape_and_live_argv():
    spec = {"processes": [{"name": "router", "role": "router", "argv": ["vllm-router", "--port", "9000"],
                           "env": {}, "probe": {"url": "http://127.0.0.1:9000/health"}},
                          {"name": "vllm", "role": "serve", "argv": ["vllm", "serve", "m", "--served-model-name", "x"],
                           "env": {"VLLM_API_KEY": "***"}, "probe": {"url": "http://127.0.0.1:8100/health"}}]}
    target = find_target(None, spec, None)
    assert (target.base_url, target.model, target.api_key) == ("http://127.0.0.1:9000", "x", None)
    assert "could not be read" in target.note  # masked, no live pid to read it from
    live = [{"name": "vllm", "role": "serve", "argv": ["vllm", "serve", "m", "--host", "0.0.0.0", "--port", "8123"]}]
    target = find_target(None, None, live)
    assert (target.base_url, target.model, target.source) == ("http://127.0.0.1:8123", "m", "the live processes")


# ------------------------------------------------------------------ stale runs


async def test_stale_run_with_leftovers_is_offered_a_stop(build_app, state_home, fake_vllm):
    from vllm_deploy_wizard.launcher import RunClient, find_run, start_run
    from vllm_deploy_wizard.tui.launch_port import RealLauncher

    port = free_port()
    info = start_run(serve_spec(fake_vllm, port))
    await wait_until_async(lambda: [p.get("state") for p in find_run(info.run_id).processes] == ["READY"], 20,
                           "the run READY", interval=0.1)
    child = (await RunClient(info.run_id).status()).processes[0]["pid"]
    os.kill(info.pid, signal.SIGKILL)
    await wait_until_async(lambda: find_run(info.run_id).status == "stale", 10, "the run reported stale")
    question = f"A previous run {info.run_id} lost its supervisor; 1 process still runs (ports {port}). Stop them?"

    app = build_app(launcher=RealLauncher())  # ignore: nothing is stopped, the wizard goes on
    async with app.run_test(size=(120, 40)) as pilot:
        await until(pilot, lambda: isinstance(app.screen, ConfirmPrompt)
                    and len(app.screen.query("#confirm-question")) > 0,
                    10, "the stale-run question")  # pushed and composed
        assert str(app.screen.query_one("#confirm-question").render()) == question
        await pilot.press("n")
        await settle(pilot)
        assert isinstance(app.screen, HardwareScreen)
        assert psutil.pid_exists(child) and find_run(info.run_id).status == "stale"

    app = build_app(launcher=RealLauncher())  # stop: the leftovers go, the run is recorded stopped
    async with app.run_test(size=(120, 40)) as pilot:
        await until(pilot, lambda: isinstance(app.screen, ConfirmPrompt)
                    and len(app.screen.query("#confirm-question")) > 0,
                    10, "the stale-run question")  # pushed and composed
        await pilot.press("y")
        await until(pilot, lambda: app.stopped_stale is not None, 20, "the leftovers stopped")
        assert app.stopped_stale == (info.run_id, [child])
        assert isinstance(app.screen, HardwareScreen)
    assert not psutil.pid_exists(child) or psutil.Process(child).status() == psutil.STATUS_ZOMBIE
    assert find_run(info.run_id).status == "finished"


# ------------------------------------------------------------------ escape and help


async def test_escape_closes_help_and_asks_before_quitting(build_app):
    app = build_app()
    async with app.run_test(size=(80, 24)) as pilot:
        await settle(pilot)
        await pilot.press("f1")
        await settle(pilot)
        assert isinstance(app.screen, HelpPrompt)
        box = app.screen.query_one("#help-box")
        assert box.region.right <= 80 and box.border_title == "Help · Hardware"
        text = str(app.screen.query_one("#help-text").render())
        assert "escape           Quit (asks y/n)" in text and "ctrl+q" in text
        # the text wraps inside the popup: nothing wider than its content area
        assert app.screen.query_one("#help-text").virtual_size.width <= box.content_region.width
        await pilot.press("escape")  # closes the help, not the app
        await settle(pilot)
        assert isinstance(app.screen, HardwareScreen) and app.is_running
        await pilot.press("escape")  # the first screen asks
        await settle(pilot)
        assert isinstance(app.screen, ConfirmPrompt)
        assert str(app.screen.query_one("#confirm-question").render()) == "Quit vllm-wizard?"
        await pilot.press("n")
        await settle(pilot)
        assert isinstance(app.screen, HardwareScreen) and app.is_running
        await pilot.press("escape", "y")
        await settle(pilot)
        assert app._exit  # noqa: SLF001 — Textual records a requested exit here


async def test_help_key_on_the_review_lists_its_keys(build_app):
    app = build_app()
    async with app.run_test(size=(120, 40)) as pilot:
        await walk(pilot, "h200", "Qwen/Qwen3-32B", [])
        await pilot.press("f1")
        await settle(pilot)
        assert isinstance(app.screen, HelpPrompt) and app.screen.title_text == "Help · Review"
        assert "ctrl+l / l" in app.screen.text and "ctrl+t / s" in app.screen.text
        await pilot.press("f1")  # F1 again closes it
        await settle(pilot)
        assert isinstance(app.screen, ReviewScreen)


# ------------------------------------------------------------------ plan file 0600


async def test_launched_plan_file_is_owner_only(build_app, tmp_path, monkeypatch):
    monkeypatch.setenv("XDG_STATE_HOME", str(tmp_path))
    launcher = FakeLauncher()
    app = build_app(launcher=launcher)
    async with app.run_test(size=(120, 40)) as pilot:
        await walk(pilot, "h200", "Qwen/Qwen3-32B", [])
        app.update_selection(advanced_args=["--api-key", "sk-Plan555"])
        await app.pop_screen()
        await pilot.press("ctrl+n")
        await settle(pilot)
        await pilot.press("ctrl+l")
        await until(pilot, lambda: launcher.started, 10, "the launch")
    (plan_file, _), = launcher.started
    assert "sk-Plan555" in plan_file.read_text()  # the launcher needs it …
    assert stat.S_IMODE(plan_file.stat().st_mode) == 0o600  # … so only its owner may read it
    assert [p.name for p in plan_file.parent.iterdir()] == [plan_file.name]  # no temp file left


# ------------------------------------------------------------------ devices and warnings


@pytest.fixture(scope="module")
def snapshot_catalog(shared):
    return load_catalog(shared / "recipes-snapshot")


def cpu_app(catalog):
    from types import SimpleNamespace

    inventory = SimpleNamespace(accelerators=[], device_count=0, probes={}, source="fixture", primary=None,
                                host=SimpleNamespace(numa_nodes_with_cpus=1, ram_bytes=24 * 2**30,
                                                     mem_total_bytes=24 * 2**30))
    services = real_services()
    services.detect = lambda: inventory
    services.match_profiles = lambda inv, profiles: [FakeCandidate("xeon6", "nearest")]
    services.launcher = None
    return make_app(catalog=catalog, services=services, stats_sampler=None)


async def test_cpu_node_plans_like_the_cli_and_configure_shows_the_plan_warnings(snapshot_catalog):
    from vllm_deploy_wizard.catalog import Selection
    from vllm_deploy_wizard.catalog.hostfit import HostCapacity
    from vllm_deploy_wizard.catalog.planner import plan_selection

    app = cpu_app(snapshot_catalog)
    # what `vllm-wizard plan --model Qwen/Qwen3-32B --detect` plans on this node: one device per NUMA node
    host = HostCapacity.from_inventory(app.services.detect())
    cli_plan = plan_selection(snapshot_catalog, Selection(model="Qwen/Qwen3-32B", hardware="xeon6"), host,
                              detected_profile="xeon6", strict=False).plan
    from vllm_deploy_wizard.catalog.listeners import listener_note_set

    listening = listener_note_set(cli_plan)  # review shows it (plan notes), the configure pane does not
    assert listening
    cli_warnings = [n.removeprefix("warning: ") for n in cli_plan.notes
                    if n.startswith("warning: ") and n not in listening]
    assert any("(rule H1)" in w for w in cli_warnings) and cli_plan.device_count == 1
    async with app.run_test(size=(120, 40)) as pilot:
        await settle(pilot, 5)
        assert app.selection.get("gpus") == 1  # the box has one NUMA node, the profile says 4
        await pilot.press("ctrl+n")
        await settle(pilot)
        await pick_model(pilot, "Qwen/Qwen3-32B")
        assert isinstance(app.screen, ConfigureScreen)
        panel = app.screen.query_one(ConstraintPanel)
        for warning in cli_warnings:
            assert f"⚠ {warning}" in panel.lines
        summary = str(app.screen.query_one("#cfg-summary", Static).render())
        assert summary.endswith("· 1 device/node")
        await pilot.press("ctrl+n")
        await settle(pilot)
        assert isinstance(app.screen, ReviewScreen) and app.plan.device_count == cli_plan.device_count
        assert listening <= set(app.plan.notes)
        assert not any(f"⚠ {n.removeprefix('warning: ')}" in panel.lines for n in listening)
        notes = str(app.screen.query_one("#plan-notes", Static).render())
        assert all(w in notes for w in cli_warnings) and "serves the model's API on every network interface" in notes


# ------------------------------------------------------------------ monitor at 80×24


async def test_monitor_table_fits_80_columns_without_a_scrollbar(build_app):
    from canned import ready_run

    from vllm_deploy_wizard.tui.screen_monitor import detail_width

    assert detail_width(80) == 14 and detail_width(200) == 40 and detail_width(40) == 10
    app = build_app(launcher=FakeLauncher(events=ready_run()), attach="run-1")
    async with app.run_test(size=(80, 24)) as pilot:
        # the screen is pushed before it has composed: wait for its process table to exist
        await until(pilot, lambda: isinstance(app.screen, MonitorScreen) and bool(app.screen.query("#procs")), 10,
                    "the monitor's process table")
        from textual.widgets import DataTable

        table = app.screen.query_one("#procs", DataTable)
        await until(pilot, lambda: table.row_count == len(app.screen.model.procs) > 0, 5, "the process rows")
        await settle(pilot)  # painted
        assert table.virtual_size.width <= table.size.width and not table.show_horizontal_scrollbar


async def test_the_monitor_footer_shows_the_benchmark_key_at_80_columns(build_app):
    """``b`` (benchmark) used to be hidden from the footer, listed only by F1 and the palette (issue
    #20): at 80 columns every key the footer shows is inside the screen, b among them, with ^q Quit
    and f1 Help; x (relaunch with the fix) is left to the failure box, which names it."""
    from canned import ready_run
    from textual.widgets._footer import FooterKey

    app = build_app(launcher=FakeLauncher(events=ready_run()), attach="run-1")
    async with app.run_test(size=(80, 24)) as pilot:
        await until(pilot, lambda: isinstance(app.screen, MonitorScreen), 10, "the monitor")
        await settle(pilot)
        keys = {k.key: k for k in app.screen.query(FooterKey)}
        assert {"s", "r", "d", "m", "b", "ctrl+q", "f1"} <= set(keys) and "x" not in keys
        for key in keys.values():
            assert key.region.width > 0 and key.region.right <= 80, (key.key, key.region)
        assert keys["b"].region.x < keys["ctrl+q"].region.x  # not pushed out past the app's keys
        bindings = {b.key: b for b in MonitorScreen.BINDINGS if isinstance(b, Binding)}
        assert bindings["x"].show is False and bindings["b"].show


async def test_smoke_after_a_wizard_launch_uses_the_typed_api_key(build_app, tmp_path, monkeypatch, fake_vllm):
    """--api-key typed in Advanced args, launched from review: m once READY sends that key."""
    from canned import ready_run

    monkeypatch.setenv("XDG_STATE_HOME", str(tmp_path / "state"))
    port = free_port()
    server = subprocess.Popen([str(fake_vllm), "serve", "Qwen/Qwen3-32B", "--port", str(port),
                               "--api-key", "sk-Wiz666"],
                              stdout=subprocess.DEVNULL)
    try:
        wait_health(port)
        launcher = FakeLauncher(events=ready_run())
        app = build_app(launcher=launcher)
        async with app.run_test(size=(120, 40)) as pilot:
            await walk(pilot, "h200", "Qwen/Qwen3-32B", [])
            app.update_selection(advanced_args=["--host", "127.0.0.1", "--port", str(port), "--api-key", "sk-Wiz666"])
            await app.pop_screen()
            await pilot.press("ctrl+n")
            await settle(pilot)
            await pilot.press("ctrl+l")
            await until(pilot, lambda: isinstance(app.screen, MonitorScreen), 10, "the monitor")
            monitor = app.screen
            target = monitor.smoke_target()
            assert (target.source, target.api_key) == ("the launched plan", "sk-Wiz666")
            assert target.base_url == f"http://127.0.0.1:{port}"
            await pilot.press("m")
            await until(pilot, lambda: getattr(monitor, "last_smoke", None) is not None, 20, "the smoke answer")
            assert monitor.last_smoke.ok and monitor.last_smoke.text == " Paris (key ok)", monitor.last_smoke
    finally:
        server.terminate()
        server.wait(10)


async def test_review_warns_when_the_plan_asks_more_of_this_node_than_it_has(snapshot_catalog):
    """catalog.host_sizing in the wizard: LMCache's pinned --l1-size-gb 512 on this 24 GiB CPU node is
    sized to the node, with the same note `plan --detect` prints; planning for another profile claims
    nothing."""
    app = cpu_app(snapshot_catalog)
    async with app.run_test(size=(120, 40)) as pilot:
        await settle(pilot, 5)
        app.update_selection(model="Qwen/Qwen3-32B", kv_offload="lmcache")
        await settle(pilot)
        app.build_plan()
        sized = [n for n in app.plan.notes if "sized for this node: LMCache --l1-size-gb 12" in n]
        assert len(sized) == 1 and "the recipe's 512 GiB" in sized[0], app.plan.notes
        assert not any("LMCache L1 size 512" in n for n in app.plan.notes)
        app.update_selection(hardware="h200")
        await settle(pilot)
        app.build_plan()
        assert not any("LMCache L1 size" in n or "sized for this node" in n for n in app.plan.notes)
