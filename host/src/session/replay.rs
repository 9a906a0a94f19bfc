//! Deterministic calls' recording (what a call of a `--deterministic` session takes from
//! its [`Determinism`] and writes into its event) and `burrow replay`: a session's recorded
//! calls run again, one after another, in a new fork of it, and compared with what they gave
//! when they were recorded: the output (a tool call's result; a command's exit status, stdout
//! and stderr) and the tree each call left (its root hash, so every byte, mode, name and time
//! counts).
//!
//! Each call runs from the tree it started from when it was recorded: when the fork's tree
//! is not that tree (an undo, a checkout or an upload came between two calls, or the call
//! before differed), the fork checks that version out first. A difference is therefore the
//! call's own, never one inherited from the call before.
//!
//! A deterministic session's calls (`--deterministic`, [`crate::determinism`]) run with their
//! recorded seeds, clocks, environment and network replies, so their replay is identical
//! call for call and tree hash for tree hash; another session's replay shows where the
//! world came in (the time, random numbers, the network). `burrow run` calls keep no copy of
//! their program and are reported as not replayed.

use base64::Engine as _;
use burrow_store::{EventFilter, VersionId};
use serde::Serialize;
use serde_json::{Value, json};

use burrow_store::Txn;

use super::{
    CallLimits, Family, Result, Sandbox, SessionError, Settings, check_name, on_deep_stack,
};
use crate::Limits;
use crate::determinism::{Determinism, Recording};
use crate::run::RunReport;

/// How much of a command's stdout and stderr a deterministic `sh` call's event keeps in
/// clear (all of it is hashed).
const KEPT_OUTPUT: usize = 64 << 10;

/// What to replay.
#[derive(Debug, Clone, Default)]
pub struct ReplayRequest<'a> {
    /// The session whose calls are replayed (a key: id or name).
    pub session: &'a str,
    /// Replay the calls recorded after this version (None: every call in the session's log).
    pub from: Option<VersionId>,
    /// The name of the fork the calls run in (None: an unnamed fork).
    pub into: Option<&'a str>,
}

/// What a replay found.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, schemars::JsonSchema)]
pub struct ReplayReport {
    /// The replayed session's id.
    pub session: String,
    /// The fork the calls ran in.
    pub into: String,
    /// Calls replayed.
    pub calls: Vec<ReplayedCall>,
    /// How many gave the recorded output and tree.
    pub identical: usize,
    /// How many did not (or could not be replayed).
    pub differ: usize,
}

/// One replayed call.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, schemars::JsonSchema)]
pub struct ReplayedCall {
    /// The call's event (`seq` in `burrow log --json`).
    pub seq: i64,
    /// The tool (`bash`, `read`, ... or the name a `burrow sh` call was recorded under).
    pub tool: String,
    /// What the call was asked, shortened (a command, a path).
    pub summary: String,
    /// Whether it was recorded deterministically.
    pub deterministic: bool,
    /// The version the call left when it was recorded.
    pub recorded: Option<i64>,
    /// The version it left in the fork.
    pub replayed: i64,
    pub identical: bool,
    /// The first difference, when it is not identical.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub difference: Option<String>,
}

/// Makes a call of a deterministic session (or the replay of one, `det`) deterministic:
/// its limits carry the call's determinism, its environment is the recorded one, and its
/// changes are stamped with its start time.
pub(super) fn deterministic(
    settings: &Settings,
    det: Option<Determinism>,
    txn: &mut Txn,
    limits: &mut Limits,
    env: &mut Vec<(String, String)>,
) {
    let det = match det {
        Some(d) => d,
        None if settings.deterministic => Determinism::record(env.clone()),
        None => return,
    };
    *env = det.env().to_vec();
    txn.set_time(det.clock_ns());
    let ino = det.first_ino(txn.next_ino());
    txn.set_next_ino(ino);
    limits.det = Some(det);
}

/// A deterministic call's recording, in its event.
pub(super) fn record_determinism(data: &mut Value, limits: &Limits) {
    if let Some(d) = &limits.det
        && let Ok(v) = serde_json::to_value(d.recording())
    {
        data["deterministic"] = v;
    }
}

/// What a deterministic `sh` call's event keeps of the command's input and output.
pub(super) fn record_sh(data: &mut Value, stdin: &[u8], report: &RunReport) {
    record_sh_stdin(data, stdin);
    for (key, bytes) in [("stdout", &report.stdout), ("stderr", &report.stderr)] {
        data[format!("{key}_blake3")] = json!(blake3::hash(bytes).to_hex().to_string());
        let kept = &bytes[..bytes.len().min(KEPT_OUTPUT)];
        data[key] = json!(String::from_utf8_lossy(kept));
    }
}

/// A deterministic `sh` call's standard input, in its event.
pub(super) fn record_sh_stdin(data: &mut Value, stdin: &[u8]) {
    if !stdin.is_empty() {
        data["stdin"] = json!(base64::engine::general_purpose::STANDARD.encode(stdin));
    }
}

/// A string shortened to about `n` characters for a one-line summary.
fn short(s: &str, n: usize) -> String {
    let line = s.lines().next().unwrap_or_default();
    let mut out: String = line.chars().take(n).collect();
    if out.len() < s.len() {
        out.push('…');
    }
    out
}

/// Where two texts first differ, with a little of each around it.
fn first_difference(what: &str, recorded: &str, replayed: &str) -> String {
    let at = recorded
        .chars()
        .zip(replayed.chars())
        .take_while(|(a, b)| a == b)
        .count();
    let around = |s: &str| -> String {
        let start = at.saturating_sub(20);
        let piece: String = s.chars().skip(start).take(60).collect();
        format!("{piece:?}")
    };
    format!(
        "{what} differs at character {at}: recorded {}, replayed {}",
        around(recorded),
        around(replayed)
    )
}

impl Sandbox {
    /// Replays a session's recorded calls in a new fork of it (see the module comment).
    pub fn replay(&self, req: &ReplayRequest<'_>) -> Result<ReplayReport> {
        let id = self.resolve(req.session)?;
        if let Some(n) = req.into {
            check_name(n)?;
            if self.store.find_by_meta("name", n)?.is_some() {
                return Err(SessionError::NameTaken(n.to_string()));
            }
        }
        let events = self.store.events(&EventFilter {
            workspace: Some(id.clone()),
            ..Default::default()
        })?;
        let calls: Vec<_> = events
            .into_iter()
            .filter(|e| e.kind == "tool" || e.kind == "run")
            .filter(|e| match (req.from, e.version_before) {
                (Some(from), Some(before)) => before >= from,
                (Some(_), None) => false,
                (None, _) => true,
            })
            .collect();
        let fork = self
            .fork(&id, 1)?
            .into_iter()
            .next()
            .ok_or_else(|| SessionError::Invalid("the fork was not made".into()))?;
        if let Some(n) = req.into {
            self.store.set_meta(&fork, "name", Some(n))?;
        }
        self.store.append_event(
            &fork,
            "replay",
            None,
            None,
            &json!({ "from": id, "calls": calls.len() }).to_string(),
        )?;
        let mut report = ReplayReport {
            session: id.clone(),
            into: fork.clone(),
            calls: Vec::new(),
            identical: 0,
            differ: 0,
        };
        for (n, e) in calls.iter().enumerate() {
            let call = self.replay_one(&fork, n + 1, e)?;
            if call.identical {
                report.identical += 1;
            } else {
                report.differ += 1;
            }
            report.calls.push(call);
        }
        Ok(report)
    }

    /// Replays the recorded call `e` (the `n`-th of the replay) in `fork`.
    fn replay_one(&self, fork: &str, n: usize, e: &burrow_store::Event) -> Result<ReplayedCall> {
        let data: Value = serde_json::from_str(&e.data).unwrap_or(Value::Null);
        let tool = data["tool"].as_str().unwrap_or("?").to_string();
        let recording: Option<Recording> = data
            .get("deterministic")
            .and_then(|v| serde_json::from_value(v.clone()).ok());
        let det = recording
            .as_ref()
            .map(Determinism::replay)
            .transpose()
            .map_err(SessionError::Invalid)?;
        let mut call = ReplayedCall {
            seq: e.seq,
            tool: tool.clone(),
            summary: String::new(),
            deterministic: det.is_some(),
            recorded: e.version_after.map(|v| v.0),
            replayed: 0,
            identical: false,
            difference: None,
        };
        // Start from the tree the call started from.
        if let Some(before) = e.version_before {
            let want = self.store.version(before)?.root;
            let head = self.store.workspace(fork)?.version;
            if self.store.version(head)?.root != want {
                self.store.checkout_as(
                    fork,
                    before,
                    &format!("replay: the tree call {n} started from"),
                )?;
            }
        }
        let difference = if e.kind == "run" {
            call.summary = data["program"].as_str().unwrap_or_default().to_string();
            Some("not replayed: a `burrow run` call keeps no copy of its program".to_string())
        } else if let Some(family) = data.get("family") {
            let family: Family = serde_json::from_value(family.clone())
                .map_err(|e| SessionError::Invalid(format!("recorded family: {e}")))?;
            let input = data.get("input").cloned().unwrap_or(Value::Null);
            call.summary = short(
                &input
                    .get("command")
                    .or_else(|| input.get("file_path"))
                    .or_else(|| input.get("path"))
                    .or_else(|| input.get("pattern"))
                    .and_then(Value::as_str)
                    .map_or_else(|| input.to_string(), str::to_string),
                60,
            );
            let shell = data["shell"].as_str();
            let output = self.call_with(fork, family, &tool, &input, shell, None, det)?;
            let replayed = serde_json::to_value(&output).unwrap_or(Value::Null);
            let recorded = data.get("output").cloned().unwrap_or(Value::Null);
            (replayed != recorded).then(|| {
                let text = |v: &Value| -> String {
                    match v["content"].as_array() {
                        Some(parts) => parts
                            .iter()
                            .filter_map(|p| p["text"].as_str())
                            .collect::<Vec<_>>()
                            .join("\n"),
                        None => v.to_string(),
                    }
                };
                if recorded["is_error"] != replayed["is_error"] {
                    format!(
                        "is_error was {}, is {}",
                        recorded["is_error"], replayed["is_error"]
                    )
                } else {
                    first_difference("the output", &text(&recorded), &text(&replayed))
                }
            })
        } else {
            let command = data["input"]["command"].as_str().unwrap_or_default();
            call.summary = short(command, 60);
            let stdin = data["stdin"]
                .as_str()
                .and_then(|s| base64::engine::general_purpose::STANDARD.decode(s).ok())
                .unwrap_or_default();
            let limits = CallLimits {
                cpu_budget: data["cpu_budget"].as_u64(),
                ..Default::default()
            };
            let result = on_deep_stack(|| self.sh_here(fork, command, &stdin, &tool, limits, det));
            compare_sh(&data, result)
        };
        let head = self.store.workspace(fork)?.version;
        call.replayed = head.0;
        let difference = difference.or_else(|| {
            let after = e.version_after?;
            let (Ok(want), Ok(got)) = (self.store.version(after), self.store.version(head)) else {
                return Some("the recorded version is gone (collected)".to_string());
            };
            (want.root != got.root).then(|| match self.diff_first(after, head) {
                Some(path) => format!("the tree differs: {path}"),
                None => "the tree differs in times only".to_string(),
            })
        });
        call.identical = difference.is_none();
        call.difference = difference;
        Ok(call)
    }

    /// The first path that differs between two versions, with its kind of change.
    fn diff_first(&self, a: VersionId, b: VersionId) -> Option<String> {
        let changes = self.store.diff_all(a, b).ok()?;
        let c = changes.first()?;
        let kind = match c.kind {
            burrow_store::ChangeKind::Added => "only in the replay:",
            burrow_store::ChangeKind::Removed => "missing from the replay:",
            burrow_store::ChangeKind::Modified => "changed:",
        };
        Some(format!("{kind} {}", super::shown_path(&c.path)))
    }
}

/// Compares a replayed `sh` call with its event.
fn compare_sh(data: &Value, result: Result<crate::RunResult>) -> Option<String> {
    let recorded_error = data["error"].as_str();
    let r = match (result, recorded_error) {
        (Err(e), Some(was)) => {
            let now = e.to_string();
            return (now != was).then(|| first_difference("the failure", was, &now));
        }
        (Err(e), None) => return Some(format!("failed: {e} (it ran when recorded)")),
        (Ok(_), Some(was)) => return Some(format!("ran (it failed when recorded: {was})")),
        (Ok(r), None) => r,
    };
    let code = i64::from(r.report.exit_code);
    if data["exit_code"].as_i64() != Some(code) {
        return Some(format!("exit status was {}, is {code}", data["exit_code"]));
    }
    for (key, bytes) in [("stdout", &r.report.stdout), ("stderr", &r.report.stderr)] {
        let Some(hash) = data[format!("{key}_blake3")].as_str() else {
            continue; // not recorded (not a deterministic session)
        };
        if blake3::hash(bytes).to_hex().as_str() != hash {
            let recorded = data[key].as_str().unwrap_or_default();
            return Some(first_difference(
                key,
                recorded,
                &String::from_utf8_lossy(bytes),
            ));
        }
    }
    None
}
