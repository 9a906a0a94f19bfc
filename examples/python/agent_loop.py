"""A Messages API tool loop over a burrow session, in about ten lines of loop.

    pip install ./bindings/python anthropic
    ANTHROPIC_API_KEY=... python3 examples/python/agent_loop.py --session demo "summarise README.md"

Claude gets the client tools (bash and the text editor) and, with --memory, the memory tool;
every tool call runs in the burrow session as one version. Run it again with the same
--session and the files, the shell's state and the memories are still there; fork the
session (`burrow fork demo`) to try something else from the same point.
"""

from __future__ import annotations

import argparse
import os

import anthropic

import burrow


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("task")
    p.add_argument("--store", help="the burrow store (default: the CLI's)")
    p.add_argument("--session", help="session name (created if missing)")
    p.add_argument("--memory", action="store_true", help="also offer the memory tool")
    p.add_argument("--model", default=os.environ.get("ANTHROPIC_MODEL", "claude-sonnet-5-5"))
    args = p.parse_args()

    sandbox = burrow.Sandbox(args.store)
    try:
        session = sandbox.session(args.session) if args.session else sandbox.create()
    except burrow.UnknownSession:
        session = sandbox.create(args.session)
    tools = session.tools("api") + (session.tools("memory") if args.memory else [])
    client = anthropic.Anthropic()  # ANTHROPIC_API_KEY and ANTHROPIC_BASE_URL from the env

    messages: list = [{"role": "user", "content": args.task}]
    while True:
        reply = client.messages.create(
            model=args.model, max_tokens=4096, tools=tools, messages=messages
        )
        messages.append({"role": "assistant", "content": reply.content})
        uses = [b for b in reply.content if b.type == "tool_use"]
        if reply.stop_reason != "tool_use" or not uses:
            break
        messages.append({"role": "user", "content": [session.run_tool_use(b) for b in uses]})

    print("".join(b.text for b in reply.content if b.type == "text"))
    print(f"[session {session.id}: {len(session.history(limit=1000))} versions]")


if __name__ == "__main__":
    main()
