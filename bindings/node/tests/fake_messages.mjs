// A fake Messages API on 127.0.0.1: answers each POST /v1/messages with the next scripted
// assistant turn and records the requests (what the client sent back as tool results).

import http from "node:http";

/** Starts the server; `turns` are the assistant contents, in order (the last repeats). */
export async function fakeMessages(t, turns) {
  const requests = [];
  const server = http.createServer((req, res) => {
    let body = "";
    req.setEncoding("utf8");
    req.on("data", (chunk) => (body += chunk));
    req.on("end", () => {
      const parsed = JSON.parse(body);
      requests.push({ path: req.url, body: parsed });
      const turn = turns[Math.min(requests.length - 1, turns.length - 1)];
      const reply = JSON.stringify({
        id: `msg_${requests.length}`,
        type: "message",
        role: "assistant",
        model: parsed.model,
        content: turn,
        stop_reason: turn.some((b) => b.type === "tool_use") ? "tool_use" : "end_turn",
        stop_sequence: null,
        usage: { input_tokens: 10, output_tokens: 10 },
      });
      res.writeHead(200, { "content-type": "application/json", "content-length": Buffer.byteLength(reply) });
      res.end(reply);
    });
  });
  await new Promise((resolve) => server.listen(0, "127.0.0.1", resolve));
  t.after(() => new Promise((resolve) => server.close(resolve)));
  return { url: `http://127.0.0.1:${server.address().port}`, requests };
}
