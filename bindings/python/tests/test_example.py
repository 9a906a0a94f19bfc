"""examples/python/agent_loop.py, run as a user would, against a fake Messages API on
127.0.0.1 that scripts Claude's turns and records the tool results sent back."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import burrow
from conftest import need

EXAMPLE = Path(__file__).resolve().parents[3] / "examples/python/agent_loop.py"

TURNS = [
    [{"type": "tool_use", "id": "toolu_1", "name": "bash",
      "input": {"command": "mkdir -p out && echo 'hello from the loop' > out/hello.txt && cat out/hello.txt"}}],
    [{"type": "tool_use", "id": "toolu_2", "name": "str_replace_based_edit_tool",
      "input": {"command": "str_replace", "path": "/workspace/out/hello.txt", "old_str": "hello", "new_str": "goodbye"}},
     {"type": "tool_use", "id": "toolu_3", "name": "memory",
      "input": {"command": "create", "path": "/memories/run.md", "file_text": "wrote out/hello.txt\n"}}],
    [{"type": "text", "text": "Done: out/hello.txt says goodbye."}],
]


class FakeMessages(BaseHTTPRequestHandler):
    requests: list = []

    def log_message(self, *args):  # quiet
        pass

    def do_POST(self):
        body = json.loads(self.rfile.read(int(self.headers["content-length"])))
        FakeMessages.requests.append({"path": self.path, "body": body})
        turn = TURNS[min(len(FakeMessages.requests) - 1, len(TURNS) - 1)]
        stop = "tool_use" if turn[0]["type"] == "tool_use" else "end_turn"
        reply = {
            "id": f"msg_{len(FakeMessages.requests)}", "type": "message", "role": "assistant",
            "model": body["model"], "content": turn, "stop_reason": stop, "stop_sequence": None,
            "usage": {"input_tokens": 10, "output_tokens": 10},
        }
        data = json.dumps(reply).encode()
        self.send_response(200)
        self.send_header("content-type", "application/json")
        self.send_header("content-length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)


def test_agent_loop_example(store):
    need("anthropic")
    FakeMessages.requests = []
    server = ThreadingHTTPServer(("127.0.0.1", 0), FakeMessages)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        env = dict(os.environ, ANTHROPIC_BASE_URL=f"http://127.0.0.1:{server.server_port}",
                   ANTHROPIC_API_KEY="test-key")
        p = subprocess.run(
            [sys.executable, str(EXAMPLE), "--store", str(store), "--session", "loop", "--memory",
             "write a greeting"],
            env=env, capture_output=True, text=True, timeout=300,
        )
    finally:
        server.shutdown()
    assert p.returncode == 0, p.stderr
    assert p.stdout.startswith("Done: out/hello.txt says goodbye.\n")

    reqs = FakeMessages.requests
    assert [r["path"] for r in reqs] == ["/v1/messages"] * 3
    assert reqs[0]["body"]["tools"] == [
        {"type": "bash_20250124", "name": "bash"},
        {"type": "text_editor_20250728", "name": "str_replace_based_edit_tool"},
        {"type": "memory_20250818", "name": "memory"},
    ]
    first = reqs[1]["body"]["messages"][-1]["content"]
    assert first == [{"type": "tool_result", "tool_use_id": "toolu_1", "is_error": False,
                      "content": [{"type": "text", "text": "hello from the loop"}]}]
    second = reqs[2]["body"]["messages"][-1]["content"]
    assert [r["tool_use_id"] for r in second] == ["toolu_2", "toolu_3"]
    assert not any(r["is_error"] for r in second)
    assert second[1]["content"][0]["text"] == "File created successfully at: /memories/run.md"

    # Everything the loop did is in the session, for the next process.
    s = burrow.Sandbox(store).session("loop")
    assert s.read("out/hello.txt") == "goodbye from the loop\n"
    assert [e.data["tool"] for e in s.log("tool")] == ["bash", "str_replace_based_edit_tool", "memory"]
    assert s.sh("cat /memories/run.md").stdout == "wrote out/hello.txt\n"


def test_memory_tool_in_the_sdks_tool_runner(store):
    """burrow.MemoryTool goes into the SDK's own tool runner unchanged; the memories land in
    the session and are there for the next process."""
    anthropic = need("anthropic")
    global TURNS
    saved = TURNS
    TURNS = [
        [{"type": "tool_use", "id": "toolu_m1", "name": "memory",
          "input": {"command": "create", "path": "/memories/user.md", "file_text": "likes tea\n"}}],
        [{"type": "tool_use", "id": "toolu_m2", "name": "memory",
          "input": {"command": "view", "path": "/memories/missing.md"}}],
        [{"type": "text", "text": "noted"}],
    ]
    FakeMessages.requests = []
    server = ThreadingHTTPServer(("127.0.0.1", 0), FakeMessages)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        s = burrow.Sandbox(store).create("memories")
        client = anthropic.Anthropic(base_url=f"http://127.0.0.1:{server.server_port}", api_key="k")
        runner = client.beta.messages.tool_runner(
            model="claude-sonnet-5-5", max_tokens=100, tools=[burrow.MemoryTool(s)],
            messages=[{"role": "user", "content": "remember I like tea"}],
        )
        final = runner.until_done()
    finally:
        server.shutdown()
        TURNS = saved
    assert final.content[0].text == "noted"
    reqs = FakeMessages.requests
    assert reqs[0]["body"]["tools"] == [{"type": "memory_20250818", "name": "memory"}]
    results = [r["body"]["messages"][-1]["content"][0] for r in reqs[1:]]
    assert results[0]["tool_use_id"] == "toolu_m1" and not results[0].get("is_error")
    assert results[1]["is_error"] is True
    assert "The path /memories/missing.md does not exist" in json.dumps(results[1]["content"])
    assert burrow.Sandbox(store).session("memories").sh("cat /memories/user.md").stdout == "likes tea\n"
