// `npm install`'s step: makes sure a native addon is there to load.
//
// - BURROW_NODE_BINARY names one, or a prebuilt package for this platform is installed
//   (burrow-sandbox-linux-x64-gnu): nothing to do.
// - Inside a clone of burrow (the workspace's Cargo.toml two levels up) with cargo on PATH:
//   `cargo build -p burrow-node --release` (BURROW_NODE_PROFILE=dev for a debug build), and
//   the library is copied beside index.js as `burrow.<platform>.node`. CARGO_TARGET_DIR is
//   honoured. It needs `rustup target add wasm32-wasip2` (the tools are built into it).
// - Otherwise: fail, saying what to install.

import { spawnSync } from "node:child_process";
import { copyFileSync, existsSync } from "node:fs";
import { createRequire } from "node:module";
import path from "node:path";
import { fileURLToPath } from "node:url";
import { platform } from "../platform.js";

const pkg = path.resolve(path.dirname(fileURLToPath(import.meta.url)), "..");
const triple = platform();
const require = createRequire(path.join(pkg, "package.json"));

function prebuilt() {
  try {
    require.resolve(`burrow-sandbox-${triple}`);
    return true;
  } catch {
    return false;
  }
}

if (process.env.BURROW_NODE_BINARY || prebuilt()) process.exit(0);

const workspace = path.resolve(pkg, "../..");
const cargo = process.env.CARGO ?? "cargo";
const probe = spawnSync(cargo, ["--version"], { stdio: "ignore" });
if (!existsSync(path.join(workspace, "Cargo.toml")) || probe.status !== 0) {
  console.error(
    `burrow-sandbox: there is no prebuilt addon for ${triple}, and building one needs a clone ` +
      "of burrow and the Rust toolchain (https://rustup.rs, then `rustup target add " +
      "wasm32-wasip2`): npm install ./bindings/node",
  );
  process.exit(1);
}

const profile = process.env.BURROW_NODE_PROFILE ?? "release";
const args = ["build", "-p", "burrow-node", "--lib", "--profile", profile];
console.error(`burrow-sandbox: ${cargo} ${args.join(" ")} (the first build takes minutes)`);
const built = spawnSync(cargo, args, { cwd: workspace, stdio: "inherit" });
if (built.status !== 0) process.exit(built.status ?? 1);

const target = path.resolve(workspace, process.env.CARGO_TARGET_DIR ?? "target");
const dir = path.join(target, profile === "dev" ? "debug" : profile);
const lib = { darwin: "libburrow_node.dylib", win32: "burrow_node.dll" }[process.platform] ?? "libburrow_node.so";
copyFileSync(path.join(dir, lib), path.join(pkg, `burrow.${triple}.node`));
