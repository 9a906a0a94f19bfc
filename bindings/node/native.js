// Loads the native addon (the Rust crate in src/), from the first of:
// - BURROW_NODE_BINARY, a path to a `.node` file (what tests and embedders pinning a build use);
// - `burrow.<platform>.node` beside this file (`npm install` from a clone of burrow builds it
//   there with cargo: scripts/build.js);
// - the prebuilt package `burrow-sandbox-<platform>` (linux-x64-gnu is published).

import { createRequire } from "node:module";
import { fileURLToPath } from "node:url";
import path from "node:path";
import { platform } from "./platform.js";

const require = createRequire(import.meta.url);
const here = path.dirname(fileURLToPath(import.meta.url));

function load() {
  const triple = platform();
  const candidates = [];
  if (process.env.BURROW_NODE_BINARY) candidates.push(path.resolve(process.env.BURROW_NODE_BINARY));
  candidates.push(path.join(here, `burrow.${triple}.node`), `burrow-sandbox-${triple}`);
  const failures = [];
  for (const c of candidates) {
    try {
      return require(c);
    } catch (e) {
      if (e?.code !== "MODULE_NOT_FOUND" || !String(e.message).includes(c)) throw e;
      failures.push(c);
    }
  }
  throw new Error(
    `burrow-sandbox: no native addon for ${triple} (looked for ${failures.join(", ")}). ` +
      "Install the prebuilt package burrow-sandbox-linux-x64-gnu, or build from a clone of " +
      "burrow with the Rust toolchain: npm install ./bindings/node",
  );
}

export const native = load();
