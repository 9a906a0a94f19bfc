// The errors of burrow-sandbox: every failure is a BurrowError carrying the CLI's message; the
// subclass says what kind it is (the same classes as the Python package's burrow.errors).

/** Any error burrow reports. */
export class BurrowError extends Error {
  constructor(message, options) {
    super(message, options);
    this.name = new.target.name;
  }
}

/** No session (or more than one) matches a key. */
export class UnknownSession extends BurrowError {}

/** A name taken, a bad network rule, a path outside the workspace, an unknown family... */
export class InvalidInput extends BurrowError {}

/** A file that does not exist (the message names it). */
export class FileNotFound extends BurrowError {
  code = "ENOENT";
}

/** A directory where a file was expected. */
export class IsADirectory extends BurrowError {
  code = "EISDIR";
}

/** A file where a directory was expected. */
export class NotADirectory extends BurrowError {
  code = "ENOTDIR";
}

/** A call stopped by a trap or a limit (memory, output, quota); the session is unchanged. */
export class CallFailed extends BurrowError {}

/** A call that passed its time limit; the session is unchanged. */
export class CallTimeout extends CallFailed {
  code = "ETIMEDOUT";
}

/** Another process moved the session during the call; retry. */
export class Conflict extends BurrowError {}

/** edit, glob or grep answered with an error (the tool's own text). */
export class ToolError extends BurrowError {}

const classes = {
  BurrowError,
  UnknownSession,
  InvalidInput,
  FileNotFound,
  IsADirectory,
  NotADirectory,
  CallFailed,
  CallTimeout,
  Conflict,
  ToolError,
};

/**
 * The native addon answers a failure as `[Class] message` (a string, or an Error it threw);
 * this is the error to throw instead.
 * @param {unknown} e
 * @returns {Error}
 */
export function translate(e) {
  if (typeof e === "string") e = { message: e };
  else if (!(e instanceof Error)) return new BurrowError(String(e));
  const m = /^\[(\w+)\] ([\s\S]*)$/.exec(e.message);
  // Node-API's own argument checks (`StringExpected`, `InvalidArg`...): a value of the wrong type.
  if (!m) return /Expected$|^InvalidArg$/.test(e.code ?? "") ? new InvalidInput(e.message) : e;
  const Class = classes[m[1]] ?? BurrowError;
  return new Class(m[2]);
}
