// The Vercel AI SDK adapter: a session's tools as AI SDK `tool()` definitions, for
// generateText / streamText / Agent. Needs the `ai` package (a peer dependency).

import { jsonSchema, tool } from "ai";
import { InvalidInput, Session, toolText } from "./index.js";

/** Families whose tools are custom tools with input schemas (the others are Anthropic's own). */
const CUSTOM = new Set(["agent-toolset", "claude-code"]);

/**
 * The model's view of a tool output: its text, or for outputs with images (a read of a PNG),
 * the text and the images as AI SDK content parts. Errors are `error-text`, so the model sees
 * the tool's message as an error without the loop stopping.
 */
function modelOutput(out) {
  if (out.is_error) return { type: "error-text", value: toolText(out) };
  if (out.content.every((c) => c.type === "text")) return { type: "text", value: toolText(out) };
  return {
    type: "content",
    value: out.content.map((c) =>
      c.type === "image"
        ? { type: "image-data", data: c.source.data, mediaType: c.source.media_type }
        : { type: "text", text: c.text ?? JSON.stringify(c) },
    ),
  };
}

/**
 * The tools of `family` (`agent-toolset`: bash, read, write, edit, glob, grep; or
 * `claude-code`) as a record of AI SDK tools running in `session`, each call one version of
 * it. `execute` resolves to the tool's output (`{ content, is_error }`); `toModelOutput`
 * gives the model its text (or images), and an `is_error` output as an error.
 *
 * @param {Session} session
 * @param {{ family?: string }} [options]
 */
export function aiSdkTools(session, { family = "agent-toolset" } = {}) {
  if (!(session instanceof Session)) throw new InvalidInput("aiSdkTools takes a Session");
  if (!CUSTOM.has(family)) {
    throw new InvalidInput(
      `the ${family} family's tools are Anthropic-defined (no input schema); use ` +
        "agent-toolset or claude-code with the AI SDK",
    );
  }
  const tools = {};
  for (const def of session.tools(family)) {
    tools[def.name] = tool({
      description: def.description,
      inputSchema: jsonSchema(def.input_schema),
      execute: (input) => session.tool(family, def.name, input),
      toModelOutput: ({ output }) => modelOutput(output),
    });
  }
  return tools;
}
