"""``--devices`` off the node is checked against the profile's devices per node (a profile whose count
is fixed: NVIDIA): an index at or above it is refused naming the flag and the valid range."""

from __future__ import annotations

from vllm_deploy_wizard.cli import main


def _plan(capsys, *flags: str) -> tuple[int, str, str]:
    code = main(["plan", "--model", "Qwen/Qwen3-32B", *flags])
    out, err = capsys.readouterr()
    return code, out, err


def test_an_index_beyond_the_profiles_devices_is_refused(capsys) -> None:
    code, out, err = _plan(capsys, "--hardware", "h200", "--devices", "9")
    assert code == 2, err
    assert "--devices 9" in err and "8 devices per node" in err and "Valid: indexes 0 to 7" in err
    assert "CUDA_VISIBLE_DEVICES" not in out


def test_the_last_index_is_planned(capsys) -> None:
    code, out, err = _plan(capsys, "--hardware", "h200", "--devices", "7")
    assert code == 0, err
    assert "CUDA_VISIBLE_DEVICES=7" in out
