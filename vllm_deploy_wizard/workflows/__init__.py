"""The workflow layer: rules that join detection, the catalog and the launcher, called by both faces.

``commands/`` (the headless CLI) and ``tui/`` (the wizard) sit above this layer and call it, so
neither keeps its own copy of a rule that needs more than one core: :mod:`.planning` (detection →
planning defaults, the hardware snapshot, plan-time warnings about this node) and :mod:`.launching`
(placeholder values from detection, node facts for the preflight, host readiness). The layers
contract in ``.importlinter`` keeps it below both faces and above the cores.
"""
