//! Writing to the object database and `.git`: loose objects as git compresses them, files
//! written whole, and the layout of a new repository.

use std::io::Write as _;
use std::path::Path;

use super::object::{Kind, Oid, hash, hex, loose_path};
use super::repo::Repo;

/// Writes `data` as a loose object (nothing when it exists already) and returns its id.
pub fn write_object(repo: &Repo, kind: Kind, data: &[u8]) -> Result<Oid, String> {
    let oid = hash(kind, data);
    let path = loose_path(&repo.objects(), &oid);
    if path.exists() {
        return Ok(oid);
    }
    let fail = |e: std::io::Error| format!("error: unable to write object {}: {e}", hex(&oid));
    let mut z = flate2::write::ZlibEncoder::new(Vec::new(), flate2::Compression::default());
    z.write_all(format!("{} {}\0", kind.name(), data.len()).as_bytes())
        .and_then(|_| z.write_all(data))
        .map_err(fail)?;
    let bytes = z.finish().map_err(fail)?;
    if let Some(dir) = path.parent() {
        std::fs::create_dir_all(dir).map_err(fail)?;
    }
    std::fs::write(&path, bytes).map_err(fail)?;
    Ok(oid)
}

/// Writes a file of the repository, making its directory first.
pub(crate) fn write_file(p: &Path, data: &[u8]) -> Result<(), String> {
    if let Some(d) = p.parent() {
        std::fs::create_dir_all(d)
            .map_err(|e| format!("fatal: cannot create {}: {e}", d.display()))?;
    }
    std::fs::write(p, data).map_err(|e| format!("fatal: cannot write {}: {e}", p.display()))
}

/// The `[core]` section git's `init` writes (file modes off: the sandbox keeps none).
pub(crate) const CORE_CONFIG: &str = "[core]\n\trepositoryformatversion = 0\n\tfilemode = false\n\tbare = false\n\tlogallrefupdates = true\n";

/// The directories, description and info/exclude git's `init` and `clone` write (no hooks
/// or samples).
pub(crate) fn skeleton(git: &Path) -> Result<(), String> {
    for d in [
        "objects/info",
        "objects/pack",
        "refs/heads",
        "refs/tags",
        "info",
        "hooks",
    ] {
        std::fs::create_dir_all(git.join(d))
            .map_err(|e| format!("fatal: cannot mkdir {}: {e}", git.join(d).display()))?;
    }
    write_file(
        &git.join("description"),
        b"Unnamed repository; edit this file 'description' to name the repository.\n",
    )?;
    write_file(
        &git.join("info/exclude"),
        b"# git ls-files --others --exclude-from=.git/info/exclude\n# Lines that start with '#' are comments.\n# For a project mostly in C, the following would be a good set of\n# exclude patterns (uncomment them if you want to use them):\n# *.[oa]\n# *~\n",
    )?;
    Ok(())
}

/// A new repository: the skeleton, HEAD on `branch`, the core config.
pub(crate) fn init_layout(git: &Path, branch: &str) -> Result<(), String> {
    skeleton(git)?;
    write_file(
        &git.join("HEAD"),
        format!("ref: refs/heads/{branch}\n").as_bytes(),
    )?;
    write_file(&git.join("config"), CORE_CONFIG.as_bytes())
}
