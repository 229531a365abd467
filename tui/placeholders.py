"""Defaults for a plan's placeholders (docs/synthesis.md §2.13) offered on the review screen.

A plan is a template: ``$HEAD_IP``, ``$IFACE_NAME``, ``$ROUTER_HOST``, ``$PREFILL_NODE_1`` … stay
literal until launch (docs/plan-file.md §3.2). Which default each gets is the launcher's decision, made once
for the CLI and the wizard (:func:`~vllm_deploy_wizard.launcher.launch.placeholder_values`); the
wizard passes this host's detected address and interface (``inventory.host.primary_ip`` /
``default_iface``, docs/detection.md §5.3) and launches node 0. Defaults are offered, never applied
silently — they are editable inputs.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from vllm_deploy_wizard.launcher.launch import NodeFacts, placeholder_values
from vllm_deploy_wizard.launcher.launch import node_facts as launcher_node_facts


def node_facts(inventory: Any = None) -> NodeFacts | None:
    """The launcher's :class:`NodeFacts` from the wizard's detected inventory
    (:func:`~vllm_deploy_wizard.launcher.launch.node_facts`); None when there is no host — the
    launcher then uses the kernel's route choice for the address."""
    host = getattr(inventory, "host", None)
    return launcher_node_facts(host, inventory) if host is not None else None


def offered_defaults(names: Iterable[str], inventory: Any = None,
                      plan_defaults: Mapping[str, Any] | None = None, node: str | None = None) -> dict[str, str]:
    """``{name: default}`` for each placeholder name (no ``$``); ``""`` where nothing is known — the
    launcher's rule (:func:`~vllm_deploy_wizard.launcher.launch.placeholder_values`) for node 0, run
    as machine label ``node`` when the plan has several (only that machine's pool address is this host's)."""
    return placeholder_values(names, node_facts(inventory), 0, plan_defaults, node=node)
