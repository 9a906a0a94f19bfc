// The catalog's guarded writes (the GC sweep fence's half inside the catalog), shared by the
// SQLite and PostgreSQL tests: a write lands only while its setting reads what the writer
// saw, and a write whose guard fails leaves nothing behind.

fn guarded_writes_land_only_while_the_setting_holds(cat: &dyn burrow_store::backend::Catalog) {
    use burrow_store::backend::{CommitRecord, Guard, NewVersion};
    use burrow_store::{Error, Hash};
    let version = |ws, parent| NewVersion {
        root: Hash::of(b"a tree"),
        parent,
        workspace: ws,
        message: "m",
        next_ino: 2,
        bytes: 0,
        entries: 0,
    };
    let absent = Guard {
        key: "test.fence",
        value: None,
    };
    let one = Guard {
        key: "test.fence",
        value: Some("1"),
    };
    let first = cat
        .create_workspace(&version("g", None), &[], Some(absent))
        .unwrap();
    assert!(cat.swap_setting("test.fence", None, Some("1")).unwrap());
    let events = vec![("call".to_string(), "{}".to_string())];
    let record = |guard| CommitRecord {
        version: version("g", Some(first)),
        expected: first,
        events: &events,
        event: None,
        guard: Some(guard),
    };
    let (versions, heads) = cat.totals().unwrap();
    let all = burrow_store::EventFilter::default();
    let seq = cat.events(&all).unwrap().len();
    // The setting moved since the writer read it: nothing is written.
    assert!(matches!(cat.commit(&record(absent), &[]), Err(Error::Fenced)));
    assert!(matches!(
        cat.create_workspace(&version("h", None), &[], Some(absent)),
        Err(Error::Fenced)
    ));
    assert_eq!(cat.totals().unwrap(), (versions, heads));
    assert_eq!(cat.head("g").unwrap().version, first);
    assert_eq!(cat.events(&all).unwrap().len(), seq);
    // Under the setting as it reads now, the same commit lands.
    let (v, _) = cat.commit(&record(one), &[]).unwrap();
    assert_eq!(cat.head("g").unwrap().version, v);
    assert_eq!(cat.totals().unwrap(), (versions + 1, heads));
    assert_eq!(cat.events(&all).unwrap().len(), seq + 1);
}
