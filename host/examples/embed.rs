//! Embedding burrow in another Rust program: open a store, create a session from a directory,
//! run tool calls, fork it, compare the forks. Every call is one transaction; nothing stays in
//! memory between calls, so this program can exit at any point and a later one resumes.
//!
//! `cargo run -p burrow-host --example embed -- [STORE]`

use burrow_host::{Family, Sandbox, SandboxConfig};
use serde_json::json;

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let dir = tempfile::tempdir()?;
    let store = std::env::args()
        .nth(1)
        .map(std::path::PathBuf::from)
        .unwrap_or_else(|| dir.path().join("embed.db"));
    let sandbox = Sandbox::open_with(
        &store,
        SandboxConfig {
            cache_dir: Some(std::env::temp_dir().join("burrow-example-cache")),
            ..Default::default()
        },
    )?;
    let repo = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../fixtures/sample-repo");
    let session = sandbox.create_from(None, &repo, &mut |_| {})?;
    println!("session {} ({} files' bytes)", session.id, session.bytes);

    // The agent_toolset family: exactly what a Managed Agents worker executes.
    let out = sandbox.call(
        &session.id,
        Family::AgentToolset,
        "grep",
        &json!({ "pattern": "TODO" }),
    )?;
    println!("grep TODO:\n{}", out.joined_text());
    sandbox.call(
        &session.id,
        Family::AgentToolset,
        "write",
        &json!({ "file_path": "notes.md", "content": "# Notes\n" }),
    )?;

    // The shell keeps its state between calls (and across processes).
    sandbox.sh(&session.id, "cd src/tinyledger && export TOUCHED=0")?;
    let r = sandbox.sh(&session.id, "pwd; ls | wc -l")?;
    print!("shell: {}", String::from_utf8_lossy(&r.report.stdout));

    // Three O(1) forks, each changed differently, then compared.
    let forks = sandbox.fork(&session.id, 3)?;
    for (i, f) in forks.iter().enumerate() {
        sandbox.sh(f, &format!("echo experiment {i} >> /workspace/notes.md"))?;
    }
    let (_, _, changes) = sandbox.diff(&forks[0], &forks[1])?;
    for c in changes {
        println!("{:?} {}", c.kind, c.path);
    }
    for v in sandbox.history(&forks[2], 10)? {
        println!("v{} {}", v.id, v.message);
    }
    Ok(())
}
