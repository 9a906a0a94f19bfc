// Packs the npm packages for publishing: the prebuilt addon's package for this platform
// (`burrow-sandbox-linux-x64-gnu`) and `burrow-sandbox` itself, which lists the prebuilt
// package as an optional dependency (so `npm install burrow-sandbox` needs no Rust toolchain
// on linux-x64 with glibc, and builds from source elsewhere only inside a clone).
//
//   cargo build --release -p burrow-node --lib
//   node bindings/node/scripts/pack.js --addon target/release/libburrow_node.so --out dist/
//
// Writes the two .tgz files into --out and prints their paths.

import { spawnSync } from "node:child_process";
import { copyFileSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import { fileURLToPath } from "node:url";
import { parseArgs } from "node:util";
import { platform } from "../platform.js";

const pkg = path.resolve(path.dirname(fileURLToPath(import.meta.url)), "..");
const { values } = parseArgs({ options: { addon: { type: "string" }, out: { type: "string" } } });
if (!values.addon || !values.out) {
  console.error("usage: pack.js --addon PATH/libburrow_node.so --out DIR");
  process.exit(2);
}
const triple = platform();
const out = path.resolve(values.out);
mkdirSync(out, { recursive: true });
const stage = mkdtempSync(path.join(tmpdir(), "burrow-pack-"));

function pack(dir) {
  const r = spawnSync("npm", ["pack", "--silent", "--pack-destination", out], { cwd: dir, encoding: "utf8" });
  if (r.status !== 0) throw new Error(`npm pack in ${dir} failed:\n${r.stderr}`);
  return path.join(out, r.stdout.trim().split("\n").at(-1));
}

try {
  const main = JSON.parse(readFileSync(path.join(pkg, "package.json"), "utf8"));

  // The prebuilt addon's package.
  const platformDir = path.join(pkg, "npm", triple);
  const platformJson = JSON.parse(readFileSync(path.join(platformDir, "package.json"), "utf8"));
  if (platformJson.version !== main.version) {
    throw new Error(`npm/${triple}/package.json is at ${platformJson.version}, burrow-sandbox at ${main.version}`);
  }
  const a = path.join(stage, triple);
  mkdirSync(a);
  writeFileSync(path.join(a, "package.json"), JSON.stringify(platformJson, null, 2));
  copyFileSync(path.resolve(values.addon), path.join(a, `burrow.${triple}.node`));

  // burrow-sandbox, with the prebuilt package as an optional dependency.
  const b = path.join(stage, "burrow-sandbox");
  for (const f of main.files) {
    if (f.includes("*")) continue;
    mkdirSync(path.dirname(path.join(b, f)), { recursive: true });
    copyFileSync(path.join(pkg, f), path.join(b, f));
  }
  const published = { ...main, optionalDependencies: { [platformJson.name]: main.version } };
  delete published.devDependencies;
  writeFileSync(path.join(b, "package.json"), JSON.stringify(published, null, 2));
  for (const f of ["README.md", "LICENSE"]) {
    try {
      copyFileSync(path.join(pkg, f), path.join(b, f));
    } catch {}
  }

  console.log(pack(a));
  console.log(pack(b));
} finally {
  rmSync(stage, { recursive: true, force: true });
}
