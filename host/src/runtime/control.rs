//! What `/dev/burrow` (`wasi_fs/control.rs`) does for a guest that speaks only WASI preview 1:
//! burrow's `sitecustomize` makes CPython's `subprocess` and `http.client` send their work
//! here. Two requests:
//!
//! - `spawn`: runs a command line through burrow's shell (a fresh `bash -c`, the shell's own
//!   utilities and the `.wasm` programs on PATH) as a program started by the caller, exactly
//!   as `burrow:sandbox/process.run` does: same transaction, mounts, limits and deadline, its
//!   own argv, environment, working directory and stdin; the reply is its exit code and
//!   output. A child that traps or hits a limit ends the whole call (rolled back), as any
//!   program started from a program does; a child that outlives the timeout the guest gave
//!   (shorter than the call's) is stopped and reported, its writes kept, as a killed
//!   process's are on Linux.
//! - `http`: one HTTP request through the call's egress (policy, secrets, limits, `net`
//!   events, the host's TLS), as curl's requests go; the reply is the response, whole.
//!
//! A request is one JSON line, then its body (the child's stdin, the request body). A reply is
//! one JSON line, then the byte strings it counts. Malformed requests get an error reply: the
//! guest writes them, so nothing here trusts their shape or size.

use std::time::{Duration, Instant};

use serde::Deserialize;
use serde_json::json;

use crate::engine::Program;
use crate::process::{MAX_DEPTH, child_failed};
use crate::run::{Parent, RunError, RunOptions};
use crate::wasi_fs::control::{Handler, error_reply};

/// The host side of `/dev/burrow` for one run: what a program it starts inherits.
pub(crate) struct Services {
    pub parent: Parent,
}

#[derive(Deserialize)]
#[serde(tag = "op", rename_all = "lowercase")]
enum Request {
    Spawn {
        /// A command line for the shell (`shell=True`, or the argv quoted by the guest).
        script: String,
        /// `$0` of the shell (`/bin/sh`).
        #[serde(default)]
        arg0: Option<String>,
        cwd: String,
        env: Vec<(String, String)>,
        /// Seconds.
        #[serde(default)]
        timeout: Option<f64>,
    },
    Http {
        method: String,
        url: String,
        headers: Vec<(String, String)>,
        #[serde(default)]
        timeout: Option<f64>,
    },
}

/// A reply: the JSON line and the byte strings after it.
fn reply(head: serde_json::Value, blobs: &[&[u8]]) -> Vec<u8> {
    let mut v = head.to_string().into_bytes();
    v.push(b'\n');
    for b in blobs {
        v.extend_from_slice(b);
    }
    v
}

fn error(why: &str, kind: &str) -> Vec<u8> {
    reply(json!({ "error": why, "kind": kind }), &[])
}

/// A timeout the guest gave, if it is a usable number of seconds.
fn duration(t: Option<f64>) -> Option<Duration> {
    t.filter(|t| t.is_finite() && *t >= 0.0)
        .map(|t| Duration::from_secs_f64(t.min(1e9)))
}

impl Handler for Services {
    fn handle(&self, request: &[u8]) -> Result<Vec<u8>, wasmtime::Error> {
        let split = request.iter().position(|&b| b == b'\n');
        let (head, body) = match split {
            Some(i) => (&request[..i], &request[i + 1..]),
            None => (request, &[][..]),
        };
        let req: Request = match serde_json::from_slice(head) {
            Ok(r) => r,
            Err(e) => return Ok(error_reply(&format!("bad request: {e}"))),
        };
        match req {
            Request::Spawn {
                script,
                arg0,
                cwd,
                env,
                timeout,
            } => self.spawn(script, arg0, cwd, env, duration(timeout), body),
            Request::Http {
                method,
                url,
                headers,
                timeout,
            } => Ok(self.http(&method, &url, headers, duration(timeout), body)),
        }
    }
}

impl Services {
    fn spawn(
        &self,
        script: String,
        arg0: Option<String>,
        cwd: String,
        env: Vec<(String, String)>,
        timeout: Option<Duration>,
        stdin: &[u8],
    ) -> Result<Vec<u8>, wasmtime::Error> {
        let parent = &self.parent;
        let Some(shell) = parent.shell.clone() else {
            return Ok(error(
                "this program was not started by burrow's shell, so it cannot start processes",
                "spawn",
            ));
        };
        // The shell runs at depth + 1 and what it runs one deeper still.
        let depth = parent.depth + 1;
        if depth + 1 > MAX_DEPTH {
            return Ok(error(
                &format!("programs started from programs nest deeper than {MAX_DEPTH}"),
                "spawn",
            ));
        }
        if !cwd.starts_with('/') {
            return Ok(error("the working directory must be absolute", "request"));
        }
        if Instant::now() >= parent.deadline {
            return Err(child_failed(RunError::Timeout(parent.limits.timeout)));
        }
        let mut limits = parent.child_limits();
        limits.capture = usize::try_from(limits.output).unwrap_or(usize::MAX);
        let deadline = match timeout {
            Some(t) => parent.deadline.min(Instant::now() + t),
            None => parent.deadline,
        };
        let opts = RunOptions {
            program_name: arg0.unwrap_or_else(|| "/bin/sh".into()),
            args: vec!["--no-state".into(), "-c".into(), script],
            env: env.into_iter().filter(|(k, _)| k != "PWD").collect(),
            cwd: Some(cwd),
            stdin: stdin.to_vec(),
            limits,
            mounts: parent.mounts.clone(),
            preopens: parent.preopens.clone(),
            shell: Some(shell.clone()),
        };
        tracing::debug!(depth, "a program starts the shell through /dev/burrow");
        match run(parent, &shell, &opts, deadline, depth) {
            Ok(r) => {
                let order: Vec<(u8, u32)> = r.order;
                Ok(reply(
                    json!({
                        "exit": r.exit_code,
                        "stdout": r.stdout.len(),
                        "stderr": r.stderr.len(),
                        "order": order,
                    }),
                    &[&r.stdout, &r.stderr],
                ))
            }
            // Its own timeout, before the call's: the child is stopped, the caller told.
            Err(RunError::Timeout(_)) if deadline < parent.deadline => {
                Ok(error("the command timed out", "timeout"))
            }
            Err(e) => Err(child_failed(e)),
        }
    }

    fn http(
        &self,
        method: &str,
        url: &str,
        headers: Vec<(String, String)>,
        timeout: Option<Duration>,
        body: &[u8],
    ) -> Vec<u8> {
        let mut req = http::Request::builder().method(method).uri(url);
        for (k, v) in &headers {
            req = req.header(k.as_str(), v.as_str());
        }
        let req = match req.body(bytes::Bytes::copy_from_slice(body)) {
            Ok(r) => r,
            Err(e) => return error(&format!("bad request: {e}"), "request"),
        };
        let egress = self.parent.egress.clone();
        match wasmtime_wasi::runtime::in_tokio(egress.fetch(req, timeout)) {
            Ok((parts, body)) => {
                let headers: Vec<(String, String)> = parts
                    .headers
                    .iter()
                    .map(|(k, v)| (k.to_string(), String::from_utf8_lossy(v.as_bytes()).into()))
                    .collect();
                reply(
                    json!({
                        "status": parts.status.as_u16(),
                        "reason": parts.status.canonical_reason().unwrap_or(""),
                        "headers": headers,
                        "body": body.len(),
                    }),
                    &[&body],
                )
            }
            Err((why, kind)) => error(&why, kind),
        }
    }
}

/// [`crate::engine::Engine::run_shared`] for a program started through the device.
fn run(
    parent: &Parent,
    program: &Program,
    opts: &RunOptions,
    deadline: Instant,
    depth: u32,
) -> Result<crate::run::RunReport, RunError> {
    parent.engine.run_shared(
        program,
        &parent.txn,
        opts,
        deadline,
        depth,
        &parent.egress,
        None,
        &parent.stages,
    )
}
