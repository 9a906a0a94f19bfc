//! Import/export round trips through host directories and tar, on real trees: this crate's own
//! sources, plus a tree with symlinks, empty files, modes and nested empty directories.

use std::collections::BTreeMap;
use std::os::unix::fs::PermissionsExt;
use std::path::Path;

use burrow_store::Store;

/// Path -> (kind, mode, content or link target) of a host tree, symlinks not followed.
fn host_tree(root: &Path) -> BTreeMap<String, (char, u32, Vec<u8>)> {
    fn walk(root: &Path, dir: &Path, out: &mut BTreeMap<String, (char, u32, Vec<u8>)>) {
        for e in std::fs::read_dir(dir).unwrap() {
            let e = e.unwrap();
            let p = e.path();
            let rel = p.strip_prefix(root).unwrap().to_string_lossy().into_owned();
            let meta = std::fs::symlink_metadata(&p).unwrap();
            let mode = meta.permissions().mode() & 0o7777;
            if meta.file_type().is_symlink() {
                let t = std::fs::read_link(&p).unwrap();
                out.insert(rel, ('l', 0, t.to_string_lossy().as_bytes().to_vec()));
            } else if meta.is_dir() {
                out.insert(rel, ('d', mode, Vec::new()));
                walk(root, &p, out);
            } else {
                out.insert(rel, ('f', mode, std::fs::read(&p).unwrap()));
            }
        }
    }
    let mut out = BTreeMap::new();
    walk(root, root, &mut out);
    out
}

fn sample_tree(dir: &Path) {
    std::fs::create_dir_all(dir.join("src/nested/empty")).unwrap();
    std::fs::write(dir.join("src/main.rs"), "fn main() {}\n").unwrap();
    std::fs::write(dir.join("empty"), "").unwrap();
    std::fs::write(
        dir.join("big.bin"),
        (0..300_000u32)
            .map(|i| (i * 7 % 256) as u8)
            .collect::<Vec<_>>(),
    )
    .unwrap();
    // More than one of the import's 1 MiB reads.
    std::fs::write(
        dir.join("src/nested/large.bin"),
        (0..2_600_000u32)
            .map(|i| (i * 13 % 251) as u8)
            .collect::<Vec<_>>(),
    )
    .unwrap();
    std::fs::write(dir.join("run.sh"), "#!/bin/sh\necho hi\n").unwrap();
    std::fs::set_permissions(dir.join("run.sh"), std::fs::Permissions::from_mode(0o755)).unwrap();
    std::os::unix::fs::symlink("src/main.rs", dir.join("link")).unwrap();
    std::os::unix::fs::symlink("/etc/passwd", dir.join("outside")).unwrap();
}

#[test]
fn directory_round_trip_of_real_trees() {
    let tmp = tempfile::tempdir().unwrap();
    let store = Store::open(tmp.path().join("s.db")).unwrap();
    let sample = tmp.path().join("sample");
    sample_tree(&sample);
    let crate_src = Path::new(env!("CARGO_MANIFEST_DIR"));
    for (i, src) in [sample.as_path(), crate_src].into_iter().enumerate() {
        let ws = format!("w{i}");
        store.create_workspace(&ws).unwrap();
        let mut calls = 0;
        let (commit, stats) = store.import_dir(&ws, src, "", &mut |_| calls += 1).unwrap();
        assert!(stats.files > 0 && calls as u64 == stats.files);
        let out = tmp.path().join(format!("out{i}"));
        store.export_dir(commit.version, &out).unwrap();
        assert_eq!(
            host_tree(&out),
            host_tree(src),
            "round trip of {}",
            src.display()
        );
    }
    // Symlinks were copied, not followed: the host's /etc/passwd is not in the store.
    let mut t = store.begin("w0").unwrap();
    assert_eq!(
        t.readlink_at(burrow_store::ROOT_INO, "outside").unwrap(),
        "/etc/passwd"
    );
    assert!(t.read_file("outside").is_err());
    // Files, directories and symlinks keep their modification times.
    for (path, follow) in [
        ("src/nested/large.bin", true),
        ("src/nested", true),
        ("link", false),
    ] {
        let on_host = std::fs::symlink_metadata(sample.join(path)).unwrap();
        let want = on_host
            .modified()
            .unwrap()
            .duration_since(std::time::UNIX_EPOCH)
            .unwrap()
            .as_nanos() as i64;
        let got = t.stat_at(burrow_store::ROOT_INO, path, follow).unwrap();
        assert_eq!(got.mtime, want, "{path}");
    }
    assert!(store.fsck().unwrap().is_clean());
}

#[test]
fn tar_round_trip_and_hostile_entries() {
    let tmp = tempfile::tempdir().unwrap();
    let store = Store::open(tmp.path().join("s.db")).unwrap();
    let sample = tmp.path().join("sample");
    sample_tree(&sample);
    store.create_workspace("a").unwrap();
    let (c, _) = store.import_dir("a", &sample, "", &mut |_| {}).unwrap();
    let mut tar_bytes = Vec::new();
    store.export_tar(c.version, &mut tar_bytes).unwrap();
    store.create_workspace("b").unwrap();
    let (cb, stats) = store
        .import_tar("b", tar_bytes.as_slice(), "", &mut |_| {})
        .unwrap();
    assert_eq!(stats.skipped, 0);
    assert!(store.diff(c.version, cb.version).unwrap().is_empty());
    let out = tmp.path().join("out");
    store.export_dir(cb.version, &out).unwrap();
    assert_eq!(host_tree(&out), host_tree(&sample));

    // Hostile names, as GNU tar extracts them: a leading `/` or `../` prefix is removed (one
    // warning per prefix), a `..` further in skips the member, a hard link to something not in
    // the archive is skipped; every change and skip is said.
    let mut b = tar::Builder::new(Vec::new());
    let regular = |name: &str| {
        let mut h = tar::Header::new_gnu();
        h.set_size(1);
        h.set_mode(0o644);
        h.set_entry_type(tar::EntryType::Regular);
        h.as_gnu_mut().unwrap().name[..name.len()].copy_from_slice(name.as_bytes());
        h.set_cksum();
        h
    };
    for (name, data) in [
        ("../escape", "x"),
        ("/abs/file", "y"),
        ("ok/file", "z"),
        ("dir/../../y", "w"),
        ("/../../deep", "d"),
        ("../again", "a"),
    ] {
        b.append(&regular(name), data.as_bytes()).unwrap();
    }
    for (name, target) in [
        ("copy", "ok/file"),
        ("outside", "not/here"),
        ("up", "../../etc/passwd"),
    ] {
        let mut h = tar::Header::new_gnu();
        h.set_size(0);
        h.set_mode(0o644);
        h.set_entry_type(tar::EntryType::Link);
        h.as_gnu_mut().unwrap().name[..name.len()].copy_from_slice(name.as_bytes());
        h.set_link_name(target).unwrap();
        h.set_cksum();
        b.append(&h, &[][..]).unwrap();
    }
    let hostile = b.into_inner().unwrap();
    store.create_workspace("c").unwrap();
    let mut warnings = Vec::new();
    let (_, stats) = store
        .import_tar_warning("c", hostile.as_slice(), "in", &mut |_| {}, &mut |w| {
            warnings.push(w)
        })
        .unwrap();
    // The same words, in the same order, as GNU tar 1.34 extracting this archive.
    assert_eq!(
        warnings,
        [
            "Removing leading `../' from member names",
            "../escape: Member name contains '..'",
            "Removing leading `/' from member names",
            "Removing leading `dir/../../' from member names",
            "dir/../../y: Member name contains '..'",
            "Removing leading `/../../' from member names",
            "/../../deep: Member name contains '..'",
            "../again: Member name contains '..'",
            "outside: Cannot hard link to \u{2018}not/here\u{2019}: No such file or directory",
            "Removing leading `../../' from hard link targets",
            "up: Cannot hard link to \u{2018}etc/passwd\u{2019}: No such file or directory",
        ]
    );
    assert_eq!(stats.skipped, 6);
    let mut t = store.begin("c").unwrap();
    assert_eq!(t.read_file("in/abs/file").unwrap(), b"y");
    assert_eq!(t.read_file("in/ok/file").unwrap(), b"z");
    assert_eq!(t.read_file("in/copy").unwrap(), b"z");
    for skipped in [
        "in/escape",
        "in/y",
        "in/deep",
        "in/again",
        "in/outside",
        "in/up",
    ] {
        assert!(t.read_file(skipped).is_err(), "{skipped}");
    }
    assert!(t.read_file("escape").is_err());
}
