// The adapters: tool_use blocks (recorded, and the Anthropic TypeScript SDK's own), the
// memory tool against the SDK's BetaLocalFilesystemMemoryTool and in the SDK's tool runner,
// and the Vercel AI SDK's tools in generateText.

import assert from "node:assert/strict";
import { mkdtempSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import { test } from "node:test";
import { fileURLToPath } from "node:url";
import { burrow, freshSession, load, need } from "./helpers.mjs";
import { fakeMessages } from "./fake_messages.mjs";

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), "../../..");
const RECORDED = JSON.parse(readFileSync(path.join(root, "bindings/python/tests/tool_uses.json"), "utf8"));
const MEMORY_COMMANDS = JSON.parse(readFileSync(path.join(root, "fixtures/memory_commands.json"), "utf8"));

test("recorded tool_use blocks get the recorded tool_result blocks", async (t) => {
  const s = await freshSession(t);
  for (const rec of RECORDED) {
    const got = await s.runToolUse(rec.block, { family: rec.family });
    assert.deepEqual(
      got,
      {
        type: "tool_result",
        tool_use_id: rec.block.id,
        content: [{ type: "text", text: rec.text }],
        is_error: rec.is_error,
      },
      JSON.stringify(rec.block),
    );
  }
});

test("the Anthropic SDK's blocks, from a real client, run as they are", async (t) => {
  const sdk = await need(t, "@anthropic-ai/sdk");
  if (!sdk) return;
  const s = await freshSession(t);
  const fake = await fakeMessages(t, [
    [{ type: "tool_use", id: "toolu_1", name: "bash", input: { command: "echo sdk > f && cat f" } }],
  ]);
  const client = new sdk.default({ apiKey: "test-key", baseURL: fake.url, maxRetries: 0 });
  const reply = await client.messages.create({
    model: "claude-test",
    max_tokens: 100,
    tools: s.tools(),
    messages: [{ role: "user", content: "go" }],
  });
  assert.deepEqual(fake.requests[0].body.tools, [
    { type: "bash_20250124", name: "bash" },
    { type: "text_editor_20250728", name: "str_replace_based_edit_tool" },
  ]);
  const [use] = reply.content;
  const result = await s.runToolUse(use);
  assert.deepEqual(result, { type: "tool_result", tool_use_id: "toolu_1", content: [{ type: "text", text: "sdk" }], is_error: false });
  // A failed call is an is_error result, never an exception, and changes nothing.
  const v = (await s.info()).version;
  const r = await s.runToolUse({
    type: "tool_use",
    id: "t",
    name: "str_replace_based_edit_tool",
    input: { command: "create", path: "/etc/x", file_text: "no" },
  });
  assert.equal(r.is_error, true);
  assert.equal((await s.info()).version, v);
});

/** What the SDK's tool runner would send back for each command: [isError, text]. */
async function answers(tool, commands) {
  const out = [];
  for (const c of commands) {
    try {
      out.push([false, await tool.run(structuredClone(c))]);
    } catch (e) {
      out.push([true, `Error: ${e.message}`]);
    }
  }
  return out;
}

test("memoryTool answers as the SDK's BetaLocalFilesystemMemoryTool", async (t) => {
  const sdk = await need(t, "@anthropic-ai/sdk/tools/memory/node");
  if (!sdk) return;
  const { memoryTool, BurrowMemoryHandlers } = await load("anthropic");
  const s = await freshSession(t);
  const tool = memoryTool(s);
  assert.equal(tool.type, "memory_20250818");
  assert.equal(tool.name, "memory");
  const dir = mkdtempSync(path.join(tmpdir(), "burrow-memref-"));
  t.after(() => rmSync(dir, { recursive: true, force: true }));
  const reference = sdk.betaMemoryTool(await sdk.BetaLocalFilesystemMemoryTool.init(dir));
  const got = await answers(tool, MEMORY_COMMANDS);
  const want = await answers(reference, MEMORY_COMMANDS);
  // burrow's memory family gives the Python SDK's texts; the TypeScript SDK's reference words
  // two of them differently (docs/NODE.md). Every other answer must be the same, and these
  // two only in their wording.
  const known = [
    (g, w) => g.replace(", excluding hidden items:", ", excluding hidden items and node_modules:") === w,
    (g, w) =>
      /^Error: Invalid `insert_line` parameter: \d+\. It should be within the range \[0, \d+\]\.$/.test(g) &&
      /^Error: Invalid `insert_line` parameter: \d+\. It should be within the range of lines of the file: \[0, \d+\]$/.test(w),
  ];
  const differ = MEMORY_COMMANDS.flatMap((c, i) => {
    const [g, w] = [got[i], want[i]];
    if (JSON.stringify(g) === JSON.stringify(w)) return [];
    if (g[0] === w[0] && known.some((k) => k(g[1], w[1]))) return [];
    return [`${JSON.stringify(c)}\n  burrow:    ${JSON.stringify(g)}\n  reference: ${JSON.stringify(w)}`];
  });
  assert.deepEqual(differ, []);
  // Memories are the session's: forked, undone, cleared as one version.
  const h = new BurrowMemoryHandlers(s);
  await h.create({ command: "create", path: "/memories/fact.md", file_text: "base" });
  const [a] = await s.fork();
  await new BurrowMemoryHandlers(a).str_replace({ command: "str_replace", path: "/memories/fact.md", old_str: "base", new_str: "A" });
  assert.match(await h.view({ command: "view", path: "/memories/fact.md" }), /base/);
  assert.equal(await h.clearAllMemory(), "All memory cleared");
  await s.undo();
  assert.match(await h.view({ command: "view", path: "/memories/fact.md" }), /base/);
  assert.ok((await a.diff(s, { all: true })).changes.some((c) => c.path === "/memories/fact.md"));
});

test("memoryTool in the SDK's tool runner", async (t) => {
  const sdk = await need(t, "@anthropic-ai/sdk");
  if (!sdk) return;
  const { memoryTool } = await load("anthropic");
  const s = await freshSession(t);
  const fake = await fakeMessages(t, [
    [
      { type: "tool_use", id: "toolu_1", name: "memory", input: { command: "create", path: "/memories/plan.md", file_text: "step 1\n" } },
      { type: "tool_use", id: "toolu_2", name: "memory", input: { command: "view", path: "/memories/nope.md" } },
    ],
    [{ type: "text", text: "remembered" }],
  ]);
  const client = new sdk.default({ apiKey: "test-key", baseURL: fake.url, maxRetries: 0 });
  const runner = client.beta.messages.toolRunner({
    model: "claude-test",
    max_tokens: 100,
    tools: [memoryTool(s)],
    messages: [{ role: "user", content: "remember the plan" }],
  });
  const final = await runner.runUntilDone();
  assert.equal(final.content[0].text, "remembered");
  assert.equal((await s.sh("cat /memories/plan.md")).stdout, "step 1\n");
  assert.deepEqual(fake.requests[0].body.tools, [{ type: "memory_20250818", name: "memory" }]);
  const results = fake.requests[1].body.messages.at(-1).content;
  assert.deepEqual(
    results.map((r) => [r.tool_use_id, r.is_error === true]),
    [
      ["toolu_1", false],
      ["toolu_2", true],
    ],
  );
  assert.match(JSON.stringify(results[1].content), /does not exist/);
});

test("aiSdkTools in the Vercel AI SDK's generateText", async (t) => {
  const ai = await need(t, "ai");
  const aiTest = await need(t, "ai/test");
  if (!ai || !aiTest) return;
  const { aiSdkTools } = await load("ai");
  const s = await freshSession(t);
  const tools = aiSdkTools(s);
  assert.deepEqual(Object.keys(tools), ["bash", "read", "write", "edit", "glob", "grep"]);
  assert.throws(() => aiSdkTools(s, { family: "api" }), burrow.InvalidInput);
  const prompts = [];
  let step = 0;
  const usage = {
    inputTokens: { total: 1, noCache: 1, cacheRead: 0, cacheWrite: 0 },
    outputTokens: { total: 1, text: 1, reasoning: 0 },
  };
  const model = new aiTest.MockLanguageModelV4({
    doGenerate: async (options) => {
      prompts.push(options.prompt);
      step++;
      if (step === 1) {
        return {
          content: [
            { type: "tool-call", toolCallId: "c1", toolName: "bash", input: JSON.stringify({ command: "echo from the ai sdk > a.txt && cat a.txt" }) },
            { type: "tool-call", toolCallId: "c2", toolName: "read", input: JSON.stringify({ file_path: "/workspace/missing.txt" }) },
          ],
          finishReason: { unified: "tool-calls", raw: "tool_use" },
          usage,
          warnings: [],
        };
      }
      return { content: [{ type: "text", text: "done" }], finishReason: { unified: "stop", raw: "end_turn" }, usage, warnings: [] };
    },
  });
  const result = await ai.generateText({ model, tools, prompt: "write a file", stopWhen: ai.stepCountIs(3) });
  assert.equal(result.text, "done");
  assert.equal(await s.read("a.txt"), "from the ai sdk\n");
  // What the model was sent back: the bash output as text, the failed read as an error.
  const toolMessages = prompts[1].filter((m) => m.role === "tool").flatMap((m) => m.content);
  const byId = Object.fromEntries(toolMessages.map((p) => [p.toolCallId, p.output]));
  assert.deepEqual(byId.c1, { type: "text", value: "from the ai sdk" });
  assert.equal(byId.c2.type, "error-text");
  assert.match(byId.c2.value, /missing\.txt/);
});
