//! `burrow toolchain install|list|remove`: pinned runtimes every session can run. Needs no
//! store.

use std::process::ExitCode;

use burrow_host::session::SandboxConfig;

use super::args::*;
use super::print_json;

/// `burrow toolchain ...`: needs no store.
pub(super) fn run(cmd: &ToolchainCmd, json: bool) -> anyhow::Result<ExitCode> {
    use burrow_host::toolchain::{self as tc, Source};
    let dir = tc::default_dir();
    let spec = |name: &str| tc::spec(name).ok_or_else(|| tc::Error::Unknown(name.into()));
    match cmd {
        ToolchainCmd::Install(ToolchainInstallArgs { name, from, index }) => {
            let spec = spec(name)?;
            let source = match from {
                Some(p) => Source::File(p.clone()),
                None => Source::Index(index.clone()),
            };
            eprintln!(
                "burrow: installing {} {} from {}",
                spec.name,
                spec.version,
                from.as_ref()
                    .map(|p| p.display().to_string())
                    .unwrap_or_else(|| format!("{index}/{}", spec.package))
            );
            // The finishing step runs the program once, compiling it into the component
            // cache, so the first call does not wait for Cranelift.
            let config = SandboxConfig::from_env().map_err(anyhow::Error::msg)?;
            let started = std::time::Instant::now();
            let installed = tc::install(&dir, spec, &source, config.cache_dir.as_deref())?;
            eprintln!(
                "burrow: unpacked, compiled and prepared in {:.1} s",
                started.elapsed().as_secs_f64()
            );
            if json {
                print_json(&installed)?;
            } else {
                outln!(
                    "{} {} installed in {} (sha256 {})",
                    installed.name,
                    installed.version,
                    dir.join(spec.name).display(),
                    installed.sha256
                );
            }
        }
        ToolchainCmd::List => {
            let list = tc::list(&dir)?;
            if json {
                for t in &list {
                    print_json(t)?;
                }
            } else {
                outln!(
                    "{:<8} {:<8} {:>10}  {:<64}  COMMANDS",
                    "NAME",
                    "VERSION",
                    "BYTES",
                    "SHA256"
                );
                for t in list {
                    outln!(
                        "{:<8} {:<8} {:>10}  {:<64}  {}",
                        t.name,
                        t.version,
                        t.bytes,
                        t.sha256,
                        t.commands.join(" ")
                    );
                }
            }
        }
        ToolchainCmd::Remove(ToolchainRemoveArgs { name }) => {
            if !tc::remove(&dir, spec(name)?)? {
                anyhow::bail!("toolchain '{name}' is not installed");
            }
        }
    }
    Ok(ExitCode::SUCCESS)
}
