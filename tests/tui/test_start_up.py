"""The wizard's start-up child (tui/start_up.py): it loads the catalog and detects the node in a forked
process while Textual starts, sends what the hardware screen shows, and the first frame is painted
from it; the app's own state ends up the same as without the child, and a child that fails leaves
the app to load by itself."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import threading
import time

import pytest
from fakes import FakeCandidate, FakeGroup, FakeInventory
from textual.widgets import OptionList

from vllm_deploy_wizard.tui.app import make_app
from vllm_deploy_wizard.tui.hardware_view import hardware_facts
from vllm_deploy_wizard.tui.services import real_services
from vllm_deploy_wizard.tui.start_up import PARTIAL_SETTLE_S, StartLoads, pause_gc, resume_gc, start_frames

pytestmark = pytest.mark.skipif(not hasattr(os, "fork"), reason="the start-up child needs os.fork")

#: A node with 4 of the 8 H200s of the profile: the devices-per-node default differs from the profile.
NODE = FakeInventory(accelerators=[FakeGroup(name="H200", count=4)], device_count=4)
MATCH = [FakeCandidate("h200", "exact", ["fixture node"])]


def fake_services(catalog, inventory=NODE, load=None):
    """The real core seam with detection fixed to ``inventory`` (matching h200) and the catalog
    from ``load`` (default: the already loaded bundled catalog)."""
    services = real_services()
    services.load_catalog = load or (lambda recipes: catalog)
    services.detect = lambda: inventory
    services.match_profiles = lambda inv, profiles: list(MATCH)
    return services


def wait_done(loads: StartLoads, seconds: float = 60.0) -> list[dict]:
    assert loads.ready(seconds), "the start-up child sent no final frame in time"
    return loads.frames()


def test_the_child_sends_one_final_frame_when_detection_is_quick(catalog):
    sent: list[dict] = []
    start_frames(fake_services(catalog), None, sent.append)
    assert [sorted(f) for f in sent] == [["errors", "facts", "final", "inventory"]]  # painted once, in order
    final = sent[0]["facts"]
    assert final == hardware_facts(catalog, NODE, MATCH)
    assert final.best == "h200" and final.start_gpus == 4  # plan --detect's default on a 4-GPU node
    assert "H200: 4 GPU" in final.detected[0] and sent[0]["errors"] == {}


def test_a_slow_detection_sends_the_profile_list_first(catalog):
    services = fake_services(catalog)
    services.detect = lambda: (time.sleep(PARTIAL_SETTLE_S + 0.3), NODE)[1]
    sent: list[dict] = []
    start_frames(services, None, sent.append)
    assert [sorted(f) for f in sent] == [["facts"], ["errors", "facts", "final", "inventory"]]
    first = sent[0]["facts"]
    assert first == hardware_facts(catalog, None, [])  # the profile list, nothing detected yet
    assert first.groups and first.best is None and first.detected == ("Detecting accelerators and host facts…",)
    assert sent[1]["facts"] == hardware_facts(catalog, NODE, MATCH)


def test_a_catalog_that_fails_is_sent_as_its_error_and_the_node_still_detected(catalog):
    def broken(recipes):
        raise ValueError("taxonomy.yaml:3: hardware_profiles: not a mapping")

    sent: list[dict] = []
    start_frames(fake_services(catalog, load=broken), None, sent.append)
    [final] = sent
    assert final["errors"] == {"catalog": "ValueError: taxonomy.yaml:3: hardware_profiles: not a mapping"}
    assert final["facts"].groups is None and final["facts"].best is None
    assert "inventory" in final


def test_a_forked_child_hands_over_its_facts_and_inventory(catalog):
    loads = StartLoads.start(None, services_factory=lambda: fake_services(catalog))
    assert loads is not None
    try:
        frames = wait_done(loads)
        assert frames[-1]["facts"] == hardware_facts(catalog, NODE, MATCH)
        assert loads.inventory() == NODE
        assert loads.frames() == [] and loads.more() == []  # each frame is taken once
        with pytest.raises(ChildProcessError):
            os.waitpid(loads.pid, os.WNOHANG)  # reaped once every frame was taken: no zombie
    finally:
        loads.close()


def test_a_child_that_dies_sends_no_final_frame_and_no_inventory(catalog):
    def crash():
        os._exit(3)

    loads = StartLoads.start(None, services_factory=crash)
    assert loads is not None
    try:
        assert wait_done(loads) == [] and loads.final() is None and loads.inventory() is None
    finally:
        loads.close()


def test_a_child_that_hangs_is_killed_by_close_and_a_waiting_reader_returns(catalog):
    def hang():
        time.sleep(600)

    loads = StartLoads.start(None, services_factory=hang)
    assert loads is not None
    assert not loads.ready(0.2) and loads.frames() == [] and not loads.done
    got: list = []
    reader = threading.Thread(target=lambda: got.append(loads.more()))  # the detection worker's wait
    reader.start()
    time.sleep(0.1)
    loads.close()
    reader.join(10)
    assert not reader.is_alive() and got == [[]] and loads.done
    with pytest.raises(ProcessLookupError):
        os.kill(loads.pid, 0)  # killed and reaped
    loads.close()  # idempotent


def test_no_child_when_turned_off(monkeypatch):
    monkeypatch.setenv("VLLM_WIZARD_START_CHILD", "0")
    assert StartLoads.start(None) is None


async def test_the_first_frame_shows_the_childs_preselection_before_the_apps_own_loads(catalog, tmp_path,
                                                                                       monkeypatch):
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path / "config"))
    loads = StartLoads.start(None, services_factory=lambda: fake_services(catalog))
    assert loads is not None
    assert loads.ready(60)  # in the terminal the child is done by the time the screen mounts (~150 ms)
    release = threading.Event()

    def slow_load(recipes):  # the app's own catalog load: held until the first screen was checked
        release.wait(30)
        return catalog

    app = make_app(services=fake_services(catalog, load=slow_load), start_loads=loads, stats_sampler=None)
    try:
        async with app.run_test(size=(120, 40)) as pilot:
            await pilot.pause()
            plist = app.screen.query_one("#profiles", OptionList)
            assert app.catalog is None  # the app's own load is still held
            assert app.selection == {"hardware": "h200", "gpus": 4}
            highlighted = plist.get_option_at_index(plist.highlighted)
            assert highlighted.id == "h200" and str(highlighted.prompt).startswith("● ")
            shown = list(plist.options)
            plist.focus()
            await pilot.press("down")  # the person moves on before the app's own loads are in
            moved = plist.highlighted
            assert moved is not None and plist.get_option_at_index(moved).id != "h200"
            release.set()
            deadline = time.monotonic() + 30
            while app.loading and time.monotonic() < deadline:
                await pilot.pause(0.05)
            assert app.catalog is catalog and app.inventory == NODE and app.candidates == MATCH
            assert app.hardware_facts() == loads.final()["facts"]  # the app computes what the child sent
            assert list(plist.options) == shown  # so the list was not filled again
            assert plist.highlighted == moved  # nor the cursor sent back to the pick
            assert app.selection == {"hardware": "h200", "gpus": 4}
    finally:
        release.set()
        loads.close()


async def test_a_detection_that_comes_late_is_painted_when_it_arrives(catalog, tmp_path, monkeypatch):
    """A GPU node whose NVML start takes long: the child's catalog frame is shown at once, its
    detection (and the preselection) when the child has it — not when the app's own loads are in."""
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path / "config"))
    go_on = os.pipe()  # the child's detection waits for a byte on it

    def slow_detection():
        services = fake_services(catalog)
        services.detect = lambda: (os.read(go_on[0], 1), NODE)[1]
        return services

    loads = StartLoads.start(None, services_factory=slow_detection)
    assert loads is not None
    release = threading.Event()

    def held_load(recipes):
        release.wait(30)
        return catalog

    app = make_app(services=fake_services(catalog, load=held_load), start_loads=loads, stats_sampler=None)
    try:
        async with app.run_test(size=(120, 40)) as pilot:
            deadline = time.monotonic() + 30
            while app.start_facts is None and time.monotonic() < deadline:  # the catalog frame
                await pilot.pause(0.05)
            await pilot.pause()
            detected = app.screen.query_one("#detected").render()
            assert "Detecting accelerators" in str(detected) and "hardware" not in app.selection
            assert app.screen.query_one("#profiles", OptionList).option_count > 30  # the list is there
            os.write(go_on[1], b"x")
            while "hardware" not in app.selection and time.monotonic() < deadline:
                await pilot.pause(0.05)
            await pilot.pause()
            assert app.catalog is None and app.selection == {"hardware": "h200", "gpus": 4}
            assert "H200: 4 GPU" in str(app.screen.query_one("#detected").render())
    finally:
        release.set()
        os.close(go_on[1])
        loads.close()


async def test_a_failed_child_leaves_the_app_to_detect_and_load_by_itself(catalog, tmp_path, monkeypatch):
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path / "config"))

    def crash():
        os._exit(3)

    loads = StartLoads.start(None, services_factory=crash)
    app = make_app(services=fake_services(catalog), start_loads=loads, stats_sampler=None)
    try:
        async with app.run_test(size=(120, 40)) as pilot:
            deadline = time.monotonic() + 30
            while app.loading and time.monotonic() < deadline:
                await pilot.pause(0.05)
            assert app.catalog is catalog and app.inventory == NODE
            assert app.selection == {"hardware": "h200", "gpus": 4}
    finally:
        loads.close()


REAL_CHILD = r"""
import json, sys, time
from vllm_deploy_wizard.tui.start_up import StartLoads
loads = StartLoads.start(None)
loads.ready(120)
frames = loads.frames()
parent = sorted(m for m in sys.modules if m.startswith(("vllm_deploy_wizard.catalog", "vllm_deploy_wizard.detect",
                                                         "pydantic", "yaml")))
final = loads.final()
inventory = loads.inventory()
from vllm_deploy_wizard.tui.hardware_view import hardware_facts
from vllm_deploy_wizard.tui.services import real_services
services = real_services()
catalog = services.load_catalog(None)
candidates = services.match_profiles(inventory, catalog.taxonomy.hardware_profiles)
loads.close()
print(json.dumps({"parent_imports_before": parent, "final": final is not None,
                  "same": final["facts"] == hardware_facts(catalog, inventory, candidates),
                  "best": final["facts"].best}))
"""


def test_the_real_child_sends_what_the_app_computes_and_the_parent_imports_no_core(tmp_path):
    """The real services on this machine: the bundled catalog, this node's detection. The parent reads
    the facts without importing the catalog or detect packages (their import is most of the ~110 ms
    the child saves the first frame), and computes the same facts from its own loads."""
    proc = subprocess.run([sys.executable, "-c", REAL_CHILD], capture_output=True, text=True, timeout=180,
                          cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    got = json.loads(proc.stdout.splitlines()[-1])
    assert got["final"] and got["same"]
    assert got["parent_imports_before"] == []


def test_resuming_the_collector_freezes_what_start_up_made_once():
    import gc

    assert gc.isenabled()
    before = gc.get_freeze_count()
    resume_gc()  # not paused: nothing to do
    assert gc.get_freeze_count() == before
    pause_gc()
    try:
        assert not gc.isenabled()
        kept = [object() for _ in range(10)]  # noqa: F841 — alive at the freeze
        resume_gc()
        assert gc.isenabled() and gc.get_freeze_count() >= before + 10
    finally:
        gc.enable()
        gc.unfreeze()


async def test_a_model_flag_that_names_nothing_is_said_in_a_notification(catalog, tmp_path, monkeypatch):
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path / "config"))
    missing = tmp_path / "no-such-model"
    app = make_app(services=fake_services(catalog), model=str(missing), stats_sampler=None)
    async with app.run_test(size=(120, 40)) as pilot:
        deadline = time.monotonic() + 30
        while app.loading and time.monotonic() < deadline:
            await pilot.pause(0.05)
        await pilot.pause()
        said = [n.message for n in app._notifications]
        assert any(str(missing) in m and m.endswith("Pick a model on the next step instead.") for m in said), said
        assert "model" not in app.selection
