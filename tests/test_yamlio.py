"""YAML loading: the same data as safe_load, duplicate keys refused with both lines."""

from __future__ import annotations

import pytest
import yaml

from vllm_deploy_wizard.common import yamlio

DOC = """\
name: single_node_tp
env:
  A: "1"
  PYTHONHASHSEED: 0
args: [--x, '--y z']
date: 2026-08-21
"""


def test_data_equals_safe_load() -> None:
    assert yamlio.load(DOC) == yaml.safe_load(DOC)
    assert yamlio.load(DOC.encode()) == yaml.safe_load(DOC)


def test_duplicate_key_is_refused_with_both_lines() -> None:
    text = "model:\n  base_args: [a]\n  env: {}\n  base_args: [b]\n"
    with pytest.raises(yamlio.DuplicateKeyError) as exc:
        yamlio.load(text)
    assert yamlio.error_message("r.yaml", exc.value) == (
        "r.yaml:4: invalid YAML: duplicate key `base_args` (first `base_args` at line 2)")


def test_duplicate_in_a_nested_flow_mapping() -> None:
    with pytest.raises(yaml.YAMLError) as exc:
        yamlio.load("a:\n  - {k: 1, k: 2}\n")
    assert yamlio.error_message("f.yaml", exc.value).startswith("f.yaml:2: invalid YAML: duplicate key `k`")


def test_merge_keys_may_override() -> None:
    text = "base: &b {x: 1, y: 2}\nderived:\n  <<: *b\n  y: 3\n"
    assert yamlio.load(text)["derived"] == {"x": 1, "y": 3}


def test_same_key_in_sibling_mappings_is_fine() -> None:
    assert yamlio.load("a: {k: 1}\nb: {k: 2}\n") == {"a": {"k": 1}, "b": {"k": 2}}


def test_syntax_error_names_file_and_line(tmp_path) -> None:
    path = tmp_path / "bad.yaml"
    path.write_text("a: 1\nb: [unclosed\n")
    with pytest.raises(yaml.YAMLError) as exc:
        yamlio.load_file(path)
    message = yamlio.error_message(path, exc.value)
    assert message.startswith(f"{path}:") and "invalid YAML" in message


def test_compose_gives_lines() -> None:
    node = yamlio.compose("a: 1\nb:\n  c: 2\n")
    assert [k.start_mark.line + 1 for k, _ in node.value] == [1, 2]
