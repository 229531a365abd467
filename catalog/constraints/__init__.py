"""Which choices a selection allows, and why not: ``options(catalog, selection) -> Options``.

For every axis of the wizard (hardware, variant, strategy, nodes, PD pool modes per role, PD
connector, PD router, KV offload options and Mooncake topologies, features and their modes, frontend,
install mode, Advanced presets) this returns :class:`Choice` rows — ``available``, ``disabled`` with a
one-line reason, or ``hidden`` — following ``docs/synthesis.md``:

* §3.1, rules H1–H5, P1, V1–V3, S1–S6, N1–N5, PD1–PD2, K1–K7, M1–M5, F1–F4, A1, I1, B1 — reason texts
  copied verbatim where the spec gives them (each rule id is named next to its code in the row modules);
* §3.2, the wizard's decisions on what the snapshot declares but does not enforce: a strategy's
  ``hardware_match.architecture: moe`` and the ``min_gpus`` of TEP/DEP strategies *disable* it
  ("DEP needs an MoE model"); ``max_gpus`` and the PD ``min_gpus`` only *warn*; a feature-level
  ``hardware`` gate is honoured like a mode gate;
* §4, seed gates: PD connector ``brands`` and ``routers``; SMG disables DEP pools and every KV option
  incl. Mooncake; Dynamo is NVIDIA-only; IAXL's ``docker: false`` and ``hardware`` gates; a strategy
  with ``kv_offload: false`` (DPA+TP) composes with no KV option;
* §2.14, the defaults (:func:`pick_default_hardware`, :func:`recommend_strategy`,
  :func:`default_nodes`, :func:`default_pool_nodes`, :func:`default_pool_mode`) are the planner's
  (:mod:`..planner`, built on :mod:`..gates`); this module computes the rows against them.

Decisions:

* The detected profile (``detected_profile`` on the selection, or the keyword argument) is always
  offered, even when ``restricted`` and not declared by the recipe (the H1 exception).
* Devices per node = ``selection.gpus`` when given, else the profile's ``gpu_count``; VRAM per
  device stays the profile's, so node VRAM = devices × (``vram_gb / gpu_count``).
* Rules apply in the order the spec lists them; the first failing rule gives the reason.
* H4/V2 ("picking this also switches …") are *available* choices: their text goes to
  :attr:`Choice.warning`, not :attr:`Choice.reason`.
* Speed: the TUI recomputes options on every keystroke (target p95 ≤ 16 ms,
  ``bench/bench_constraints.py``), so everything here is plain dict/list work over the already
  validated models — no re-validation, no I/O.

Modules of this package (the public names are importable from the package itself):

* :mod:`.choices` — :class:`Choice`, :class:`Options`, the states :data:`AVAILABLE` / :data:`DISABLED` /
  :data:`HIDDEN`, :data:`KV_OFF`, :func:`visible` and the helpers every row uses;
* :mod:`.context` — what the rules read, resolved once per call (the selection with its defaults);
* one module per row or group of rows: :mod:`.hardware` (H1–H5, :func:`hardware_listing`),
  :mod:`.variant` (V1–V3), :mod:`.strategy` (S1–S6 and the Nodes row N1–N4, :data:`MAX_NODES`),
  :mod:`.pd` (PD pool modes, connectors, routers; :data:`POOL_MODES`, :data:`POOL_MODE_TIPS`),
  :mod:`.kv_offload` (K1–K7, Mooncake M1–M5; :data:`MOONCAKE`, :data:`MOONCAKE_ORDER`),
  :mod:`.features` (F1–F4), :mod:`.install` (I1), :mod:`.advanced` (A1, :data:`ADVANCED_PRESETS`,
  :func:`advanced_overlaps`), :mod:`.banners` (N5, the §2.2 TP hint, B1);
* :mod:`.assemble` — :func:`options`, which fills every axis from those rows (the Frontend row inline).
"""

from __future__ import annotations

from .advanced import ADVANCED_PRESETS, advanced_overlaps
from .assemble import options
from .choices import AVAILABLE, DISABLED, HIDDEN, KV_OFF, Choice, Options, visible
from .hardware import hardware_listing
from .kv_offload import MOONCAKE, MOONCAKE_ORDER
from .pd import POOL_MODE_TIPS, POOL_MODES
from .strategy import MAX_NODES

__all__ = [
    "AVAILABLE", "DISABLED", "HIDDEN", "KV_OFF", "Choice", "Options", "visible", "hardware_listing",
    "MAX_NODES", "POOL_MODE_TIPS", "POOL_MODES", "MOONCAKE", "MOONCAKE_ORDER", "ADVANCED_PRESETS",
    "advanced_overlaps", "options",
]
