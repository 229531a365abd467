"""``vllm-wizard logs`` shows a log as a terminal would have: a progress bar's ``\\r`` updates as one
line (its newest state), ANSI colour codes stripped unless ``--color``, long lines whole."""

from __future__ import annotations

from vllm_deploy_wizard.commands.logs import shown_tail

GREEN, RESET = "\x1b[32m", "\x1b[0m"


def _write(path, lines):
    path.write_bytes(("\n".join(lines) + "\n").encode())


def test_progress_updates_show_as_their_newest_state_and_count_once(tmp_path):
    log = tmp_path / "vllm.log"
    bar = "Loading safetensors checkpoint shards: {:3d}% Completed | {}/4"
    _write(log, ["INFO engine up", "\r", *(bar.format(p, p // 25) + "\r" for p in (0, 25, 50, 75)),
                 bar.format(100, 4), "INFO weights loaded"])
    lines, hidden = shown_tail(log, 2)
    assert lines == [bar.format(100, 4), "INFO weights loaded"] and hidden == 0
    assert shown_tail(log, 10)[0] == ["INFO engine up", bar.format(100, 4), "INFO weights loaded"]
    # a log written before the pump split at \r: the updates mashed into one line
    _write(log, ["INFO engine up", "\r".join(bar.format(p, p // 25) for p in (0, 50, 100))])
    assert shown_tail(log, 5)[0] == ["INFO engine up", bar.format(100, 4)]


def test_ansi_codes_are_stripped_unless_color_and_long_lines_stay_whole(tmp_path):
    log = tmp_path / "vllm.log"
    long = "x" * 200_000 + " END"
    _write(log, [f"{GREEN}INFO{RESET} 12-01 10:00:00 [api_server.py:1] up", long])
    assert shown_tail(log, 5)[0] == ["INFO 12-01 10:00:00 [api_server.py:1] up", long]
    assert shown_tail(log, 5, color=True)[0][0] == f"{GREEN}INFO{RESET} 12-01 10:00:00 [api_server.py:1] up"


def test_logs_color_flag_is_accepted_by_the_cli():
    from vllm_deploy_wizard.cli import build_parser

    args = build_parser().parse_args(["logs", "run-x", "--color", "-n", "3"])
    assert args.color is True and args.lines == 3
    assert build_parser().parse_args(["logs"]).color is False
