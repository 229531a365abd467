"""NVML sessions: init/shutdown pairing, failures as an error name, per-pid GPU memory."""

from __future__ import annotations

from types import SimpleNamespace

from vllm_deploy_wizard.common import nvml


class FakeNvml:
    def __init__(self, fail_init: Exception | None = None) -> None:
        self.calls: list[str] = []
        self.fail_init = fail_init

    def nvmlInit(self) -> None:
        self.calls.append("init")
        if self.fail_init:
            raise self.fail_init

    def nvmlShutdown(self) -> None:
        self.calls.append("shutdown")

    def nvmlDeviceGetCount(self) -> int:
        return 2

    def nvmlDeviceGetHandleByIndex(self, i: int) -> int:
        if i == 1:
            raise RuntimeError("GpuIsLost")
        return i

    def nvmlDeviceGetComputeRunningProcesses(self, h):
        return [SimpleNamespace(pid=10, usedGpuMemory=100), SimpleNamespace(pid=11, usedGpuMemory=None)]

    def nvmlDeviceGetGraphicsRunningProcesses(self, h):
        return [SimpleNamespace(pid=10, usedGpuMemory=5)]


class NVMLError_LibraryNotFound(Exception):
    pass


def test_session_shuts_down_after_use() -> None:
    fake = FakeNvml()
    with nvml.session(lambda: fake) as s:
        assert s.module is fake and s.error is None
    assert fake.calls == ["init", "shutdown"]


def test_a_failed_init_is_an_error_name_not_an_exception() -> None:
    fake = FakeNvml(fail_init=NVMLError_LibraryNotFound())
    with nvml.session(lambda: fake) as s:
        assert s.module is None and s.error == "NVMLError_LibraryNotFound"
    assert fake.calls == ["init"]

    def no_binding():
        raise ImportError("pynvml")

    with nvml.session(no_binding) as s:
        assert s.error == "ImportError"


def test_process_memory_skips_lost_gpus_and_filters_pids() -> None:
    fake = FakeNvml()
    assert nvml.process_memory(fake) == {10: 100, 11: 0}
    assert nvml.process_memory(fake, {10}, graphics=True) == {10: 105}


def test_shared_initialises_once(monkeypatch) -> None:
    monkeypatch.setattr(nvml, "_shared", {})
    fake = FakeNvml()
    assert nvml.shared(lambda: fake) is fake and nvml.shared(lambda: FakeNvml()) is fake
    assert fake.calls == ["init"]
