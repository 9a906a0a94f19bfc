"""MCP client for burrow's tests, using the official Python SDK (PyPI `mcp`).

usage: client.py stdio BURROW_BINARY SESSION   (burrow mcp --session SESSION over stdio)
       client.py http URL                      (Streamable HTTP, e.g. http://127.0.0.1:PORT/mcp?session=x)

Lists the tools, then runs a fixed script of tool calls and prints one JSON document:
{"tools": [{name, readOnlyHint, destructiveHint, required}], "calls": [{name, isError, text}]}.
"""

import asyncio
import json
import os
import sys

from mcp.client.session import ClientSession
from mcp.client.stdio import StdioServerParameters, stdio_client
from mcp.client.streamable_http import streamable_http_client

SCRIPT = [
    ("Write", {"file_path": "/workspace/notes.md", "content": "# Notes\nTODO: read the code\n"}),
    ("Read", {"file_path": "/workspace/notes.md"}),
    ("Edit", {"file_path": "/workspace/notes.md", "old_string": "TODO", "new_string": "DONE"}),
    ("MultiEdit", {"file_path": "/workspace/notes.md", "edits": [{"old_string": "# Notes", "new_string": "# Log"}]}),
    ("Bash", {"command": "mkdir -p src && echo 'fn main() {}' > src/main.rs && cat notes.md"}),
    ("Glob", {"pattern": "**/*.rs"}),
    ("Grep", {"pattern": "DONE", "output_mode": "content"}),
    ("Read", {"file_path": "/workspace/missing.txt"}),
    ("history", {"limit": 3}),
    ("fork", {"n": 2}),
    ("list", {}),
    ("undo", {}),
    ("diff", {"against": "v1"}),
    ("checkout", {"version": "v1"}),
    ("Bash", {"command": "ls /workspace"}),
]


async def run(session: ClientSession) -> dict:
    await session.initialize()
    listed = await session.list_tools()
    tools = []
    for t in listed.tools:
        ann = t.annotations
        tools.append({
            "name": t.name,
            "readOnlyHint": getattr(ann, "read_only_hint", None) if ann else None,
            "destructiveHint": getattr(ann, "destructive_hint", None) if ann else None,
            "required": t.input_schema.get("required", []),
        })
    calls = []
    for name, args in SCRIPT:
        r = await session.call_tool(name, args)
        text = "\n".join(c.text for c in r.content if getattr(c, "type", "") == "text")
        calls.append({"name": name, "isError": bool(r.is_error), "text": text})
    return {"tools": tools, "calls": calls}


async def main() -> None:
    mode = sys.argv[1]
    if mode == "stdio":
        # The SDK passes the server only a minimal environment: hand burrow its store and cache.
        env = {k: v for k, v in os.environ.items() if k.startswith("BURROW_")}
        params = StdioServerParameters(
            command=sys.argv[2], args=["mcp", "--session", sys.argv[3]], env=env
        )
        async with stdio_client(params) as streams:
            async with ClientSession(streams[0], streams[1]) as s:
                out = await run(s)
    else:
        async with streamable_http_client(sys.argv[2]) as streams:
            async with ClientSession(streams[0], streams[1]) as s:
                out = await run(s)
    print(json.dumps(out))


asyncio.run(main())
