"""Saved selections (workflows/saved_selections.py): ``plan --save NAME`` stores one under the XDG config
dir, ``wizard --open`` takes a name, a plan file or a selection file, the wizard's first screen lists the
saved and recent ones and enter (or ``--open``) lands on the review with every choice."""

from __future__ import annotations

import subprocess
import sys

import pytest
from fakes import FakeLauncher
from textual.widgets import OptionList
from tui_steps import settle, walk

from vllm_deploy_wizard.common.errors import SelectionError
from vllm_deploy_wizard.tui.screen_configure import ConfigureScreen
from vllm_deploy_wizard.tui.screen_hardware import HardwareScreen
from vllm_deploy_wizard.tui.screen_review import ReviewScreen
from vllm_deploy_wizard.workflows import saved_selections as ss


def _cli(env, *args):
    return subprocess.run([sys.executable, "-m", "vllm_deploy_wizard", *args], env=env, capture_output=True,
                          text=True, timeout=120)


def test_plan_save_then_open_by_name_and_by_plan_file(tmp_path, monkeypatch):
    import os

    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path / "config"))
    env = dict(os.environ)
    out = tmp_path / "plan.yaml"
    r = _cli(env, "plan", "--model", "Qwen/Qwen3-32B", "--hardware", "h200", "--kv-offload", "lmcache",
             "--save", "qwen-h200", "--out", str(out))
    assert r.returncode == 0, r.stderr
    assert "saved selection qwen-h200" in r.stderr
    entry = ss.open_selection("qwen-h200")
    assert entry.selection == {"model": "Qwen/Qwen3-32B", "hardware": "h200", "kv_offload": "lmcache"}
    assert entry.source == tmp_path / "config" / "vllm-wizard" / "selections" / "qwen-h200.yaml"
    from_plan = ss.open_selection(str(out))
    assert from_plan.selection["kv_offload"] == "lmcache" and from_plan.selection["model"] == "Qwen/Qwen3-32B"
    with pytest.raises(SelectionError, match=r"did you mean 'qwen-h200'.*saved selections: qwen-h200"):
        ss.open_selection("qwen-h20")
    bad = _cli(env, "plan", "--model", "Qwen/Qwen3-32B", "--save", "no/slash")
    assert bad.returncode == 2 and "--save 'no/slash': a selection name is" in bad.stderr
    r = _cli(env, "wizard", "--open", "nope")
    assert r.returncode == 2 and "--open nope: no such file and no saved selection" in r.stderr


def test_recent_keeps_the_newest_distinct_selections(tmp_path, monkeypatch):
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path))
    for i in range(ss.RECENT_MAX + 2):
        ss.record_recent({"model": f"m{i}", "hardware": "h200"})
    ss.record_recent({"model": "m3", "hardware": "h200"})  # seen again: moves to the front, once
    models = [r.selection["model"] for r in ss.recent()]
    assert models[0] == "m3" and models.count("m3") == 1 and len(models) == ss.RECENT_MAX
    assert "m0" not in models


async def test_open_lands_on_review_with_every_choice_and_back_goes_to_configure(build_app, tmp_path):
    path = ss.save("lm", {"model": "Qwen/Qwen3-32B", "hardware": "h200", "kv_offload": "lmcache",
                          "advanced_args": ["--max-model-len", "4096"]}, {"kv_offload:lmcache|--port": 6100})
    app = build_app(launcher=FakeLauncher(), opened=ss.open_selection("lm"))
    async with app.run_test(size=(120, 40)) as pilot:
        for _ in range(50):
            await pilot.pause(0.02)
            if isinstance(app.screen, ReviewScreen) and app.screen.commands():
                break
        assert isinstance(app.screen, ReviewScreen), path
        commands = dict(app.screen.commands())
        assert "--port 6100" in commands["kv_offload:lmcache"]
        assert any("--max-model-len 4096" in text for text in commands.values())
        await pilot.press("escape")
        await settle(pilot)
        assert isinstance(app.screen, ConfigureScreen)
        assert app.selection["kv_offload"] == "lmcache"


async def test_first_screen_lists_saved_and_recent_and_enter_opens_one(build_app):
    ss.save("mine", {"model": "Qwen/Qwen3-32B", "hardware": "h200", "kv_offload": "lmcache"})
    app = build_app(launcher=FakeLauncher())
    async with app.run_test(size=(120, 40)) as pilot:
        await settle(pilot)
        box = app.screen.query_one("#saved", OptionList)
        assert box.display and box.option_count == 1
        assert "★ mine · Qwen/Qwen3-32B on h200 (kv_offload=lmcache)" in str(box.get_option_at_index(0).prompt)
        await walk(pilot, "h200", "Qwen/Qwen3-8B", [])  # reviewed: becomes a recent one
        assert isinstance(app.screen, ReviewScreen)
        for _ in range(3):
            await pilot.press("escape")
            await settle(pilot)
        assert isinstance(app.screen, HardwareScreen)
        labels = [str(box.get_option_at_index(i).prompt) for i in range(box.option_count)]
        assert labels[0].startswith("★ mine") and labels[1].startswith("↺ Qwen/Qwen3-8B on h200")
        box.focus()
        box.highlighted = 0
        await pilot.press("enter")
        await settle(pilot)
        assert isinstance(app.screen, ReviewScreen)
        assert app.selection["kv_offload"] == "lmcache" and app.selection["model"] == "Qwen/Qwen3-32B"


async def test_without_saved_selections_the_first_screen_has_no_saved_list(build_app):
    app = build_app(launcher=FakeLauncher())
    async with app.run_test(size=(120, 40)) as pilot:
        await settle(pilot)
        assert app.selection["hardware"] == "h200"
        assert not app.screen.query("#saved")


async def test_the_saved_list_arriving_keeps_the_preselected_profile_in_view(build_app):
    for i in range(4):
        ss.save(f"s{i}", {"model": "Qwen/Qwen3-32B", "hardware": "h200"})
    app = build_app(launcher=FakeLauncher(), hardware="xeon5")  # the last row of a list taller than the box
    async with app.run_test(size=(120, 40)) as pilot:
        for _ in range(50):
            await pilot.pause(0.02)
            if app.screen.query("#saved") and app.screen.query_one("#saved", OptionList).option_count == 4:
                break
        await settle(pilot)
        plist = app.screen.query_one("#profiles", OptionList)
        assert plist.highlighted == plist.get_option_index("xeon5") and plist.max_scroll_y > 0
        shown = "".join(strip.text for strip in plist.render_lines(plist.size.region))
        assert "★ detected" in shown, shown
