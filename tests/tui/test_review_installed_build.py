"""The review's "Installed:" line says when the installed vLLM is a build of another backend than the
plan's (a ``+cpu`` wheel for an H200 plan) instead of showing its version as if it met the recipe."""

from __future__ import annotations

from types import SimpleNamespace as NS

from vllm_deploy_wizard.tui.screen_review import ReviewScreen


def _installed(build: str | None, version: str, accelerator: str) -> str:
    tool = NS(installed=True, version=version)
    software = NS(vllm=tool, vllm_build=build, vllm_router=None, lmcache=None)
    screen = NS(app=NS(inventory=NS(software=software)))
    plan = {"min_vllm_version": "0.8.5", "accelerator": accelerator, "processes": [], "install": []}
    return ReviewScreen._installed_text(screen, plan)  # type: ignore[arg-type]


def test_a_cpu_build_for_a_cuda_plan_says_it_cannot_serve_it() -> None:
    text = _installed("cpu", "0.32.0+cpu", "cuda")
    assert text == "Installed: vLLM 0.32.0+cpu: a CPU build, which cannot serve this cuda plan (recipe needs ≥ 0.8.5)"


def test_a_build_of_the_plans_backend_shows_the_version() -> None:
    assert _installed("cpu", "0.32.0+cpu", "cpu") == "Installed: vLLM 0.32.0+cpu (recipe needs ≥ 0.8.5)"
    assert _installed(None, "0.32.0", "cuda") == "Installed: vLLM 0.32.0 (recipe needs ≥ 0.8.5)"
