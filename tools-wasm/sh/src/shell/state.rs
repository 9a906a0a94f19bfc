//! The shell state that survives between tool calls of a session: cwd, variables, functions
//! (as source text), aliases and options. It lives in the session's system area, which the
//! guest sees at `/run/burrow` (outside the user's project), so it is versioned with the tool
//! call that changed it, restored by undo and checkout, and inherited by forks. Sessions made
//! before kept it in the workspace at `/workspace/.burrow/shell.json`: it is read from there
//! once and moved out in the same call.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

use crate::shell::{Array, Options, Shell, Var};

const STATE_FILE: &str = "/run/burrow/shell.json";
/// Present after a call whose script ended the session's shell with `exit`, so a tool family
/// whose shell is then gone (the Managed Agents bash) can tell; the next call removes it.
const EXITED_FILE: &str = "/run/burrow/exited";
/// Where the session's other named shells live (`sh --shell NAME`: a subagent thread's own
/// shell in the Managed Agents worker): `/run/burrow/shells/NAME/{shell.json,exited}`.
const SHELLS_DIR: &str = "/run/burrow/shells";

/// The named shell this call runs in (None: the session's own).
static NAMED: std::sync::OnceLock<String> = std::sync::OnceLock::new();

/// Runs this call in the named shell NAME (letters, digits, `_`, `-`, `.`; not `.` or `..`).
/// Returns false, choosing nothing, for a name that is not one.
pub fn select(name: &str) -> bool {
    let ok = !name.is_empty()
        && name.len() <= 128
        && name != "."
        && name != ".."
        && name
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'_' | b'-' | b'.'));
    ok && NAMED.set(name.to_string()).is_ok()
}

fn state_file() -> String {
    match NAMED.get() {
        Some(n) => format!("{SHELLS_DIR}/{n}/shell.json"),
        None => STATE_FILE.to_string(),
    }
}

fn exited_file() -> String {
    match NAMED.get() {
        Some(n) => format!("{SHELLS_DIR}/{n}/exited"),
        None => EXITED_FILE.to_string(),
    }
}

fn state_dir() -> String {
    match NAMED.get() {
        Some(n) => format!("{SHELLS_DIR}/{n}"),
        None => "/run/burrow".to_string(),
    }
}
/// Where sessions made before the system area kept it.
const LEGACY_STATE_DIR: &str = "/workspace/.burrow";
const LEGACY_STATE_FILE: &str = "/workspace/.burrow/shell.json";

#[derive(Serialize, Deserialize, Default)]
pub struct State {
    pub cwd: String,
    pub vars: BTreeMap<String, Var>,
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub arrays: BTreeMap<String, Array>,
    pub functions: BTreeMap<String, String>,
    pub aliases: BTreeMap<String, String>,
    pub options: Options,
    /// Variable attributes (`declare -i/-l/-u/-r`), by name.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub attrs: BTreeMap<String, String>,
}

/// A shell with no saved state: the defaults, the environment the host (or the program that
/// started this one) passed over them, and $PWD as the working directory.
pub fn fresh() -> Shell {
    let cwd = std::env::var("PWD")
        .ok()
        .filter(|p| p.starts_with('/') && std::fs::metadata(p).is_ok_and(|m| m.is_dir()))
        .unwrap_or_else(|| "/workspace".to_string());
    let mut sh = Shell::new(&cwd);
    for (k, v) in std::env::vars() {
        if k != "PWD" {
            sh.set_exported(&k, v);
        }
    }
    // An exported $SHELLOPTS turns its options on, as bash reads it at startup.
    if let Ok(opts) = std::env::var("SHELLOPTS") {
        for name in opts.split(':') {
            let _ = crate::shell::builtins::set_option(&mut sh, name, true);
        }
    }
    crate::shell::builtins::refresh_option_vars(&mut sh);
    sh
}

pub fn load() -> Shell {
    // The session's environment (set by the host) over the defaults; saved state over both.
    let mut sh = fresh();
    let text = match std::fs::read_to_string(state_file()) {
        Ok(t) => {
            remember(Some(&t));
            t
        }
        Err(_) if NAMED.get().is_some() => return sh,
        Err(_) => match std::fs::read_to_string(LEGACY_STATE_FILE) {
            Ok(t) => {
                LEGACY_FOUND.store(true, std::sync::atomic::Ordering::Relaxed);
                t
            }
            Err(_) => return sh,
        },
    };
    let Ok(st) = serde_json::from_str::<State>(&text) else {
        return sh;
    };
    if std::fs::metadata(&st.cwd).is_ok_and(|m| m.is_dir()) {
        sh.cwd = st.cwd;
    }
    let defaults = sh.vars.clone();
    sh.vars = st.vars;
    // A shell saved before these had their defaults gets them (PS4 unless it was unset).
    for (name, _) in crate::shell::DEFAULT_VARS {
        if *name == "PS4" && st.options.ps4_unset {
            continue;
        }
        if let Some(v) = defaults.get(*name) {
            sh.vars.entry(name.to_string()).or_insert_with(|| v.clone());
        }
    }
    sh.arrays = st.arrays;
    sh.aliases = st.aliases;
    sh.options = st.options;
    sh.attrs = st.attrs;
    for n in ["UID", "EUID", "PPID"] {
        sh.set_attr(n, 'r', true);
    }
    crate::shell::builtins::refresh_option_vars(&mut sh);
    for (name, src) in st.functions {
        if let Ok(p) = crate::shell::parse(&src)
            && let Some(def) = first_function(&p)
        {
            sh.functions.insert(name, (src, def));
        }
    }
    sh
}

fn first_function(p: &brush_parser::ast::Program) -> Option<brush_parser::ast::FunctionDefinition> {
    let cc = p.complete_commands.first()?;
    let item = cc.0.first()?;
    match item.0.first.seq.first()? {
        brush_parser::ast::Command::Function(f) => Some(f.clone()),
        _ => None,
    }
}

pub fn save(sh: &Shell) {
    let st = State {
        cwd: sh.cwd.clone(),
        // `$_` changes with every command: kept, it would make every call (a read-only one
        // too) a new version. Each call starts with it as a new shell does.
        vars: sh
            .vars
            .iter()
            .filter(|(k, _)| k.as_str() != "_")
            .map(|(k, v)| (k.clone(), v.clone()))
            .collect(),
        // PIPESTATUS describes the last pipeline of this call only.
        arrays: sh
            .arrays
            .iter()
            .filter(|(k, _)| k.as_str() != "PIPESTATUS")
            .map(|(k, v)| (k.clone(), v.clone()))
            .collect(),
        functions: sh
            .functions
            .iter()
            .map(|(k, (src, _))| (k.clone(), src.clone()))
            .collect(),
        aliases: sh.aliases.clone(),
        options: sh.options.clone(),
        attrs: sh.attrs.clone(),
    };
    let Ok(json) = serde_json::to_string(&st) else {
        return;
    };
    // Only write when something changed, so read-only commands make no new version. What
    // the file holds is known from the load (no second read per call).
    if SAVED.with(|s| s.borrow().as_deref() != Some(json.as_str())) {
        if NAMED.get().is_some() {
            let _ = std::fs::create_dir_all(state_dir());
        }
        let _ = std::fs::write(state_file(), &json);
        remember(Some(&json));
    }
    remove_legacy();
}

thread_local! {
    /// The state file's contents as this call loaded or last wrote them (None: no file).
    static SAVED: std::cell::RefCell<Option<String>> = const { std::cell::RefCell::new(None) };
}

fn remember(text: Option<&str>) {
    SAVED.with(|s| *s.borrow_mut() = text.map(str::to_string));
}

/// Set when this call's state came from the legacy file, which the save then removes (so
/// ordinary calls make no extra filesystem request).
static LEGACY_FOUND: std::sync::atomic::AtomicBool = std::sync::atomic::AtomicBool::new(false);

/// Moves an old session's state out of the user's project (its `.burrow` directory goes too
/// when nothing else is in it).
fn remove_legacy() {
    if LEGACY_FOUND.load(std::sync::atomic::Ordering::Relaxed)
        && std::fs::remove_file(LEGACY_STATE_FILE).is_ok()
    {
        let _ = std::fs::remove_dir(LEGACY_STATE_DIR);
    }
}

pub fn reset() {
    let _ = std::fs::remove_file(state_file());
    remember(None);
    if NAMED.get().is_some() {
        return;
    }
    LEGACY_FOUND.store(true, std::sync::atomic::Ordering::Relaxed);
    remove_legacy();
}

/// Notes that this call's script ended the shell with `exit`.
pub fn mark_exited() {
    let _ = std::fs::create_dir_all(state_dir());
    let _ = std::fs::write(exited_file(), b"");
}

/// Forgets an `exit` of an earlier call (writes nothing when there was none).
pub fn clear_exited() {
    let f = exited_file();
    if std::path::Path::new(&f).exists() {
        let _ = std::fs::remove_file(f);
    }
}
