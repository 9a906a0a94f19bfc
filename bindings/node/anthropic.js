// Adapters for the Anthropic TypeScript SDK (@anthropic-ai/sdk, a peer dependency): Claude's
// memory tool (memory_20250818) kept in a burrow session, for the SDK's tool runner.
//
// Session.runToolUse (in index.js) needs no SDK: it takes the SDK's tool_use blocks as they
// are. This module is only for the SDK's own helpers.

import { betaMemoryTool } from "@anthropic-ai/sdk/helpers/beta/memory";
import { InvalidInput, Session, toolText } from "./index.js";

const CLEAR = "find /memories -mindepth 1 -maxdepth 1 -exec rm -rf {} +";

/** The error the SDK's tool runner reports to the model as an `is_error` result. */
export class MemoryToolError extends Error {
  constructor(message) {
    super(message);
    this.name = "MemoryToolError";
  }
}

/**
 * The memory tool's handlers (`view`, `create`, `str_replace`, `insert`, `delete`, `rename`)
 * over `session`'s `/memories`: burrow's `memory` family, which gives the SDK's reference
 * strings and path rules; every write is a version of the session, so memories are forked,
 * diffed and undone with it. Pass it to the SDK's `betaMemoryTool`, or use `memoryTool`.
 */
export class BurrowMemoryHandlers {
  /** @param {Session} session */
  constructor(session) {
    if (!(session instanceof Session)) throw new InvalidInput("BurrowMemoryHandlers takes a Session");
    this.session = session;
  }

  async #run(command) {
    const input = Object.fromEntries(Object.entries(command).filter(([, v]) => v != null));
    const out = await this.session.tool("memory", "memory", input);
    if (out.is_error) throw new MemoryToolError(toolText(out));
    return toolText(out);
  }

  view(command) {
    return this.#run(command);
  }

  create(command) {
    return this.#run(command);
  }

  str_replace(command) {
    return this.#run(command);
  }

  insert(command) {
    return this.#run(command);
  }

  delete(command) {
    return this.#run(command);
  }

  rename(command) {
    return this.#run(command);
  }

  /** Removes every memory (one version of the session: undo brings them back). */
  async clearAllMemory() {
    const r = await this.session.sh(CLEAR);
    if (r.exitCode !== 0) throw new MemoryToolError(r.stderr.trim() || "cannot clear /memories");
    return "All memory cleared";
  }
}

/**
 * The memory tool for the SDK's tool runner
 * (`client.beta.messages.toolRunner({ tools: [memoryTool(session)], ... })`), with its
 * memories in `session`'s `/memories`. `extraProps` are added to the tool's definition
 * (`cache_control`, ...).
 *
 * @param {Session} session
 */
export function memoryTool(session, extraProps) {
  return betaMemoryTool(new BurrowMemoryHandlers(session), extraProps);
}
