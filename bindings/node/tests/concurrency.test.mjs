// Calls run off the event loop's thread; many at once on many sessions, and on one.

import assert from "node:assert/strict";
import { execFile } from "node:child_process";
import { test } from "node:test";
import { burrow, freshStore, packageUrl } from "./helpers.mjs";

test("100 parallel calls on 10 sessions from one process", async (t) => {
  const sb = new burrow.Sandbox(freshStore(t));
  const sessions = await Promise.all(Array.from({ length: 10 }, (_, i) => sb.create(`s${i}`)));
  const before = await Promise.all(sessions.map((s) => s.info()));
  const calls = [];
  for (const [i, s] of sessions.entries()) {
    for (let j = 0; j < 10; j++) {
      // Shell commands and direct writes mixed, all on the same ten sessions at once.
      calls.push(j % 2 ? s.sh(`echo ${i}-${j} > f${j}.txt`) : s.write(`f${j}.txt`, `${i}-${j}\n`));
    }
  }
  await Promise.all(calls);
  for (const [i, s] of sessions.entries()) {
    const r = await s.sh("cat f*.txt | sort -t- -k2 -n | tr '\\n' ' '");
    assert.equal(r.stdout, Array.from({ length: 10 }, (_, j) => `${i}-${j} `).join(""));
    const info = await s.info();
    // Every call is its own version: none lost to a conflict, none merged.
    assert.ok(info.version >= before[i].version + 10, `${info.version} vs ${before[i].version}`);
    const writes = (await s.log()).filter((e) => e.versionAfter !== e.versionBefore && e.kind !== "created");
    assert.ok(writes.length >= 10, `${writes.length} events that made versions`);
  }
});

test("the event loop keeps running while a call works", async (t) => {
  const sb = new burrow.Sandbox(freshStore(t));
  const s = await sb.create("busy");
  await s.sh("true"); // open and compile before measuring
  let done = false;
  const call = s.sh("i=0; while [ $i -lt 30000 ]; do i=$((i+1)); done; echo $i").then((r) => {
    done = true;
    return r;
  });
  // Timers fire while the call works: had the call blocked the loop, it would have resolved
  // (and `done` been set by its microtask) before any timer ran.
  let ticks = 0;
  while (!done && ticks < 3) {
    await new Promise((resolve) => setTimeout(resolve, 1));
    if (!done) ticks++;
  }
  assert.ok(ticks >= 1, "no timer ran during the call");
  assert.equal((await call).stdout, "30000\n");
});

test("calls on one session run in call order, each its own version", async (t) => {
  const sb = new burrow.Sandbox(freshStore(t));
  const s = await sb.create("one");
  const results = await Promise.all(
    Array.from({ length: 20 }, (_, i) => s.sh(`echo ${i} >> log.txt`)),
  );
  const versions = results.map((r) => r.versionAfter);
  assert.equal(new Set(versions).size, 20, "twenty distinct versions");
  assert.deepEqual(versions, [...versions].sort((a, b) => a - b), "in call order");
  // In the order they were called, and a read called after them sees them all.
  const lines = (await s.read("log.txt")).trim().split("\n");
  assert.deepEqual(lines, Array.from({ length: 20 }, (_, i) => String(i)));
});

test("a script stays alive while calls are out and ends when the last one answers", async (t) => {
  const store = freshStore(t);
  // Nothing but the calls keeps this script running: no await at the top, no timers.
  const script = `
    const { Sandbox } = await import(process.argv[1]);
    const sb = new Sandbox(process.argv[2]);
    sb.create("alive").then((s) => {
      s.sh("i=0; while [ $i -lt 5000 ]; do i=$((i+1)); done; echo answered $i").then((r) => process.stdout.write(r.stdout));
    });
  `;
  const target = packageUrl();
  const run = await new Promise((resolve) =>
    execFile(process.execPath, ["--input-type=module", "-e", script, target, store], { encoding: "utf8", timeout: 120_000 }, (error, stdout, stderr) =>
      resolve({ error, stdout, stderr }),
    ),
  );
  assert.equal(run.error, null, run.stderr);
  assert.equal(run.stdout, "answered 5000\n");
});
