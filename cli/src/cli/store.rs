//! The store itself: gc, fsck, migrate.

use std::path::Path;
use std::process::ExitCode;

use burrow_host::session::Sandbox;
use burrow_store::Retention;

use super::args::*;
use super::{Config, print_json};

pub(super) fn gc(sb: &Sandbox, json: bool, a: GcArgs) -> anyhow::Result<ExitCode> {
    let GcArgs { keep_last, grace } = a;

    let retention = keep_last.map(Retention::LastN).unwrap_or(Retention::All);
    let s = sb.store().gc(retention, grace)?;
    if json {
        print_json(&serde_json::json!({
            "versions_deleted": s.versions_deleted, "objects_deleted": s.objects_deleted,
            "bytes_freed": s.bytes_freed, "objects_kept": s.objects_kept,
            "pages_offloaded": s.pages_offloaded,
        }))?;
    } else {
        outln!(
            "removed {} versions and {} objects ({} bytes); kept {} objects",
            s.versions_deleted,
            s.objects_deleted,
            s.bytes_freed,
            s.objects_kept
        );
        if s.pages_offloaded > 0 {
            outln!(
                "moved {} pages of small calls from the catalog into object storage",
                s.pages_offloaded
            );
        }
    }
    Ok(ExitCode::SUCCESS)
}

pub(super) fn fsck(sb: &Sandbox) -> anyhow::Result<ExitCode> {
    let r = sb.store().fsck()?;
    for p in &r.problems {
        outln!("{p}");
    }
    outln!(
        "{}: {} workspaces, {} versions, {} objects checked",
        if r.is_clean() { "clean" } else { "PROBLEMS" },
        r.workspaces,
        r.versions,
        r.objects
    );
    Ok(ExitCode::from(u8::from(!r.is_clean())))
}

/// `burrow store migrate`: the whole store copied into an empty one, then checked.
pub(super) fn migrate(cx: &Config, from: &Path, to: &Path) -> anyhow::Result<ExitCode> {
    let json = cx.json;
    // The source's objects are wherever it recorded; --objects and the cache are the
    // destination's.
    let src = Config {
        store: from.to_path_buf(),
        objects: None,
        cache: None,
        durability: Default::default(),
        ..cx.clone()
    }
    .open(false)?;
    let dst = Config {
        store: to.to_path_buf(),
        ..cx.clone()
    }
    .open(false)?;
    let stats = src.store().copy_into(dst.store(), &mut |done, total| {
        if !json && std::io::IsTerminal::is_terminal(&std::io::stderr()) {
            eprint!("\rcopying objects: {done}/{total}");
        }
    })?;
    if !json && std::io::IsTerminal::is_terminal(&std::io::stderr()) {
        eprintln!();
    }
    let report = dst.store().fsck()?;
    if json {
        print_json(&serde_json::json!({
            "sessions": stats.workspaces, "versions": stats.versions, "events": stats.events,
            "objects": stats.objects, "bytes": stats.bytes, "clean": report.is_clean(),
            "problems": report.problems,
        }))?;
    } else {
        outln!(
            "copied {} sessions, {} versions, {} events, {} objects ({} bytes) to {}",
            stats.workspaces,
            stats.versions,
            stats.events,
            stats.objects,
            stats.bytes,
            dst.store().path().display()
        );
        for p in &report.problems {
            outln!("{p}");
        }
        outln!(
            "{}: {} workspaces, {} versions, {} objects checked",
            if report.is_clean() {
                "clean"
            } else {
                "PROBLEMS"
            },
            report.workspaces,
            report.versions,
            report.objects
        );
    }
    Ok(ExitCode::from(u8::from(!report.is_clean())))
}
