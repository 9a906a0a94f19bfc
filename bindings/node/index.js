// burrow-sandbox: versioned, forkable sandboxes for AI agents, in-process, for Node.js.
//
// Every tool call (a shell command, a file read or write, an edit) runs as a WASI component
// against a virtual filesystem persisted in a SQLite store (or PostgreSQL), and is one atomic
// version of its session. Nothing stays in memory between calls: a session is resumed from
// any process by opening the same store, forked in O(1), undone, diffed. The store is the
// CLI's own format, so `burrow sh analysis 'cat notes.md' --store burrow.db` sees what this
// package made, and the other way round.
//
// Every method returns a Promise; the work runs on the addon's blocking threads, never on the
// event loop's thread. The native addon (src/lib.rs) is loaded by ./native.js.

import { native } from "./native.js";
import { InvalidInput, ToolError, translate } from "./errors.js";

export {
  BurrowError,
  CallFailed,
  CallTimeout,
  Conflict,
  FileNotFound,
  InvalidInput,
  IsADirectory,
  NotADirectory,
  ToolError,
  UnknownSession,
} from "./errors.js";

/** The version of burrow the addon was built from. */
export const VERSION = native.version();

/** The tool families a session speaks. */
export const FAMILIES = Object.freeze(["agent-toolset", "claude-code", "api", "memory"]);

/** Throws a native failure as the package's error class. */
function rethrow(e) {
  throw translate(e);
}

/** A tool output's text: its text blocks, one after another on their own lines. */
export function toolText(out) {
  return out.content
    .filter((c) => c.type === "text")
    .map((c) => c.text)
    .join("\n");
}

/** Runs a native call; its failure is thrown as the package's error class. */
function call(f) {
  try {
    return f().then(undefined, rethrow);
  } catch (e) {
    return Promise.reject(translate(e));
  }
}

function done() {}

function time(ns) {
  return ns == null ? null : new Date(Math.floor(ns / 1e6));
}

function sessionInfo(d) {
  return {
    id: d.id,
    name: d.name ?? null,
    parent: d.parent ?? null,
    version: d.version,
    created: time(d.created),
    lastActive: time(d.last_active),
    bytes: d.bytes,
    entries: d.entries,
    versions: d.versions,
    settings: d.settings ?? {},
  };
}

function bytes(data, what) {
  if (typeof data === "string") return Buffer.from(data, "utf8");
  if (Buffer.isBuffer(data)) return data;
  if (data instanceof Uint8Array) return Buffer.from(data.buffer, data.byteOffset, data.byteLength);
  if (data instanceof ArrayBuffer) return Buffer.from(data);
  throw new InvalidInput(`${what} must be a string, a Buffer or a Uint8Array`);
}

function text(buffer) {
  return buffer.toString("utf8");
}

function count(n, what, min = 0) {
  if (!Number.isSafeInteger(n) || n < min || n > 0xffffffff) {
    throw new InvalidInput(`${what} must be an integer >= ${min}, got ${n}`);
  }
  return n;
}

function strings(list, what) {
  if (list == null) return [];
  if (typeof list === "string" || !Array.isArray(list) || list.some((s) => typeof s !== "string")) {
    throw new InvalidInput(`${what} takes an array of strings`);
  }
  return list;
}

/** What names a point in history: a session (its head), a session key, or a version number. */
function key(target) {
  if (target instanceof Session) return target.id;
  if (typeof target === "number" && Number.isSafeInteger(target)) return `v${target}`;
  if (typeof target === "string") return target;
  throw new InvalidInput(`not a session or version: ${String(target)}`);
}

/** A tool_use block as plain JSON, from an object or an SDK block. */
function block(b) {
  if (b == null || typeof b !== "object") {
    throw new InvalidInput("expected a tool_use block (an object with type, id, name and input)");
  }
  return JSON.stringify(b);
}

/** Calls in flight in this process, by ticket: [resolve, reject, sandbox]. */
const inflight = new Map();
let ticket = 0;

/**
 * An open burrow store: the sessions in it, created, found, collected and checked.
 *
 * `store` is an SQLite file (created if missing) or a `postgres://` URL; by default the CLI's
 * own store (`~/.local/share/burrow/burrow.db`). The process environment is read as the CLI
 * reads it (`BURROW_CACHE`, `BURROW_TOOLS`, `BURROW_NET_*`). Many Sandbox objects and
 * processes may open one store at once. Opening starts at once and completes in the
 * background; an error opening it is thrown by the first call (or by `Sandbox.open`).
 */
export class Sandbox {
  #core;
  /** How many of this store's calls are in flight, whether the addon holds the event loop
   * for them, and whether letting go is scheduled. */
  #inflight = 0;
  #held = false;
  #releasing = false;
  /** The native store once open (calls then skip awaiting #core). */
  #open = null;
  /** Per session id, the last call queued on it: calls on one session run in call order. */
  #queues = new Map();

  /** @param {string} [store] */
  constructor(store) {
    if (store != null && typeof store !== "string") {
      throw new InvalidInput("the store is a path or a postgres:// URL (a string)");
    }
    /** The store file or URL. */
    this.path = store ?? native.defaultStorePath();
    this.#core = call(() => native.open(this.path)).then((core) => {
      core.attach(Sandbox.#settle);
      this.#open = core;
      return core;
    });
    // Nobody may be waiting yet; the first call reports the failure.
    this.#core.catch(done);
  }

  /** Opens a store and waits until it is open (so that an error is thrown here). */
  static async open(store) {
    const sb = new Sandbox(store);
    await sb.#core;
    return sb;
  }

  /**
   * @internal Runs `f(core, ticket)` on the native store: it starts the call and returns;
   * the answer comes back through `Sandbox.#settle` with the same ticket.
   */
  _run(f) {
    const core = this.#open;
    if (!core) return this.#core.then(() => this._run(f));
    return new Promise((resolve, reject) => {
      ticket = ticket >= 0x7fffffff ? 1 : ticket + 1;
      try {
        f(core, ticket);
      } catch (e) {
        reject(translate(e));
        return;
      }
      inflight.set(ticket, [resolve, reject, this]);
      this.#inflight++;
      // The answer channel keeps node running only while some call of this store is out.
      if (!this.#held) {
        core.hold(true);
        this.#held = true;
      }
    });
  }

  /** Where the addon answers every call: settles the promise `_run` made for `t`. */
  static #settle(t, answer, failure) {
    const call = inflight.get(t);
    if (!call) return;
    inflight.delete(t);
    const [resolve, reject, sb] = call;
    // Let go of the event loop once nothing is out, checked after this turn's callbacks: a
    // loop awaiting one call after another keeps it held instead of letting go every call.
    if (--sb.#inflight === 0 && !sb.#releasing) {
      sb.#releasing = true;
      setImmediate(() => {
        sb.#releasing = false;
        if (sb.#inflight === 0 && sb.#held) {
          sb.#open.hold(false);
          sb.#held = false;
        }
      });
    }
    if (failure == null) resolve(answer);
    else reject(translate(failure));
  }

  /**
   * @internal Runs `f` on the native store after the calls on session `id` made before it
   * (through this Sandbox) have finished, so that a read issued after a write sees it.
   */
  _queue(id, f) {
    const prev = this.#queues.get(id);
    const run = prev ? prev.then(() => this._run(f)) : this._run(f);
    const tail = run.then(done, done);
    this.#queues.set(id, tail);
    tail.then(() => {
      if (this.#queues.get(id) === tail) this.#queues.delete(id);
    });
    return run;
  }

  /**
   * Creates an empty session. `allowNet` takes `burrow session new --allow-net` rules
   * (`pypi.org`, `*.github.com`, `@pypi`...; none: no network); `secrets` takes
   * `NAME@HOST[,HOST...]` (the value of this process's environment variable NAME is sent only
   * to those hosts, the session sees a placeholder); `env` is the environment of its commands,
   * `family` the tool family calls default to, `timeoutMs` and `memoryMib` each call's limits.
   * A `deterministic` session's calls take their clocks, random numbers and network replies
   * from values their events record, so `Session.replay` runs them again identically.
   */
  async create(name, options = {}) {
    if (name != null && typeof name !== "string") {
      throw new InvalidInput("a session's name is a string");
    }
    const env = Object.entries(options.env ?? {}).map(([k, v]) => {
      if (typeof v !== "string") throw new InvalidInput(`env.${k} must be a string`);
      return [k, v];
    });
    env.sort((a, b) => (a[0] < b[0] ? -1 : a[0] > b[0] ? 1 : 0));
    const info = await this._run((core, t) =>
      core.create(t, {
        name: name ?? undefined,
        allowNet: strings(options.allowNet, "allowNet"),
        secrets: strings(options.secrets, "secrets"),
        env,
        family: options.family,
        timeoutMs: options.timeoutMs,
        memoryMib: options.memoryMib == null ? undefined : count(options.memoryMib, "memoryMib", 1),
        deterministic: options.deterministic == null ? undefined : Boolean(options.deterministic),
      }),
    );
    return new Session(this, JSON.parse(info));
  }

  /** The session an id, a unique id prefix or a name designates. */
  async open(idOrName) {
    if (typeof idOrName !== "string") throw new InvalidInput("a session key is a string");
    const id = await this._run((core, t) => core.resolve(t, idOrName));
    const info = await this._run((core, t) => core.info(t, id));
    return new Session(this, JSON.parse(info));
  }

  /** Every session in the store. */
  async list() {
    const list = await this._run((core, t) => core.list(t));
    return JSON.parse(list).map(sessionInfo);
  }

  /**
   * Reclaims what no session needs any more (`burrow gc`): versions beyond the last
   * `keepLast` of each session (default: keep all) and unreferenced objects older than
   * `graceMs` (default 10 minutes).
   */
  async gc({ keepLast, graceMs = 600_000 } = {}) {
    const keep = keepLast == null ? undefined : count(keepLast, "keepLast");
    const r = JSON.parse(await this._run((core, t) => core.gc(t, keep, graceMs)));
    return {
      versionsDeleted: r.versions_deleted,
      objectsDeleted: r.objects_deleted,
      bytesFreed: r.bytes_freed,
      objectsKept: r.objects_kept,
      pagesOffloaded: r.pages_offloaded,
    };
  }

  /** Checks the whole store (`burrow fsck`). */
  async fsck() {
    return JSON.parse(await this._run((core, t) => core.fsck(t)));
  }

  /** @internal Benchmark baseline: n reads looped inside the addon; seconds. */
  async _benchRead(id, path, n) {
    return this._run((core, t) => core.benchRead(t, id, path, n));
  }
}

/**
 * A session: a workspace with its history, addressed by id. Holds nothing but its id: every
 * call opens the session's head, runs, and commits one version.
 */
export class Session {
  /** @param {Sandbox} sandbox */
  constructor(sandbox, info) {
    this.sandbox = sandbox;
    /** @type {string} */
    this.id = info.id;
    /** @type {string | null} */
    this.name = info.name ?? null;
  }

  #run(f) {
    return this.sandbox._queue(this.id, f);
  }

  /** The session's current info (version, size, last activity). */
  async info() {
    return sessionInfo(JSON.parse(await this.#run((core, t) => core.info(t, this.id))));
  }

  /**
   * Runs a shell command (burrow's bash) as one version. `timeoutMs` replaces the session's
   * limit; past it CallTimeout is thrown and the session is unchanged. A non-zero exit is not
   * an error: it is in the result.
   */
  async sh(command, { timeoutMs, stdin } = {}) {
    if (typeof command !== "string") throw new InvalidInput("a command is a string");
    const input = stdin == null ? undefined : bytes(stdin, "stdin");
    const r = await this.#run((core, t) => core.sh(t, this.id, command, input, timeoutMs));
    return {
      exitCode: r.exitCode,
      stdout: text(r.stdout),
      stderr: text(r.stderr),
      versionBefore: r.versionBefore,
      versionAfter: r.versionAfter,
    };
  }

  /**
   * One tool call of a family, as the model would make it; resolves to the tool output
   * (`{ content: [...], is_error }`).
   */
  async tool(family, name, input) {
    if (input == null || typeof input !== "object" || Array.isArray(input)) {
      throw new InvalidInput("the tool input must be an object");
    }
    const out = await this.#run((core, t) => core.call(t, this.id, family, name, JSON.stringify(input)));
    return JSON.parse(out);
  }

  async #text(name, input) {
    const out = await this.tool("agent-toolset", name, input);
    const t = toolText(out);
    if (out.is_error) throw new ToolError(t);
    return t;
  }

  /** A text file's contents at the head (absolute under /workspace, or relative to it). */
  read(path) {
    return this.readBytes(path).then(text);
  }

  /** A file's bytes at the head. Makes no version. */
  readBytes(path) {
    return this.#run((core, t) => core.read(t, this.id, path));
  }

  /** Writes a file (parent directories created) as one version; resolves to the version. */
  async write(path, data) {
    const b = bytes(data, "data");
    return this.#run((core, t) => core.write(t, this.id, path, b));
  }

  /**
   * Replaces the exact text `oldString` (unique unless `replaceAll`) with `newString`, as the
   * agent toolset's `edit`; throws ToolError with the tool's message when it refuses.
   */
  async edit(path, oldString, newString, { replaceAll = false } = {}) {
    return this.#text("edit", {
      file_path: path,
      old_string: oldString,
      new_string: newString,
      replace_all: replaceAll,
    });
  }

  /** Paths matching a relative glob (`**\/*.py`), newest first (at most 200). */
  async glob(pattern, path) {
    const t = await this.#text("glob", path == null ? { pattern } : { pattern, path });
    return t === "no matches" ? [] : t.split("\n");
  }

  /** Lines matching a regular expression (`path:line:text`, `no matches` when none). */
  async grep(pattern, path) {
    return this.#text("grep", path == null ? { pattern } : { pattern, path });
  }

  /** `n` copies of the session as it is now, in O(1) each (no data is copied). */
  async fork(n = 1) {
    count(n, "n", 1);
    const ids = await this.#run((core, t) => core.fork(t, this.id, n));
    return Promise.all(ids.map((id) => this.sandbox.open(id)));
  }

  /**
   * The changes from `other` (a session, a session key or a version number) to this
   * session's head, as `git diff OTHER` reads, with the unified diff in `patch`. `all`
   * includes the system area (/tmp, /memories).
   */
  async diff(other, { all = false } = {}) {
    const d = await this.#run((core, t) => core.diff(t, key(other), this.id, all));
    return { a: d.a, b: d.b, changes: JSON.parse(d.changes), patch: d.patch };
  }

  /**
   * Merges this session's changes since `base` (default: the version it was forked at, or
   * last merged) into `into` (default: the session it was forked from) as one new version of
   * `into`, three-way as `burrow merge` does. Conflicted text files get diff3-style markers;
   * `noCommit` only reports. Resolves to `{source, into, base, ours, theirs, version,
   * committed, merged, conflicts: [{path, reason, regions?}]}`.
   */
  async merge({ into, base, noCommit = false } = {}) {
    const raw = await this.#run((core, t) =>
      core.merge(
        t,
        this.id,
        into === undefined || into === null ? null : key(into),
        base === undefined || base === null ? null : key(base),
        Boolean(noCommit),
      ),
    );
    return JSON.parse(raw);
  }

  /**
   * Runs this session's recorded calls (from `fromVersion` on; default: all) again in a new
   * fork named `into`, each from the tree it started from, as `burrow replay` does. Resolves
   * to `{session, into, calls: [{seq, tool, summary, deterministic, recorded, replayed,
   * identical, difference?}], identical, differ}`.
   */
  async replay({ fromVersion, into } = {}) {
    const raw = await this.#run((core, t) =>
      core.replay(
        t,
        this.id,
        fromVersion === undefined || fromVersion === null ? null : key(fromVersion),
        into === undefined || into === null ? null : String(into),
      ),
    );
    return JSON.parse(raw);
  }

  /** Moves the session back to the tree before its last change, as a new version. */
  async undo() {
    return this.#run((core, t) => core.undo(t, this.id));
  }

  /**
   * Moves the session to the tree of `version` (a number, `v42`, a label or another
   * session), as a new version; resolves to it.
   */
  async checkout(version) {
    return this.#run((core, t) => core.checkout(t, this.id, key(version)));
  }

  /** Names the session's current version; resolves to it. */
  async label(name) {
    return this.#run((core, t) => core.label(t, this.id, name));
  }

  /** The session's versions, newest first. */
  async history({ limit = 100 } = {}) {
    const rows = await this.#run((core, t) => core.history(t, this.id, count(limit, "limit")));
    return JSON.parse(rows).map((v) => ({
      version: v.version,
      parent: v.parent ?? null,
      time: time(v.time),
      message: v.message,
      bytes: v.bytes,
      entries: v.entries,
    }));
  }

  /**
   * The session's events, oldest first: `tool`, `upload`, `forked`, `undo`, `labelled`,
   * `net`...; `kind` keeps one kind.
   */
  async log({ kind, after = 0, limit = 1000 } = {}) {
    if (!Number.isSafeInteger(after)) throw new InvalidInput(`after must be an integer, got ${after}`);
    const rows = await this.#run((core, t) =>
      core.log(t, this.id, after, count(limit, "limit"), kind ?? undefined),
    );
    return JSON.parse(rows).map((e) => ({
      seq: e.seq,
      session: e.session,
      time: time(e.time),
      kind: e.kind,
      versionBefore: e.version_before ?? null,
      versionAfter: e.version_after ?? null,
      data: e.data,
    }));
  }

  /** Writes the session's tree to a host directory, or a tar file if `path` ends in `.tar`. */
  async export(path) {
    return JSON.parse(await this.#run((core, t) => core.export(t, this.id, path)));
  }

  /** Writes the session's tree to a tar file at `path`. */
  async exportTar(path) {
    if (!String(path).endsWith(".tar")) {
      throw new InvalidInput(`a tar file's name ends in .tar: ${path}`);
    }
    return this.export(path);
  }

  /** Deletes the session (its unique data is reclaimed by Sandbox.gc). */
  async delete() {
    await this.#run((core, t) => core.delete(t, this.id));
  }

  /**
   * The `tools` of a Messages API request for a family: for `api`, the Anthropic-defined
   * `bash_20250124` and `text_editor_20250728`; for `memory`, `memory_20250818`; for the
   * others, custom tools with their input schemas.
   */
  tools(family = "api") {
    try {
      return JSON.parse(native.tools(family));
    } catch (e) {
      throw translate(e);
    }
  }

  /**
   * Runs a `tool_use` block of a Messages API reply and resolves to the `tool_result` block
   * to send back. The tool runs in `family` when the family has it, else in the family that
   * does; an unknown name gets an `is_error` result.
   */
  async runToolUse(toolUse, { family = "api" } = {}) {
    const json = block(toolUse);
    return JSON.parse(await this.#run((core, t) => core.toolUse(t, this.id, family, json)));
  }

  toString() {
    return `Session(${this.id}${this.name ? ` ${this.name}` : ""})`;
  }
}
