"""The plan's config files, written by ``launch`` before it starts a process (docs/plan-file.md §6.3).

A plan's ``config_files`` maps the variable that names a file's path (``MOONCAKE_CONFIG_PATH``) to
its content (a JSON object, or text) with placeholders inside (``$MOONCAKE_MASTER_IP``,
``$MOONCAKE_DEVICE_NAME``); the processes read the path from that variable (``MOONCAKE_CONFIG_PATH:
$MOONCAKE_CONFIG_PATH`` in their env, ``--config $MOONCAKE_STORE_CONFIG_PATH`` in the store's argv,
a ``-v PATH:PATH:ro`` mount in docker mode). Decided here once, for every launch path (``vllm-wizard
launch`` detached or ``--foreground``, the wizard, the Slurm job and ``--all-nodes``, which run
``launch`` on each machine):

* **Where**: the launch value of the variable (``--set MOONCAKE_CONFIG_PATH=/etc/mooncake/x.json``;
  made absolute against the launch's working directory, as the supervisor runs from ``/``), else
  :func:`config_file_defaults` — ``<state dir>/config-files/<content hash>/<file>.json``
  (``~/.local/state/vllm-wizard/…``: writable without root, one folder per content so two plans
  on a node never overwrite each other's file). Offered like the plan's own placeholder defaults
  (printed, never applied silently).
* **Which**: only the files this machine's processes name (their argv or env holds the path).
* **Content**: JSON indented by 2 (as the per-node scripts write it), placeholders filled from the
  launch values; an unfilled ``…DEVICE_NAME`` is ``""`` (Mooncake then picks the RDMA NICs, as the
  scripts do); any other unfilled placeholder is a problem naming the ``--set`` that fills it.
* **How**: atomically, mode 0600 (owner-only), parent folders created, before the supervisor starts
  (:func:`write_config_files`, called by ``daemon.prepare_run_dir``); the preflight reads the
  content from the spec, not the disk (:func:`content_at`), so its checks see what will be written.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from vllm_deploy_wizard.common.errors import LaunchError
from vllm_deploy_wizard.common.placeholders import fill, names_in
from vllm_deploy_wizard.launcher.spec import ConfigFile, RunSpec

#: Folder (under the per-user state dir) of the config files a launch writes by default.
CONFIG_FILES_FOLDER = "config-files"


def _text(content: Any) -> str:
    """A config file's text: a JSON object indented by 2, a string as written."""
    return content if isinstance(content, str) else json.dumps(content, indent=2)


def _files(plan: Any) -> dict[str, Any]:
    files = plan.get("config_files") if isinstance(plan, Mapping) else None
    return {str(k): v for k, v in files.items()} if isinstance(files, Mapping) else {}


def config_file_defaults(plan: Any) -> dict[str, str]:
    """``{VARIABLE: default path}`` for each config file of ``plan`` (the plan file's inner ``plan``
    mapping): ``<state dir>/config-files/<first 12 hex of the content's SHA-256>/<file>.json``, the
    file named after the variable without ``_PATH`` (``mooncake_config.json``). ``{}`` for a plan
    without config files or data that is no plan. Never raises."""
    from vllm_deploy_wizard.common.appdirs import state_dir

    out = {}
    for name, content in _files(plan).items():
        digest = hashlib.sha256(_text(content).encode()).hexdigest()[:12]
        stem = name.lower().removesuffix("_path") or "config"
        out[name] = str(state_dir() / CONFIG_FILES_FOLDER / digest / f"{stem}.json")
    return out


def config_files_for(plan: Any, spec: RunSpec, values: Mapping[str, str]) -> tuple[tuple[ConfigFile, ...], list[str]]:
    """``(files, problems)``: the config files of ``plan`` (inner ``plan`` mapping) that ``spec``'s
    processes name, at the path ``values`` gives their variable (else its :func:`config_file_defaults`
    path), their placeholders filled from ``values`` (``…DEVICE_NAME`` unset: ``""``). ``problems``:
    one line per file with placeholders left unfilled, naming the ``--set`` for each."""
    defaults = config_file_defaults(plan)
    texts = [t for p in spec.processes for t in (*p.argv, *p.env.values())]
    files, problems = [], []
    for name, content in _files(plan).items():
        path = values.get(name) or defaults[name]
        if not any(path in t for t in texts):
            continue  # another machine's file
        raw = _text(content)
        holes = names_in([raw])
        filled = {n: str(values[n]) for n in holes if values.get(n) is not None}
        filled.update({n: "" for n in holes if n not in filled and n.endswith("DEVICE_NAME")})
        missing = [n for n in holes if n not in filled]
        if missing:
            problems.append(f"config file ${name} ({path}): " + ", ".join(f"${n}" for n in missing)
                            + " not filled; give " + " ".join(f"--set {n}=VALUE" for n in missing))
            continue
        files.append(ConfigFile(name=name, path=path, text=fill(raw, filled) + "\n"))
    return tuple(files), problems


def content_at(spec: RunSpec, path: str | None) -> str | None:
    """The text ``spec`` will write at ``path`` (None when it writes nothing there)."""
    return next((f.text for f in spec.config_files if path and f.path == path), None)


def write_config_files(spec: RunSpec) -> list[Path]:
    """Write each of ``spec.config_files`` (atomically, mode 0600, parent folders created; ``~``
    expanded). Returns the paths written. Raises :class:`LaunchError` naming the file and the
    ``--set`` that moves it when one cannot be written (the launch then starts nothing)."""
    from vllm_deploy_wizard.common.files import write_atomic

    out = []
    for f in spec.config_files:
        path = Path(f.path).expanduser()
        try:
            out.append(write_atomic(path, f.text, mode=0o600))
        except OSError as exc:
            raise LaunchError(f"cannot write config file ${f.name} at {path}: {exc.strerror or exc}; "
                              f"--set {f.name}=PATH picks another place") from None
    return out
