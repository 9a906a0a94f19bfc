// What the node tests share: the package under test, a fresh store per test, the CLI.
//
// The package: BURROW_NODE_PACKAGE names a project directory where `burrow-sandbox` is
// installed (.ci/run installs it with `npm install ./bindings/node`); otherwise the sources
// beside this directory, with the addon BURROW_NODE_BINARY names (tests/node.rs points it at
// the library the same cargo run built).

import { spawnSync } from "node:child_process";
import { existsSync, mkdtempSync, rmSync } from "node:fs";
import { createRequire } from "node:module";
import { tmpdir } from "node:os";
import path from "node:path";
import { fileURLToPath, pathToFileURL } from "node:url";

const here = path.dirname(fileURLToPath(import.meta.url));

/** Whether CI asked for every test to run (a missing piece fails instead of skipping). */
export const required = process.env.BURROW_REQUIRE_NODE_PACKAGE === "1";

function resolver() {
  const project = process.env.BURROW_NODE_PACKAGE;
  if (!project) return (sub) => pathToFileURL(path.join(here, "..", `${sub || "index"}.js`)).href;
  const require = createRequire(path.join(project, "package.json"));
  return (sub) => pathToFileURL(require.resolve(sub ? `burrow-sandbox/${sub}` : "burrow-sandbox")).href;
}

const resolve = resolver();

/** The URL of the package's main module under test (for scripts run in a child process). */
export function packageUrl() {
  return resolve("");
}

/** The package's main module, `burrow-sandbox/ai` or `burrow-sandbox/anthropic`. */
export async function load(sub = "") {
  return import(resolve(sub));
}

export const burrow = await load();

/** A fresh store file in its own directory, removed after the test. */
export function freshStore(t) {
  const dir = mkdtempSync(path.join(tmpdir(), "burrow-node-"));
  t.after(() => rmSync(dir, { recursive: true, force: true }));
  return path.join(dir, "burrow.db");
}

/** A session named `work` in a fresh store. */
export async function freshSession(t) {
  const sb = new burrow.Sandbox(freshStore(t));
  return sb.create("work");
}

/** The burrow CLI on `store`: { status, stdout, stderr }; skips (or fails in CI) without it. */
export function cli(t, store) {
  const exe = process.env.BURROW_BIN;
  if (!exe || !existsSync(exe)) {
    if (required) throw new Error("BURROW_BIN is not set to the burrow binary");
    t.skip("the burrow binary is not built (BURROW_BIN)");
    return null;
  }
  return (...args) => {
    const input = typeof args.at(-1) === "object" ? args.pop().stdin : "";
    const r = spawnSync(exe, ["--store", store, ...args], { input, encoding: "utf8", timeout: 120_000 });
    return { status: r.status, stdout: r.stdout, stderr: r.stderr };
  };
}

/** An optional module (the SDKs, typescript): imported, or the test is skipped (fails in CI). */
export async function need(t, name) {
  try {
    return await import(name);
  } catch (e) {
    if (required) throw e;
    t.skip(`${name} is not installed: npm ci --prefix bindings/node`);
    return null;
  }
}
