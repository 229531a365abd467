"""Model download (workflows/model_download.py, docs/benchmark.md §3) through a fake hub: HF_TOKEN is
passed, offline mode and local paths are refused, the hub's gated / not-found / bad-token errors are
explained with the launcher's causes; ``plan --download`` and ``launch --download`` download only what
is not cached."""

from __future__ import annotations

import httpx
import pytest
from huggingface_hub.errors import GatedRepoError, HfHubHTTPError, RepositoryNotFoundError

from vllm_deploy_wizard import cli
from vllm_deploy_wizard.workflows.model_download import (
    DownloadError,
    download_hint,
    download_model,
    hf_id_of,
    served_models,
)


def _response(code: int, url: str) -> httpx.Response:
    return httpx.Response(code, request=httpx.Request("GET", url))


class FakeHub:
    def __init__(self, error: Exception | None = None) -> None:
        self.calls: list[tuple[str, str | None]] = []
        self.error = error

    def snapshot_download(self, repo_id: str, token: str | None = None):
        self.calls.append((repo_id, token))
        if self.error is not None:
            raise self.error
        return f"/hub/models--{repo_id.replace('/', '--')}/snapshots/abc"


def test_download_passes_hf_token_and_returns_the_snapshot():
    hub = FakeHub()
    path = download_model("acme/tiny", hub=hub, env={"HF_TOKEN": "hf_x"})
    assert hub.calls == [("acme/tiny", "hf_x")] and str(path).endswith("models--acme--tiny/snapshots/abc")
    download_model("acme/tiny", hub=hub, env={})
    assert hub.calls[-1] == ("acme/tiny", None)


def test_local_paths_and_offline_mode_are_refused(tmp_path):
    hub = FakeHub()
    with pytest.raises(DownloadError, match="not a Hugging Face 'org/name' id"):
        download_model(str(tmp_path), hub=hub, env={})
    with pytest.raises(DownloadError, match="HF_HUB_OFFLINE=1 forbids downloading acme/tiny.*`hf download acme/tiny`"):
        download_model("acme/tiny", hub=hub, env={"HF_HUB_OFFLINE": "1"})
    assert hub.calls == []
    assert hf_id_of("acme/tiny") == "acme/tiny" and hf_id_of("./x/y") is None
    assert download_hint("a/b") == "hf download a/b"


@pytest.mark.parametrize("error, expect", [
    (GatedRepoError("Cannot access gated repo for url https://huggingface.co/api/models/meta-llama/L/revision/main.",
                    response=_response(403, "https://huggingface.co/api/models/meta-llama/L")),
     r"meta-llama/L is gated: .*accept the model's license on https://huggingface.co/meta-llama/L.*HF_TOKEN"),
    (RepositoryNotFoundError("404 Client Error.\n\nRepository Not Found for url: https://huggingface.co/api/models/acme/nope.",
                             response=_response(404, "https://huggingface.co/api/models/acme/nope")),
     r"the model 'acme/nope' could not be found; check the model"),
    (HfHubHTTPError("401 Client Error: Unauthorized for url: https://huggingface.co/api/models/acme/x",
                    response=_response(401, "https://huggingface.co/api/models/acme/x")),
     r"rejected the token.*huggingface.co/settings/tokens"),
])
def test_hub_errors_are_explained_with_the_launcher_causes(error, expect):
    model = {"GatedRepoError": "meta-llama/L", "RepositoryNotFoundError": "acme/nope"}.get(type(error).__name__,
                                                                                            "acme/x")
    with pytest.raises(DownloadError, match=expect):
        download_model(model, hub=FakeHub(error), env={})


def test_served_models_are_the_hf_ids_of_serve_processes(tmp_path):
    plan = {"processes": [{"argv": ["vllm", "serve", "acme/a", "--port", "1"]},
                          {"argv": ["vllm", "serve", str(tmp_path)]}, {"argv": ["vllm-router", "--port", "2"]},
                          {"argv": ["vllm", "serve", "acme/a"]}]}
    assert served_models(plan) == ["acme/a"]


def test_plan_download_fetches_what_is_not_cached(monkeypatch, capsys):
    import huggingface_hub

    hub = FakeHub()
    monkeypatch.setattr(huggingface_hub, "snapshot_download", hub.snapshot_download)
    monkeypatch.delenv("HF_HUB_OFFLINE", raising=False)
    monkeypatch.setenv("HF_TOKEN", "hf_secret")
    rc = cli.main(["plan", "--model", "Qwen/Qwen3-32B", "--hardware", "h200", "--download", "--json"])
    err = capsys.readouterr().err
    assert rc == 0, err
    assert hub.calls == [("Qwen/Qwen3-32B", "hf_secret")]  # once: the served model is the same id
    assert "downloaded Qwen/Qwen3-32B to /hub/models--Qwen--Qwen3-32B/snapshots/abc" in err
    hub.error = GatedRepoError("Cannot access gated repo for url https://huggingface.co/api/models/Qwen/Qwen3-32B.",
                               response=_response(403, "https://huggingface.co/api/models/Qwen/Qwen3-32B"))
    rc = cli.main(["plan", "--model", "Qwen/Qwen3-32B", "--hardware", "h200", "--download"])
    assert rc == 2 and "is gated" in capsys.readouterr().err


def test_launch_download_fetches_the_served_models_before_preflight(monkeypatch, capsys, tmp_path):
    """``launch PLAN --download``: every model the plan serves that is not cached is downloaded
    (HF_TOKEN passed) before the preflight runs; a cached one is not; a hub error ends the launch
    with its explanation and nothing is prepared."""
    import importlib

    import huggingface_hub

    from vllm_deploy_wizard.common.errors import LaunchError
    from vllm_deploy_wizard.workflows import model_download

    launch_module = importlib.import_module("vllm_deploy_wizard.launcher.launch")  # the package exports launch()

    plan = tmp_path / "plan.yaml"
    assert cli.main(["plan", "--model", "Qwen/Qwen3-32B", "--hardware", "h200", "--out", str(plan)]) == 0
    hub = FakeHub()
    monkeypatch.setattr(huggingface_hub, "snapshot_download", hub.snapshot_download)
    monkeypatch.delenv("HF_HUB_OFFLINE", raising=False)
    monkeypatch.setenv("HF_TOKEN", "hf_secret")
    cached: set[str] = set()
    monkeypatch.setattr(model_download, "is_cached", lambda model, cache_dir=None: model in cached)
    prepared: list[str] = []

    def stop_at_preflight(*args, **kwargs):  # the download is done by now: record it, launch nothing
        prepared.append(f"after {len(hub.calls)} download(s)")
        raise LaunchError("stopped at preflight by the test")

    monkeypatch.setattr(launch_module, "prepare", stop_at_preflight)
    argv = ["launch", str(plan), "--download", "--skip-host-check", "--skip-flag-check", "--foreground"]
    capsys.readouterr()
    assert cli.main(argv) == 2
    err = capsys.readouterr().err
    assert hub.calls == [("Qwen/Qwen3-32B", "hf_secret")] and prepared == ["after 1 download(s)"]
    assert "downloading Qwen/Qwen3-32B into the Hugging Face cache" in err
    assert "downloaded Qwen/Qwen3-32B to /hub/models--Qwen--Qwen3-32B/snapshots/abc" in err
    assert "stopped at preflight by the test" in err
    cached.add("Qwen/Qwen3-32B")  # in the cache now: nothing to download
    assert cli.main(argv) == 2 and hub.calls == [("Qwen/Qwen3-32B", "hf_secret")]
    assert "downloading" not in capsys.readouterr().err
    cached.clear()
    hub.error = GatedRepoError("Cannot access gated repo for url https://huggingface.co/api/models/Qwen/Qwen3-32B.",
                               response=_response(403, "https://huggingface.co/api/models/Qwen/Qwen3-32B"))
    prepared.clear()
    assert cli.main(argv) == 2
    assert "is gated" in capsys.readouterr().err and prepared == []


def test_plan_download_of_a_recipe_fetches_the_id_vllm_loads_once(monkeypatch, capsys):
    """``plan --model Google/gemma-4-12B-it --download``: the recipe id and the model it serves differ in
    case (issue #20); the HF cache folder keeps the case given, so only ``google/gemma-4-12B-it`` — what
    ``vllm serve`` loads — is fetched, not the typed id first (a second, unused copy of the weights)."""
    import huggingface_hub

    from vllm_deploy_wizard.workflows import model_download

    hub = FakeHub()
    monkeypatch.setattr(huggingface_hub, "snapshot_download", hub.snapshot_download)
    monkeypatch.delenv("HF_HUB_OFFLINE", raising=False)
    monkeypatch.delenv("HF_TOKEN", raising=False)
    monkeypatch.setattr(model_download, "is_cached", lambda model, cache_dir=None: False)
    rc = cli.main(["plan", "--model", "Google/gemma-4-12B-it", "--hardware", "h200", "--install-mode", "pip",
                   "--download", "--json"])
    assert rc == 0, capsys.readouterr().err
    assert hub.calls == [("google/gemma-4-12B-it", None)]
