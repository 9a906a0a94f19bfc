// A Messages API tool loop over a burrow session, from TypeScript.
//
// In a project of your own (an ES module: "type": "module" in its package.json):
//   npm install /path/to/burrow/bindings/node @anthropic-ai/sdk typescript @types/node
//   npx tsc --strict --module nodenext --target es2022 --outDir dist agent_loop.ts
//   ANTHROPIC_API_KEY=... node dist/agent_loop.js --session demo "summarise README.md"
//
// Claude gets the client tools (bash and the text editor) and, with --memory, the memory
// tool; every tool call runs in the burrow session as one version. Run it again with the same
// --session and the files, the shell's state and the memories are still there; fork the
// session (`burrow fork demo`) to try something else from the same point.

import Anthropic from "@anthropic-ai/sdk";
import type { MessageParam, ToolUnion } from "@anthropic-ai/sdk/resources/messages";
import { parseArgs } from "node:util";
import { Sandbox, type Session, UnknownSession } from "burrow-sandbox";

const { values, positionals } = parseArgs({
  allowPositionals: true,
  options: {
    store: { type: "string" },
    session: { type: "string" },
    memory: { type: "boolean", default: false },
    model: { type: "string", default: process.env.ANTHROPIC_MODEL ?? "claude-sonnet-5-5" },
  },
});
const task = positionals.join(" ");
if (!task) {
  console.error("usage: agent_loop [--store FILE] [--session NAME] [--memory] TASK");
  process.exit(2);
}

const sandbox = new Sandbox(values.store);
async function session(): Promise<Session> {
  if (!values.session) return sandbox.create();
  try {
    return await sandbox.open(values.session);
  } catch (e) {
    if (e instanceof UnknownSession) return sandbox.create(values.session);
    throw e;
  }
}
const s = await session();
const tools = [...s.tools("api"), ...(values.memory ? s.tools("memory") : [])] as unknown as ToolUnion[];
const client = new Anthropic(); // ANTHROPIC_API_KEY and ANTHROPIC_BASE_URL from the environment

const messages: MessageParam[] = [{ role: "user", content: task }];
let reply: Anthropic.Message;
while (true) {
  reply = await client.messages.create({ model: values.model!, max_tokens: 4096, tools, messages });
  messages.push({ role: "assistant", content: reply.content });
  const uses = reply.content.filter((b) => b.type === "tool_use");
  if (reply.stop_reason !== "tool_use" || uses.length === 0) break;
  const results = [];
  for (const b of uses) results.push(await s.runToolUse(b)); // in the order Claude wrote them
  messages.push({ role: "user", content: results as Anthropic.ToolResultBlockParam[] });
}

console.log(reply.content.flatMap((b) => (b.type === "text" ? [b.text] : [])).join(""));
console.log(`[session ${s.id}: ${(await s.history({ limit: 1000 })).length} versions]`);
