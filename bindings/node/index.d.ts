// Types of burrow-sandbox (index.js). Every method returns a Promise; the work runs off the
// event loop's thread.

/** A path a merge could not merge cleanly. */
export interface MergeConflict {
  path: string;
  /** `content`, `binary`, `modify/delete`, `file/directory`, `symlink`, `mode`, `rename/delete` or `rename/rename`. */
  reason: string;
  /** Conflicted regions written with diff3-style markers (content conflicts). */
  regions?: number;
}

/** What `Session.merge` did. */
export interface Merge {
  source: string;
  into: string;
  base: number;
  /** The destination's head the merge started from. */
  ours: number;
  /** The source's head that was merged. */
  theirs: number;
  /** The destination's head afterwards. */
  version: number;
  /** Whether a new version was made. */
  committed: boolean;
  merged: string[];
  conflicts: MergeConflict[];
}

/** The version of burrow the native addon was built from. */
export declare const VERSION: string;

/** The tool families a session speaks. */
export declare const FAMILIES: readonly ["agent-toolset", "claude-code", "api", "memory"];
export type Family = (typeof FAMILIES)[number];

/** Any error burrow reports; the message is the CLI's. */
export declare class BurrowError extends Error {}
/** No session (or more than one) matches a key. */
export declare class UnknownSession extends BurrowError {}
/** A name taken, a bad network rule, a path outside the workspace, an unknown family... */
export declare class InvalidInput extends BurrowError {}
/** A file that does not exist (the message names it). */
export declare class FileNotFound extends BurrowError {
  readonly code: "ENOENT";
}
/** A directory where a file was expected. */
export declare class IsADirectory extends BurrowError {
  readonly code: "EISDIR";
}
/** A file where a directory was expected. */
export declare class NotADirectory extends BurrowError {
  readonly code: "ENOTDIR";
}
/** A call stopped by a trap or a limit (memory, output, quota); the session is unchanged. */
export declare class CallFailed extends BurrowError {}
/** A call that passed its time limit; the session is unchanged. */
export declare class CallTimeout extends CallFailed {
  readonly code: "ETIMEDOUT";
}
/** Another process moved the session during the call; retry. */
export declare class Conflict extends BurrowError {}
/** edit, glob or grep answered with an error (the tool's own text). */
export declare class ToolError extends BurrowError {}

/** A tool output's text: its text blocks, one after another on their own lines. */
export declare function toolText(out: ToolOutput): string;

/** What `burrow session ls` shows of a session. */
export interface SessionInfo {
  id: string;
  name: string | null;
  /** The session it was forked from. */
  parent: string | null;
  /** The version its head is at. */
  version: number;
  created: Date;
  lastActive: Date | null;
  /** Bytes of files and number of entries in its workspace. */
  bytes: number;
  entries: number;
  /** Versions the session committed itself (a fork's shared history is its parent's). */
  versions: number;
  /** Settings fixed at creation (environment, default family, limits, network policy). */
  settings: Record<string, unknown>;
}

export interface CreateOptions {
  /** `burrow session new --allow-net` rules: `pypi.org`, `*.github.com`, `@pypi`... */
  allowNet?: string[];
  /** `NAME@HOST[,HOST...]`: this process's `$NAME` is sent only to those hosts. */
  secrets?: string[];
  /** The environment of the session's commands. */
  env?: Record<string, string>;
  /** The tool family calls default to. */
  family?: Family;
  /** Each call's time limit. */
  timeoutMs?: number;
  /** Each call's memory limit. */
  memoryMib?: number;
  /** Deterministic calls, which `Session.replay` runs again identically. */
  deterministic?: boolean;
}

/** One call of a replay. */
export interface ReplayedCall {
  seq: number;
  tool: string;
  summary: string;
  deterministic: boolean;
  recorded: number | null;
  replayed: number;
  identical: boolean;
  difference?: string;
}

/** What `Session.replay` found. */
export interface Replay {
  session: string;
  into: string;
  calls: ReplayedCall[];
  identical: number;
  differ: number;
}

/** The outcome of a shell command. */
export interface ShResult {
  exitCode: number;
  stdout: string;
  stderr: string;
  versionBefore: number;
  versionAfter: number;
}

/** A tool's output as the model sees it. */
export interface ToolOutput {
  content: Array<{ type: "text"; text: string } | { type: "image"; source: { type: "base64"; media_type: string; data: string } }>;
  is_error: boolean;
}

/** One path that differs between two versions. */
export interface Change {
  path: string;
  change: "added" | "removed" | "modified";
  kind: "file" | "dir" | "symlink";
}

/** The changes from version `a` to version `b`, and their unified diff. */
export interface Diff {
  a: number;
  b: number;
  changes: Change[];
  /** A unified diff of the text files that changed (`burrow diff` prints this). */
  patch: string;
}

/** One version of a session (`burrow history`). */
export interface Version {
  version: number;
  parent: number | null;
  time: Date;
  /** What made it (the tool's name, `upload path`, `undo`...). */
  message: string;
  bytes: number;
  entries: number;
}

/** One entry of a session's event log (`burrow log`). */
export interface Event {
  seq: number;
  session: string;
  time: Date;
  kind: string;
  versionBefore: number | null;
  versionAfter: number | null;
  data: unknown;
}

export interface ExportStats {
  files: number;
  dirs: number;
  symlinks: number;
  bytes: number;
}

export interface GcReport {
  versionsDeleted: number;
  objectsDeleted: number;
  bytesFreed: number;
  objectsKept: number;
  /** Pages of small calls moved from the catalog into object storage. */
  pagesOffloaded: number;
}

export interface FsckReport {
  clean: boolean;
  problems: string[];
  workspaces: number;
  versions: number;
  objects: number;
}

/** A Messages API `tool_use` block (an object, or the Anthropic SDK's block). */
export interface ToolUseBlock {
  type: "tool_use";
  id: string;
  name: string;
  input: unknown;
}

/** The `tool_result` block answering a `tool_use` block. */
export interface ToolResultBlock {
  type: "tool_result";
  tool_use_id: string;
  content: ToolOutput["content"];
  is_error?: boolean;
}

/** A session or a point in its history: a Session (its head), a key (id, name, `v42`, a label) or a version number. */
export type Target = Session | string | number;

/**
 * An open burrow store: an SQLite file (created if missing) or a `postgres://` URL; by default
 * the CLI's own store. Opening completes in the background; its error is thrown by the first
 * call (or by `Sandbox.open`).
 */
export declare class Sandbox {
  constructor(store?: string);
  /** Opens a store and waits until it is open. */
  static open(store?: string): Promise<Sandbox>;
  /** The store file or URL. */
  readonly path: string;
  /** Creates an empty session. */
  create(name?: string | null, options?: CreateOptions): Promise<Session>;
  /** The session an id, a unique id prefix or a name designates. */
  open(idOrName: string): Promise<Session>;
  /** Every session in the store. */
  list(): Promise<SessionInfo[]>;
  /** `burrow gc`: versions beyond the last `keepLast` of each session, objects unreferenced for `graceMs`. */
  gc(options?: { keepLast?: number; graceMs?: number }): Promise<GcReport>;
  /** `burrow fsck`. */
  fsck(): Promise<FsckReport>;
}

/** A session: a workspace with its history, addressed by id; every call is one version. */
export declare class Session {
  readonly sandbox: Sandbox;
  readonly id: string;
  readonly name: string | null;
  info(): Promise<SessionInfo>;
  /** A shell command (burrow's bash) as one version; a non-zero exit is in the result. */
  sh(command: string, options?: { timeoutMs?: number; stdin?: string | Uint8Array }): Promise<ShResult>;
  /** One tool call of a family, as the model would make it. */
  tool(family: Family, name: string, input: Record<string, unknown>): Promise<ToolOutput>;
  /** A text file at the head (absolute under /workspace, or relative to it). */
  read(path: string): Promise<string>;
  /** A file's bytes at the head. */
  readBytes(path: string): Promise<Buffer>;
  /** Writes a file (parents created) as one version; resolves to the version. */
  write(path: string, data: string | Uint8Array | ArrayBuffer): Promise<number>;
  /** The agent toolset's edit; throws ToolError with the tool's text when it refuses. */
  edit(path: string, oldString: string, newString: string, options?: { replaceAll?: boolean }): Promise<string>;
  /** Paths matching a relative glob, newest first (at most 200). */
  glob(pattern: string, path?: string): Promise<string[]>;
  /** `path:line:text` lines matching a regular expression (`no matches` when none). */
  grep(pattern: string, path?: string): Promise<string>;
  /** `n` O(1) copies of the session as it is now. */
  fork(n?: number): Promise<Session[]>;
  /** Changes from `other` to this session's head, as `git diff OTHER`; `all` adds /tmp and /memories. */
  diff(other: Target, options?: { all?: boolean }): Promise<Diff>;
  /**
   * Merges this session's changes into `into` (default: the session it was forked from)
   * as one new version, three-way from `base` (default: the fork point or last merge).
   */
  merge(options?: { into?: Target; base?: Target; noCommit?: boolean }): Promise<Merge>;
  /** The recorded calls run again in a new fork, compared call by call. */
  replay(options?: { fromVersion?: Target; into?: string }): Promise<Replay>;
  /** Back to the tree before the last change, as a new version. */
  undo(): Promise<number>;
  /** To the tree of `version`, as a new version. */
  checkout(version: Target): Promise<number>;
  /** Names the current version. */
  label(name: string): Promise<number>;
  /** Versions, newest first. */
  history(options?: { limit?: number }): Promise<Version[]>;
  /** Events, oldest first; `kind` keeps one kind. */
  log(options?: { kind?: string; after?: number; limit?: number }): Promise<Event[]>;
  /** The tree to a host directory, or a tar file for `*.tar`. */
  export(path: string): Promise<ExportStats>;
  /** The tree to a tar file. */
  exportTar(path: string): Promise<ExportStats>;
  /** Deletes the session (Sandbox.gc reclaims its unique bytes). */
  delete(): Promise<void>;
  /** The `tools` of a Messages API request for a family (default `api`). */
  tools(family?: Family): Array<Record<string, unknown>>;
  /** Runs a `tool_use` block and resolves to the `tool_result` block to send back. */
  runToolUse(block: ToolUseBlock | { type: string; id: string; name: string; input: unknown }, options?: { family?: Family }): Promise<ToolResultBlock>;
}
