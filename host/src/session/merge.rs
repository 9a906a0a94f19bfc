//! `burrow merge`: a fork's changes merged back into its parent (or any session) as one new
//! version, three-way from the version they share ([`burrow_store::Store::merge_into`]).
//!
//! The base defaults to the version the source last had merged into the destination, or
//! else the version it was forked at, so merging the same fork again brings only what it
//! did since. The destination keeps its own system area (`/tmp`, `$HOME`, its shell's
//! state); the workspace merges.

use burrow_store::{EventFilter, Labels, MergeOptions, VersionId};
use serde::Serialize;
use serde_json::json;

use super::{Result, Sandbox, SessionError};

/// Metadata key of a fork: the version it was forked at.
pub const FORKED_AT_KEY: &str = "forked_at";

/// Metadata key prefix, on a destination, of the version of each source last merged into it.
const MERGED_PREFIX: &str = "merged_from.";

/// What to merge.
#[derive(Debug, Clone, Default)]
pub struct MergeRequest<'a> {
    /// The session whose changes are merged (a key: id or name).
    pub source: &'a str,
    /// The session merged into; None: the source's parent.
    pub into: Option<&'a str>,
    /// The common version; None: the last version merged, or the fork point.
    pub base: Option<VersionId>,
    /// Only report: the destination is left as it was.
    pub no_commit: bool,
}

/// One conflicted path and why.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, schemars::JsonSchema)]
pub struct MergeConflict {
    pub path: String,
    /// `content`, `binary`, `modify/delete`, `file/directory`, `symlink`, `mode`,
    /// `rename/delete` or `rename/rename`.
    pub reason: String,
    /// Conflicted regions written with markers (content conflicts only).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub regions: Option<usize>,
}

/// What a merge did.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, schemars::JsonSchema)]
pub struct MergeOutcome {
    /// The source session's id.
    pub source: String,
    /// The destination session's id.
    pub into: String,
    pub base: i64,
    /// The destination's head the merge started from.
    pub ours: i64,
    /// The source's head that was merged.
    pub theirs: i64,
    /// The destination's head afterwards (unchanged with `no_commit`, or when there was
    /// nothing to merge).
    pub version: i64,
    /// Whether a new version was made.
    pub committed: bool,
    /// Paths merged cleanly (shown as under /workspace), sorted.
    pub merged: Vec<String>,
    /// Paths in conflict, sorted.
    pub conflicts: Vec<MergeConflict>,
}

impl Sandbox {
    /// Merges `req.source`'s changes since the base into `req.into` as one new version (see
    /// the module comment); conflicts are written with diff3-style markers and reported.
    pub fn merge(&self, req: &MergeRequest<'_>) -> Result<MergeOutcome> {
        let src = self.resolve(req.source)?;
        let src_meta = self.store.meta(&src)?;
        let dst = self.merge_destination(&src, req.into)?;
        let dst_meta = self.store.meta(&dst)?;
        let base = match req.base {
            Some(v) => v,
            None => self.default_base(&src, &src_meta, &dst_meta)?,
        };
        let theirs = self.store.workspace(&src)?.version;
        let mut txn = self.store.begin(&dst)?;
        let ours = txn.base();
        let base_label = format!("v{}", base.0);
        let report = self.store.merge_into(
            &mut txn,
            base,
            theirs,
            MergeOptions {
                labels: Labels {
                    ours: &dst,
                    base: &base_label,
                    theirs: &src,
                },
                system: false,
                later_wins: false,
            },
        )?;
        let conflicts: Vec<MergeConflict> = report
            .conflicts
            .iter()
            .map(|c| MergeConflict {
                path: super::shown_path(&c.path),
                reason: c.kind.name().to_string(),
                regions: match c.kind {
                    burrow_store::ConflictKind::Content(n) => Some(n),
                    _ => None,
                },
            })
            .collect();
        let merged: Vec<String> = report.merged.iter().map(|p| super::shown_path(p)).collect();
        let mut out = MergeOutcome {
            source: src.clone(),
            into: dst.clone(),
            base: base.0,
            ours: ours.0,
            theirs: theirs.0,
            version: ours.0,
            committed: false,
            merged,
            conflicts,
        };
        if req.no_commit {
            return Ok(out);
        }
        txn.set_message(format!("merge {src}"));
        let data = json!({
            "from": src,
            "base": base.0,
            "ours": ours.0,
            "theirs": theirs.0,
            "merged": out.merged.len(),
            "conflicts": out.conflicts,
        });
        let (commit, _) = txn.commit_with_event("merged", &data.to_string())?;
        self.store.set_meta(
            &dst,
            &format!("{MERGED_PREFIX}{src}"),
            Some(&theirs.0.to_string()),
        )?;
        out.version = commit.version.0;
        out.committed = commit.changed;
        Ok(out)
    }

    /// The session a merge of `source` goes into: `into`, or the source's parent.
    pub fn merge_destination(&self, source: &str, into: Option<&str>) -> Result<String> {
        let src = self.resolve(source)?;
        let dst = match into {
            Some(k) => self.resolve(k)?,
            None => self.store.meta(&src)?.get("parent").cloned().ok_or_else(|| {
                SessionError::Invalid(format!(
                    "session {src} was not forked from another: say which session to merge into (--into)"
                ))
            })?,
        };
        if dst == src {
            return Err(SessionError::Invalid(
                "cannot merge a session into itself".into(),
            ));
        }
        Ok(dst)
    }

    /// The base of a merge of `src` into a destination: what was last merged from it there,
    /// else the version it was forked at (from its metadata, or its `forked` event for forks
    /// made before that was kept).
    fn default_base(
        &self,
        src: &str,
        src_meta: &std::collections::BTreeMap<String, String>,
        dst_meta: &std::collections::BTreeMap<String, String>,
    ) -> Result<VersionId> {
        let number = |s: &String| s.parse::<i64>().ok().map(VersionId);
        if let Some(v) = dst_meta
            .get(&format!("{MERGED_PREFIX}{src}"))
            .and_then(number)
        {
            return Ok(v);
        }
        if let Some(v) = src_meta.get(FORKED_AT_KEY).and_then(number) {
            return Ok(v);
        }
        let forked = self.store.events(&EventFilter {
            workspace: Some(src.to_string()),
            after: 0,
            kind: Some("forked".into()),
            limit: 1,
        })?;
        forked.first().and_then(|e| e.version_after).ok_or_else(|| {
            SessionError::Invalid(format!(
                "session {src} has no fork point to merge from: give the base version (--base)"
            ))
        })
    }
}
