// Every method of Sandbox and Session, and every error class.

import assert from "node:assert/strict";
import { existsSync, mkdtempSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import { test } from "node:test";
import { burrow, freshSession, freshStore } from "./helpers.mjs";

const { Sandbox, Session } = burrow;

test("create, open by name and by id prefix, list", async (t) => {
  const store = freshStore(t);
  const sb = new Sandbox(store);
  assert.equal(sb.path, store);
  const s = await sb.create("analysis", { env: { LANG: "C.UTF-8", B: "2" } });
  assert.ok(s instanceof Session);
  assert.equal(s.name, "analysis");
  assert.match(s.id, /^[0-9a-z]+$/);
  assert.equal((await sb.open("analysis")).id, s.id);
  assert.equal((await sb.open(s.id.slice(0, 6))).id, s.id);
  const anon = await sb.create();
  assert.equal(anon.name, null);
  const list = await sb.list();
  assert.deepEqual(list.map((i) => i.id).sort(), [s.id, anon.id].sort());
  const info = await s.info();
  assert.ok(info.created instanceof Date);
  assert.ok(Math.abs(info.created.getTime() - Date.now()) < 600_000);
  assert.equal(info.parent, null);
  assert.equal(typeof info.version, "number");
  const r = await s.sh("echo $LANG $B");
  assert.equal(r.stdout, "C.UTF-8 2\n");
  // Another Sandbox object (another process would do the same) sees the session.
  const again = await Sandbox.open(store);
  assert.equal((await again.open("analysis")).id, s.id);
});

test("sh: exit code, output, stdin, versions", async (t) => {
  const s = await freshSession(t);
  const r = await s.sh("echo hello > notes.md && wc -c notes.md && echo err >&2; exit 3");
  assert.deepEqual(
    { exitCode: r.exitCode, stdout: r.stdout, stderr: r.stderr },
    { exitCode: 3, stdout: "6 notes.md\n", stderr: "err\n" },
  );
  assert.ok(r.versionAfter > r.versionBefore);
  const same = await s.sh("cat notes.md");
  assert.equal(same.stdout, "hello\n");
  assert.equal(same.versionBefore, r.versionAfter);
  assert.equal((await s.sh("tr a-z A-Z", { stdin: "piped\n" })).stdout, "PIPED\n");
  assert.equal((await s.sh("wc -c", { stdin: new Uint8Array([1, 2, 3]) })).stdout, "3\n");
});

test("read, readBytes, write (text and bytes), parents made", async (t) => {
  const s = await freshSession(t);
  const v = await s.write("deep/dir/a.txt", "héllo\n");
  assert.equal(typeof v, "number");
  assert.equal(await s.read("/workspace/deep/dir/a.txt"), "héllo\n");
  await s.write("bin.dat", Buffer.from([0, 255, 1]));
  const b = await s.readBytes("bin.dat");
  assert.ok(Buffer.isBuffer(b));
  assert.deepEqual([...b], [0, 255, 1]);
  assert.equal((await s.sh("cat deep/dir/a.txt")).stdout, "héllo\n");
});

test("edit, glob, grep, tool", async (t) => {
  const s = await freshSession(t);
  await s.write("src/a.py", "x = 1\ny = 2\n");
  await s.write("src/b.py", "x = 3\n");
  assert.match(await s.edit("src/a.py", "y = 2", "y = 20"), /src\/a\.py/);
  assert.equal(await s.read("src/a.py"), "x = 1\ny = 20\n");
  await assert.rejects(s.edit("src/a.py", "nope", "x"), (e) => {
    assert.ok(e instanceof burrow.ToolError);
    assert.ok(e instanceof burrow.BurrowError);
    return true;
  });
  await s.edit("src/b.py", "3", "4", { replaceAll: true });
  assert.deepEqual((await s.glob("**/*.py")).sort(), ["/workspace/src/a.py", "/workspace/src/b.py"]);
  assert.deepEqual(await s.glob("*.rs"), []);
  assert.match(await s.grep("y = "), /a\.py:2:y = 20/);
  const out = await s.tool("agent-toolset", "read", { file_path: "/workspace/src/b.py" });
  assert.equal(out.is_error, false);
  assert.match(out.content[0].text, /x = 4/);
  await assert.rejects(s.tool("nope", "read", {}), burrow.InvalidInput);
  await assert.rejects(s.tool("agent-toolset", "read", [1]), burrow.InvalidInput);
});

test("fork, diff with patch, undo, checkout, label, history, log", async (t) => {
  const s = await freshSession(t);
  await s.write("notes.md", "base\n");
  const [a, b] = await s.fork(2);
  assert.ok(a instanceof Session && b instanceof Session);
  assert.notEqual(a.id, b.id);
  assert.equal((await a.info()).parent, s.id);
  await a.write("notes.md", "try A\n");
  await b.sh("echo B > b.txt");
  const d = await a.diff(s);
  assert.deepEqual(d.changes, [{ path: "notes.md", change: "modified", kind: "file" }]);
  assert.match(d.patch, /-base\n\+try A\n/);
  assert.equal(await s.read("notes.md"), "base\n", "a fork's writes stay in the fork");
  const db = await b.diff(s.id);
  assert.deepEqual(db.changes.map((c) => [c.path, c.change]), [["b.txt", "added"]]);
  const labelled = await a.label("tried");
  await a.write("notes.md", "try A, twice\n");
  await a.undo();
  assert.equal(await a.read("notes.md"), "try A\n");
  const first = (await s.history()).at(-1).version;
  await a.checkout("tried");
  assert.equal(await a.read("notes.md"), "try A\n");
  const hist = await a.history({ limit: 3 });
  assert.equal(hist.length, 3);
  assert.ok(hist[0].time instanceof Date);
  assert.ok(hist[0].version > hist[1].version, "newest first");
  assert.ok((await a.history({ limit: 100 })).some((v) => v.version === labelled));
  await a.checkout(first);
  assert.deepEqual((await a.diff(first)).changes, []);
  const events = await a.log();
  assert.ok(events.length > 3);
  assert.ok(events.every((e, i) => i === 0 || e.seq > events[i - 1].seq), "oldest first");
  const kinds = new Set(events.map((e) => e.kind));
  for (const k of ["undo", "labelled", "checked_out"]) assert.ok(kinds.has(k), `${k} in ${[...kinds]}`);
  const undos = await a.log({ kind: "undo" });
  assert.ok(undos.length === 1 && undos[0].kind === "undo");
  assert.deepEqual(await a.log({ after: events.at(-1).seq }), []);
  // all: the system area (/tmp) too.
  await a.sh("echo t > /tmp/x");
  assert.deepEqual((await a.diff(s)).changes.filter((c) => c.path.startsWith("/tmp")), []);
  assert.ok((await a.diff(s, { all: true })).changes.some((c) => c.path === "/tmp/x"));
});

test("export to a directory and exportTar, delete, gc, fsck", async (t) => {
  const store = freshStore(t);
  const sb = new Sandbox(store);
  const s = await sb.create("exp");
  await s.write("a/b.txt", "bee\n");
  await s.sh("ln -s a/b.txt link");
  const dir = mkdtempSync(path.join(tmpdir(), "burrow-export-"));
  t.after(() => rmSync(dir, { recursive: true, force: true }));
  const stats = await s.export(path.join(dir, "tree"));
  assert.equal(stats.files, 1);
  assert.equal(stats.symlinks, 1);
  assert.equal(readFileSync(path.join(dir, "tree/a/b.txt"), "utf8"), "bee\n");
  const tar = path.join(dir, "t.tar");
  assert.equal((await s.exportTar(tar)).files, 1);
  assert.ok(existsSync(tar));
  await assert.rejects(s.exportTar(path.join(dir, "t.zip")), burrow.InvalidInput);
  await s.delete();
  await assert.rejects(sb.open("exp"), burrow.UnknownSession);
  const gc = await sb.gc({ graceMs: 0 });
  assert.ok(gc.objectsDeleted > 0, JSON.stringify(gc));
  const fsck = await sb.fsck();
  assert.equal(fsck.clean, true, JSON.stringify(fsck));
  await assert.rejects(sb.gc({ graceMs: -1 }), burrow.InvalidInput);
});

test("errors: typed classes with the CLI's messages; the session unchanged", async (t) => {
  const store = freshStore(t);
  const sb = new Sandbox(store);
  const s = await sb.create("err", { timeoutMs: 60_000 });
  await assert.rejects(sb.open("nope"), (e) => {
    assert.ok(e instanceof burrow.UnknownSession);
    assert.equal(e.name, "UnknownSession");
    assert.match(e.message, /nope/);
    return true;
  });
  await assert.rejects(sb.create("err"), (e) => e instanceof burrow.InvalidInput && /err/.test(e.message));
  await assert.rejects(sb.create("x", { allowNet: "pypi.org" }), burrow.InvalidInput);
  await assert.rejects(sb.create("y", { allowNet: ["http://[bad"] }), burrow.InvalidInput);
  await assert.rejects(s.read("missing.txt"), (e) => {
    assert.ok(e instanceof burrow.FileNotFound);
    assert.equal(e.code, "ENOENT");
    assert.match(e.message, /^missing\.txt: /);
    return true;
  });
  await s.sh("mkdir d && echo f > f");
  await assert.rejects(s.read("d"), (e) => e instanceof burrow.IsADirectory && e.code === "EISDIR");
  await assert.rejects(s.read("f/x"), (e) => e instanceof burrow.NotADirectory && e.code === "ENOTDIR");
  await assert.rejects(s.write("/etc/passwd", "x"), burrow.InvalidInput);
  const before = (await s.info()).version;
  await assert.rejects(s.sh("touch new; while true; do :; done", { timeoutMs: 300 }), (e) => {
    assert.ok(e instanceof burrow.CallTimeout);
    assert.ok(e instanceof burrow.CallFailed);
    assert.match(e.message, /the session is unchanged/);
    return true;
  });
  assert.equal((await s.info()).version, before);
  assert.match((await s.sh("ls new")).stderr, /No such file/);
  await assert.rejects(s.sh("echo", { timeoutMs: -5 }), /timeoutMs must be a positive number of milliseconds/);
  await assert.rejects(s.sh(42), burrow.InvalidInput);
  await assert.rejects(s.read(42), (e) => e instanceof burrow.InvalidInput && /String/.test(e.message));
  await assert.rejects(s.fork(0), burrow.InvalidInput);
  await assert.rejects(s.checkout({}), burrow.InvalidInput);
  // A store that cannot be opened: the first call says why.
  const bad = new Sandbox("/proc/version/x.db");
  await assert.rejects(bad.list(), burrow.BurrowError);
  await assert.rejects(Sandbox.open("/proc/version/x.db"), burrow.BurrowError);
  assert.throws(() => new Sandbox(42), burrow.InvalidInput);
});

test("tools and runToolUse of every family", async (t) => {
  const s = await freshSession(t);
  const api = s.tools();
  assert.deepEqual(api.map((x) => x.type).sort(), ["bash_20250124", "text_editor_20250728"]);
  assert.deepEqual(s.tools("memory").map((x) => x.type), ["memory_20250818"]);
  for (const f of ["agent-toolset", "claude-code"]) {
    assert.ok(s.tools(f).every((x) => x.name && x.input_schema), f);
  }
  assert.throws(() => s.tools("nope"), burrow.InvalidInput);
  const r = await s.runToolUse({ type: "tool_use", id: "toolu_1", name: "bash", input: { command: "echo hi" } });
  assert.deepEqual(r, { type: "tool_result", tool_use_id: "toolu_1", content: [{ type: "text", text: "hi" }], is_error: false });
  // A tool of another family runs in the family that has it.
  const m = await s.runToolUse({ type: "tool_use", id: "toolu_2", name: "memory", input: { command: "view", path: "/memories" } });
  assert.equal(m.is_error, false);
  const u = await s.runToolUse({ type: "tool_use", id: "toolu_3", name: "frobnicate", input: {} });
  assert.deepEqual(u.is_error, true);
  assert.match(u.content[0].text, /Unknown tool: frobnicate/);
  await assert.rejects(s.runToolUse({ type: "text", text: "x" }), burrow.InvalidInput);
  await assert.rejects(s.runToolUse(null), burrow.InvalidInput);
});

test("a deterministic session replays identically; another shows what changed", async (t) => {
  const sb = new Sandbox(freshStore(t));
  const d = await sb.create("det-js", { deterministic: true });
  await d.sh("date +%s%N > t.txt; echo $RANDOM > r.txt; head -c 8 /dev/urandom | od -An -tx1");
  await d.sh("cat t.txt r.txt > both.txt");
  const r = await d.replay({ into: "det-js-again" });
  assert.deepEqual([r.identical, r.differ, r.calls.length], [2, 0, 2]);
  const again = await sb.open("det-js-again");
  assert.equal(await again.read("both.txt"), await d.read("both.txt"));
  const p = await sb.create("plain-js");
  await p.sh("date +%s%N > t.txt");
  const q = await p.replay();
  assert.equal(q.differ, 1);
  assert.equal(q.calls[0].difference, "the tree differs: changed: t.txt");
});

test("merge a fork back, then a conflicting one", async (t) => {
  const s = await freshSession(t);
  await s.write("f.txt", "a\nb\nc\nd\n");
  const [a, b] = await s.fork(2);
  await a.sh("sed -i s/a/A/ f.txt; echo n > new.txt");
  await s.sh("sed -i s/d/D/ f.txt");
  const dry = await a.merge({ noCommit: true });
  assert.deepEqual([dry.committed, dry.merged, dry.conflicts], [false, ["f.txt", "new.txt"], []]);
  const m = await a.merge();
  assert.equal(m.committed, true);
  assert.equal(m.into, s.id);
  assert.equal(await s.read("f.txt"), "A\nb\nc\nD\n");
  await b.sh("sed -i s/a/B/ f.txt");
  const c = await b.merge({ into: s });
  assert.deepEqual(c.conflicts, [{ path: "f.txt", reason: "content", regions: 1 }]);
  assert.ok((await s.read("f.txt")).startsWith(`<<<<<<< ${s.id}\nA\n||||||| v`));
  await assert.rejects(s.merge(), burrow.InvalidInput);
});
