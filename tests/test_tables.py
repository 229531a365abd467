"""CLI tables: columns sized to content, no trailing blanks, colour only for a terminal."""

from __future__ import annotations

import io

from vllm_deploy_wizard.common import tables


def test_columns_align_to_the_widest_cell() -> None:
    text = tables.render([["vllm", "READY", "pid=12"], ["router-long-name", "FATAL", "pid=-"]])
    assert text.splitlines() == ["  vllm             READY pid=12", "  router-long-name FATAL pid=-"]


def test_empty_cells_leave_no_trailing_blanks() -> None:
    lines = tables.render([["a", "", ""], ["bb", "x", ""]], indent=0).splitlines()
    assert lines == ["a", "bb x"]


def test_colour_styles_known_values_only() -> None:
    plain = tables.render([["p", "FATAL", "FATAL-ish"]])
    coloured = tables.render([["p", "FATAL", "FATAL-ish"]], colour=True)
    assert "\x1b[" not in plain and "\x1b[1;31mFATAL\x1b[0m" in coloured and "FATAL-ish" in coloured


def test_print_table_is_plain_for_a_pipe(monkeypatch) -> None:
    out = io.StringIO()
    tables.print_table([["vllm", "READY"]], out=out)
    assert out.getvalue() == "  vllm READY\n"
    tty = io.StringIO()
    tty.isatty = lambda: True  # type: ignore[method-assign]  # a StringIO that claims to be a terminal
    monkeypatch.setenv("NO_COLOR", "1")
    tables.print_table([["vllm", "READY"]], out=tty)
    assert "\x1b[" not in tty.getvalue()
