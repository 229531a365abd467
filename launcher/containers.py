"""Container runs (``docker run`` / ``podman run`` / ``nerdctl run``) as the launcher executes them.

The launcher runs argv without a shell (docs/architecture.md §4), so the ``~`` a plan writes in a
volume mount (``-v ~/.cache/huggingface:/root/.cache/huggingface``, docs/plan-file.md §3.4) would
reach docker unexpanded — docker refuses a relative host path or makes a named volume of it.
:func:`expand_home` expands it with the process's ``HOME`` on the node that launches, as a shell
would. :func:`parse_run` splits a run argv into its docker flags, image and the command inside,
which the preflight reads for the ``/dev/shm`` the container gets (:func:`container_shm_bytes`).
"""

from __future__ import annotations

import os
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

#: Container clients whose ``run`` argv this module reads.
CONTAINER_CLIENTS = ("docker", "podman", "nerdctl")
#: ``run`` flags that take a separate value (the image is the first word that is neither).
FLAGS_WITH_VALUE = frozenset({
    "-e", "--env", "-v", "--volume", "-p", "--publish", "--device", "--name", "--network", "--net", "--ipc",
    "--shm-size", "--gpus", "-w", "--workdir", "--entrypoint", "--ulimit", "--cap-add", "--security-opt",
    "--group-add", "-u", "--user", "--runtime", "--env-file", "--mount", "--memory", "-m", "--cpus",
    "--cpuset-cpus", "--label", "-l", "--hostname", "-h", "--platform", "--pull", "--restart",
})
#: docker's ``/dev/shm`` size for a container run without ``--shm-size`` or ``--ipc=host``.
DOCKER_DEFAULT_SHM_BYTES = 64 * 2**20


@dataclass(frozen=True)
class ContainerRun:
    """A ``CLIENT run FLAGS… IMAGE COMMAND…`` argv split: ``flags`` (the run flags with their
    values, in order), ``image`` and ``command`` (the words after the image)."""

    client: str
    flags: tuple[str, ...]
    image: str
    command: tuple[str, ...]

    def flag(self, name: str) -> str | None:
        """The last value of run flag ``name`` (``--ipc host`` or ``--ipc=host``), None when absent."""
        value = None
        for i, tok in enumerate(self.flags):
            if tok == name and i + 1 < len(self.flags):
                value = self.flags[i + 1]
            elif tok.startswith(name + "="):
                value = tok.split("=", 1)[1]
        return value


def is_container_run(argv: Sequence[str]) -> bool:
    """True for ``docker run …`` (also podman, nerdctl; any path to the client)."""
    return len(argv) > 1 and Path(argv[0]).name in CONTAINER_CLIENTS and argv[1] == "run"


def parse_run(argv: Sequence[str]) -> ContainerRun | None:
    """``argv`` split at its image (:class:`ContainerRun`); None when it is no container run or
    names no image."""
    if not is_container_run(argv):
        return None
    i = 2
    while i < len(argv):
        tok = argv[i]
        if tok in FLAGS_WITH_VALUE:
            i += 2
            continue
        if not tok.startswith("-"):
            return ContainerRun(Path(argv[0]).name, tuple(argv[2:i]), tok, tuple(argv[i + 1:]))
        i += 1
    return None


def _expand(path: str, home: str) -> str:
    if path == "~" or path.startswith("~/"):
        return home + path[1:]
    if path.startswith("~"):  # ~user/…: the shell's lookup
        return os.path.expanduser(path)
    return path


def _expand_mount(spec: str, home: str) -> str:
    """``--mount type=bind,source=~/x,target=/y``: the ``source``/``src`` field expanded."""
    return ",".join(re.sub(r"^((?:source|src)=)(~.*)$", lambda m: m.group(1) + _expand(m.group(2), home), part)
                    for part in spec.split(","))


def expand_home(argv: Sequence[str], env: Mapping[str, str] | None = None) -> tuple[str, ...]:
    """``argv`` with a leading ``~`` in each volume mount's host path expanded to ``HOME`` (from
    ``env``, else this process's environment), as a shell would have: ``-v``/``--volume`` values
    (``-v=…`` too) and the ``source=``/``src=`` of ``--mount``. Only the run flags before the image
    are touched; a non-container argv is returned unchanged."""
    run = parse_run(argv)
    if run is None:
        return tuple(argv)
    home = (env or {}).get("HOME") or os.environ.get("HOME") or os.path.expanduser("~")
    flags = list(run.flags)
    for i, tok in enumerate(flags):
        name, eq, value = tok.partition("=")
        if name in ("-v", "--volume"):
            if eq:
                flags[i] = f"{name}={_expand(value, home)}"
            elif i + 1 < len(flags):
                flags[i + 1] = _expand(flags[i + 1], home)
        elif name == "--mount":
            if eq:
                flags[i] = f"{name}={_expand_mount(value, home)}"
            elif i + 1 < len(flags):
                flags[i + 1] = _expand_mount(flags[i + 1], home)
    return (argv[0], argv[1], *flags, run.image, *run.command)


_SIZE = re.compile(r"(\d+(?:\.\d+)?)\s*([kKmMgGtT])?[iI]?[bB]?")
_UNITS = {"": 1, "k": 2**10, "m": 2**20, "g": 2**30, "t": 2**40}


def docker_size(text: str) -> int | None:
    """A docker ``--shm-size`` value in bytes (binary units ``b k m g t``, any case, an optional
    ``b``/``ib``: ``16g``, ``512MiB``); None when it is not one."""
    m = _SIZE.fullmatch(text.strip())
    if not m:
        return None
    return int(float(m.group(1)) * _UNITS[(m.group(2) or "").lower()])


def container_shm_bytes(run: ContainerRun) -> int | None:
    """The ``/dev/shm`` size the container gets in bytes: None with ``--ipc=host`` (the host's
    ``/dev/shm``), ``--shm-size``'s value, else docker's default of 64 MiB."""
    if run.flag("--ipc") == "host":
        return None
    size = run.flag("--shm-size")
    if size is not None:
        parsed = docker_size(size)
        if parsed is not None:
            return parsed
    return DOCKER_DEFAULT_SHM_BYTES


def inner_serve_argv(run: ContainerRun) -> list[str] | None:
    """The ``vllm serve …`` argv a vLLM image runs for ``run`` (``IMAGE MODEL ARGS`` with the
    images' ``vllm serve`` entrypoint, ``--entrypoint vllm IMAGE serve …``, or ``IMAGE vllm serve
    …``); None when the command is something else (a shell, python)."""
    cmd = list(run.command)
    entry = run.flag("--entrypoint")
    if entry is not None:
        cmd = [entry, *cmd]
    if cmd and Path(cmd[0]).name == "vllm":
        return cmd if len(cmd) > 1 and cmd[1] == "serve" else None
    if entry is None and cmd and not cmd[0].startswith("-") and cmd[0] not in ("bash", "sh", "python", "python3"):
        return ["vllm", "serve", *cmd]
    return None
