"""Runs agent_toolset_20260401 tool calls through the Anthropic Python SDK's reference
implementation, for burrow's conformance test.

Usage: python3 agent_toolset_ref.py WORKDIR < calls.json > results.json
calls.json is a list of {"tool": name, "input": {...}}; each result is
{"is_error": bool, "content": [blocks]} as the session runner would post it (before the
"(no output)" substitution).
"""

import asyncio
import json
import os
import shutil
import sys

from anthropic.lib.tools._beta_functions import ToolError
from anthropic.lib.tools.agent_toolset import AgentToolContext, beta_agent_toolset_20260401


def blocks(value):
    if isinstance(value, str):
        return [{"type": "text", "text": value}]
    if isinstance(value, list):
        return [b if isinstance(b, dict) else {"type": "text", "text": str(b)} for b in value]
    return [{"type": "text", "text": str(value)}]


# The SDK's grep runs the first `rg` on PATH and its built-in search when there is none.
# burrow's grep matches the built-in search, so the reference never sees an rg, whether or not
# the machine has ripgrep installed.
_which = shutil.which
shutil.which = lambda cmd, *a, **k: (
    None if os.path.basename(str(cmd)) in ("rg", "rg.exe") else _which(cmd, *a, **k)
)


async def main():
    workdir = sys.argv[1]
    os.chdir(workdir)
    calls = json.load(sys.stdin)
    ctx = AgentToolContext(workdir=workdir)
    tools = {t.name: t for t in beta_agent_toolset_20260401(ctx)}
    results = []
    for call in calls:
        tool = tools[call["tool"]]
        try:
            out = await tool.call(call["input"])
            results.append({"is_error": False, "content": blocks(out)})
        except ToolError as e:
            content = e.content if not isinstance(e.content, str) else [{"type": "text", "text": e.content}]
            results.append({"is_error": True, "content": blocks(content)})
        except Exception as e:  # validation errors and the like
            results.append({"is_error": True, "content": [{"type": "text", "text": f"{type(e).__name__}: {e}"}]})
    await ctx.close()
    json.dump(results, sys.stdout)


asyncio.run(main())
