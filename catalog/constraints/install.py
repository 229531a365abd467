"""The Install mode row (docs/constraints.md §3.1 I1, docs/synthesis.md §2.10): pip and Docker pills."""

from __future__ import annotations

from ..models import HardwareProfile, Recipe
from .choices import HIDDEN, Choice
from .context import _Ctx


def _pip_allowed(recipe: Recipe, profile: HardwareProfile) -> bool:
    inst = recipe.model.install or {}
    hw_inst = profile.install or {}
    return profile.gen not in ("tpu", "xpu") and inst.get("pip") is not False and hw_inst.get("pip") is not False


def _install_row(ctx: _Ctx) -> list[Choice]:
    """I1 (§3.1, §2.10): pip hidden on TPU/XPU, ``install.pip: false`` (recipe or seed hardware);
    docker hidden on ``install.docker: false``."""
    inst = ctx.recipe.model.install or {}
    pip = Choice("pip", "pip") if _pip_allowed(ctx.recipe, ctx.profile) else Choice("pip", "pip", HIDDEN)
    docker = Choice("docker", "Docker", HIDDEN) if inst.get("docker") is False else Choice("docker", "Docker")
    return [pip, docker]
