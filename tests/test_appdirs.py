"""Per-user folders follow XDG through platformdirs under one application name."""

from __future__ import annotations

from vllm_deploy_wizard.common import appdirs


def test_folders_follow_xdg(tmp_path, monkeypatch) -> None:
    for var, sub in (("XDG_CONFIG_HOME", "c"), ("XDG_CACHE_HOME", "k"), ("XDG_STATE_HOME", "s")):
        monkeypatch.setenv(var, str(tmp_path / sub))
    assert appdirs.config_dir() == tmp_path / "c" / "vllm-wizard"
    assert appdirs.cache_dir() == tmp_path / "k" / "vllm-wizard"
    assert appdirs.state_dir() == tmp_path / "s" / "vllm-wizard"
    assert not (tmp_path / "c").exists()  # nothing is created


def test_the_cores_use_the_same_folders(tmp_path, monkeypatch) -> None:
    from vllm_deploy_wizard.catalog import sources
    from vllm_deploy_wizard.launcher import runs

    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path / "c"))
    monkeypatch.setenv("XDG_STATE_HOME", str(tmp_path / "s"))
    assert sources.config_file().parent == appdirs.config_dir()
    assert runs.runs_root().parent == appdirs.state_dir()
