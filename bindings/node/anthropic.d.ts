// Types of burrow-sandbox/anthropic: Claude's memory tool in a burrow session, for the
// Anthropic TypeScript SDK's tool runner.
import type { MemoryToolHandlers } from "@anthropic-ai/sdk/helpers/beta/memory";
import type { BetaRunnableTool } from "@anthropic-ai/sdk/lib/tools/BetaRunnableTool";
import type { BetaMemoryTool20250818, BetaMemoryTool20250818Command } from "@anthropic-ai/sdk/resources/beta";
import type { Session } from "./index.js";

/** What a memory command that failed throws (the runner answers `Error: <message>`, is_error). */
export declare class MemoryToolError extends Error {}

/** The memory tool's handlers over `session`'s `/memories`. */
export declare class BurrowMemoryHandlers implements MemoryToolHandlers {
  constructor(session: Session);
  readonly session: Session;
  view: MemoryToolHandlers["view"];
  create: MemoryToolHandlers["create"];
  str_replace: MemoryToolHandlers["str_replace"];
  insert: MemoryToolHandlers["insert"];
  delete: MemoryToolHandlers["delete"];
  rename: MemoryToolHandlers["rename"];
  /** Removes every memory (one version: undo brings them back). */
  clearAllMemory(): Promise<string>;
}

/** The memory tool for `client.beta.messages.toolRunner({ tools: [memoryTool(session)] })`. */
export declare function memoryTool(
  session: Session,
  extraProps?: Omit<BetaMemoryTool20250818, "type" | "name">,
): BetaRunnableTool<BetaMemoryTool20250818Command>;
