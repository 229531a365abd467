"""Plan placeholders in the launcher: ``$NAME`` / ``${NAME}`` in argv, env, health URLs and ports,
filled at launch from ``values``; ``$$NAME`` is the escape for a literal ``$NAME``.

The grammar is :mod:`vllm_deploy_wizard.placeholders` (one table, shared with the catalog); this
module only gives it the launcher's names.
"""

from __future__ import annotations

from vllm_deploy_wizard import placeholders as _grammar

#: Names of the placeholders in a text, in order (duplicates kept; an escape is none).
placeholders_in = _grammar.names
#: Fill the placeholders of ``values`` (``only``: restrict to those names); the escape becomes ``$NAME``.
fill = _grammar.fill
