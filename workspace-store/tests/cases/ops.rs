// The store operations' tests that hold for every backend, included by `tests/ops.rs` (the
// SQLite file), `tests/ops_postgres.rs` (PostgreSQL), `tests/ops_s3.rs` (PostgreSQL and
// object storage) and `tests/pooler.rs` (PostgreSQL through PgBouncer). Each file defines
// `store!()` (a fixture and a store with an empty workspace "w"), `reopen(&fixture)`
// (another handle on the same store, as another process has).

fn errno<T: std::fmt::Debug>(r: burrow_store::Result<T>) -> Errno {
    r.expect_err("expected an error").errno()
}

const CREATE: OpenFlags = OpenFlags {
    create: true,
    exclusive: false,
    truncate: false,
    directory: false,
};

#[test]
fn workspaces_create_list_delete() {
    let (_d, s) = store!();
    assert!(matches!(
        s.create_workspace("w"),
        Err(Error::WorkspaceExists(_))
    ));
    s.create_workspace("b").unwrap();
    let names: Vec<_> = s
        .workspaces()
        .unwrap()
        .into_iter()
        .map(|w| w.name)
        .collect();
    assert_eq!(names, ["b", "w"]);
    s.delete_workspace("b").unwrap();
    assert!(matches!(
        s.delete_workspace("b"),
        Err(Error::NoWorkspace(_))
    ));
    assert!(matches!(s.begin("nope"), Err(Error::NoWorkspace(_))));
    assert_eq!(errno(s.create_workspace("")), Errno::Invalid);
}

#[test]
fn write_read_append_sparse_truncate() {
    let (_d, s) = store!();
    let mut t = s.begin("w").unwrap();
    let ino = t.open_at(ROOT_INO, "f", CREATE, true).unwrap();
    t.write(ino, 0, b"hello").unwrap();
    t.write(ino, 5, b" world").unwrap();
    assert_eq!(t.read_all(ino).unwrap(), b"hello world");
    // Sparse: a hole past the end reads as zeros.
    t.write(ino, 200_000, b"x").unwrap();
    assert_eq!(t.stat(ino).unwrap().size, 200_001);
    let mut buf = vec![1u8; 10];
    assert_eq!(t.read(ino, 100_000, &mut buf).unwrap(), 10);
    assert_eq!(buf, vec![0; 10]);
    // Truncate down then up: the dropped bytes come back as zeros.
    t.set_size(ino, 3).unwrap();
    t.set_size(ino, 8).unwrap();
    assert_eq!(t.read_all(ino).unwrap(), b"hel\0\0\0\0\0");
    // Reads at and past the end return nothing.
    assert_eq!(t.read(ino, 8, &mut buf).unwrap(), 0);
    assert_eq!(t.read(ino, 1 << 40, &mut buf).unwrap(), 0);
    t.commit().unwrap();
    let mut t = s.begin("w").unwrap();
    assert_eq!(t.read_file("f").unwrap(), b"hel\0\0\0\0\0");
}

#[test]
fn truncate_after_commit_does_not_resurrect_old_pages() {
    let (_d, s) = store!();
    let mut t = s.begin("w").unwrap();
    let big: Vec<u8> = (0..300_000u32).map(|i| (i % 251) as u8 + 1).collect();
    t.write_file("f", &big).unwrap();
    t.commit().unwrap();
    let mut t = s.begin("w").unwrap();
    let ino = t.resolve(ROOT_INO, "f", true).unwrap();
    t.set_size(ino, 70_000).unwrap();
    t.set_size(ino, 300_000).unwrap();
    let data = t.read_all(ino).unwrap();
    assert_eq!(&data[..70_000], &big[..70_000]);
    assert!(data[70_000..].iter().all(|&b| b == 0));
    t.commit().unwrap();
    let mut t = s.begin("w").unwrap();
    assert_eq!(t.read_file("f").unwrap(), data);
    assert!(s.fsck().unwrap().is_clean());
}

#[test]
fn large_sparse_file_uses_deep_page_table() {
    let (_d, s) = store!();
    let mut t = s.begin("w").unwrap();
    let ino = t.open_at(ROOT_INO, "sparse", CREATE, true).unwrap();
    // Beyond 256 pages (16 MiB) the table needs two levels; beyond 65536 pages, three.
    t.write(ino, 5 << 30, b"far").unwrap();
    t.write(ino, 0, b"near").unwrap();
    t.commit().unwrap();
    let mut t = s.begin("w").unwrap();
    let ino = t.resolve(ROOT_INO, "sparse", true).unwrap();
    let mut b = [0u8; 4];
    t.read(ino, 5 << 30, &mut b).unwrap();
    assert_eq!(&b[..3], b"far");
    t.read(ino, 0, &mut b).unwrap();
    assert_eq!(&b, b"near");
    // Shrinking collapses the table again.
    t.set_size(ino, 4).unwrap();
    t.commit().unwrap();
    assert!(s.fsck().unwrap().is_clean());
    let mut t = s.begin("w").unwrap();
    assert_eq!(t.read_file("sparse").unwrap(), b"near");
}

#[test]
fn open_flags() {
    let (_d, s) = store!();
    let mut t = s.begin("w").unwrap();
    assert_eq!(
        errno(t.open_at(ROOT_INO, "f", OpenFlags::default(), true)),
        Errno::NotFound
    );
    let excl = OpenFlags {
        create: true,
        exclusive: true,
        ..Default::default()
    };
    let ino = t.open_at(ROOT_INO, "f", excl, true).unwrap();
    t.write(ino, 0, b"abc").unwrap();
    assert_eq!(errno(t.open_at(ROOT_INO, "f", excl, true)), Errno::Exists);
    let trunc = OpenFlags {
        truncate: true,
        ..Default::default()
    };
    let again = t.open_at(ROOT_INO, "f", trunc, true).unwrap();
    assert_eq!(again, ino);
    assert_eq!(t.stat(ino).unwrap().size, 0);
    let dirflag = OpenFlags {
        directory: true,
        ..Default::default()
    };
    assert_eq!(
        errno(t.open_at(ROOT_INO, "f", dirflag, true)),
        Errno::NotDir
    );
    assert_eq!(
        errno(t.open_at(ROOT_INO, "f/", OpenFlags::default(), true)),
        Errno::NotDir
    );
    t.mkdir_at(ROOT_INO, "d").unwrap();
    assert_eq!(errno(t.open_at(ROOT_INO, "d", trunc, true)), Errno::IsDir);
    assert_eq!(
        errno(t.open_at(ROOT_INO, "missing/f", CREATE, true)),
        Errno::NotFound
    );
    assert_eq!(
        errno(t.open_at(ROOT_INO, "f/x", CREATE, true)),
        Errno::NotDir
    );
    let d = t.open_at(ROOT_INO, "d", dirflag, true).unwrap();
    assert_eq!(errno(t.write(d, 0, b"x")), Errno::IsDir);
    let mut b = [0u8; 1];
    assert_eq!(errno(t.read(d, 0, &mut b)), Errno::IsDir);
}

#[test]
fn mkdir_readdir_rmdir_unlink() {
    let (_d, s) = store!();
    let mut t = s.begin("w").unwrap();
    t.mkdir_at(ROOT_INO, "d").unwrap();
    assert_eq!(errno(t.mkdir_at(ROOT_INO, "d")), Errno::Exists);
    assert_eq!(errno(t.mkdir_at(ROOT_INO, "x/y")), Errno::NotFound);
    assert_eq!(errno(t.mkdir_at(ROOT_INO, ".")), Errno::Exists);
    t.write_file("d/b", b"1").unwrap();
    t.write_file("d/a", b"2").unwrap();
    t.mkdir_at(ROOT_INO, "d/c").unwrap();
    assert_eq!(errno(t.mkdir_at(ROOT_INO, "d/a/z")), Errno::NotDir);
    let d = t.resolve(ROOT_INO, "d", true).unwrap();
    let names: Vec<_> = t
        .readdir(d)
        .unwrap()
        .into_iter()
        .map(|e| (e.name, e.kind))
        .collect();
    assert_eq!(
        names,
        [
            ("a".to_string(), Kind::File),
            ("b".to_string(), Kind::File),
            ("c".to_string(), Kind::Dir)
        ]
    );
    assert_eq!(errno(t.rmdir_at(ROOT_INO, "d")), Errno::NotEmpty);
    assert_eq!(errno(t.rmdir_at(ROOT_INO, "d/a")), Errno::NotDir);
    assert_eq!(errno(t.unlink_at(ROOT_INO, "d/c")), Errno::IsDir);
    assert_eq!(errno(t.unlink_at(ROOT_INO, "d/zz")), Errno::NotFound);
    t.unlink_at(ROOT_INO, "d/a").unwrap();
    t.unlink_at(ROOT_INO, "d/b").unwrap();
    t.rmdir_at(ROOT_INO, "d/c").unwrap();
    assert_eq!(t.readdir(d).unwrap().len(), 0);
    t.rmdir_at(ROOT_INO, "d").unwrap();
    assert_eq!(errno(t.stat_at(ROOT_INO, "d", true)), Errno::NotFound);
    assert_eq!(errno(t.rmdir_at(ROOT_INO, "/")), Errno::Invalid);
    let c = t.commit().unwrap();
    assert!(c.changed);
    assert_eq!(s.version(c.version).unwrap().entries, 0);
}

#[test]
fn unlinked_file_stays_readable_through_its_inode() {
    let (_d, s) = store!();
    let mut t = s.begin("w").unwrap();
    let ino = t.write_file("f", b"data").unwrap();
    t.unlink_at(ROOT_INO, "f").unwrap();
    assert_eq!(t.read_all(ino).unwrap(), b"data");
    t.write(ino, 4, b"!").unwrap();
    t.commit().unwrap();
    let mut t = s.begin("w").unwrap();
    assert_eq!(t.readdir(ROOT_INO).unwrap().len(), 0);
    assert!(s.fsck().unwrap().is_clean());
}

/// A name listed or looked up once is remembered by its directory; what happens to the name
/// afterwards in the same transaction (unlink, rename away, a new file in its place) wins.
#[test]
fn names_seen_before_a_change_resolve_to_what_the_change_left() {
    let (_d, s) = store!();
    let mut t = s.begin("w").unwrap();
    t.mkdir_at(ROOT_INO, "d").unwrap();
    t.write_file("d/a", b"a").unwrap();
    t.write_file("d/b", b"b").unwrap();
    t.commit().unwrap();
    let mut t = s.begin("w").unwrap();
    let d = t.resolve(ROOT_INO, "d", true).unwrap();
    let listed: Vec<_> = t.readdir(d).unwrap().into_iter().map(|e| e.ino).collect();
    let a = t.lookup(d, "a").unwrap();
    assert_eq!(a, listed[0]);
    t.rename_at(d, "a", ROOT_INO, "moved").unwrap();
    assert_eq!(errno(t.lookup(d, "a")), Errno::NotFound);
    assert_eq!(t.resolve(ROOT_INO, "moved", true).unwrap(), a);
    t.unlink_at(d, "b").unwrap();
    assert_eq!(errno(t.stat_at(ROOT_INO, "d/b", false)), Errno::NotFound);
    let b2 = t.write_file("d/b", b"new").unwrap();
    assert_ne!(b2, listed[1]);
    assert_eq!(t.resolve(ROOT_INO, "d/b", true).unwrap(), b2);
    t.rename_at(ROOT_INO, "moved", d, "a").unwrap();
    assert_eq!(t.resolve(ROOT_INO, "d//a/", true).unwrap(), a);
    assert_eq!(t.read_all(b2).unwrap(), b"new");
}

#[test]
fn rename_rules() {
    let (_d, s) = store!();
    let mut t = s.begin("w").unwrap();
    t.mkdir_all("a/b").unwrap();
    t.mkdir_all("x").unwrap();
    let f = t.write_file("a/b/f", b"F").unwrap();
    // Across directories; the inode (an open descriptor) survives the move.
    t.rename_at(ROOT_INO, "a/b/f", ROOT_INO, "x/g").unwrap();
    assert_eq!(t.resolve(ROOT_INO, "x/g", true).unwrap(), f);
    assert_eq!(t.read_all(f).unwrap(), b"F");
    assert_eq!(errno(t.stat_at(ROOT_INO, "a/b/f", true)), Errno::NotFound);
    // Replacing a file.
    t.write_file("x/h", b"H").unwrap();
    t.rename_at(ROOT_INO, "x/h", ROOT_INO, "x/g").unwrap();
    assert_eq!(t.read_file("x/g").unwrap(), b"H");
    // Type rules.
    assert_eq!(
        errno(t.rename_at(ROOT_INO, "x/g", ROOT_INO, "a")),
        Errno::IsDir
    );
    assert_eq!(
        errno(t.rename_at(ROOT_INO, "a", ROOT_INO, "x/g")),
        Errno::NotDir
    );
    assert_eq!(
        errno(t.rename_at(ROOT_INO, "a", ROOT_INO, "a/b/c")),
        Errno::Invalid
    );
    t.write_file("x/keep", b"").unwrap();
    assert_eq!(
        errno(t.rename_at(ROOT_INO, "a", ROOT_INO, "x")),
        Errno::NotEmpty
    );
    assert_eq!(
        errno(t.rename_at(ROOT_INO, "nope", ROOT_INO, "y")),
        Errno::NotFound
    );
    // A directory onto an empty directory, carrying its subtree.
    t.mkdir_at(ROOT_INO, "empty").unwrap();
    t.rename_at(ROOT_INO, "a", ROOT_INO, "empty").unwrap();
    assert_eq!(
        t.stat_at(ROOT_INO, "empty/b", true).unwrap().kind,
        Kind::Dir
    );
    // Renaming onto itself is a no-op.
    t.rename_at(ROOT_INO, "x/g", ROOT_INO, "x/g").unwrap();
    let c = t.commit().unwrap();
    assert!(s.fsck().unwrap().is_clean());
    let mut v = s.view(c.version).unwrap();
    assert_eq!(v.read_file("x/g").unwrap(), b"H");
    assert_eq!(
        v.stat_at(ROOT_INO, "x/g", true).unwrap().ino,
        v.stat_at(ROOT_INO, "x/g", true).unwrap().ino
    );
}

#[test]
fn symlinks_resolve_inside_the_workspace() {
    let (_d, s) = store!();
    let mut t = s.begin("w").unwrap();
    t.mkdir_all("d/e").unwrap();
    t.write_file("d/e/f", b"target").unwrap();
    t.symlink_at("e/f", ROOT_INO, "d/rel").unwrap();
    t.symlink_at("/d/e", ROOT_INO, "abs").unwrap();
    t.symlink_at("../../../../../d/e/f", ROOT_INO, "d/e/up")
        .unwrap();
    t.symlink_at("/etc/passwd", ROOT_INO, "host").unwrap();
    assert_eq!(t.read_file("d/rel").unwrap(), b"target");
    assert_eq!(t.read_file("abs/f").unwrap(), b"target");
    // `..` never climbs above the root: the path stays inside the workspace.
    assert_eq!(t.read_file("d/e/up").unwrap(), b"target");
    // An absolute host path names a path inside the workspace, which does not exist.
    assert_eq!(errno(t.read_file("host")), Errno::NotFound);
    assert_eq!(t.readlink_at(ROOT_INO, "d/rel").unwrap(), "e/f");
    assert_eq!(errno(t.readlink_at(ROOT_INO, "d/e/f")), Errno::Invalid);
    assert_eq!(
        t.stat_at(ROOT_INO, "abs", false).unwrap().kind,
        Kind::Symlink
    );
    assert_eq!(t.stat_at(ROOT_INO, "abs", true).unwrap().kind, Kind::Dir);
    // Loops.
    t.symlink_at("loop2", ROOT_INO, "loop1").unwrap();
    t.symlink_at("loop1", ROOT_INO, "loop2").unwrap();
    assert_eq!(errno(t.read_file("loop1")), Errno::Loop);
    t.symlink_at("self", ROOT_INO, "self").unwrap();
    assert_eq!(errno(t.stat_at(ROOT_INO, "self", true)), Errno::Loop);
    // Opening a symlink itself without following.
    assert_eq!(
        errno(t.open_at(ROOT_INO, "d/rel", OpenFlags::default(), false)),
        Errno::Loop
    );
    assert_eq!(errno(t.symlink_at("x", ROOT_INO, "abs")), Errno::Exists);
    assert_eq!(errno(t.symlink_at("", ROOT_INO, "empty")), Errno::Invalid);
    // Unlink removes the link, not its target.
    t.unlink_at(ROOT_INO, "abs").unwrap();
    assert_eq!(t.read_file("d/e/f").unwrap(), b"target");
    t.commit().unwrap();
    assert!(s.fsck().unwrap().is_clean());
}

#[test]
fn hard_links_are_unsupported() {
    let (_d, s) = store!();
    let mut t = s.begin("w").unwrap();
    t.write_file("f", b"x").unwrap();
    assert_eq!(
        errno(t.link_at(ROOT_INO, "f", ROOT_INO, "g")),
        Errno::Unsupported
    );
}

#[test]
fn names_and_paths_are_checked() {
    let (_d, s) = store!();
    let mut t = s.begin("w").unwrap();
    let long = "n".repeat(256);
    assert_eq!(errno(t.write_file(&long, b"")), Errno::NameTooLong);
    t.write_file(&"n".repeat(255), b"").unwrap();
    let deep = "a/".repeat(2100);
    assert_eq!(errno(t.stat_at(ROOT_INO, &deep, true)), Errno::NameTooLong);
    assert_eq!(errno(t.write_file("a\0b", b"")), Errno::Invalid);
    assert_eq!(errno(t.write_file("", b"")), Errno::NotFound);
    assert_eq!(errno(t.stat_at(ROOT_INO, "", true)), Errno::NotFound);
    assert_eq!(t.stat_at(ROOT_INO, ".", true).unwrap().kind, Kind::Dir);
}

#[test]
fn times_and_modes() {
    let (_d, s) = store!();
    let mut t = s.begin("w").unwrap();
    let ino = t.write_file("f", b"x").unwrap();
    t.set_times(ino, Some(SetTime::At(1_000)), Some(SetTime::At(2_000)))
        .unwrap();
    t.set_mode(ino, 0o100_751).unwrap();
    t.commit().unwrap();
    let mut t = s.begin("w").unwrap();
    let st = t.stat_at(ROOT_INO, "f", true).unwrap();
    assert_eq!(
        (st.atime, st.mtime, st.mode, st.nlink),
        (1_000, 2_000, 0o751, 1)
    );
    assert!(st.ctime > 2_000);
}

#[test]
fn commits_history_and_no_op_commits() {
    let (_d, s) = store!();
    let v0 = s.workspace("w").unwrap().version;
    let t = s.begin("w").unwrap();
    let c = t.commit().unwrap();
    assert!(!c.changed);
    assert_eq!(c.version, v0);
    let mut t = s.begin("w").unwrap();
    t.write_file("a", b"1").unwrap();
    t.set_message("write a");
    let c1 = t.commit().unwrap();
    let mut t = s.begin("w").unwrap();
    t.write_file("a", b"2").unwrap();
    t.set_message("rewrite a");
    let c2 = t.commit().unwrap();
    let h = s.history("w", 10).unwrap();
    let msgs: Vec<_> = h.iter().map(|v| v.message.as_str()).collect();
    assert_eq!(msgs, ["rewrite a", "write a", "create"]);
    assert_eq!(h[0].id, c2.version);
    assert_eq!(h[0].parent, Some(c1.version));
}

#[test]
fn concurrent_commit_is_a_conflict_and_changes_nothing() {
    let (d, s) = store!();
    // A second handle on the same store behaves like another process.
    let other = reopen(&d);
    let mut a = s.begin("w").unwrap();
    let mut b = other.begin("w").unwrap();
    a.write_file("f", b"from a").unwrap();
    b.write_file("f", b"from b").unwrap();
    let ca = a.commit().unwrap();
    match b.commit() {
        Err(Error::Conflict {
            expected, actual, ..
        }) => {
            assert_eq!(expected, ca.base);
            assert_eq!(actual, ca.version);
        }
        other => panic!("expected conflict, got {other:?}"),
    }
    assert_eq!(s.workspace("w").unwrap().version, ca.version);
    assert_eq!(s.begin("w").unwrap().read_file("f").unwrap(), b"from a");
}

#[test]
fn abort_leaves_head_and_tree_untouched() {
    let (_d, s) = store!();
    let mut t = s.begin("w").unwrap();
    t.write_file("keep", b"k").unwrap();
    let c = t.commit().unwrap();
    let before = s.version(c.version).unwrap();
    let mut t = s.begin("w").unwrap();
    t.write_file("keep", b"changed").unwrap();
    t.write_file("new", b"n").unwrap();
    t.unlink_at(ROOT_INO, "keep").unwrap();
    drop(t);
    let after = s.workspace("w").unwrap();
    assert_eq!(after.version, c.version);
    assert_eq!(s.version(after.version).unwrap(), before);
    assert_eq!(s.begin("w").unwrap().read_file("keep").unwrap(), b"k");
}

#[test]
fn quotas_refuse_only_the_operation() {
    let (_d, s) = store!();
    s.set_quota(
        "w",
        Quota {
            bytes: Some(10),
            entries: Some(3),
        },
    )
    .unwrap();
    let mut t = s.begin("w").unwrap();
    let f = t.write_file("f", b"12345678").unwrap();
    assert!(matches!(
        t.write(f, 8, b"abc"),
        Err(Error::QuotaExceeded { what: "bytes", .. })
    ));
    assert_eq!(errno(t.set_size(f, 11)), Errno::Quota);
    t.write(f, 8, b"ab").unwrap();
    t.mkdir_at(ROOT_INO, "d").unwrap();
    t.write_file("g", b"").unwrap();
    assert_eq!(errno(t.mkdir_at(ROOT_INO, "e")), Errno::Quota);
    // Freeing space makes room again, in the same transaction.
    t.unlink_at(ROOT_INO, "g").unwrap();
    t.set_size(f, 0).unwrap();
    t.write_file("h", b"0123456789").unwrap();
    assert_eq!(t.usage(), (10, 3));
    t.commit().unwrap();
    // Forks inherit the quota.
    s.fork("w", &["f1"]).unwrap();
    assert_eq!(s.workspace("f1").unwrap().quota.bytes, Some(10));
}

#[test]
fn forks_are_isolated_and_cost_nothing() {
    let (_d, s) = store!();
    let mut t = s.begin("w").unwrap();
    for d in 0..7 {
        t.mkdir_all(&format!("dir{d}")).unwrap();
    }
    for i in 0..200 {
        let path = format!("dir{}/file{i}", i % 7);
        t.write_file(&path, format!("content {i}").as_bytes())
            .unwrap();
    }
    t.commit().unwrap();
    let before = s.stats().unwrap();
    let v = s.fork("w", &["a", "b", "c"]).unwrap();
    let after = s.stats().unwrap();
    assert_eq!(after.objects, before.objects);
    assert_eq!(after.versions, before.versions);
    assert_eq!(after.workspaces, before.workspaces + 3);
    for ws in ["a", "b", "c"] {
        assert_eq!(s.workspace(ws).unwrap().version, v);
    }
    let mut ta = s.begin("a").unwrap();
    ta.write_file("dir1/file1", b"changed in a").unwrap();
    ta.write_file("only-a", b"a").unwrap();
    ta.commit().unwrap();
    let mut tb = s.begin("b").unwrap();
    tb.unlink_at(ROOT_INO, "dir2/file2").unwrap();
    tb.commit().unwrap();
    for (ws, f1, has_a, has_2) in [
        ("w", "content 1", false, true),
        ("a", "changed in a", true, true),
        ("b", "content 1", false, false),
        ("c", "content 1", false, true),
    ] {
        let mut t = s.begin(ws).unwrap();
        assert_eq!(t.read_file("dir1/file1").unwrap(), f1.as_bytes(), "{ws}");
        assert_eq!(t.read_file("only-a").is_ok(), has_a, "{ws}");
        assert_eq!(t.read_file("dir2/file2").is_ok(), has_2, "{ws}");
    }
    let d = s.diff_workspaces("a", "b").unwrap();
    let got: Vec<_> = d.iter().map(|c| (c.path.as_str(), c.kind)).collect();
    assert_eq!(
        got,
        [
            ("dir1/file1", ChangeKind::Modified),
            ("dir2/file2", ChangeKind::Removed),
            ("only-a", ChangeKind::Removed)
        ]
    );
}

#[test]
fn labels_checkout_and_read_only_views() {
    let (_d, s) = store!();
    let mut t = s.begin("w").unwrap();
    t.write_file("f", b"v1").unwrap();
    let c1 = t.commit().unwrap();
    s.label("first", c1.version).unwrap();
    let mut t = s.begin("w").unwrap();
    t.write_file("f", b"v2").unwrap();
    t.commit().unwrap();
    assert_eq!(s.labels().unwrap(), [("first".to_string(), c1.version)]);
    let mut view = s.view(c1.version).unwrap();
    assert_eq!(view.read_file("f").unwrap(), b"v1");
    assert_eq!(errno(view.write_file("f", b"x")), Errno::ReadOnly);
    assert!(matches!(view.commit(), Err(Error::ReadOnly)));
    let v = s.checkout("w", c1.version).unwrap();
    assert_eq!(s.begin("w").unwrap().read_file("f").unwrap(), b"v1");
    assert_eq!(
        s.version(v).unwrap().message,
        format!("checkout {}", c1.version)
    );
    // New files after a checkout never reuse inode numbers of the abandoned line.
    let mut t = s.begin("w").unwrap();
    let ino = t.write_file("g", b"").unwrap();
    assert!(ino >= 3);
    assert!(matches!(
        s.label("x", burrow_store::VersionId(9999)),
        Err(Error::NoVersion(_))
    ));
    s.delete_label("first").unwrap();
    assert!(matches!(s.delete_label("first"), Err(Error::NoLabel(_))));
}

#[test]
fn large_directories_split_and_stay_canonical() {
    let (_d, s) = store!();
    s.create_workspace("other").unwrap();
    let names: Vec<String> = (0..1500).map(|i| format!("entry-{i:05}")).collect();
    let mut t = s.begin("w").unwrap();
    for n in &names {
        t.write_file(n, n.as_bytes()).unwrap();
    }
    t.commit().unwrap();
    // The same set built in another order and over several commits hashes the same.
    for chunk in names.chunks(400).rev() {
        let mut t = s.begin("other").unwrap();
        for n in chunk.iter().rev() {
            t.write_file(n, n.as_bytes()).unwrap();
        }
        t.commit().unwrap();
    }
    let differences = s.diff_workspaces("w", "other").unwrap();
    assert!(differences.is_empty(), "{differences:?}");
    let mut t = s.begin("w").unwrap();
    let listed: Vec<_> = t
        .readdir(ROOT_INO)
        .unwrap()
        .into_iter()
        .map(|e| e.name)
        .collect();
    assert_eq!(listed, names);
    for n in &names[10..] {
        t.unlink_at(ROOT_INO, n).unwrap();
    }
    t.commit().unwrap();
    let mut t = s.begin("w").unwrap();
    assert_eq!(t.readdir(ROOT_INO).unwrap().len(), 10);
    assert_eq!(t.read_file("entry-00003").unwrap(), b"entry-00003");
    assert!(s.fsck().unwrap().is_clean());
}

#[test]
fn gc_reclaims_deleted_forks_and_keeps_the_rest() {
    let (_d, s) = store!();
    let mut t = s.begin("w").unwrap();
    t.write_file("shared", &vec![7u8; 100_000]).unwrap();
    t.commit().unwrap();
    s.fork("w", &["tmp"]).unwrap();
    let mut t = s.begin("tmp").unwrap();
    t.write_file("unique", &vec![9u8; 200_000]).unwrap();
    t.commit().unwrap();
    let before = s.stats().unwrap();
    let none = s.gc(Retention::All, Duration::ZERO).unwrap();
    assert_eq!(none.objects_deleted, 0);
    s.delete_workspace("tmp").unwrap();
    let stats = s.gc(Retention::All, Duration::ZERO).unwrap();
    assert!(stats.versions_deleted >= 1);
    assert!(stats.bytes_freed >= 65_536, "{stats:?}");
    let after = s.stats().unwrap();
    assert!(after.page_bytes < before.page_bytes);
    assert_eq!(
        s.begin("w").unwrap().read_file("shared").unwrap(),
        vec![7u8; 100_000]
    );
    let report = s.fsck().unwrap();
    assert!(report.is_clean(), "{:?}", report.problems);
    // Retention of the last version only drops older history.
    for i in 0..3 {
        let mut t = s.begin("w").unwrap();
        t.write_file("shared", &[i as u8; 10]).unwrap();
        t.commit().unwrap();
    }
    s.gc(Retention::LastN(1), Duration::ZERO).unwrap();
    assert_eq!(s.history("w", 100).unwrap().len(), 1);
    assert!(s.fsck().unwrap().is_clean());
}

#[test]
fn diff_is_proportional_and_lists_subtrees() {
    let (_d, s) = store!();
    let mut t = s.begin("w").unwrap();
    t.mkdir_all("big").unwrap();
    for i in 0..2000 {
        t.write_file(&format!("big/f{i}"), b"x").unwrap();
    }
    let c0 = t.commit().unwrap();
    let mut t = s.begin("w").unwrap();
    t.write_file("big/f5", b"y").unwrap();
    t.mkdir_all("new/sub").unwrap();
    t.write_file("new/sub/file", b"z").unwrap();
    t.unlink_at(ROOT_INO, "big/f7").unwrap();
    let c1 = t.commit().unwrap();
    let d = s.diff(c0.version, c1.version).unwrap();
    let got: Vec<_> = d
        .iter()
        .map(|c| (c.path.as_str(), c.kind, c.entry))
        .collect();
    assert_eq!(
        got,
        [
            ("big/f5", ChangeKind::Modified, Kind::File),
            ("big/f7", ChangeKind::Removed, Kind::File),
            ("new", ChangeKind::Added, Kind::Dir),
            ("new/sub", ChangeKind::Added, Kind::Dir),
            ("new/sub/file", ChangeKind::Added, Kind::File),
        ]
    );
    assert!(s.diff(c1.version, c1.version).unwrap().is_empty());
}

#[test]
fn metadata_names_are_unique_and_events_are_logged_with_commits() {
    let (_d, s) = store!();
    s.create_workspace("x").unwrap();
    s.set_meta("w", "name", Some("analysis")).unwrap();
    assert!(matches!(
        s.set_meta("x", "name", Some("analysis")),
        Err(Error::WorkspaceExists(_))
    ));
    s.set_meta("x", "name", Some("other")).unwrap();
    assert_eq!(
        s.find_by_meta("name", "analysis").unwrap().as_deref(),
        Some("w")
    );
    assert_eq!(
        s.meta("w").unwrap().get("name").map(String::as_str),
        Some("analysis")
    );
    s.set_meta("w", "name", None).unwrap();
    assert!(s.meta("w").unwrap().is_empty());

    let mut t = s.begin("w").unwrap();
    t.write_file("f", b"1").unwrap();
    let (c, seq) = t.commit_with_event("tool", r#"{"tool":"write"}"#).unwrap();
    // A failed commit writes no event.
    let mut a = s.begin("w").unwrap();
    a.write_file("g", b"").unwrap();
    let mut b = s.begin("w").unwrap();
    b.write_file("h", b"").unwrap();
    a.commit().unwrap();
    assert!(b.commit_with_event("tool", "{}").is_err());
    let seq2 = s.append_event("x", "created", None, None, "{}").unwrap();
    assert!(seq2 > seq);
    let ev = s
        .events(&burrow_store::EventFilter {
            workspace: Some("w".into()),
            ..Default::default()
        })
        .unwrap();
    assert_eq!(ev.len(), 1);
    assert_eq!(ev[0].version_after, Some(c.version));
    assert_eq!(ev[0].version_before, Some(c.base));
    assert_eq!(ev[0].data, r#"{"tool":"write"}"#);
    let all = s.events(&Default::default()).unwrap();
    assert_eq!(all.len(), 2);
    assert!(s.workspace("w").unwrap().last_active.is_some());
}

#[test]
fn a_commit_numbers_its_events_in_order_and_a_failed_one_leaves_no_version() {
    let (_d, s) = store!();
    let mut t = s.begin("w").unwrap();
    t.write_file("f", b"1").unwrap();
    t.add_event("first", "1");
    t.add_event("second", "2");
    let (c, seq) = t.commit_with_event("third", "3").unwrap();
    let ev = s
        .events(&burrow_store::EventFilter {
            workspace: Some("w".into()),
            ..Default::default()
        })
        .unwrap();
    let kinds: Vec<&str> = ev.iter().map(|e| e.kind.as_str()).collect();
    assert_eq!(kinds, ["first", "second", "third"]);
    assert!(ev.windows(2).all(|w| w[0].seq < w[1].seq));
    assert_eq!(ev[2].seq, seq);
    assert!(ev.iter().all(|e| e.version_after == Some(c.version)));
    // A commit that loses the race records no version, no event and no head move.
    let versions = s.version_count("w").unwrap();
    let mut a = s.begin("w").unwrap();
    let mut b = s.begin("w").unwrap();
    a.write_file("g", b"").unwrap();
    b.write_file("h", b"").unwrap();
    b.add_event("lost", "");
    let ca = a.commit().unwrap();
    assert!(matches!(b.commit_with_event("tool", "{}"), Err(Error::Conflict { .. })));
    assert_eq!(s.version_count("w").unwrap(), versions + 1);
    assert_eq!(s.workspace("w").unwrap().version, ca.version);
    let after = s.events(&Default::default()).unwrap();
    assert_eq!(after.len(), 3);
}

#[test]
fn a_fork_onto_a_taken_name_creates_none_of_its_names() {
    let (_d, s) = store!();
    s.create_workspace("taken").unwrap();
    s.set_quota(
        "w",
        Quota {
            bytes: Some(1 << 20),
            entries: None,
        },
    )
    .unwrap();
    match s.fork("w", &["a", "taken", "b"]) {
        Err(Error::WorkspaceExists(n)) => assert_eq!(n, "taken"),
        other => panic!("expected WorkspaceExists, got {other:?}"),
    }
    match s.fork("w", &["c", "c"]) {
        Err(Error::WorkspaceExists(n)) => assert_eq!(n, "c"),
        other => panic!("expected WorkspaceExists, got {other:?}"),
    }
    let mut names: Vec<String> = s.workspaces().unwrap().into_iter().map(|w| w.name).collect();
    names.sort();
    assert_eq!(names, ["taken", "w"]);
    assert!(matches!(s.fork("missing", &["d"]), Err(Error::NoWorkspace(_))));
    let v = s.fork("w", &["a", "b"]).unwrap();
    assert_eq!(v, s.workspace("w").unwrap().version);
    assert_eq!(s.workspace("b").unwrap().version, v);
    assert_eq!(s.workspace("b").unwrap().quota.bytes, Some(1 << 20));
}

#[test]
fn large_writes_spill_and_commit_correctly() {
    let (_d, s) = store!();
    let mut t = s.begin("w").unwrap();
    let ino = t.open_at(ROOT_INO, "big", CREATE, true).unwrap();
    // More than the in-memory threshold (64 MiB), written in 1 MiB blocks of distinct bytes.
    let block = |i: u64| -> Vec<u8> {
        (0..1 << 20)
            .map(|j| ((i * 7 + j as u64 / 4096) % 251) as u8)
            .collect()
    };
    for i in 0..80u64 {
        t.write(ino, i << 20, &block(i)).unwrap();
    }
    // Spilled pages read back before the commit, and can be overwritten again.
    let mut buf = vec![0u8; 1 << 20];
    t.read(ino, 3 << 20, &mut buf).unwrap();
    assert_eq!(buf, block(3));
    t.write(ino, 3 << 20, &block(99)).unwrap();
    let c = t.commit().unwrap();
    let mut v = s.view(c.version).unwrap();
    let ino = v.resolve(ROOT_INO, "big", true).unwrap();
    for i in [0u64, 3, 40, 79] {
        v.read(ino, i << 20, &mut buf).unwrap();
        assert_eq!(buf, block(if i == 3 { 99 } else { i }), "block {i}");
    }
    assert!(s.fsck().unwrap().is_clean());
}
