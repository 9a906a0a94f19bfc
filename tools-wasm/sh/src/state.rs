//! The shell state that survives between tool calls of a session: cwd, variables, functions
//! (as source text), aliases and options. It lives in the workspace itself, at
//! `/workspace/.burrow/shell.json`, so it is versioned with the tool call that changed it,
//! restored by undo and checkout, and inherited by forks.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

use crate::shell::{Array, Options, Shell, Var};

pub const STATE_FILE: &str = "/workspace/.burrow/shell.json";

#[derive(Serialize, Deserialize, Default)]
pub struct State {
    pub cwd: String,
    pub vars: BTreeMap<String, Var>,
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub arrays: BTreeMap<String, Array>,
    pub functions: BTreeMap<String, String>,
    pub aliases: BTreeMap<String, String>,
    pub options: Options,
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
    sh
}

pub fn load() -> Shell {
    // The session's environment (set by the host) over the defaults; saved state over both.
    let mut sh = fresh();
    let Ok(text) = std::fs::read_to_string(STATE_FILE) else {
        return sh;
    };
    let Ok(st) = serde_json::from_str::<State>(&text) else {
        return sh;
    };
    if std::fs::metadata(&st.cwd).is_ok_and(|m| m.is_dir()) {
        sh.cwd = st.cwd;
    }
    sh.vars = st.vars;
    sh.arrays = st.arrays;
    sh.aliases = st.aliases;
    sh.options = st.options;
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
        vars: sh.vars.clone(),
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
    };
    let Ok(json) = serde_json::to_string(&st) else {
        return;
    };
    // Only write when something changed, so read-only commands make no new version.
    if std::fs::read_to_string(STATE_FILE).ok().as_deref() == Some(json.as_str()) {
        return;
    }
    let _ = std::fs::create_dir_all("/workspace/.burrow");
    let _ = std::fs::write(STATE_FILE, json);
}

pub fn reset() {
    let _ = std::fs::remove_file(STATE_FILE);
}
