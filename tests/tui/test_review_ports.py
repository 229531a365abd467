"""The review screen lists every port the plan binds and lets each be edited (tui/port_edits.py): the
LMCache server's two ports, vLLM's, conflicts shown as one types, an applied edit re-plans and renames
the references (vLLM's --kv-transfer-config points at the LMCache port)."""

from __future__ import annotations

from fakes import FakeLauncher
from textual.widgets import Input
from tui_steps import settle, walk

from vllm_deploy_wizard.catalog.plan import Health, LaunchPlan, PlanProcess
from vllm_deploy_wizard.tui.dom_ids import dom_id
from vllm_deploy_wizard.tui.port_edits import apply_port_edits, check_port, conflicts, port_slots
from vllm_deploy_wizard.tui.screen_review import CommandBlockView, ReviewScreen


def _plan() -> LaunchPlan:
    lm = PlanProcess(name="kv_offload:lmcache", role="companion", argv=["lmcache", "server", "--port", "5555",
                     "--http-port", "8080"], ports=[5555, 8080], health=Health(url="http://127.0.0.1:8080/healthcheck"))
    vllm = PlanProcess(name="vllm", role="serve", argv=["vllm", "serve", "m", "--kv-transfer-config",
                       '{"kv_connector":"LMCacheMPConnector","kv_connector_extra_config":{"lmcache.mp.port":5555}}'],
                       env={"VLLM_NIXL_SIDE_CHANNEL_PORT": "5600"}, ports=[8000],
                       health=Health(url="http://127.0.0.1:8000/health"))
    router = PlanProcess(name="router", role="router", argv=["vllm-router", "--port", "$ROUTER_PORT", "--worker-urls",
                         "http://127.0.0.1:8000"], ports=[29000])
    return LaunchPlan(deploy_type="single_node", install_mode="pip", resolved={}, processes=[lm, vllm, router])


def test_every_port_is_a_slot_including_the_defaults():
    slots = {s.key: s for s in port_slots(_plan().processes)}
    assert {k: s.value for k, s in slots.items()} == {
        "kv_offload:lmcache|--port": "5555", "kv_offload:lmcache|--http-port": "8080", "vllm|--port": "8000",
        "vllm|VLLM_NIXL_SIDE_CHANNEL_PORT": "5600", "router|--port": "$ROUTER_PORT",
        "router|--prometheus-port": "29000"}
    assert slots["vllm|--port"].default and slots["vllm|--port"].label == "vllm --port (default)"


def test_an_edit_sets_the_flag_and_renames_the_references():
    plan = apply_port_edits(_plan(), {"kv_offload:lmcache|--port": 6000, "vllm|--port": 8100,
                                      "router|--prometheus-port": 29100, "kv_offload:lmcache|--http-port": 8081})
    lm, vllm, router = plan.processes
    assert lm.argv[2:6] == ["--port", "6000", "--http-port", "8081"] and lm.ports == [6000, 8081]
    assert lm.health.url == "http://127.0.0.1:8081/healthcheck"
    assert '"lmcache.mp.port":6000' in vllm.argv[4]
    assert vllm.argv[-2:] == ["--port", "8100"] and vllm.ports == [8100]
    assert vllm.health.url == "http://127.0.0.1:8100/health"
    assert "http://127.0.0.1:8100" in router.argv and router.argv[-2:] == ["--prometheus-port", "29100"]
    assert _plan().processes[0].argv[3] == "5555"  # the original is untouched


def test_a_placeholder_port_is_filled_everywhere_and_no_longer_asked():
    plan = _plan()
    plan.placeholders = ["ROUTER_PORT"]
    plan.processes[2].health = Health(url="http://127.0.0.1:$ROUTER_PORT/health")
    out = apply_port_edits(plan, {"router|--port": 30001})
    router = out.processes[2]
    assert router.argv[1:3] == ["--port", "30001"] and router.health.url == "http://127.0.0.1:30001/health"
    assert 30001 in router.ports and out.placeholders == []


def test_conflicts_name_the_other_process_and_a_busy_port():
    slots = port_slots(_plan().processes)
    found = conflicts(slots, {"kv_offload:lmcache|--http-port": 8000})
    assert found["kv_offload:lmcache|--http-port"] == "8000 is also vllm --port (default)"
    assert found["vllm|--port"] == "8000 is also kv_offload:lmcache --http-port"
    busy = conflicts(slots, {}, busy=lambda port: "nginx (pid 7)" if port == 5600 else None)
    assert busy == {"vllm|VLLM_NIXL_SIDE_CHANNEL_PORT": "5600 is in use on this host (nginx (pid 7))"}
    for bad in ("0", "70000", "80a", ""):
        try:
            check_port(bad)
        except ValueError as exc:
            assert "1–65535" in str(exc)
        else:
            raise AssertionError(bad)


async def test_review_edits_the_lmcache_port_with_live_conflicts(build_app):
    app = build_app(launcher=FakeLauncher())
    async with app.run_test(size=(120, 60)) as pilot:
        await walk(pilot, "h200", "Qwen/Qwen3-32B", [("kv_offload", "lmcache")])
        screen = app.screen
        assert isinstance(screen, ReviewScreen)
        labels = [s.label for s in screen.slots]
        assert "kv_offload:lmcache --port" in labels and "kv_offload:lmcache --http-port" in labels
        assert any(lbl.startswith("vllm --port") for lbl in labels)
        box = screen.query_one(f"#{dom_id('port', 'kv_offload:lmcache|--port')}", Input)
        http = next(s for s in screen.slots if s.key == "kv_offload:lmcache|--http-port")
        box.value = http.value  # the same as the HTTP port: shown at once
        await settle(pilot)
        note = str(screen.query_one(f"#{dom_id('portwhy', 'kv_offload:lmcache|--port')}").render())
        assert f"{http.value} is also kv_offload:lmcache --http-port" in note
        box.value = "6123"
        await settle(pilot)
        assert "is also" not in str(screen.query_one(f"#{dom_id('portwhy', 'kv_offload:lmcache|--port')}").render())
        box.focus()
        await pilot.press("enter")
        await settle(pilot)
        assert app.port_edits == {"kv_offload:lmcache|--port": 6123}
        commands = dict(screen.commands())
        assert "--port 6123" in commands["kv_offload:lmcache"]
        vllm = next(text for name, text in commands.items() if name.startswith("vllm"))
        assert '"lmcache.mp.port":6123' in vllm
        assert screen.query_one(f"#{dom_id('port', 'kv_offload:lmcache|--port')}", Input).value == "6123"
        assert len(list(screen.query(CommandBlockView))) == len(commands)
        # back to configure and forward again: the edit is kept
        await pilot.press("escape")
        await settle(pilot)
        await pilot.press("ctrl+n")
        await settle(pilot)
        assert "--port 6123" in dict(app.screen.commands())["kv_offload:lmcache"]
