"""Usage errors typer finds itself (issue 33): a bad option value, an unknown option, a missing
value or argument is one plain line naming the option and what it takes, never typer's boxed
usage block. Through the real command (main(), as installed)."""

from __future__ import annotations

import pytest

from conftest import refused, run_cli


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--beam", "abc"], "--beam: must be a whole number of at least 1 (got 'abc')"),
        (["--beam", "0"], "--beam: must be a whole number of at least 1 (got '0')"),
        # the flags older than --set are the settings they stand for, checked by the
        # settings' bounds
        (["--restate-overlap", "2"], "--restate-overlap 2.0 must be between 0 and 1"),
        (["--opinion-weight", "nan"], "--opinion-weight nan must be between 0 and 100"),
        (["--bogus", "1"], "no such option: --bogus"),
    ],
)
def test_a_bad_option_is_one_plain_line(tmp_path, args, message):
    done = run_cli("summarize", tmp_path / "none.jsonl", *args)
    assert refused(done, message), done.stderr
    assert len(done.stderr.strip().splitlines()) == 1, done.stderr
    assert "╭" not in done.stderr and "Usage:" not in done.stderr


def test_an_option_without_its_value_is_one_plain_line(tmp_path):
    done = run_cli("summarize", tmp_path / "none.jsonl", "--beam")
    assert refused(done, "option '--beam' requires an argument"), done.stderr


def test_a_missing_argument_and_an_unknown_command_are_one_line():
    assert refused(run_cli("summarize"), "missing argument 'INPUT'")
    assert refused(run_cli("summarise"), "no such command 'summarise'")


def test_help_and_no_arguments_still_show_the_help():
    done = run_cli("summarize", "--help")
    assert done.returncode == 0 and "--beam" in done.stdout
    bare = run_cli()
    assert "Usage:" in bare.stdout + bare.stderr and "summarize" in bare.stdout + bare.stderr
