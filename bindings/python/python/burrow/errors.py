"""The exceptions burrow raises. Messages are the CLI's, word for word.

Every class derives from :class:`BurrowError`, and also from the builtin a Python caller
would catch for the same condition (``LookupError`` for an unknown session,
``FileNotFoundError`` for a missing file, ``TimeoutError`` for a call past its limit).
"""

from __future__ import annotations


class BurrowError(Exception):
    """Any error burrow reports (the base of all the others)."""


class UnknownSession(BurrowError, LookupError):
    """No session, or more than one, matches the id, prefix or name given."""


class InvalidInput(BurrowError, ValueError):
    """An argument burrow refuses (a bad name, network rule, path outside the workspace...)."""


class FileNotFound(BurrowError, FileNotFoundError):
    """The path does not exist in the session."""


class IsADirectory(BurrowError, IsADirectoryError):
    """The path is a directory where a file was expected."""


class NotADirectory(BurrowError, NotADirectoryError):
    """A component of the path is not a directory."""


class Conflict(BurrowError):
    """The session moved while the call ran (another process wrote to it); retry."""


class CallFailed(BurrowError):
    """The call trapped or hit a limit (memory, output, quota, CPU budget); the session is
    unchanged."""


class CallTimeout(CallFailed, TimeoutError):
    """The call ran past its wall-clock limit; the session is unchanged."""


class ToolError(BurrowError):
    """A tool answered with ``is_error`` (e.g. ``edit``'s old text was not found).

    The message is the tool's own text, as the model would see it; the call still made its
    version and its event, as every tool call does.
    """


__all__ = [
    "BurrowError",
    "UnknownSession",
    "InvalidInput",
    "FileNotFound",
    "IsADirectory",
    "NotADirectory",
    "Conflict",
    "CallFailed",
    "CallTimeout",
    "ToolError",
]
