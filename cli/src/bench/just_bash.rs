//! The just-bash baseline of `burrow bench`: vercel-labs' just-bash (a bash interpreter for
//! agents in TypeScript, on Node.js), timed on the same commands in the same run. It is found
//! or installed at a pinned version with npm into burrow's cache directory; without `node`
//! and `npm` the rows are skipped with a note.

use std::path::{Path, PathBuf};
use std::process::Command;

/// The version compared against (npm `just-bash`).
pub const VERSION: &str = "3.4.2";

/// Times commands in just-bash: each `exec` is one call, as a tool call is in burrow.
const SCRIPT: &str = r#"
import { Bash, OverlayFs } from "just-bash";
const job = JSON.parse(process.argv[2]);
const out = {};
for (const c of job.commands) {
  let bash;
  if (c.root) {
    const fs = new OverlayFs({ root: c.root });
    bash = new Bash({ fs, cwd: fs.getMountPoint() });
  } else {
    bash = new Bash({ files: c.files });
  }
  const samples = [];
  let last;
  for (let i = 0; i <= job.n; i++) {
    const t = performance.now();
    last = await bash.exec(c.command);
    if (i > 0) samples.push(performance.now() - t);
  }
  if (last.exitCode !== 0 || last.stdout.length === 0) {
    console.error(`${c.name}: exit ${last.exitCode}: ${last.stderr}`);
    process.exit(1);
  }
  out[c.name] = samples;
}
console.log(JSON.stringify(out));
"#;

/// One command to time: `files` (path -> content) for an in-memory tree, or `root` for a
/// host directory read through just-bash's OverlayFs.
pub struct Job<'a> {
    pub name: &'a str,
    pub command: &'a str,
    pub files: &'a [(&'a str, String)],
    pub root: Option<&'a Path>,
}

/// An installed just-bash.
pub struct JustBash {
    dir: PathBuf,
}

impl JustBash {
    /// Finds just-bash under `cache` (`<cache>/just-bash-VERSION`), installing it with npm if
    /// it is missing. The error says why there is no baseline.
    pub fn find(cache: &Path) -> Result<JustBash, String> {
        let works = |c: &str| {
            Command::new(c)
                .arg("--version")
                .output()
                .is_ok_and(|o| o.status.success())
        };
        if !works("node") || !works("npm") {
            return Err("node and npm not found: no just-bash baseline".into());
        }
        let dir = cache.join(format!("just-bash-{VERSION}"));
        if !dir.join("node_modules/just-bash/package.json").exists() {
            std::fs::create_dir_all(&dir).map_err(|e| e.to_string())?;
            let out = Command::new("npm")
                .args(["install", "--silent", "--no-audit", "--no-fund", "--prefix"])
                .arg(&dir)
                .arg(format!("just-bash@{VERSION}"))
                .output()
                .map_err(|e| e.to_string())?;
            if !out.status.success() {
                return Err(format!(
                    "npm install just-bash@{VERSION} failed: {}",
                    String::from_utf8_lossy(&out.stderr).trim()
                ));
            }
        }
        std::fs::write(dir.join("bench.mjs"), SCRIPT).map_err(|e| e.to_string())?;
        Ok(JustBash { dir })
    }

    /// Runs each job `n` times after one warm-up; the samples in milliseconds, by job.
    pub fn time(&self, n: usize, jobs: &[Job<'_>]) -> Result<Vec<Vec<f64>>, String> {
        let commands: Vec<serde_json::Value> = jobs
            .iter()
            .map(|j| {
                let files: serde_json::Map<String, serde_json::Value> = j
                    .files
                    .iter()
                    .map(|(p, c)| (p.to_string(), c.clone().into()))
                    .collect();
                serde_json::json!({
                    "name": j.name, "command": j.command, "files": files,
                    "root": j.root.map(|r| r.to_string_lossy().into_owned()),
                })
            })
            .collect();
        let job = serde_json::json!({ "n": n, "commands": commands }).to_string();
        let out = Command::new("node")
            .arg(self.dir.join("bench.mjs"))
            .arg(job)
            .current_dir(&self.dir)
            .output()
            .map_err(|e| e.to_string())?;
        if !out.status.success() {
            return Err(format!(
                "just-bash: {}",
                String::from_utf8_lossy(&out.stderr).trim()
            ));
        }
        let v: serde_json::Value =
            serde_json::from_slice(&out.stdout).map_err(|e| format!("just-bash output: {e}"))?;
        Ok(jobs
            .iter()
            .map(|j| {
                v[j.name]
                    .as_array()
                    .map(|a| a.iter().filter_map(serde_json::Value::as_f64).collect())
                    .unwrap_or_default()
            })
            .collect())
    }
}
