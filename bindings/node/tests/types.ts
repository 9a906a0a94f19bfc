// Compiled (not run) by example.test.mjs with `tsc --strict`: the package's declarations
// agree with how TypeScript code uses it, and with the SDKs' own types.

import { Sandbox, Session, UnknownSession, FileNotFound, type ShResult, type Diff, type Merge, type ToolResultBlock } from "burrow-sandbox";
import { aiSdkTools } from "burrow-sandbox/ai";
import { memoryTool, BurrowMemoryHandlers } from "burrow-sandbox/anthropic";
import Anthropic from "@anthropic-ai/sdk";
import { generateText, type ToolSet } from "ai";

export async function usage(): Promise<void> {
  const s: Session = await new Sandbox("burrow.db").create("analysis", { allowNet: ["@pypi"], env: { A: "1" }, timeoutMs: 5000 });
  const r: ShResult = await s.sh("grep -rn TODO . | wc -l", { stdin: "x" });
  const code: number = r.exitCode;
  const [a, b] = await s.fork(2);
  await a.write("notes.md", "try A\n");
  const d: Diff = await a.diff(s);
  console.log(d.patch, d.changes[0]?.change, await a.read("notes.md"), code, b.id);
  const m: Merge = await a.merge({ into: s, noCommit: true });
  console.log(m.merged.length, m.conflicts[0]?.reason, m.committed);
  const bytes: Buffer = await s.readBytes("notes.md");
  console.log(bytes.length, await s.glob("**/*.md"), await s.grep("TODO"), await s.history({ limit: 5 }));
  try {
    await new Sandbox().open("nope");
  } catch (e) {
    if (e instanceof UnknownSession || e instanceof FileNotFound) console.log(e.message);
  }
  const block: ToolResultBlock = await s.runToolUse({ type: "tool_use", id: "t", name: "bash", input: { command: "ls" } });
  const client = new Anthropic();
  const reply = await client.messages.create({ model: "m", max_tokens: 10, messages: [{ role: "user", content: "hi" }] });
  for (const c of reply.content) if (c.type === "tool_use") await s.runToolUse(c);
  const runner = client.beta.messages.toolRunner({ model: "m", max_tokens: 10, tools: [memoryTool(s)], messages: [] });
  await runner.runUntilDone();
  await new BurrowMemoryHandlers(s).clearAllMemory();
  const tools: ToolSet = aiSdkTools(s);
  void generateText;
  console.log(block.tool_use_id, Object.keys(tools));
}
