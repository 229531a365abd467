"""Atomic writes: mode before the first byte, the old file intact on failure, no temp files left."""

from __future__ import annotations

import os
import stat

import pytest

from vllm_deploy_wizard.common import files


def mode_of(path) -> int:
    return stat.S_IMODE(os.stat(path).st_mode)


def test_write_creates_parents_with_the_mode(tmp_path) -> None:
    target = tmp_path / "a" / "b" / "plan.yaml"
    files.write_atomic(target, "x: 1\n", mode=0o640)
    assert target.read_text() == "x: 1\n" and mode_of(target) == 0o640
    assert os.listdir(target.parent) == ["plan.yaml"]


def test_an_existing_wider_mode_is_not_kept(tmp_path) -> None:
    target = tmp_path / "secret.yaml"
    target.write_text("old")
    os.chmod(target, 0o644)
    files.write_atomic(target, b"new")
    assert target.read_bytes() == b"new" and mode_of(target) == 0o600


def test_a_failed_write_keeps_the_old_file_and_leaves_no_temp(tmp_path, monkeypatch) -> None:
    target = tmp_path / "state.json"
    target.write_text("old")

    def broken_replace(src, dst):
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(files.os, "replace", broken_replace)
    with pytest.raises(OSError, match="No space"):
        files.write_atomic(target, "new")
    assert target.read_text() == "old" and os.listdir(tmp_path) == ["state.json"]


def test_fsync_is_skipped_only_when_asked(tmp_path, monkeypatch) -> None:
    synced: list[int] = []
    real = os.fsync
    monkeypatch.setattr(files.os, "fsync", lambda fd: (synced.append(fd), real(fd)))
    files.write_atomic(tmp_path / "a", "1")
    files.write_json_atomic(tmp_path / "b", {"k": 1}, fsync=False)
    assert len(synced) == 1
    assert (tmp_path / "b").read_text() == '{\n "k": 1\n}'


def test_an_unwritable_folder_raises_oserror(tmp_path) -> None:
    blocker = tmp_path / "file"
    blocker.write_text("")
    with pytest.raises(OSError):
        files.write_atomic(blocker / "x.yaml", "x")
