// Types of burrow-sandbox/ai: a session's tools for the Vercel AI SDK.
import type { Tool } from "ai";
import type { Session, ToolOutput } from "./index.js";

/**
 * The tools of `family` (`agent-toolset`: bash, read, write, edit, glob, grep; or
 * `claude-code`) as AI SDK tools running in `session`, each call one version of it.
 */
export declare function aiSdkTools(
  session: Session,
  options?: { family?: "agent-toolset" | "claude-code" },
): Record<string, Tool<Record<string, unknown>, ToolOutput>>;
