//! Model-based property test: random sequences of filesystem operations, commits, aborts,
//! forks, workspace switches and store reopens, applied both to the store and to a plain
//! in-memory model. Every operation's outcome (success or error code) and the whole tree
//! after it must agree. Cases: 2000 by default, `BURROW_PROPTEST_CASES` for more. The same
//! sequences run on the embedded store (one SQLite file holding objects and catalog) and on
//! a store whose object store and catalog are separate backends, so a commit puts its objects
//! before the catalog records it; then, fewer of them, on PostgreSQL, and on PostgreSQL with
//! the objects in a real S3-API server behind a local cache.

use std::collections::{BTreeMap, HashMap};
use std::path::Path;
use std::sync::Arc;

use burrow_store::backend::sqlite::Sqlite;
use burrow_store::{Durability, Errno, Kind, OpenFlags, Options, ROOT_INO, Store, Txn};
use proptest::prelude::*;

#[derive(Debug, Clone, PartialEq, Eq)]
enum M {
    File(Vec<u8>),
    Dir,
}

type Tree = BTreeMap<String, M>;

#[derive(Debug, Clone)]
enum Op {
    Write(String, u32, Vec<u8>),
    Truncate(String, u32),
    Mkdir(String),
    Unlink(String),
    Rmdir(String),
    Rename(String, String),
    Commit,
    Abort,
    Fork,
    Switch(usize),
    Reopen,
}

fn path() -> impl Strategy<Value = String> {
    prop::collection::vec(prop::sample::select(vec!["a", "b", "c"]), 1..=3)
        .prop_map(|v| v.join("/"))
}

fn data() -> impl Strategy<Value = Vec<u8>> {
    prop_oneof![
        8 => prop::collection::vec(any::<u8>(), 0..40),
        1 => (any::<u8>(), 60_000usize..140_000).prop_map(|(b, n)| vec![b | 1; n]),
    ]
}

fn offset() -> impl Strategy<Value = u32> {
    prop_oneof![4 => 0u32..64, 1 => 0u32..200_000]
}

fn op() -> impl Strategy<Value = Op> {
    prop_oneof![
        10 => (path(), offset(), data()).prop_map(|(p, o, d)| Op::Write(p, o, d)),
        3 => (path(), offset()).prop_map(|(p, s)| Op::Truncate(p, s)),
        6 => path().prop_map(Op::Mkdir),
        3 => path().prop_map(Op::Unlink),
        3 => path().prop_map(Op::Rmdir),
        4 => (path(), path()).prop_map(|(a, b)| Op::Rename(a, b)),
        3 => Just(Op::Commit),
        1 => Just(Op::Abort),
        1 => Just(Op::Fork),
        1 => (0usize..4).prop_map(Op::Switch),
        1 => Just(Op::Reopen),
    ]
}

fn parent(p: &str) -> &str {
    p.rfind('/').map(|i| &p[..i]).unwrap_or("")
}

/// The error the model gives for reaching the parent of `p`, if any.
fn parent_err(t: &Tree, p: &str) -> Option<Errno> {
    let mut prefix = String::new();
    let comps: Vec<&str> = p.split('/').collect();
    for c in &comps[..comps.len() - 1] {
        if !prefix.is_empty() {
            prefix.push('/');
        }
        prefix.push_str(c);
        match t.get(&prefix) {
            None => return Some(Errno::NotFound),
            Some(M::File(_)) => return Some(Errno::NotDir),
            Some(M::Dir) => {}
        }
    }
    None
}

fn under(p: &str, dir: &str) -> bool {
    p.len() > dir.len() && p.starts_with(dir) && p.as_bytes()[dir.len()] == b'/'
}

/// Applies `op` to the model; returns the expected outcome.
fn apply_model(t: &mut Tree, op: &Op) -> Result<(), Errno> {
    match op {
        Op::Write(p, off, d) => {
            if let Some(e) = parent_err(t, p) {
                return Err(e);
            }
            match t.entry(p.clone()).or_insert(M::File(Vec::new())) {
                M::Dir => Err(Errno::IsDir),
                M::File(f) => {
                    if !d.is_empty() {
                        let end = *off as usize + d.len();
                        if f.len() < end {
                            f.resize(end, 0);
                        }
                        f[*off as usize..end].copy_from_slice(d);
                    }
                    Ok(())
                }
            }
        }
        Op::Truncate(p, size) => {
            if let Some(e) = parent_err(t, p) {
                return Err(e);
            }
            match t.get_mut(p) {
                None => Err(Errno::NotFound),
                Some(M::Dir) => Err(Errno::IsDir),
                Some(M::File(f)) => {
                    f.resize(*size as usize, 0);
                    Ok(())
                }
            }
        }
        Op::Mkdir(p) => {
            if let Some(e) = parent_err(t, p) {
                return Err(e);
            }
            if t.contains_key(p) {
                return Err(Errno::Exists);
            }
            t.insert(p.clone(), M::Dir);
            Ok(())
        }
        Op::Unlink(p) => {
            if let Some(e) = parent_err(t, p) {
                return Err(e);
            }
            match t.get(p) {
                None => Err(Errno::NotFound),
                Some(M::Dir) => Err(Errno::IsDir),
                Some(M::File(_)) => {
                    t.remove(p);
                    Ok(())
                }
            }
        }
        Op::Rmdir(p) => {
            if let Some(e) = parent_err(t, p) {
                return Err(e);
            }
            match t.get(p) {
                None => Err(Errno::NotFound),
                Some(M::File(_)) => Err(Errno::NotDir),
                Some(M::Dir) if t.keys().any(|k| under(k, p)) => Err(Errno::NotEmpty),
                Some(M::Dir) => {
                    t.remove(p);
                    Ok(())
                }
            }
        }
        Op::Rename(src, dst) => {
            if let Some(e) = parent_err(t, src) {
                return Err(e);
            }
            let Some(s) = t.get(src).cloned() else {
                return Err(Errno::NotFound);
            };
            if let Some(e) = parent_err(t, dst) {
                return Err(e);
            }
            let dp = parent(dst);
            if s == M::Dir && (dp == src || under(dp, src)) {
                return Err(Errno::Invalid);
            }
            if src == dst {
                return Ok(());
            }
            if under(src, dst) && t.get(dst) == Some(&M::Dir) {
                return Err(Errno::NotEmpty);
            }
            match (&s, t.get(dst)) {
                (M::Dir, Some(M::Dir)) if t.keys().any(|k| under(k, dst)) => {
                    return Err(Errno::NotEmpty);
                }
                (M::Dir, Some(M::File(_))) => return Err(Errno::NotDir),
                (M::File(_), Some(M::Dir)) => return Err(Errno::IsDir),
                _ => {}
            }
            t.remove(dst);
            let moved: Vec<(String, M)> = t
                .iter()
                .filter(|(k, _)| *k == src || under(k, src))
                .map(|(k, v)| (format!("{dst}{}", &k[src.len()..]), v.clone()))
                .collect();
            t.retain(|k, _| !(k == src || under(k, src)));
            t.extend(moved);
            Ok(())
        }
        _ => Ok(()),
    }
}

fn apply_store(txn: &mut Txn, op: &Op) -> Result<(), Errno> {
    let r = match op {
        Op::Write(p, off, d) => {
            let flags = OpenFlags {
                create: true,
                ..Default::default()
            };
            txn.open_at(ROOT_INO, p, flags, true)
                .and_then(|ino| txn.write(ino, *off as u64, d).map(|_| ()))
        }
        Op::Truncate(p, s) => txn
            .resolve(ROOT_INO, p, true)
            .and_then(|ino| txn.set_size(ino, *s as u64)),
        Op::Mkdir(p) => txn.mkdir_at(ROOT_INO, p).map(|_| ()),
        Op::Unlink(p) => txn.unlink_at(ROOT_INO, p),
        Op::Rmdir(p) => txn.rmdir_at(ROOT_INO, p),
        Op::Rename(a, b) => txn.rename_at(ROOT_INO, a, ROOT_INO, b),
        _ => Ok(()),
    };
    r.map_err(|e| e.errno())
}

fn snapshot(txn: &mut Txn) -> Tree {
    fn walk(txn: &mut Txn, dir: u64, prefix: &str, out: &mut Tree) {
        for e in txn.readdir(dir).expect("readdir") {
            let ino = txn.lookup(dir, &e.name).expect("lookup");
            assert_eq!(ino, e.ino);
            let p = if prefix.is_empty() {
                e.name.clone()
            } else {
                format!("{prefix}/{}", e.name)
            };
            match e.kind {
                Kind::Dir => {
                    out.insert(p.clone(), M::Dir);
                    walk(txn, ino, &p, out);
                }
                Kind::File => {
                    out.insert(p, M::File(txn.read_all(ino).expect("read")));
                }
                Kind::Symlink => unreachable!("the model makes no symlinks"),
            }
        }
    }
    let mut out = Tree::new();
    walk(txn, ROOT_INO, "", &mut out);
    out
}

/// The embedded store: one SQLite file.
fn embedded(dir: &Path) -> Store {
    Store::open(dir.join("m.db")).expect("open")
}

/// Objects in one SQLite file, the catalog in another: the two-backend commit path.
fn separate(dir: &Path) -> Store {
    let open = |name: &str| {
        let o = Options::default();
        Arc::new(Sqlite::open(&dir.join(name), Durability::Normal, o.busy_timeout).expect("open"))
    };
    Store::with_backends(
        open("objects.db"),
        open("catalog.db"),
        dir,
        Options::default(),
    )
}

#[cfg(feature = "postgres")]
mod pg;

/// PostgreSQL (catalog and objects): one fresh database per case, found again on reopen
/// through a file in the case's directory.
#[cfg(feature = "postgres")]
fn postgres(dir: &Path) -> Store {
    let file = dir.join("postgres-url");
    let url = match std::fs::read_to_string(&file) {
        Ok(u) => u,
        Err(_) => {
            let u = pg::server().expect("checked before the cases").fresh_db();
            std::fs::write(&file, &u).expect("write url");
            u
        }
    };
    Store::open_postgres(&url, Options::default()).expect("open")
}

#[cfg(all(feature = "postgres", feature = "object-storage"))]
mod s3;

/// The shared deployment: catalog in PostgreSQL, objects in a real S3-API server, a local
/// object cache in the case's directory (one database and bucket per case).
#[cfg(all(feature = "postgres", feature = "object-storage"))]
fn postgres_s3(dir: &Path) -> Store {
    let file = dir.join("s3-location");
    let (catalog, objects) = match std::fs::read_to_string(&file) {
        Ok(u) => {
            let (c, o) = u.split_once('\n').expect("two lines");
            (c.to_string(), o.to_string())
        }
        Err(_) => {
            let c = pg::server().expect("checked before the cases").fresh_db();
            let o = s3::server()
                .expect("checked before the cases")
                .fresh_bucket();
            std::fs::write(&file, format!("{c}\n{o}")).expect("write location");
            (c, o)
        }
    };
    Store::connect(
        &burrow_store::Location {
            catalog,
            objects: Some(objects),
            object_options: s3::options(),
            cache: Some((dir.join("cache"), 16 << 20)),
        },
        Options::default(),
    )
    .expect("open")
}

fn run(ops: Vec<Op>, open: fn(&Path) -> Store) -> Result<(), TestCaseError> {
    let dir = tempfile::tempdir().expect("tempdir");
    let mut store = open(dir.path());
    store.create_workspace("w0").expect("create");
    let mut names = vec!["w0".to_string()];
    let mut committed: HashMap<String, Tree> = HashMap::from([("w0".to_string(), Tree::new())]);
    let mut ws = "w0".to_string();
    let mut txn = store.begin(&ws).expect("begin");
    let mut model = Tree::new();
    for op in &ops {
        match op {
            Op::Commit => {
                txn.commit().expect("commit");
                committed.insert(ws.clone(), model.clone());
                txn = store.begin(&ws).expect("begin");
            }
            Op::Abort => {
                drop(txn);
                model = committed[&ws].clone();
                txn = store.begin(&ws).expect("begin");
            }
            Op::Fork => {
                let name = format!("w{}", names.len());
                store.fork(&ws, &[&name]).expect("fork");
                committed.insert(name.clone(), committed[&ws].clone());
                names.push(name);
            }
            Op::Switch(i) => {
                drop(txn);
                ws = names[i % names.len()].clone();
                model = committed[&ws].clone();
                txn = store.begin(&ws).expect("begin");
            }
            Op::Reopen => {
                drop(txn);
                drop(store);
                store = open(dir.path());
                model = committed[&ws].clone();
                txn = store.begin(&ws).expect("begin");
            }
            _ => {
                let want = apply_model(&mut model, op);
                let got = apply_store(&mut txn, op);
                prop_assert_eq!(got, want, "outcome of {:?}", op);
            }
        }
        let seen = snapshot(&mut txn);
        prop_assert_eq!(&seen, &model, "tree after {:?}", op);
    }
    txn.commit().expect("final commit");
    for name in &names {
        let mut t = store.begin(name).expect("begin");
        let want = if *name == ws {
            &model
        } else {
            &committed[name]
        };
        prop_assert_eq!(&snapshot(&mut t), want, "workspace {} at the end", name);
    }
    let report = store.fsck().expect("fsck");
    prop_assert!(report.is_clean(), "fsck: {:?}", report.problems);
    Ok(())
}

fn cases() -> u32 {
    std::env::var("BURROW_PROPTEST_CASES")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(2000)
}

proptest! {
    #![proptest_config(ProptestConfig { cases: cases(), max_shrink_iters: 2000, ..ProptestConfig::default() })]
    #[test]
    fn store_agrees_with_model(ops in prop::collection::vec(op(), 1..40)) {
        run(ops, embedded)?;
    }

    #[test]
    fn separate_backends_agree_with_model(ops in prop::collection::vec(op(), 1..40)) {
        run(ops, separate)?;
    }
}

#[cfg(feature = "postgres")]
proptest! {
    // A round trip per statement: a twentieth of the cases.
    #![proptest_config(ProptestConfig { cases: cases() / 20, max_shrink_iters: 200, ..ProptestConfig::default() })]
    #[test]
    fn postgres_agrees_with_model(ops in prop::collection::vec(op(), 1..40)) {
        if pg::server().is_none() {
            return Ok(());
        }
        run(ops, postgres)?;
    }
}

#[cfg(all(feature = "postgres", feature = "object-storage"))]
proptest! {
    // A round trip per object and per statement: a fortieth of the cases.
    #![proptest_config(ProptestConfig { cases: cases() / 40, max_shrink_iters: 100, ..ProptestConfig::default() })]
    #[test]
    fn postgres_and_object_storage_agree_with_model(ops in prop::collection::vec(op(), 1..40)) {
        if pg::server().is_none() || s3::server().is_none() {
            return Ok(());
        }
        run(ops, postgres_s3)?;
    }
}
