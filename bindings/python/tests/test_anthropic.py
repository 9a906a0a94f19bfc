"""The Anthropic SDK adapters: tool definitions for messages.create, tool_use blocks run and
answered with tool_result blocks (recorded blocks and the strings Anthropic's reference
tools give), and MemoryTool against the SDK's own BetaLocalFilesystemMemoryTool."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

import burrow
from conftest import need

RECORDED = json.loads((Path(__file__).parent / "tool_uses.json").read_text())


def test_tool_definitions(s):
    assert s.tools() == [
        {"type": "bash_20250124", "name": "bash"},
        {"type": "text_editor_20250728", "name": "str_replace_based_edit_tool"},
    ]
    assert s.tools("memory") == [{"type": "memory_20250818", "name": "memory"}]
    for family in ("agent-toolset", "claude-code"):
        defs = s.tools(family)
        assert defs and all(set(d) == {"name", "description", "input_schema"} for d in defs)
        assert all(d["input_schema"]["type"] == "object" for d in defs)
    assert [d["name"] for d in s.tools("agent-toolset")] == ["bash", "read", "write", "edit", "glob", "grep"]
    with pytest.raises(burrow.InvalidInput):
        s.tools("nope")


def test_recorded_tool_uses(s):
    for rec in RECORDED:
        got = s.run_tool_use(rec["block"], family=rec["family"])
        want = {
            "type": "tool_result",
            "tool_use_id": rec["block"]["id"],
            "content": [{"type": "text", "text": rec["text"]}],
            "is_error": rec["is_error"],
        }
        assert got == want, rec["block"]


def test_sdk_blocks_and_bad_blocks(s):
    anthropic = need("anthropic")
    block = anthropic.types.ToolUseBlock(type="tool_use", id="toolu_x", name="bash", input={"command": "echo sdk"})
    assert s.run_tool_use(block)["content"] == [{"type": "text", "text": "sdk"}]
    with pytest.raises(burrow.InvalidInput, match="tool_use"):
        s.run_tool_use({"type": "text", "text": "hi"})
    with pytest.raises(burrow.InvalidInput):
        s.run_tool_use(42)
    # A failed tool call is an is_error result, never an exception, and changes nothing.
    s.write("keep", "k")
    v = s.info().version
    r = s.run_tool_use({"type": "tool_use", "id": "t", "name": "str_replace_based_edit_tool",
                        "input": {"command": "create", "path": "/etc/x", "file_text": "no"}})
    assert r["is_error"]
    assert s.read("keep") == "k" and s.glob("**/x") == []
    assert s.info().version >= v


# Memory commands run through the SDK's reference implementation and through MemoryTool (the
# npm package's test runs the same list against the TypeScript SDK's reference).
MEMORY_COMMANDS = json.loads((Path(__file__).parents[3] / "fixtures/memory_commands.json").read_text("utf-8"))


def _answers(tool, commands):
    """(is_error, text) of each command, as the SDK's tool runner would post them."""
    from anthropic.lib.tools import ToolError

    out = []
    for c in commands:
        try:
            out.append((False, tool.call(c)))
        except ToolError as e:
            out.append((True, str(e)))
    return out


def test_memory_tool_matches_the_sdk_reference(s, tmp_path):
    need("anthropic")
    from anthropic.lib.tools import BetaAbstractMemoryTool

    tool = burrow.MemoryTool(s)
    assert isinstance(tool, BetaAbstractMemoryTool)
    assert tool.to_dict() == {"type": "memory_20250818", "name": "memory"}
    from anthropic.lib.tools._beta_builtin_memory_tool import BetaLocalFilesystemMemoryTool

    got = _answers(tool, MEMORY_COMMANDS)
    want = _answers(BetaLocalFilesystemMemoryTool(base_path=str(tmp_path / "ref")), MEMORY_COMMANDS)
    assert len(got) == len(MEMORY_COMMANDS)
    for c, g, w in zip(MEMORY_COMMANDS, got, want):
        assert g == w, c


def test_memory_tool_forks_and_undo(s):
    need("anthropic")
    tool = burrow.MemoryTool(s)
    tool.call({"command": "create", "path": "/memories/fact.md", "file_text": "base"})
    a, b = s.fork(2)
    burrow.MemoryTool(a).call({"command": "str_replace", "path": "/memories/fact.md", "old_str": "base", "new_str": "A"})
    burrow.MemoryTool(b).call({"command": "delete", "path": "/memories/fact.md"})
    assert "A" in burrow.MemoryTool(a).call({"command": "view", "path": "/memories/fact.md"})
    assert "base" in tool.call({"command": "view", "path": "/memories/fact.md"})
    b.undo()
    assert "base" in burrow.MemoryTool(b).call({"command": "view", "path": "/memories/fact.md"})
    assert tool.clear_all_memory() == "All memory cleared"
    assert tool.call({"command": "view", "path": "/memories"}).endswith("\t/memories")
    s.undo()
    assert "base" in tool.call({"command": "view", "path": "/memories/fact.md"})
    assert any(c.path == "/memories/fact.md" for c in a.diff(s, all=True))


def test_async_memory_tool(store):
    need("anthropic")
    import asyncio

    import burrow.aio
    from anthropic.lib.tools import BetaAsyncAbstractMemoryTool

    async def main():
        s = await burrow.aio.AsyncSandbox(store).create("m")
        tool = burrow.aio.AsyncMemoryTool(s)
        assert isinstance(tool, BetaAsyncAbstractMemoryTool)
        assert await tool.call({"command": "create", "path": "/memories/a.md", "file_text": "x"}) == \
            "File created successfully at: /memories/a.md"
        assert "x" in await tool.call({"command": "view", "path": "/memories/a.md"})

    asyncio.run(main())
