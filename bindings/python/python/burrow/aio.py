"""asyncio variants: the same API as :mod:`burrow`, with every call run off the event loop.

Each method runs the synchronous call on a worker thread (``asyncio.to_thread``); burrow
releases the GIL for the whole call, so many sessions run in parallel while the loop stays
free. Calls on one session are queued in order, as with threads.

>>> sb = burrow.aio.AsyncSandbox("agent.db")
>>> s = await sb.create("analysis")
>>> r = await s.sh("ls")
"""

from __future__ import annotations

import asyncio
import functools
from typing import Any, Callable, Mapping, Optional, TypeVar, Union

from . import (
    Diff,
    Event,
    ExportStats,
    FsckReport,
    GcReport,
    Merge,
    PathLike,
    Result,
    Sandbox,
    Session,
    SessionInfo,
    Target,
    Version,
)

T = TypeVar("T")


async def _off_loop(f: Callable[..., T], *args: Any, **kwargs: Any) -> T:
    return await asyncio.to_thread(functools.partial(f, *args, **kwargs))


class AsyncSandbox:
    """:class:`burrow.Sandbox` for asyncio. Opening the store is quick and done inline."""

    def __init__(self, store: Optional[PathLike] = None) -> None:
        self.sync = Sandbox(store)

    @property
    def path(self) -> str:
        return self.sync.path

    async def create(self, name: Optional[str] = None, **settings: Any) -> "AsyncSession":
        return AsyncSession(await _off_loop(self.sync.create, name, **settings))

    async def session(self, id_or_name: str) -> "AsyncSession":
        return AsyncSession(await _off_loop(self.sync.session, id_or_name))

    async def sessions(self) -> "list[SessionInfo]":
        return await _off_loop(self.sync.sessions)

    async def gc(self, *, keep_last: Optional[int] = None, grace: float = 600.0) -> GcReport:
        return await _off_loop(self.sync.gc, keep_last=keep_last, grace=grace)

    async def fsck(self) -> FsckReport:
        return await _off_loop(self.sync.fsck)


class AsyncSession:
    """:class:`burrow.Session` for asyncio; ``.sync`` is the synchronous session."""

    def __init__(self, session: Session) -> None:
        self.sync = session

    @property
    def id(self) -> str:
        return self.sync.id

    @property
    def name(self) -> Optional[str]:
        return self.sync.name

    async def info(self) -> SessionInfo:
        return await _off_loop(self.sync.info)

    async def sh(
        self,
        command: str,
        timeout: Optional[float] = None,
        *,
        stdin: Union[str, bytes, None] = None,
        cpu_budget: Optional[int] = None,
    ) -> Result:
        return await _off_loop(self.sync.sh, command, timeout, stdin=stdin, cpu_budget=cpu_budget)

    async def call(
        self, tool: str, input: Mapping[str, Any], family: str = "agent-toolset"
    ) -> "dict[str, Any]":
        return await _off_loop(self.sync.call, tool, input, family)

    async def read(self, path: str) -> str:
        return await _off_loop(self.sync.read, path)

    async def read_bytes(self, path: str) -> bytes:
        return await _off_loop(self.sync.read_bytes, path)

    async def write(self, path: str, data: Union[str, bytes]) -> int:
        return await _off_loop(self.sync.write, path, data)

    async def edit(self, path: str, old: str, new: str, *, replace_all: bool = False) -> str:
        return await _off_loop(self.sync.edit, path, old, new, replace_all=replace_all)

    async def glob(self, pattern: str, path: Optional[str] = None) -> "list[str]":
        return await _off_loop(self.sync.glob, pattern, path)

    async def grep(self, pattern: str, path: Optional[str] = None) -> str:
        return await _off_loop(self.sync.grep, pattern, path)

    async def export(self, path: PathLike) -> ExportStats:
        return await _off_loop(self.sync.export, path)

    async def fork(self, n: int = 1) -> "list[AsyncSession]":
        return [AsyncSession(s) for s in await _off_loop(self.sync.fork, n)]

    async def diff(self, other: Union[Target, "AsyncSession"], *, all: bool = False) -> Diff:
        if isinstance(other, AsyncSession):
            other = other.sync
        return await _off_loop(self.sync.diff, other, all=all)

    async def merge(
        self,
        into: Union[Target, "AsyncSession", None] = None,
        *,
        base: Optional[Union[int, str]] = None,
        no_commit: bool = False,
    ) -> Merge:
        if isinstance(into, AsyncSession):
            into = into.sync
        return await _off_loop(self.sync.merge, into, base=base, no_commit=no_commit)

    async def replay(
        self, *, from_version: Optional[Union[int, str]] = None, into: Optional[str] = None
    ) -> dict:
        return await _off_loop(self.sync.replay, from_version=from_version, into=into)

    async def undo(self) -> int:
        return await _off_loop(self.sync.undo)

    async def checkout(self, version: Union[int, str]) -> int:
        return await _off_loop(self.sync.checkout, version)

    async def label(self, name: str) -> int:
        return await _off_loop(self.sync.label, name)

    async def history(self, limit: int = 100) -> "list[Version]":
        return await _off_loop(self.sync.history, limit)

    async def log(
        self, kind: Optional[str] = None, *, after: int = 0, limit: int = 1000
    ) -> "list[Event]":
        return await _off_loop(self.sync.log, kind, after=after, limit=limit)

    async def delete(self) -> None:
        await _off_loop(self.sync.delete)

    def tools(self, family: str = "api") -> "list[dict[str, Any]]":
        return self.sync.tools(family)

    async def run_tool_use(self, block: Any, family: str = "api") -> "dict[str, Any]":
        return await _off_loop(self.sync.run_tool_use, block, family)

    def __repr__(self) -> str:
        return f"<burrow.aio.AsyncSession {self.id}>"


def __getattr__(name: str) -> Any:
    if name == "AsyncMemoryTool":
        from .memory import AsyncMemoryTool

        return AsyncMemoryTool
    raise AttributeError(f"module 'burrow.aio' has no attribute {name!r}")


__all__ = ["AsyncSandbox", "AsyncSession", "AsyncMemoryTool"]
