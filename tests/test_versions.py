"""vLLM versions: PEP 440 order, local labels, and the recipes' "nightly"."""

from __future__ import annotations

from packaging.version import Version

from vllm_deploy_wizard.common import versions


def test_parse_installed_and_free_text() -> None:
    assert versions.parse("0.32.0+cpu") == Version("0.32.0+cpu")
    assert versions.parse("vllm 0.10") == Version("0.10")
    assert versions.parse("nightly") is None and versions.parse("") is None and versions.parse("no") is None


def test_highest_knows_nightly_and_numeric_order() -> None:
    assert versions.highest(["0.9.2", "0.11.0", "0.10.1"]) == "0.11.0"
    assert versions.highest(["0.21.0", "nightly", "0.11.0"]) == "nightly"
    assert versions.highest([]) is None


def test_at_least_ignores_local_labels() -> None:
    assert versions.at_least("0.32.0+cpu", "0.32.0") is True
    assert versions.at_least("0.10.2", "0.11.0") is False
    assert versions.at_least("0.11.0rc1", "0.11.0") is False


def test_nightly_needs_a_dev_build_and_is_undecided_for_a_release() -> None:
    assert versions.at_least("0.11.1.dev12+g3ab", "nightly") is True
    assert versions.at_least("0.11.0", "nightly") is None
    assert versions.at_least("garbage", "0.1") is None
