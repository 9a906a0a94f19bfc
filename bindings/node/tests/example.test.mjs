// examples/node/agent_loop.ts compiled with TypeScript (strict, against the package's
// declarations and the SDKs' types, with tests/types.ts) and run as a user would, against a
// fake Messages API on 127.0.0.1 that scripts Claude's turns and records what comes back.

import assert from "node:assert/strict";
import { execFile, spawnSync } from "node:child_process";
import { copyFileSync, existsSync, mkdirSync, mkdtempSync, rmSync, symlinkSync, writeFileSync } from "node:fs";
import { createRequire } from "node:module";
import { tmpdir } from "node:os";
import path from "node:path";
import { test } from "node:test";
import { fileURLToPath } from "node:url";
import { burrow, freshStore, required } from "./helpers.mjs";
import { fakeMessages } from "./fake_messages.mjs";

const here = path.dirname(fileURLToPath(import.meta.url));
const pkg = path.resolve(here, "..");
const root = path.resolve(pkg, "../..");

const TURNS = [
  [{ type: "tool_use", id: "toolu_1", name: "bash", input: { command: "mkdir -p out && echo 'hello from the loop' > out/hello.txt && cat out/hello.txt" } }],
  [
    { type: "tool_use", id: "toolu_2", name: "str_replace_based_edit_tool", input: { command: "str_replace", path: "/workspace/out/hello.txt", old_str: "hello", new_str: "goodbye" } },
    { type: "tool_use", id: "toolu_3", name: "memory", input: { command: "create", path: "/memories/run.md", file_text: "wrote out/hello.txt\n" } },
  ],
  [{ type: "text", text: "Done: out/hello.txt says goodbye." }],
];

/** The directory of the package under test (installed, or these sources). */
function packageDir() {
  const project = process.env.BURROW_NODE_PACKAGE;
  if (!project) return pkg;
  const require = createRequire(path.join(project, "package.json"));
  return path.dirname(require.resolve("burrow-sandbox/package.json"));
}

/** A project with the example, the type test and node_modules linked; compiled by tsc. */
function compile(t) {
  const tsc = path.join(pkg, "node_modules/typescript/bin/tsc");
  if (!existsSync(tsc) || !existsSync(path.join(pkg, "node_modules/@anthropic-ai/sdk"))) {
    if (required) throw new Error("typescript and @anthropic-ai/sdk are not installed in bindings/node");
    t.skip("typescript and the SDKs are not installed: npm ci --prefix bindings/node");
    return null;
  }
  const dir = mkdtempSync(path.join(tmpdir(), "burrow-example-"));
  t.after(() => rmSync(dir, { recursive: true, force: true }));
  copyFileSync(path.join(root, "examples/node/agent_loop.ts"), path.join(dir, "agent_loop.ts"));
  copyFileSync(path.join(here, "types.ts"), path.join(dir, "types.ts"));
  writeFileSync(path.join(dir, "package.json"), JSON.stringify({ type: "module", private: true }));
  const config = JSON.parse(JSON.stringify({
    compilerOptions: { target: "es2022", module: "nodenext", moduleResolution: "nodenext", strict: true, outDir: "dist", types: ["node"] },
    files: ["agent_loop.ts", "types.ts"],
  }));
  writeFileSync(path.join(dir, "tsconfig.json"), JSON.stringify(config));
  mkdirSync(path.join(dir, "node_modules/@anthropic-ai"), { recursive: true });
  mkdirSync(path.join(dir, "node_modules/@types"), { recursive: true });
  symlinkSync(packageDir(), path.join(dir, "node_modules/burrow-sandbox"));
  for (const m of ["@anthropic-ai/sdk", "@types/node", "@types/json-schema", "ai"]) {
    symlinkSync(path.join(pkg, "node_modules", m), path.join(dir, "node_modules", m));
  }
  const r = spawnSync(process.execPath, [tsc, "-p", dir], { encoding: "utf8" });
  assert.equal(r.status, 0, `tsc failed:\n${r.stdout}${r.stderr}`);
  return dir;
}

test("the agent loop example, compiled and run against a fake Messages API", async (t) => {
  const dir = compile(t);
  if (!dir) return;
  const fake = await fakeMessages(t, TURNS);
  const store = freshStore(t);
  // Asynchronously: the fake server answers from this process's event loop.
  const run = await new Promise((resolve) => {
    execFile(
      process.execPath,
      [path.join(dir, "dist/agent_loop.js"), "--store", store, "--session", "loop", "--memory", "write a greeting"],
      { encoding: "utf8", timeout: 300_000, env: { ...process.env, ANTHROPIC_BASE_URL: fake.url, ANTHROPIC_API_KEY: "test-key" } },
      (error, stdout, stderr) => resolve({ status: error ? (error.code ?? -1) : 0, stdout, stderr }),
    );
  });
  assert.equal(run.status, 0, run.stderr);
  assert.match(run.stdout, /^Done: out\/hello\.txt says goodbye\.\n\[session \w+: \d+ versions\]\n$/);
  const reqs = fake.requests;
  assert.deepEqual(reqs.map((r) => r.path), ["/v1/messages", "/v1/messages", "/v1/messages"]);
  assert.deepEqual(reqs[0].body.tools, [
    { type: "bash_20250124", name: "bash" },
    { type: "text_editor_20250728", name: "str_replace_based_edit_tool" },
    { type: "memory_20250818", name: "memory" },
  ]);
  assert.deepEqual(reqs[1].body.messages.at(-1).content, [
    { type: "tool_result", tool_use_id: "toolu_1", is_error: false, content: [{ type: "text", text: "hello from the loop" }] },
  ]);
  const second = reqs[2].body.messages.at(-1).content;
  assert.deepEqual(second.map((r) => [r.tool_use_id, r.is_error]), [["toolu_2", false], ["toolu_3", false]]);
  // The session is there afterwards, for the CLI or another process.
  const s = await new burrow.Sandbox(store).open("loop");
  assert.equal(await s.read("out/hello.txt"), "goodbye from the loop\n");
  assert.equal((await s.sh("cat /memories/run.md")).stdout, "wrote out/hello.txt\n");
});
