"""Claude's memory tool (``memory_20250818``) kept in a burrow session, for the Anthropic SDK.

:class:`MemoryTool` subclasses the SDK's ``BetaAbstractMemoryTool``, so it is passed to the
SDK's tool runner unchanged (``client.beta.messages.tool_runner(tools=[MemoryTool(s)])``).
Every command runs burrow's ``memory`` family over the session's ``/memories``: the SDK
reference's strings and path rules, and every write is a version of the session, so memories
are forked, diffed and undone with it. Needs the ``anthropic`` package
(``pip install 'burrow-sandbox[anthropic]'``).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from anthropic.lib.tools import BetaAbstractMemoryTool, BetaAsyncAbstractMemoryTool, ToolError

if TYPE_CHECKING:
    from . import Session
    from .aio import AsyncSession

_CLEAR = "find /memories -mindepth 1 -maxdepth 1 -exec rm -rf {} +"


def _input(command: Any) -> "dict[str, Any]":
    if hasattr(command, "model_dump"):
        return command.model_dump(exclude_none=True)
    return {k: v for k, v in dict(command).items() if v is not None}


def _answer(out: "dict[str, Any]") -> str:
    text = "\n".join(c["text"] for c in out["content"] if c.get("type") == "text")
    if out["is_error"]:
        raise ToolError(text)
    return text


class MemoryTool(BetaAbstractMemoryTool):
    """The memory tool over ``session``'s ``/memories``."""

    def __init__(self, session: "Session", **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.session = session

    def _run(self, command: Any) -> str:
        return _answer(self.session.call("memory", _input(command), family="memory"))

    def view(self, command: Any) -> str:
        return self._run(command)

    def create(self, command: Any) -> str:
        return self._run(command)

    def str_replace(self, command: Any) -> str:
        return self._run(command)

    def insert(self, command: Any) -> str:
        return self._run(command)

    def delete(self, command: Any) -> str:
        return self._run(command)

    def rename(self, command: Any) -> str:
        return self._run(command)

    def clear_all_memory(self) -> str:
        """Removes every memory (one version of the session: undo brings them back)."""
        r = self.session.sh(_CLEAR)
        if r.exit_code != 0:
            raise ToolError(r.stderr.strip() or "cannot clear /memories")
        return "All memory cleared"


class AsyncMemoryTool(BetaAsyncAbstractMemoryTool):
    """:class:`MemoryTool` for the SDK's async tool runner, over a :class:`burrow.aio.AsyncSession`."""

    def __init__(self, session: "AsyncSession", **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.session = session

    async def _run(self, command: Any) -> str:
        return _answer(await self.session.call("memory", _input(command), family="memory"))

    async def view(self, command: Any) -> str:
        return await self._run(command)

    async def create(self, command: Any) -> str:
        return await self._run(command)

    async def str_replace(self, command: Any) -> str:
        return await self._run(command)

    async def insert(self, command: Any) -> str:
        return await self._run(command)

    async def delete(self, command: Any) -> str:
        return await self._run(command)

    async def rename(self, command: Any) -> str:
        return await self._run(command)

    async def clear_all_memory(self) -> str:
        r = await self.session.sh(_CLEAR)
        if r.exit_code != 0:
            raise ToolError(r.stderr.strip() or "cannot clear /memories")
        return "All memory cleared"
