"""Bad input files, plan/script file permissions, unknown ids — as a
person runs the CLI (``python -m vllm_deploy_wizard …``), checking exit status and the one-line message."""

from __future__ import annotations

import os
import stat
import subprocess
import sys

import pytest

#: A stand-in for ``head -c 3000 /bin/ls > bad5.yaml``: an ELF-like header whose first byte that is
#: not UTF-8 is 0xd0 at offset 24.
BINARY = b"\x7fELF" + b"A" * 20 + b"\xd0\x01\x02 rest of the file"


def _cli(tmp_path, *args, timeout=120):
    env = dict(os.environ, XDG_STATE_HOME=str(tmp_path / "state"), XDG_CONFIG_HOME=str(tmp_path / "config"),
               XDG_CACHE_HOME=str(tmp_path / "cache"), NO_COLOR="1")
    return subprocess.run([sys.executable, "-m", "vllm_deploy_wizard", *args], env=env, capture_output=True, text=True,
                          timeout=timeout, cwd=tmp_path)


@pytest.mark.parametrize("args, expected", [
    (["launch", "{f}"], "expected a plan file written by `vllm-wizard plan --out FILE`"),
    (["plan", "--selection", "{f}"], "expected a selection file: YAML or JSON"),
    (["detect", "--replay", "{f}"],
     "expected a detection fixture: a capture written by `vllm-wizard detect --capture FILE`"),
    (["plan", "--model", "Qwen/Qwen3-32B", "--replay", "{f}"], "expected a detection fixture"),
])
def test_a_file_that_is_not_utf8_is_a_one_line_error_exit_2(tmp_path, args, expected):
    f = tmp_path / "bad5.yaml"
    f.write_bytes(BINARY)
    r = _cli(tmp_path, *[a.format(f=f) for a in args])
    assert r.returncode == 2, r.stderr
    assert "Traceback" not in r.stderr and "UnicodeDecodeError" not in r.stderr
    assert f"{f}: is not UTF-8 text (byte 0xd0 at offset 24); {expected}" in r.stderr, r.stderr


def test_plan_out_and_script_are_owner_only_and_replace_an_open_file(tmp_path):
    """``plan --out`` writes 0600 (scripts 0700), since the plan may hold the API key in clear, and
    atomically: an existing wider file is replaced (new inode), no temporary file is left behind."""
    out = tmp_path / "plans" / "sec.yaml"
    out.parent.mkdir()
    out.write_text("old\n")
    out.chmod(0o644)
    old_inode = out.stat().st_ino
    r = _cli(tmp_path, "plan", "--model", "Qwen/Qwen3-32B", "--hardware", "h200", "--arg=--api-key=sk-PlanSecret777",
             "--out", str(out), "--script", str(tmp_path / "scripts"))
    assert r.returncode == 0, r.stderr
    assert "sk-PlanSecret777" in out.read_text()  # the plan needs it; so nobody else may read it
    assert stat.S_IMODE(out.stat().st_mode) == 0o600 and out.stat().st_ino != old_inode
    scripts = sorted((tmp_path / "scripts").iterdir())
    assert scripts and all(stat.S_IMODE(s.stat().st_mode) == 0o700 for s in scripts)
    assert sorted(p.name for p in out.parent.iterdir()) == ["sec.yaml"]
    help_text = _cli(tmp_path, "plan", "--help").stdout
    assert "mode 0600" in help_text and "mode 0700" in help_text


def test_unknown_hardware_lists_every_profile_like_unknown_strategy_does(tmp_path):
    """``--hardware bogus`` lists every valid id, not only the first 12."""
    from vllm_deploy_wizard.catalog import load_catalog
    from vllm_deploy_wizard.catalog.sources import resolve_source

    profiles = list(load_catalog(resolve_source(None).path).taxonomy.hardware_profiles)
    assert len(profiles) > 12
    r = _cli(tmp_path, "plan", "--model", "Qwen/Qwen3-32B", "--hardware", "bogus")
    assert r.returncode == 2
    assert (f"unknown hardware profile 'bogus' in the bundled catalog. Valid: {', '.join(profiles)}."
            in r.stderr), r.stderr


@pytest.mark.parametrize("word, suggestion", [("stauts", "'status'"), ("lanch", "'launch'"), ("xyzzy", None)])
def test_a_mistyped_command_is_named_with_did_you_mean(tmp_path, word, suggestion):
    out = _cli(tmp_path, word)
    assert out.returncode == 2 and out.stdout == ""
    first = out.stderr.splitlines()[0]
    assert first.startswith(f"vllm-wizard: unknown command {word!r}"), out.stderr
    assert (f"did you mean {suggestion}?" in first) if suggestion else "did you mean" not in first
    assert "commands: wizard, detect, plan, launch, status" in first
