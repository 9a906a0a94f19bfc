//! Path conveniences over a transaction's inode operations: whole-file reads and writes,
//! `mkdir -p`, `rm -r`, and the regular files under a directory.

use super::*;

impl Txn {
    /// Reads the whole file at `path` (relative to the root).
    pub fn read_file(&mut self, path: &str) -> Result<Vec<u8>> {
        let ino = self.resolve(ROOT_INO, path, true)?;
        self.read_all(ino)
    }

    /// Creates or replaces the file at `path` with `data`.
    pub fn write_file(&mut self, path: &str, data: &[u8]) -> Result<Ino> {
        let flags = OpenFlags {
            create: true,
            truncate: true,
            ..Default::default()
        };
        let ino = self.open_at(ROOT_INO, path, flags, true)?;
        self.write(ino, 0, data)?;
        Ok(ino)
    }

    /// Creates `path` and any missing parents as directories.
    pub fn mkdir_all(&mut self, path: &str) -> Result<Ino> {
        let mut cur = ROOT_INO;
        for comp in path.split('/').filter(|c| !c.is_empty() && *c != ".") {
            cur = match self.lookup(cur, comp) {
                Ok(_) => {
                    let i = self.resolve(cur, comp, true)?;
                    if self.inode(i)?.kind() != Kind::Dir {
                        return Err(Error::NotDir);
                    }
                    i
                }
                Err(Error::NotFound) => self.mkdir_at(cur, comp)?,
                Err(e) => return Err(e),
            };
        }
        Ok(cur)
    }

    /// Removes `path` and everything under it (symlinks are removed, never followed).
    /// A missing path is not an error.
    pub fn remove_all(&mut self, path: &str) -> Result<()> {
        let ino = match self.resolve(ROOT_INO, path, false) {
            Ok(i) => i,
            Err(Error::NotFound) => return Ok(()),
            Err(e) => return Err(e),
        };
        if self.inode(ino)?.kind() != Kind::Dir {
            return self.unlink_at(ROOT_INO, path);
        }
        for e in self.readdir(ino)? {
            self.remove_all(&format!("{path}/{}", e.name))?;
        }
        self.rmdir_at(ROOT_INO, path)
    }

    /// The regular files under the directory `path`, as paths relative to it, sorted
    /// (symlinks are not followed). A missing directory has none.
    pub fn files_under(&mut self, path: &str) -> Result<Vec<String>> {
        let ino = match self.resolve(ROOT_INO, path, false) {
            Ok(i) => i,
            Err(Error::NotFound) => return Ok(Vec::new()),
            Err(e) => return Err(e),
        };
        if self.inode(ino)?.kind() != Kind::Dir {
            return Ok(Vec::new());
        }
        let mut out = Vec::new();
        let mut stack = vec![(ino, String::new())];
        while let Some((dir, prefix)) = stack.pop() {
            for e in self.readdir(dir)? {
                let rel = if prefix.is_empty() {
                    e.name.clone()
                } else {
                    format!("{prefix}/{}", e.name)
                };
                match e.kind {
                    Kind::Dir => {
                        let child = self.lookup(dir, &e.name)?;
                        stack.push((child, rel));
                    }
                    Kind::File => out.push(rel),
                    Kind::Symlink => {}
                }
            }
        }
        out.sort();
        Ok(out)
    }
}
