// The published shape: scripts/pack.js packs the prebuilt addon's package and burrow-sandbox;
// both tarballs installed into a fresh project (offline, no Rust toolchain needed) give a
// working package whose addon comes from the prebuilt package.

import assert from "node:assert/strict";
import { execFile, spawnSync } from "node:child_process";
import { existsSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { createRequire } from "node:module";
import { tmpdir } from "node:os";
import path from "node:path";
import { test } from "node:test";
import { fileURLToPath } from "node:url";
import { required } from "./helpers.mjs";

const here = path.dirname(fileURLToPath(import.meta.url));
const pkg = path.resolve(here, "..");

/** The addon under test: BURROW_NODE_BINARY, or the one the installed package loads. */
function addon() {
  if (process.env.BURROW_NODE_BINARY) return process.env.BURROW_NODE_BINARY;
  const project = process.env.BURROW_NODE_PACKAGE;
  if (!project) return null;
  const require = createRequire(path.join(project, "package.json"));
  const dir = path.dirname(require.resolve("burrow-sandbox/package.json"));
  const local = spawnSync(process.execPath, ["-p", "require('node:fs').readdirSync('.').find((f) => f.endsWith('.node'))"], { cwd: dir, encoding: "utf8" }).stdout.trim();
  return local && local !== "undefined" ? path.join(dir, local) : null;
}

test("the packed packages install offline and load the prebuilt addon", async (t) => {
  const lib = addon();
  const npm = spawnSync("npm", ["--version"], { encoding: "utf8" });
  if (!lib || npm.status !== 0) {
    if (required) throw new Error(`cannot test the packed packages: ${lib ? "npm is missing" : "no addon found"}`);
    t.skip(lib ? "npm is not installed" : "no addon to pack");
    return;
  }
  const dir = mkdtempSync(path.join(tmpdir(), "burrow-packed-"));
  t.after(() => rmSync(dir, { recursive: true, force: true }));
  const packed = spawnSync(process.execPath, [path.join(pkg, "scripts/pack.js"), "--addon", lib, "--out", path.join(dir, "dist")], { encoding: "utf8" });
  assert.equal(packed.status, 0, packed.stderr);
  const tarballs = packed.stdout.trim().split("\n");
  assert.equal(tarballs.length, 2);
  const project = path.join(dir, "project");
  spawnSync("mkdir", ["-p", project]);
  writeFileSync(path.join(project, "package.json"), JSON.stringify({ name: "consumer", private: true, type: "module" }));
  const env = { ...process.env, PATH: path.dirname(process.execPath) + path.delimiter + "/usr/bin:/bin" };
  delete env.BURROW_NODE_BINARY;
  delete env.CARGO;
  const install = spawnSync("npm", ["install", "--offline", "--no-audit", "--no-fund", "--loglevel=error", ...tarballs], { cwd: project, env, encoding: "utf8" });
  assert.equal(install.status, 0, install.stderr);
  assert.ok(existsSync(path.join(project, "node_modules/burrow-sandbox-linux-x64-gnu/burrow.linux-x64-gnu.node")));
  assert.ok(!existsSync(path.join(project, "node_modules/burrow-sandbox/burrow.linux-x64-gnu.node")), "nothing was built");
  const script = `
    import { Sandbox } from "burrow-sandbox";
    const s = await new Sandbox(process.argv[2]).create("packed");
    const r = await s.sh("echo packed > f && cat f");
    console.log(r.stdout.trim(), await s.read("f"));
  `;
  writeFileSync(path.join(project, "smoke.mjs"), script);
  const run = await new Promise((resolve) =>
    execFile(process.execPath, ["smoke.mjs", path.join(dir, "store.db")], { cwd: project, env, encoding: "utf8" }, (error, stdout, stderr) =>
      resolve({ status: error ? error.code : 0, stdout, stderr }),
    ),
  );
  assert.equal(run.status, 0, run.stderr);
  assert.equal(run.stdout, "packed packed\n\n");
});
