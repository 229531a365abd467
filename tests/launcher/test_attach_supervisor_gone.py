"""``vllm-wizard attach`` when the run's supervisor dies while attached (kill -9, OOM): the event stream
closes without a ``RunFinished``. attach must say so on stderr in ``status``'s words for a stale run,
point at ``status`` / ``stop``, and exit 1 — not stop printing and exit 0."""

from __future__ import annotations

from types import SimpleNamespace

import pytest

import vllm_deploy_wizard.launcher as launcher
import vllm_deploy_wizard.launcher.runs as runs
from vllm_deploy_wizard.cli import main
from vllm_deploy_wizard.commands.status import stale_note
from vllm_deploy_wizard.launcher import LogLines, RunFinished, Snapshot


def _client(messages):
    class Client:
        def __init__(self, run=None):
            self.info = SimpleNamespace(run_id="run-9", run_dir="/nonexistent/run-9")

        @property
        def run_id(self):
            return self.info.run_id

        async def events(self, tail=50):
            for msg in messages:
                yield msg  # then the stream just ends, as RunClient.events does on EOF

    return Client


@pytest.fixture(autouse=True)
def _printer_to_captured_stdout(monkeypatch):
    """Printer's ``out`` default is the sys.stdout of its import; print to this test's captured one."""
    import sys

    from vllm_deploy_wizard.commands import launch

    real = launch.Printer
    monkeypatch.setattr(launch, "Printer", lambda *a, **kw: real(*a, out=sys.stdout, **kw))


SNAP = Snapshot("run-9", [{"name": "vllm", "state": "READY", "pid": 4242}], {"vllm": ["INFO serving"]})


@pytest.mark.parametrize("left", [[], [4242, 4243]])
def test_attach_says_the_supervisor_went_away_and_exits_1(monkeypatch, capsys, left):
    monkeypatch.setattr(launcher, "RunClient", _client([SNAP, LogLines("vllm", ["INFO one more line"])]))
    monkeypatch.setattr(runs, "read_run", lambda run_dir: SimpleNamespace(run_dir=run_dir))
    monkeypatch.setattr(launcher, "run_survivors", lambda info: [SimpleNamespace(pid=p) for p in left])
    rc = main(["attach", "run-9"])
    out, err = capsys.readouterr()
    assert rc == 1
    assert "attached to run run-9" in out and "one more line" in out  # what came before is still printed
    assert stale_note("run-9", left) in err  # status's words for a stale run, with the survivors' pids
    assert "orphaned" in err and "`vllm-wizard status run-9`" in err and "`vllm-wizard stop run-9`" in err
    if left:
        assert "2 processes still run [4242, 4243]" in err


def test_attach_to_a_run_that_finishes_is_quiet_and_exits_by_outcome(monkeypatch, capsys):
    monkeypatch.setattr(launcher, "RunClient", _client([SNAP, RunFinished("stopped", [], None)]))
    assert main(["attach", "run-9"]) == 0
    assert "supervisor is gone" not in capsys.readouterr().err
    monkeypatch.setattr(launcher, "RunClient", _client([SNAP, RunFinished("fatal", [], None)]))
    assert main(["attach", "run-9"]) == 1
