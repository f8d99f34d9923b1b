"""The `denoisesum` command: the Typer app, --version, and `main`, which says every error in
one line (a usage error as the option, what it takes and what was given; a missing extra as the
command to install it; a system error with its file) and exits non-zero."""

from __future__ import annotations

import contextlib
import os
import re
import sys
from typing import Annotated

import typer

from denoisesum.errors import DenoiseSumError
from denoisesum.extras import check_command, install_hint, missing_extra
from denoisesum.version import __version__

app = typer.Typer(
    help="Unsupervised opinion summarization by noising and denoising (DenoiseSum).",
    no_args_is_help=True,
    pretty_exceptions_enable=False,
    add_completion=False,
    rich_markup_mode=None,  # click's help: a description beside a short option, under a long one
    context_settings={"max_content_width": 100},
)


def _version(value: bool) -> None:
    if value:
        typer.echo(f"denoisesum {__version__}")
        raise typer.Exit()


@app.callback()
def _main(
    version: Annotated[
        bool,
        typer.Option(
            "--version", callback=_version, is_eager=True, help="Show the version and exit."
        ),
    ] = False,
) -> None:
    """Unsupervised opinion summarization by noising and denoising (DenoiseSum)."""


# what typer says of a path it checked ("path 'x' is not readable."), as this package says it
PATH_PROBLEMS = {
    "is not readable": "permission denied",
    "is not writable": "permission denied",
    "does not exist": "no such file",
    "is a directory": "is a directory, not a file",
    "is a file": "is a file, not a directory",
}
PATH_PROBLEM = re.compile(r"'(?P<path>.*)' (?P<problem>" + "|".join(PATH_PROBLEMS) + r")\.$")


def _warning_line(message, category, filename, lineno, line=None) -> str:
    return f"warning: {message}\n"  # one line, as the CLI's other messages


def main() -> None:
    import warnings

    warnings.formatwarning = _warning_line
    try:
        try:
            if "--help" not in sys.argv:  # a command's help needs no extra
                check_command(_command())
            # not standalone: typer's boxed usage errors come here, to be said in one line
            code = app(standalone_mode=False)
        except typer.TyperException as exc:  # click's errors (typer's public base of them)
            if not _is_help(exc):
                _fail(_usage_line(exc))
            exc.show()  # `denoisesum` alone: the help, as typer shows it
            code = exc.exit_code
        finally:
            if sys.stdout is not None:  # None when started with stdout closed (>&-)
                sys.stdout.flush()  # a full disk or a closed pipe: reported here, not at exit
    except DenoiseSumError as exc:
        _fail(str(exc))
    except ModuleNotFoundError as exc:  # a package of an extra that is not installed
        _fail(_missing_extra(exc))
    except OSError as exc:  # the system refused: no permission, a full disk, a closed pipe
        _fail(_system_error(exc))
    if isinstance(code, int) and code:  # typer.Exit(n), Ctrl-C (130)
        sys.exit(code)


def _is_help(exc: typer.TyperException) -> bool:
    """Whether the error is a command's help (no arguments given to one that shows its help
    then)."""
    ctx = getattr(exc, "ctx", None)
    return ctx is not None and exc.format_message() == ctx.get_help()


def _command() -> str:
    """The command named on the command line ('summarize'; '' for none)."""
    return next((arg for arg in sys.argv[1:] if not arg.startswith("-")), "")


def _missing_extra(exc: ModuleNotFoundError) -> str:
    """'denoisesum baseline needs the train extra: pip install ...'; a module no extra brings
    is a real error, raised as it is."""
    extra = missing_extra(exc)
    if extra is None:
        raise exc
    return install_hint(f"denoisesum {_command()}".strip(), extra)


def _usage_line(exc) -> str:
    """A usage error typer/click found (a bad option value, an unknown option, a missing
    argument) as one line: the option, what it takes (type and range), and what was given."""
    param = getattr(exc, "param", None)
    missing = hasattr(exc, "param_type")  # click's MissingParameter, a BadParameter
    if not isinstance(exc, typer.BadParameter) or missing or param is None:
        message = exc.format_message()
        return message[:1].lower() + message[1:]
    name = max(param.opts, key=len) if getattr(param, "opts", None) else param.human_readable_name
    found = PATH_PROBLEM.search(getattr(exc, "message", ""))
    if found:  # typer checked a path option's file: what happened, with the path
        return f"{found['path']}: {PATH_PROBLEMS[found['problem']]} ({name})"
    given = _given(exc)
    return f"{name}: must be {_takes(param)}" + (f" (got {given!r})" if given is not None else "")


def _takes(param) -> str:
    """What an option takes, in words: 'a whole number between 1 and 1000'."""
    desc = getattr(param, "type_descriptor", None)
    annotation = getattr(desc, "annotation", None)
    if getattr(desc, "is_choice", False) and desc.choices:
        return "one of " + ", ".join(str(getattr(c, "value", c)) for c in desc.choices)
    kind = {int: "a whole number", float: "a number", bool: "true or false"}.get(
        annotation, "a valid value"
    )
    low, high = getattr(param, "min", None), getattr(param, "max", None)
    if low is not None and high is not None:
        return f"{kind} between {low:g} and {high:g}"
    if low is not None:
        return f"{kind} of at least {low:g}"
    if high is not None:
        return f"{kind} of at most {high:g}"
    return kind


def _given(exc) -> object:
    """The value typer refused (its validation error holds it), or None."""
    errors = getattr(exc.__cause__, "errors", None)
    if callable(errors):
        with contextlib.suppress(Exception):
            return errors()[0]["input"]
    return None


def _fail(message: str) -> None:
    typer.secho(f"error: {message}", fg=typer.colors.RED, err=True)
    sys.exit(2)


def _system_error(exc: OSError) -> str:
    """An OSError as one line naming its file; without one (a write to stdout), what failed.
    Standard output is pointed at /dev/null so that Python's own flush at exit stays quiet."""
    from denoisesum.io import WRITE_ERRNOS

    if exc.filename is not None:
        return f"{exc.filename}: {exc.strerror or exc}"
    if exc.errno in WRITE_ERRNOS:
        with contextlib.suppress(OSError, ValueError, AttributeError):
            os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return f"cannot write the output: {exc.strerror or exc}"
    return str(exc)
