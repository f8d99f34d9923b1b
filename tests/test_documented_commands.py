"""The docs match the commands (issue 61 item 3): every `denoisesum` command line that the README
and docs/*.md show names a command that exists and only options it takes, and parses (run with
--help appended, which parses the line and checks every option's value first); every option
they name in prose is one a command takes; every command's --help reads at 80 columns (no
description squeezed into a column of a few words)."""

from __future__ import annotations

import re
import shlex
from pathlib import Path

import pytest
import typer
from typer.testing import CliRunner

from denoisesum.cli import app

ROOT = Path(__file__).resolve().parents[1]
DOCS = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]
FENCE = re.compile(r"^```.*?$(.*?)^```", re.M | re.S)
# a shell line that runs the command: denoisesum ..., python -m denoisesum.cli ..., torchrun ...
RUNS = re.compile(r"^(?:\w+=\S*\s+)*(?:denoisesum|\S.* -m denoisesum\.cli)\s+(?P<args>[a-z].*)$")
INLINE = re.compile(r"`(?:\$ )?denoisesum (?P<args>[a-z][^`]*)`")


def shell_lines(text: str) -> list[str]:
    """The lines of the fenced blocks, `\\`-continued lines joined, prompts dropped."""
    lines: list[str] = []
    for block in FENCE.findall(text):
        joined = re.sub(r"\\\n\s*", " ", block)
        lines += [line.strip().removeprefix("$ ") for line in joined.splitlines()]
    return lines


def documented() -> list[tuple[str, str, list[str], bool]]:
    """(file, line, argv after `denoisesum`, whether it is a whole line: in a code block, not
    a fragment quoted in prose) of every command line the docs show."""
    found = []
    for path in DOCS:
        text = path.read_text(encoding="utf-8")
        candidates = [(m["args"], True) for line in shell_lines(text) if (m := RUNS.search(line))]
        candidates += [(m["args"], False) for m in INLINE.finditer(text)]
        for args, whole in candidates:
            try:
                argv = shlex.split(args, comments=True)
            except ValueError:  # an unbalanced quote in prose: not a command line
                continue
            argv = [a for a in argv if a not in ("...", "…")]
            if argv:
                found.append((path.name, args, argv, whole))
    return found


COMMANDS = typer.main.get_command(app).commands
LINES = documented()


def test_the_docs_show_command_lines():
    shown = {argv[0] for _, _, argv, whole in LINES if whole}
    assert {"summarize", "fit", "evaluate", "serve", "train"} <= shown, shown


@pytest.mark.parametrize(
    ("doc", "line", "argv", "whole"), LINES, ids=[f"{d}:{a}" for d, a, _, _ in LINES]
)
def test_every_documented_command_line_exists_and_parses(doc, line, argv, whole):
    name = argv[0]
    assert name in COMMANDS, f"{doc}: `denoisesum {name}`: no such command"
    command = COMMANDS[name]
    takes = {"--help"} | {opt for p in command.params for opt in (*p.opts, *p.secondary_opts)}
    given = {a.split("=", 1)[0] for a in argv[1:] if a.startswith("-") and a != "-"}
    assert given <= takes, f"{doc}: `denoisesum {line}`: {sorted(given - takes)} not options"
    if not whole:  # a fragment quoted in prose (`denoisesum summarize --model`): names only
        return
    # --help last: the line's options are parsed (unknown ones, bad values refused) before the
    # help is shown; a file argument is not read
    done = CliRunner().invoke(app, [*argv, "--help"], terminal_width=80)
    assert done.exit_code == 0, f"{doc}: `denoisesum {line}`: {done.output}"


OTHER_PROGRAMS = re.compile(r"\bdask |torchrun|python -m |\.py\b|\bpip ")


def prose_options(text: str) -> set[str]:
    """The options quoted in prose (`--explain`), those of other programs' command lines
    (`dask worker ... --nthreads 1`) left out."""
    prose = FENCE.sub("", text)
    return {
        option
        for span in re.findall(r"`([^`]*)`", prose)
        if not OTHER_PROGRAMS.search(span)
        for option in re.findall(r"(?<![\w-])(--[a-z][a-z0-9-]*)", span)
    }


def test_every_option_the_docs_name_exists():
    takes = {"--help", "--version"} | {
        opt for c in COMMANDS.values() for p in c.params for opt in (*p.opts, *p.secondary_opts)
    }
    named = {doc.name: prose_options(doc.read_text(encoding="utf-8")) - takes for doc in DOCS}
    assert {doc: options for doc, options in named.items() if options} == {}


@pytest.mark.parametrize("name", sorted(COMMANDS))
def test_help_reads_at_80_columns(name):
    """Every description line in `denoisesum NAME --help` at 80 columns has room: at least 40
    columns (summarize's help was 241 lines of 17-column descriptions)."""
    done = CliRunner().invoke(app, [name, "--help"], terminal_width=80)
    assert done.exit_code == 0, done.output
    lines = done.output.splitlines()
    assert all(len(line) <= 80 for line in lines), [line for line in lines if len(line) > 80]
    options = lines[next(i for i, line in enumerate(lines) if line == "Options:") + 1 :]
    starts = {len(line) - len(line.lstrip()) for line in options if line.startswith("    ")}
    assert max(starts, default=0) <= 40, f"descriptions start at column {max(starts)}"
