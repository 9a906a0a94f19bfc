//! Paths as the utilities need them: lexical normalisation (GNU's `realpath -s`, and what
//! `cat` compares its inputs with), and a directory's names in the order `ls` prints them.

use std::path::Path;

/// Lexically normalises an absolute path (`.` and `..`).
pub fn normalize(p: &str) -> String {
    let mut parts: Vec<&str> = Vec::new();
    for c in p.split('/') {
        match c {
            "" | "." => {}
            ".." => {
                parts.pop();
            }
            c => parts.push(c),
        }
    }
    format!("/{}", parts.join("/"))
}

/// `p` with `.` and `..` resolved lexically (symlinks are not followed).
pub fn lexical(p: &Path) -> std::path::PathBuf {
    let mut out = std::path::PathBuf::new();
    for c in p.components() {
        match c {
            std::path::Component::CurDir => {}
            std::path::Component::ParentDir => {
                out.pop();
            }
            other => out.push(other),
        }
    }
    out
}

/// A directory's entry names, sorted (unreadable entries left out).
pub fn sorted_names(rd: std::fs::ReadDir) -> Vec<String> {
    let mut names: Vec<String> = rd
        .filter_map(|e| e.ok())
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .collect();
    names.sort();
    names
}
