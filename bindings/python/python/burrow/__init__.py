"""burrow: versioned, forkable sandboxes for AI agents, in-process.

Every tool call (a shell command, a file read or write, an edit) runs as a WASI component
against a virtual filesystem persisted in a SQLite store, and is one atomic version of its
session. Nothing stays in memory between calls: a session is resumed from any process by
opening the same store, forked in O(1), undone, diffed.

>>> import burrow
>>> sb = burrow.Sandbox("agent.db")
>>> s = sb.create("analysis")
>>> s.sh("echo hello > notes.md && wc -c notes.md").stdout
'6 notes.md\\n'
>>> a, b = s.fork(2)

The store is the CLI's own format: ``burrow sh analysis 'cat notes.md' --store agent.db``
sees the same session. Every method releases the GIL while it runs, so threads work on
different sessions in parallel; :mod:`burrow.aio` has the asyncio variants.
"""

from __future__ import annotations

import json
import os
from dataclasses import dataclass, field
from datetime import datetime, timezone
from typing import Any, Iterator, Mapping, Optional, Sequence, Union

from . import _burrow, errors
from .errors import (
    BurrowError,
    CallFailed,
    CallTimeout,
    Conflict,
    FileNotFound,
    InvalidInput,
    IsADirectory,
    NotADirectory,
    ToolError,
    UnknownSession,
)

__version__ = _burrow.BURROW_VERSION

#: The tool families a session speaks: Managed Agents' ``agent_toolset_20260401``, Claude
#: Code's tools, the Messages API client tools (``bash``, ``str_replace_based_edit_tool``),
#: and the memory tool (``memory_20250818``).
FAMILIES = ("agent-toolset", "claude-code", "api", "memory")

PathLike = Union[str, "os.PathLike[str]"]
#: What names a point in history: a session (its head), a session key, or a version number.
Target = Union["Session", str, int]


def _time(ns: Optional[int]) -> Optional[datetime]:
    if ns is None:
        return None
    return datetime.fromtimestamp(ns / 1e9, tz=timezone.utc)


@dataclass(frozen=True)
class SessionInfo:
    """What ``burrow session ls`` shows of a session."""

    id: str
    name: Optional[str]
    #: The session it was forked from.
    parent: Optional[str]
    #: The version its head is at.
    version: int
    created: datetime
    last_active: Optional[datetime]
    #: Bytes of files and number of entries in its workspace.
    bytes: int
    entries: int
    #: Settings fixed at creation (environment, default family, limits, network policy).
    settings: Mapping[str, Any] = field(default_factory=dict)

    @classmethod
    def _from(cls, d: Mapping[str, Any]) -> "SessionInfo":
        return cls(
            id=d["id"],
            name=d.get("name"),
            parent=d.get("parent"),
            version=d["version"],
            created=_time(d["created"]),  # type: ignore[arg-type]
            last_active=_time(d.get("last_active")),
            bytes=d["bytes"],
            entries=d["entries"],
            settings=d.get("settings") or {},
        )


@dataclass(frozen=True)
class Result:
    """The outcome of a shell command: its exit code and output, and the versions it went
    from and to. Unpacks as ``exit_code, stdout, stderr``."""

    exit_code: int
    stdout: str
    stderr: str
    version_before: int = 0
    version_after: int = 0
    #: With a CPU budget: the fuel units the command used (else None).
    fuel: Optional[int] = None

    @property
    def ok(self) -> bool:
        """Whether the command exited with 0."""
        return self.exit_code == 0

    def __iter__(self) -> Iterator[Any]:
        return iter((self.exit_code, self.stdout, self.stderr))


@dataclass(frozen=True)
class Version:
    """One version of a session (``burrow history``)."""

    version: int
    parent: Optional[int]
    time: datetime
    #: What made it (the tool's name, ``upload path``, ``undo``...).
    message: str
    bytes: int
    entries: int


@dataclass(frozen=True)
class Event:
    """One entry of a session's event log (``burrow log``): a tool call, a fork, an undo..."""

    seq: int
    session: str
    time: datetime
    kind: str
    version_before: Optional[int]
    version_after: Optional[int]
    data: Any


@dataclass(frozen=True)
class Change:
    """One path that differs between two versions."""

    path: str
    #: ``added``, ``removed`` or ``modified``.
    change: str
    #: ``file``, ``dir`` or ``symlink``.
    kind: str


@dataclass(frozen=True)
class Diff:
    """The changes from version ``a`` to version ``b``."""

    a: int
    b: int
    changes: Sequence[Change]
    _core: Any = field(repr=False, compare=False, default=None)
    _all: bool = field(repr=False, compare=False, default=False)

    @property
    def patch(self) -> str:
        """A unified diff of the text files that changed (``burrow diff`` prints this)."""
        return self._core.patch(f"v{self.a}", f"v{self.b}", self._all)

    def __len__(self) -> int:
        return len(self.changes)

    def __iter__(self) -> Iterator[Change]:
        return iter(self.changes)


@dataclass(frozen=True)
class MergeConflict:
    """A path a merge could not merge cleanly."""

    path: str
    #: ``content``, ``binary``, ``modify/delete``, ``file/directory``, ``symlink``, ``mode``,
    #: ``rename/delete`` or ``rename/rename``.
    reason: str
    #: Conflicted regions written with diff3-style markers (``content`` conflicts only).
    regions: Optional[int] = None


@dataclass(frozen=True)
class Merge:
    """What :meth:`Session.merge` did (``burrow merge --json``)."""

    source: str
    into: str
    base: int
    #: The destination's head the merge started from.
    ours: int
    #: The source's head that was merged.
    theirs: int
    #: The destination's head afterwards.
    version: int
    #: Whether a new version was made (False with ``no_commit`` or nothing to merge).
    committed: bool
    merged: Sequence[str]
    conflicts: Sequence[MergeConflict]

    @property
    def clean(self) -> bool:
        """No conflicts."""
        return not self.conflicts


@dataclass(frozen=True)
class ExportStats:
    files: int
    dirs: int
    symlinks: int
    bytes: int


@dataclass(frozen=True)
class GcReport:
    versions_deleted: int
    objects_deleted: int
    bytes_freed: int
    objects_kept: int
    #: Pages of small calls moved from the catalog into object storage (0 unless the
    #: store keeps its objects there).
    pages_offloaded: int = 0


@dataclass(frozen=True)
class FsckReport:
    clean: bool
    problems: Sequence[str]
    workspaces: int
    versions: int
    objects: int


def _key(target: Target) -> str:
    if isinstance(target, Session):
        return target.id
    if isinstance(target, bool):
        raise InvalidInput(f"not a session or version: {target!r}")
    if isinstance(target, int):
        return f"v{target}"
    if isinstance(target, str):
        return target
    raise InvalidInput(f"not a session or version: {target!r}")


def _bytes(data: Union[str, bytes, bytearray, memoryview]) -> bytes:
    if isinstance(data, str):
        return data.encode("utf-8")
    return bytes(data)


def _block(block: Any) -> Mapping[str, Any]:
    """A ``tool_use`` block as a dict, from a dict or an Anthropic SDK model."""
    if isinstance(block, Mapping):
        return block
    for attr in ("model_dump", "to_dict"):
        f = getattr(block, attr, None)
        if callable(f):
            return f()
    raise InvalidInput(f"expected a tool_use block (a dict or an SDK block), got {type(block).__name__}")


class Sandbox:
    """An open burrow store: the sessions in it, created, found, collected and checked.

    ``store`` is the SQLite file (created if missing); by default the CLI's own store,
    ``$XDG_DATA_HOME/burrow/burrow.db`` (``~/.local/share/burrow/burrow.db``). The process
    environment is read as the CLI reads it (``BURROW_CACHE``, ``BURROW_TOOLS``,
    ``BURROW_NET_*``). Many ``Sandbox`` objects and processes may open one store at once.
    """

    def __init__(self, store: Optional[PathLike] = None) -> None:
        self._core = _burrow.Core(os.fspath(store) if store is not None else None)

    @property
    def path(self) -> str:
        """The store file."""
        return os.fspath(self._core.path)

    def create(
        self,
        name: Optional[str] = None,
        *,
        allow_net: Sequence[str] = (),
        secrets: Sequence[str] = (),
        env: Optional[Mapping[str, str]] = None,
        family: Optional[str] = None,
        timeout: Optional[float] = None,
        memory_mib: Optional[int] = None,
        cpu_budget: Optional[int] = None,
        deterministic: bool = False,
    ) -> "Session":
        """Creates an empty session.

        ``allow_net`` takes ``burrow session new --allow-net`` rules (``pypi.org``,
        ``*.github.com``, ``@pypi``...; none: no network). ``secrets`` takes
        ``NAME@HOST[,HOST...]``: the value of this process's environment variable ``NAME`` is
        sent only to those hosts, the session sees a placeholder. ``env`` is the environment of
        its commands, ``family`` the tool family calls default to, ``timeout`` (seconds),
        ``memory_mib`` and ``cpu_budget`` (wasmtime fuel units, about one per WebAssembly
        instruction; past it the call fails with :class:`CallFailed` and is rolled back) the
        limits of each call. A ``deterministic`` session's calls take their clocks, random
        numbers and network replies from values their events record, so
        :meth:`Session.replay` runs them again with identical results.
        """
        if isinstance(allow_net, str) or isinstance(secrets, str):
            raise InvalidInput("allow_net and secrets take a list of strings")
        info = self._core.create(
            name,
            list(allow_net),
            list(secrets),
            sorted((env or {}).items()),
            family,
            timeout,
            memory_mib,
            cpu_budget,
            deterministic,
        )
        return Session(self, SessionInfo._from(json.loads(info)))

    def session(self, id_or_name: str) -> "Session":
        """The session an id, a unique id prefix or a name designates."""
        sid = self._core.resolve(id_or_name)
        return Session(self, SessionInfo._from(json.loads(self._core.info(sid))))

    def sessions(self) -> "list[SessionInfo]":
        """Every session in the store."""
        return [SessionInfo._from(d) for d in json.loads(self._core.list())]

    def gc(self, *, keep_last: Optional[int] = None, grace: float = 600.0) -> GcReport:
        """Reclaims what no session needs any more (``burrow gc``): versions beyond the last
        ``keep_last`` of each session (default: keep all) and unreferenced objects older than
        ``grace`` seconds."""
        return GcReport(**json.loads(self._core.gc(keep_last, grace)))

    def fsck(self) -> FsckReport:
        """Checks the whole store (``burrow fsck``)."""
        return FsckReport(**json.loads(self._core.fsck()))

    def __repr__(self) -> str:
        return f"burrow.Sandbox({self.path!r})"


class Session:
    """A session: a workspace with its history, addressed by id. Holds nothing but its id:
    every call opens the session's head, runs, and commits one version."""

    def __init__(self, sandbox: Sandbox, info: SessionInfo) -> None:
        self.sandbox = sandbox
        self._core = sandbox._core
        self.id: str = info.id
        self.name: Optional[str] = info.name

    def info(self) -> SessionInfo:
        """The session's current info (version, size, last activity)."""
        return SessionInfo._from(json.loads(self._core.info(self.id)))

    # --- running -------------------------------------------------------------------------

    def sh(
        self,
        command: str,
        timeout: Optional[float] = None,
        *,
        stdin: Union[str, bytes, None] = None,
        cpu_budget: Optional[int] = None,
    ) -> Result:
        """Runs a shell command (burrow's bash) as one version. ``timeout`` in seconds
        replaces the session's limit; past it :class:`CallTimeout` is raised and the session
        is unchanged. ``cpu_budget`` (wasmtime fuel units) replaces the session's budget; past
        it :class:`CallFailed` is raised and the session is unchanged, and within it the
        result's ``fuel`` is what the command used. A non-zero exit is not an error: it is in
        the result."""
        code, out, err, before, after, fuel = self._core.sh(
            self.id, command, _bytes(stdin or b""), timeout, cpu_budget
        )
        return Result(
            code,
            out.decode("utf-8", "replace"),
            err.decode("utf-8", "replace"),
            before,
            after,
            fuel,
        )

    def call(self, tool: str, input: Mapping[str, Any], family: str = "agent-toolset") -> "dict[str, Any]":
        """One tool call of a family, as the model would make it; returns the tool output
        (``{"content": [...], "is_error": bool}``)."""
        return json.loads(self._core.call(self.id, family, tool, json.dumps(input)))

    def _text(self, tool: str, input: Mapping[str, Any]) -> str:
        out = self.call(tool, input)
        text = "\n".join(c["text"] for c in out["content"] if c.get("type") == "text")
        if out["is_error"]:
            raise ToolError(text)
        return text

    # --- files -------------------------------------------------------------------------------

    def read(self, path: str) -> str:
        """A text file's contents at the head (absolute under /workspace, or relative to it).
        Makes no version."""
        return self.read_bytes(path).decode("utf-8")

    def read_bytes(self, path: str) -> bytes:
        """A file's bytes at the head. Makes no version."""
        return self._core.read(self.id, path)

    def write(self, path: str, data: Union[str, bytes]) -> int:
        """Writes a file (parent directories created) as one version; returns the version."""
        return self._core.write(self.id, path, _bytes(data))

    def edit(self, path: str, old: str, new: str, *, replace_all: bool = False) -> str:
        """Replaces the exact text ``old`` (unique unless ``replace_all``) with ``new``, as the
        agent toolset's ``edit``; raises :class:`ToolError` with the tool's message when it
        refuses."""
        return self._text(
            "edit",
            {"file_path": path, "old_string": old, "new_string": new, "replace_all": replace_all},
        )

    def glob(self, pattern: str, path: Optional[str] = None) -> "list[str]":
        """Paths matching a relative glob (``**/*.py``), newest first (at most 200)."""
        args = {"pattern": pattern}
        if path is not None:
            args["path"] = path
        text = self._text("glob", args)
        return [] if text == "no matches" else text.split("\n")

    def grep(self, pattern: str, path: Optional[str] = None) -> str:
        """Lines matching a regular expression, as the agent toolset's ``grep`` prints them
        (``path:line:text``, ``no matches`` when none)."""
        args = {"pattern": pattern}
        if path is not None:
            args["path"] = path
        return self._text("grep", args)

    def export(self, path: PathLike) -> ExportStats:
        """Writes the session's tree to a host directory, or a tar file if ``path`` ends in
        ``.tar``."""
        return ExportStats(**json.loads(self._core.export(self.id, os.fspath(path))))

    # --- history -----------------------------------------------------------------------------

    def fork(self, n: int = 1) -> "list[Session]":
        """``n`` copies of the session as it is now, in O(1) each (no data is copied)."""
        ids = self._core.fork(self.id, n)
        return [Session(self.sandbox, SessionInfo._from(json.loads(self._core.info(i)))) for i in ids]

    def diff(self, other: Target, *, all: bool = False) -> Diff:
        """The changes from ``other`` (a session, a session key or a version number) to this
        session's head, as ``git diff OTHER`` reads. ``all`` includes the system area
        (``/tmp``, ``/memories``)."""
        a, b, rows = self._core.diff(_key(other), self.id, all)
        return Diff(a, b, [Change(**r) for r in json.loads(rows)], self._core, all)

    def replay(
        self, *, from_version: Optional[Union[int, str]] = None, into: Optional[str] = None
    ) -> dict:
        """Runs this session's recorded calls (those made from ``from_version`` on; default:
        all) again in a new fork named ``into``, each from the tree it started from, as
        ``burrow replay`` does. The report: ``{"session", "into", "calls": [{"seq", "tool",
        "summary", "deterministic", "recorded", "replayed", "identical", "difference"?}],
        "identical", "differ"}``; a deterministic session's replay has ``differ == 0``."""
        return json.loads(
            self._core.replay(
                self.id,
                None if from_version is None else _key(from_version),
                into,
            )
        )

    def merge(
        self,
        into: Optional[Target] = None,
        *,
        base: Optional[Union[int, str]] = None,
        no_commit: bool = False,
    ) -> Merge:
        """Merges this session's changes since ``base`` (default: the version it was forked
        at, or last merged) into ``into`` (default: the session it was forked from) as one new
        version of ``into``, three-way as ``burrow merge`` does. Conflicted text files get
        diff3-style markers; ``no_commit`` only reports."""
        raw = json.loads(
            self._core.merge(
                self.id,
                None if into is None else _key(into),
                None if base is None else _key(base),
                no_commit,
            )
        )
        return Merge(
            source=raw["source"],
            into=raw["into"],
            base=raw["base"],
            ours=raw["ours"],
            theirs=raw["theirs"],
            version=raw["version"],
            committed=raw["committed"],
            merged=list(raw["merged"]),
            conflicts=[MergeConflict(**c) for c in raw["conflicts"]],
        )

    def undo(self) -> int:
        """Moves the session back to the tree before its last change, as a new version;
        returns the version whose tree it now has."""
        return self._core.undo(self.id)

    def checkout(self, version: Union[int, str]) -> int:
        """Moves the session to the tree of ``version`` (a number, ``v42``, a label or
        another session), as a new version; returns it."""
        return self._core.checkout(self.id, _key(version))

    def label(self, name: str) -> int:
        """Names the session's current version; returns it."""
        return self._core.label(self.id, name)

    def history(self, limit: int = 100) -> "list[Version]":
        """The session's versions, newest first."""
        return [
            Version(
                version=v["version"],
                parent=v["parent"],
                time=_time(v["time"]),  # type: ignore[arg-type]
                message=v["message"],
                bytes=v["bytes"],
                entries=v["entries"],
            )
            for v in json.loads(self._core.history(self.id, limit))
        ]

    def log(self, kind: Optional[str] = None, *, after: int = 0, limit: int = 1000) -> "list[Event]":
        """The session's events, oldest first: ``tool``, ``upload``, ``forked``, ``undo``,
        ``labelled``, ``net``...; ``kind`` keeps one kind."""
        return [
            Event(
                seq=e["seq"],
                session=e["session"],
                time=_time(e["time"]),  # type: ignore[arg-type]
                kind=e["kind"],
                version_before=e["version_before"],
                version_after=e["version_after"],
                data=e["data"],
            )
            for e in json.loads(self._core.log(self.id, after, limit, kind))
        ]

    def delete(self) -> None:
        """Deletes the session (its unique data is reclaimed by :meth:`Sandbox.gc`)."""
        self._core.delete(self.id)

    # --- the Anthropic SDK -------------------------------------------------------------------

    def tools(self, family: str = "api") -> "list[dict[str, Any]]":
        """The ``tools`` of a Messages API request for a family: for ``api``, the
        Anthropic-defined ``bash_20250124`` and ``text_editor_20250728``; for ``memory``,
        ``memory_20250818``; for the others, custom tools with their input schemas."""
        return json.loads(_burrow.Core.tools(family))

    def run_tool_use(self, block: Any, family: str = "api") -> "dict[str, Any]":
        """Runs a ``tool_use`` block (a dict or the SDK's block) and returns the
        ``tool_result`` block to send back. The tool runs in ``family`` when the family has
        it, else in the family that does (so ``memory`` and the agent toolset's ``read`` work
        beside the api family's ``bash``); an unknown name gets an ``is_error`` result."""
        return json.loads(self._core.tool_use(self.id, family, json.dumps(_block(block))))

    def __repr__(self) -> str:
        name = f" ({self.name})" if self.name else ""
        return f"<burrow.Session {self.id}{name}>"

    def __eq__(self, other: object) -> bool:
        return (
            isinstance(other, Session)
            and other.id == self.id
            and other.sandbox.path == self.sandbox.path
        )

    def __hash__(self) -> int:
        return hash(self.id)


def __getattr__(name: str) -> Any:
    # MemoryTool needs the Anthropic SDK; importing burrow must not.
    if name == "MemoryTool":
        from .memory import MemoryTool

        return MemoryTool
    raise AttributeError(f"module 'burrow' has no attribute {name!r}")


__all__ = [
    "FAMILIES",
    "Sandbox",
    "Session",
    "SessionInfo",
    "Result",
    "Version",
    "Event",
    "Change",
    "Diff",
    "Merge",
    "MergeConflict",
    "ExportStats",
    "GcReport",
    "FsckReport",
    "MemoryTool",
    *errors.__all__,
]
