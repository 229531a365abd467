"""``plan --hardware P`` refused by rule H1 (a restricted profile the recipe does not list) names the way
out that needs no override when there is one — the detected profile, which H1 exempts — checked by
planning it; ``--allow-unverified`` stays the other way (docs/constraints.md §3.1 H1)."""

from __future__ import annotations

from pathlib import Path

import pytest

from vllm_deploy_wizard.cli import main


@pytest.fixture(autouse=True)
def bundled(monkeypatch, tmp_path: Path) -> None:
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path / "config"))
    monkeypatch.setenv("NO_COLOR", "1")


def _run(capsys, *argv: str) -> tuple[int, str]:
    code = main(list(argv))
    _, err = capsys.readouterr()
    return code, err


def test_replayed_node_names_its_detected_profile_and_that_plan_passes(capsys, shared: Path) -> None:
    fixture = str(shared / "fixtures" / "detect" / "nvidia_hgx_8x_h200.yaml")
    code, err = _run(capsys, "plan", "--model", "Qwen/Qwen3-32B", "--hardware", "xeon5", "--replay", fixture)
    assert code == 2, err
    lines = err.rstrip().splitlines()
    assert lines[-3].endswith("--hardware xeon5: Xeon 5 is a restricted profile this recipe does not list (rule H1)")
    assert lines[-2] == (f"--replay {fixture} plans for the replayed node's detected profile H200 (h200), "
                         "which rule H1 allows: drop --hardware xeon5")
    assert lines[-1] == "or pass --allow-unverified to plan it anyway (the plan marks it unverified)"
    assert _run(capsys, "plan", "--model", "Qwen/Qwen3-32B", "--replay", fixture)[0] == 0  # the way out plans


def test_without_detect_the_way_out_is_detect(capsys, monkeypatch, shared: Path) -> None:
    """You should see ``--detect`` suggested when the node was not detected; detection here replays a
    Xeon 6 node (the live node's facts vary)."""
    from vllm_deploy_wizard.commands import plan
    from vllm_deploy_wizard.workflows.planning import detect_defaults

    fixture = shared / "fixtures" / "detect" / "cpu_xeon6_amx.yaml"
    monkeypatch.setattr(plan, "detect_defaults", lambda cat, data, replay=None, scenario=None:
                        detect_defaults(cat, data, fixture))
    code, err = _run(capsys, "plan", "--model", "Qwen/Qwen3-32B", "--hardware", "xeon5")
    assert code == 2, err
    assert ("--detect plans for this node's detected profile Xeon 6 (xeon6), which rule H1 allows: "
            "pass --detect in place of --hardware xeon5\nor pass --allow-unverified") in err
    assert _run(capsys, "plan", "--model", "Qwen/Qwen3-32B", "--detect")[0] == 0  # the way out plans


def test_no_way_out_is_named_when_the_detected_profile_would_be_refused(capsys, shared: Path) -> None:
    """DeepSeek-V3 runs on no RTX 4090 node: only the override is offered."""
    fixture = str(shared / "fixtures" / "detect" / "nvidia_rtx4090_2x.yaml")
    code, err = _run(capsys, "plan", "--model", "deepseek-ai/DeepSeek-V3", "--hardware", "xeon5", "--replay", fixture)
    assert code == 2, err
    assert "detected profile" not in err
    assert err.rstrip().splitlines()[-1] == "pass --allow-unverified to plan it anyway (the plan marks it unverified)"
    assert _run(capsys, "plan", "--model", "deepseek-ai/DeepSeek-V3", "--replay", fixture)[0] == 2
