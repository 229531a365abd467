"""Catalog sources: resolution order, the user config, and ``sync_recipes`` against a real HTTP
server on 127.0.0.1 serving archives built in tmp_path from ``../shared/recipes-snapshot``."""

from __future__ import annotations

import functools
import http.server
import io
import tarfile
import threading
import zipfile
from pathlib import Path

import pytest

from vllm_deploy_wizard.catalog.loader import load_catalog
from vllm_deploy_wizard.catalog.sources import (
    SYNC_STAMP,
    SourceError,
    SyncError,
    read_config,
    read_revision,
    remember_recipes_dir,
    resolve_source,
    sync_recipes,
    synced_checkout,
)
from vllm_deploy_wizard.cli import main

COMMIT = "8959cf6aabbccddeeff00112233445566778899a"


@pytest.fixture
def server(tmp_path):
    """Serve ``tmp_path/www`` on a free loopback port; yields the base URL."""
    www = tmp_path / "www"
    www.mkdir()
    handler = functools.partial(http.server.SimpleHTTPRequestHandler, directory=str(www))
    handler.log_message = lambda *a, **k: None
    httpd = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    thread = threading.Thread(target=httpd.serve_forever, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{httpd.server_address[1]}", www
    httpd.shutdown()
    httpd.server_close()


def snapshot_targz(shared: Path, dest: Path, top: str = "recipes-main", comment: str | None = COMMIT) -> Path:
    """A GitHub-style archive: everything under one top folder, commit id in the pax header."""
    kwargs = {"format": tarfile.PAX_FORMAT, "pax_headers": {"comment": comment}} if comment else {}
    with tarfile.open(dest, "w:gz", **kwargs) as tf:
        tf.add(shared / "recipes-snapshot", arcname=top)
    return dest


def test_sync_over_http(shared, server, tmp_path):
    base, www = server
    snapshot_targz(shared, www / "main.tar.gz")
    cache = tmp_path / "cache"
    path = sync_recipes(f"{base}/main.tar.gz", cache)
    assert read_revision(path) == COMMIT
    assert synced_checkout(cache).resolve() == path
    cat = load_catalog(synced_checkout(cache))
    assert len(cat.recipes) == 143
    assert (path / SYNC_STAMP).is_file()


def test_second_sync_replaces_the_first(shared, server, tmp_path):
    base, www = server
    snapshot_targz(shared, www / "a.tar.gz", comment="aaaa")
    snapshot_targz(shared, www / "b.tar.gz", comment="bbbb")
    cache = tmp_path / "cache"
    first = sync_recipes(f"{base}/a.tar.gz", cache)
    link = synced_checkout(cache)
    second = sync_recipes(f"{base}/b.tar.gz", cache)
    assert not first.exists() and second.exists()
    assert link == synced_checkout(cache) and read_revision(link) == "bbbb"  # the stable link follows
    assert [p.name for p in (cache / "checkouts").iterdir()] == [second.name]


def test_zip_archive_and_sha_revision(shared, server, tmp_path):
    base, www = server
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w") as zf:
        for p in sorted((shared / "recipes-snapshot").rglob("*")):
            if p.is_file():
                zf.write(p, "recipes-zip/" + str(p.relative_to(shared / "recipes-snapshot")))
    (www / "main.zip").write_bytes(buf.getvalue())
    path = sync_recipes(f"{base}/main.zip", tmp_path / "cache")
    assert len(read_revision(path)) == 12  # no zip comment: first 12 hex digits of the sha256


def test_http_error_keeps_previous_checkout(shared, server, tmp_path):
    base, www = server
    snapshot_targz(shared, www / "ok.tar.gz")
    cache = tmp_path / "cache"
    good = sync_recipes(f"{base}/ok.tar.gz", cache)
    with pytest.raises(SyncError, match=r"/missing.tar.gz: HTTP 404"):
        sync_recipes(f"{base}/missing.tar.gz", cache)
    assert synced_checkout(cache).resolve() == good


def test_not_an_archive(server, tmp_path):
    base, www = server
    (www / "page.tar.gz").write_text("<html>not found</html>")
    with pytest.raises(SyncError, match=r"not a \.tar\.gz or \.zip archive"):
        sync_recipes(f"{base}/page.tar.gz", tmp_path / "cache")


def test_path_traversal_rejected(server, tmp_path):
    base, www = server
    with tarfile.open(www / "evil.tar.gz", "w:gz") as tf:
        data = b"pwned"
        info = tarfile.TarInfo("recipes-main/../../escaped.txt")
        info.size = len(data)
        tf.addfile(info, io.BytesIO(data))
    with pytest.raises(SyncError, match=r"refusing archive member 'recipes-main/../../escaped.txt': '\.\.' path"):
        sync_recipes(f"{base}/evil.tar.gz", tmp_path / "cache")
    assert not (tmp_path / "escaped.txt").exists() and not (tmp_path / "cache" / "escaped.txt").exists()


def test_symlink_member_rejected(server, tmp_path):
    base, www = server
    with tarfile.open(www / "link.tar.gz", "w:gz") as tf:
        info = tarfile.TarInfo("recipes-main/taxonomy.yaml")
        info.type, info.linkname = tarfile.SYMTYPE, "/etc/passwd"
        tf.addfile(info)
    with pytest.raises(SyncError, match="links and special files are not allowed"):
        sync_recipes(f"{base}/link.tar.gz", tmp_path / "cache")


def test_zip_traversal_rejected(server, tmp_path):
    base, www = server
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w") as zf:
        zf.writestr("/abs/taxonomy.yaml", "x: 1")
    (www / "abs.zip").write_bytes(buf.getvalue())
    with pytest.raises(SyncError, match="absolute path"):
        sync_recipes(f"{base}/abs.zip", tmp_path / "cache")


def test_two_top_folders_rejected(shared, server, tmp_path):
    base, www = server
    with tarfile.open(www / "two.tar.gz", "w:gz") as tf:
        tf.add(shared / "recipes-snapshot" / "taxonomy.yaml", arcname="a/taxonomy.yaml")
        tf.add(shared / "recipes-snapshot" / "taxonomy.yaml", arcname="b/taxonomy.yaml")
    with pytest.raises(SyncError, match="expected exactly one top folder in the archive, found a, b"):
        sync_recipes(f"{base}/two.tar.gz", tmp_path / "cache")


def test_archive_that_does_not_load_is_rejected(shared, server, tmp_path):
    base, www = server
    with tarfile.open(www / "broken.tar.gz", "w:gz") as tf:
        tf.add(shared / "recipes-snapshot" / "strategies", arcname="r/strategies")
        info = tarfile.TarInfo("r/taxonomy.yaml")
        bad = b"hardware_profiles: [unclosed\n"
        info.size = len(bad)
        tf.addfile(info, io.BytesIO(bad))
        info = tarfile.TarInfo("r/models")
        info.type = tarfile.DIRTYPE
        tf.addfile(info)
    with pytest.raises(SyncError, match=r"do not load:\n.*taxonomy.yaml:\d+: invalid YAML"):
        sync_recipes(f"{base}/broken.tar.gz", tmp_path / "cache")
    assert synced_checkout(tmp_path / "cache") is None


def test_resolution_order(shared, tmp_path):
    config = tmp_path / "config.yaml"
    assert resolve_source(None, config).kind == "bundled"
    remember_recipes_dir(shared / "recipes-snapshot", config)
    assert read_config(config)["recipes_dir"] == str(shared / "recipes-snapshot")
    remembered = resolve_source(None, config)
    assert (remembered.kind, remembered.path) == ("config", shared / "recipes-snapshot")
    other = tmp_path / "other"
    (other / "models").mkdir(parents=True)
    (other / "taxonomy.yaml").write_text("hardware_profiles: {}\n")
    explicit = resolve_source(other, config)
    assert (explicit.kind, explicit.path) == ("dir", other)  # --recipes beats the config
    remember_recipes_dir(None, config)
    assert resolve_source(None, config).kind == "bundled"


def test_vanished_remembered_dir_is_an_error(tmp_path):
    config = tmp_path / "config.yaml"
    config.write_text(f"recipes_dir: {tmp_path / 'gone'}\n")
    with pytest.raises(SourceError, match=r"config.yaml: recipes_dir: .*gone does not exist.*recipes use --bundled"):
        resolve_source(None, config)


def test_bad_config_file_named(tmp_path):
    config = tmp_path / "config.yaml"
    config.write_text("recipes_dir: [\n")
    with pytest.raises(SourceError, match=rf"^config file {config}:2: invalid YAML: .* — fix it or delete it"):
        read_config(config)
    config.write_text("- a list\n")
    with pytest.raises(SourceError, match=rf"^config file {config}:1: expected a mapping of settings"):
        read_config(config)


BROKEN_CONFIG = "recipes_dir: [unclosed\nfoo: 1\n"


@pytest.mark.parametrize("argv", [["recipes", "show"], ["catalog", "check"],
                                  ["plan", "--model", "Qwen/Qwen3-8B", "--hardware", "h100"]])
def test_broken_config_is_one_clear_line_for_every_reader(argv, tmp_path, monkeypatch, capsys):
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path / "cfg"))
    config = tmp_path / "cfg" / "vllm-wizard" / "config.yaml"
    config.parent.mkdir(parents=True)
    config.write_text(BROKEN_CONFIG)
    assert main(argv) == 2
    err = capsys.readouterr().err
    assert f"config file {config}:2: invalid YAML" in err and "fix it or delete it" in err
    assert "Traceback" not in err


@pytest.mark.parametrize("use", [["--bundled"], ["SNAPSHOT"]])
def test_recipes_use_replaces_a_broken_config_keeping_a_backup(use, shared, tmp_path, monkeypatch, capsys):
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path / "cfg"))
    config = tmp_path / "cfg" / "vllm-wizard" / "config.yaml"
    config.parent.mkdir(parents=True)
    config.write_text(BROKEN_CONFIG)
    argv = ["recipes", "use", *(str(shared / "recipes-snapshot") if a == "SNAPSHOT" else a for a in use)]
    assert main(argv) == 0
    out = capsys.readouterr().out
    backups = list(config.parent.glob("config.yaml.broken-*"))
    assert len(backups) == 1 and backups[0].read_text() == BROKEN_CONFIG
    assert f"moved it to {backups[0]}" in out
    expected = {} if use == ["--bundled"] else {"recipes_dir": str(shared / "recipes-snapshot")}
    assert read_config(config) == expected


def test_cli_sync_use_show(shared, server, tmp_path, monkeypatch, capsys):
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path / "cfg"))
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "xdgcache"))
    base, www = server
    snapshot_targz(shared, www / "main.tar.gz")
    assert main(["recipes", "sync", "--url", f"{base}/main.tar.gz"]) == 0
    assert f"synced revision {COMMIT}" in capsys.readouterr().out
    assert main(["recipes", "show"]) == 0
    out = capsys.readouterr().out
    assert f"revision: {COMMIT}" in out and "recipes/current (config)" in out
    assert main(["recipes", "use", "--bundled"]) == 0
    capsys.readouterr()
    assert main(["recipes", "show"]) == 0
    assert "source:   bundled (bundled)" in capsys.readouterr().out
    assert main(["recipes", "use", str(tmp_path)]) == 2  # not a checkout: WizardError exit status
    assert "is not a recipes checkout: missing taxonomy.yaml, models" in capsys.readouterr().err


def test_recipes_use_refuses_a_checkout_plan_cannot_use(shared, tmp_path, monkeypatch, capsys):
    """A checkout that loads but has no hardware profiles (misspelled key) is not remembered."""
    import os

    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path / "cfg"))
    snap = shared / "recipes-snapshot"
    bad = tmp_path / "bad"
    bad.mkdir()
    text = (snap / "taxonomy.yaml").read_text(encoding="utf-8")
    (bad / "taxonomy.yaml").write_text(text.replace("\nhardware_profiles:", "\nhardware_profile:"), encoding="utf-8")
    for name in ("strategies", "kv_store", "models"):
        os.symlink(snap / name, bad / name)
    assert main(["recipes", "use", str(bad)]) == 2
    err = capsys.readouterr().err
    assert "`hardware_profile` is not a taxonomy key — did you mean `hardware_profiles`?" in err
    assert f"not remembering {bad}" in err
    assert read_config(tmp_path / "cfg" / "vllm-wizard" / "config.yaml") == {}
