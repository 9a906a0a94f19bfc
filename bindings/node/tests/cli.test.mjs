// The store is the CLI's: a session made by the CLI is opened from Node, and the other way
// round.

import assert from "node:assert/strict";
import { test } from "node:test";
import { burrow, cli, freshStore } from "./helpers.mjs";

test("a session made by the CLI, resumed from Node", async (t) => {
  const store = freshStore(t);
  const run = cli(t, store);
  if (!run) return;
  let r = run("session", "new", "--name", "from-cli");
  assert.equal(r.status, 0, r.stderr);
  r = run("sh", "from-cli", "echo made by the CLI > notes.md");
  assert.equal(r.status, 0, r.stderr);
  const s = await new burrow.Sandbox(store).open("from-cli");
  assert.equal(await s.read("notes.md"), "made by the CLI\n");
  assert.equal((await s.sh("wc -l < notes.md")).stdout, "1\n");
});

test("a session made by Node, resumed by the CLI", async (t) => {
  const store = freshStore(t);
  const run = cli(t, store);
  if (!run) return;
  const sb = new burrow.Sandbox(store);
  const s = await sb.create("from-node");
  await s.write("notes.md", "made by node\n");
  const [fork] = await s.fork();
  await fork.sh("echo forked >> notes.md");
  let r = run("sh", "from-node", "cat notes.md");
  assert.equal(r.status, 0, r.stderr);
  assert.equal(r.stdout, "made by node\n");
  r = run("sh", fork.id, "cat notes.md");
  assert.equal(r.stdout, "made by node\nforked\n");
  r = run("diff", "from-node", fork.id);
  assert.equal(r.status, 0, r.stderr);
  assert.match(r.stdout, /\+forked/);
  // And back: what the CLI did, Node sees.
  r = run("sh", "from-node", "echo by the CLI again > more.md");
  assert.equal(r.status, 0, r.stderr);
  assert.equal(await s.read("more.md"), "by the CLI again\n");
});
