//! The PostgreSQL backend as an [`ObjectStore`] (objects as `bytea`, for small deployments
//! and for the tree nodes and small pages of a store whose pages are in object storage) and
//! as the [`PackIndex`] of packed objects in object storage.

use super::*;

impl ObjectStore for Postgres {
    fn put_many(&self, objects: &[NewObject<'_>]) -> Result<()> {
        if objects.is_empty() {
            return Ok(());
        }
        // No writer lock: objects are immutable and the insert is idempotent.
        let pc = self.client()?;
        pc.driver().block(pipelined(&pc, put_objects(&pc, objects)))
    }

    fn get(&self, hash: &Hash, _kind: ObjectKind) -> Result<Option<Vec<u8>>> {
        let pc = self.reader()?;
        pc.driver().block(async {
            let row = pc
                .query_opt(GET_OBJECT, &[&&hash.0[..]])
                .await
                .map_err(server)?;
            Ok(row.map(|r| r.get::<_, Vec<u8>>(0)))
        })
    }

    fn get_many(&self, hashes: &[Hash], _kind: ObjectKind) -> Result<Vec<(Hash, Vec<u8>)>> {
        let pc = self.reader()?;
        pc.driver().block(async {
            let mut out = Vec::with_capacity(hashes.len());
            for chunk in hashes.chunks(500) {
                let keys: Vec<&[u8]> = chunk.iter().map(|h| &h.0[..]).collect();
                let rows = pc
                    .query(
                        "SELECT hash, data FROM objects WHERE hash = ANY($1)",
                        &[&keys],
                    )
                    .await
                    .map_err(server)?;
                for r in rows {
                    out.push((hash_of(r.get::<_, &[u8]>(0))?, r.get::<_, Vec<u8>>(1)));
                }
            }
            Ok(out)
        })
    }

    fn exists_many(&self, objects: &[(Hash, ObjectKind)]) -> Result<Vec<bool>> {
        let hashes: Vec<Hash> = objects.iter().map(|(h, _)| *h).collect();
        let pc = self.client()?;
        pc.driver().block(async {
            let mut present = std::collections::HashSet::new();
            for chunk in hashes.chunks(1000) {
                let keys: Vec<&[u8]> = chunk.iter().map(|h| &h.0[..]).collect();
                for r in pc
                    .query("SELECT hash FROM objects WHERE hash = ANY($1)", &[&keys])
                    .await
                    .map_err(server)?
                {
                    present.insert(hash_of(r.get::<_, &[u8]>(0))?);
                }
            }
            Ok(hashes.iter().map(|h| present.contains(h)).collect())
        })
    }

    fn delete_unreferenced(
        &self,
        written_before: i64,
        referenced: &dyn Fn(&Hash) -> bool,
    ) -> Result<(u64, u64)> {
        let pc = self.client()?;
        pc.driver().block(async {
            let rows = pc
                .query(
                    "SELECT hash FROM objects WHERE created < $1",
                    &[&written_before],
                )
                .await
                .map_err(server)?;
            let mut doomed: Vec<Vec<u8>> = Vec::new();
            for r in rows {
                let h: Vec<u8> = r.get(0);
                if let Ok(hash) = hash_of(&h)
                    && !referenced(&hash)
                {
                    doomed.push(h);
                }
            }
            let (mut objects, mut bytes) = (0u64, 0u64);
            for chunk in doomed.chunks(1000) {
                let keys: Vec<&[u8]> = chunk.iter().map(|h| h.as_slice()).collect();
                // The time test again: an object put again since the listing is live.
                for r in pc
                    .query(
                        "DELETE FROM objects WHERE hash = ANY($1) AND created < $2
                         RETURNING length(data)",
                        &[&keys, &written_before],
                    )
                    .await
                    .map_err(server)?
                {
                    objects += 1;
                    bytes += r.get::<_, i32>(0) as u64;
                }
            }
            Ok((objects, bytes))
        })
    }

    fn remove(&self, hashes: &[Hash]) -> Result<()> {
        let pc = self.client()?;
        pc.driver().block(async {
            for chunk in hashes.chunks(1000) {
                let keys: Vec<&[u8]> = chunk.iter().map(|h| &h.0[..]).collect();
                pc.execute("DELETE FROM objects WHERE hash = ANY($1)", &[&keys])
                    .await
                    .map_err(server)?;
            }
            Ok(())
        })
    }

    fn list(&self) -> Result<Vec<(Hash, ObjectKind)>> {
        let pc = self.client()?;
        pc.driver().block(async {
            let rows = pc
                .query("SELECT hash, kind FROM objects", &[])
                .await
                .map_err(server)?;
            rows.iter()
                .map(|r| {
                    let kind = if r.get::<_, i16>(1) == kind_code(ObjectKind::Node) {
                        ObjectKind::Node
                    } else {
                        ObjectKind::Page
                    };
                    Ok((hash_of(r.get::<_, &[u8]>(0))?, kind))
                })
                .collect()
        })
    }

    fn list_kind(&self, kind: ObjectKind, limit: usize) -> Result<Vec<Hash>> {
        // The kind as a literal, so the planner can prove the pages' partial index
        // (`index_kind`) applies, whatever plan it caches.
        let sql = format!(
            "SELECT hash FROM objects WHERE kind = {} LIMIT $1",
            kind_code(kind)
        );
        let pc = self.client()?;
        let limit = limit as i64;
        pc.driver().block(async {
            pc.query(&sql, &[&limit])
                .await
                .map_err(server)?
                .iter()
                .map(|r| hash_of(r.get::<_, &[u8]>(0)))
                .collect()
        })
    }

    /// The pages' partial index, which offloading reads by (the catalog's objects are mostly
    /// tree nodes; without it each batch read the table until it found its pages). Built
    /// with `CREATE INDEX CONCURRENTLY`, which does not block commits but waits for the
    /// transactions open when it starts; one left invalid by a build that was interrupted
    /// is dropped and built again, and one being built by another process is left to it
    /// (offloading then reads the table meanwhile). Only a store that offloads has it: on
    /// one that keeps its pages in the database for good, it would be every page's.
    fn index_kind(&self, kind: ObjectKind) -> Result<()> {
        use std::sync::atomic::Ordering;
        if kind != ObjectKind::Page || self.pages_indexed.load(Ordering::Relaxed) {
            return Ok(());
        }
        let pc = self.client()?;
        let built = pc.driver().block(async {
            let valid: Option<bool> = pc
                .query_one(
                    "SELECT (SELECT indisvalid FROM pg_index
                             WHERE indexrelid = to_regclass('objects_pages'))",
                    &[],
                )
                .await
                .map_err(server)?
                .get(0);
            match valid {
                Some(true) => return Ok(true),
                Some(false) => {
                    // Invalid: being built, or left by a build that was interrupted. (A
                    // server without the progress view is taken to be building it.)
                    let building = pc
                        .query_one(
                            "SELECT EXISTS (SELECT 1 FROM pg_stat_progress_create_index
                                            WHERE index_relid = to_regclass('objects_pages'))",
                            &[],
                        )
                        .await
                        .map_or(true, |r| r.get(0));
                    if building {
                        return Ok(false);
                    }
                    pc.batch_execute("DROP INDEX CONCURRENTLY IF EXISTS objects_pages")
                        .await
                        .map_err(server)?;
                }
                None => {}
            }
            tracing::info!("building the index of the catalog's pages (objects_pages), once");
            pc.batch_execute(&format!(
                "CREATE INDEX CONCURRENTLY IF NOT EXISTS objects_pages ON objects (hash) \
                 WHERE kind = {}",
                kind_code(ObjectKind::Page)
            ))
            .await
            .map_err(server)?;
            Ok(true)
        })?;
        self.pages_indexed.store(built, Ordering::Relaxed);
        Ok(())
    }

    fn totals(&self) -> Result<(u64, u64, u64)> {
        let pc = self.client()?;
        pc.driver().block(async {
            let r = pc
                .query_one(
                    "SELECT count(*),
                            coalesce(sum(CASE WHEN kind = 0 THEN length(data) END), 0)::bigint,
                            coalesce(sum(CASE WHEN kind = 1 THEN length(data) END), 0)::bigint
                     FROM objects",
                    &[],
                )
                .await
                .map_err(server)?;
            Ok((
                r.get::<_, i64>(0) as u64,
                r.get::<_, i64>(1) as u64,
                r.get::<_, i64>(2) as u64,
            ))
        })
    }
}

/// Entries per statement: a few hundred KB of parameters.
const PACKED_BATCH: usize = 4096;

fn kind_of(code: i16) -> ObjectKind {
    if code == kind_code(ObjectKind::Node) {
        ObjectKind::Node
    } else {
        ObjectKind::Page
    }
}

fn to_packed(r: &Row) -> Result<PackedObject> {
    Ok(PackedObject {
        hash: hash_of(r.get::<_, &[u8]>(0))?,
        kind: kind_of(r.get(1)),
        pack: r.get(2),
        offset: r.get::<_, i64>(3) as u64,
        len: r.get::<_, i32>(4) as u32,
        created: r.get(5),
    })
}

impl PackIndex for Postgres {
    fn record_packed(&self, entries: &[PackedObject]) -> Result<()> {
        if entries.is_empty() {
            return Ok(());
        }
        let now = now_ns();
        let pc = self.client()?;
        pc.driver().block(pipelined(&pc, async {
            for chunk in entries.chunks(PACKED_BATCH) {
                let hashes: Vec<&[u8]> = chunk.iter().map(|e| &e.hash.0[..]).collect();
                let kinds: Vec<i16> = chunk.iter().map(|e| kind_code(e.kind)).collect();
                let packs: Vec<&str> = chunk.iter().map(|e| e.pack.as_str()).collect();
                let offsets: Vec<i64> = chunk.iter().map(|e| e.offset as i64).collect();
                let lens: Vec<i32> = chunk.iter().map(|e| e.len as i32).collect();
                pc.execute(
                    RECORD_PACKED,
                    &[&hashes, &kinds, &packs, &offsets, &lens, &now],
                )
                .await
                .map_err(server)?;
            }
            Ok(())
        }))
    }

    fn locate(&self, hashes: &[Hash]) -> Result<Vec<PackedObject>> {
        let pc = self.client()?;
        pc.driver()
            .block(for_hashes(&pc, &LOCATE, hashes, &[]))?
            .iter()
            .map(to_packed)
            .collect()
    }

    fn packed_after(&self, after: Option<&Hash>, limit: usize) -> Result<Vec<PackedObject>> {
        let pc = self.client()?;
        // Every hash sorts after the empty string.
        let after: &[u8] = after.map(|h| &h.0[..]).unwrap_or(&[]);
        let limit = limit as i64;
        pc.driver().block(async {
            pc.query(&PACKED_AFTER, &[&after, &limit])
                .await
                .map_err(server)?
                .iter()
                .map(to_packed)
                .collect()
        })
    }

    fn forget_packed(&self, hashes: &[Hash], written_before: i64) -> Result<Vec<u32>> {
        let pc = self.client()?;
        let sql = "DELETE FROM packed WHERE hash = ANY($1) AND created < $2 RETURNING len";
        let rows = pc
            .driver()
            .block(for_hashes(&pc, sql, hashes, &[&written_before]))?;
        Ok(rows.iter().map(|r| r.get::<_, i32>(0) as u32).collect())
    }
}

/// Runs `sql`, whose `$1` is an array of hashes and whose further parameters are `rest`,
/// over `hashes` a thousand at a time; returns every row.
async fn for_hashes(
    c: &impl Cached,
    sql: &str,
    hashes: &[Hash],
    rest: &[&(dyn tokio_postgres::types::ToSql + Sync)],
) -> Result<Vec<Row>> {
    let mut out = Vec::new();
    for chunk in hashes.chunks(1000) {
        let keys: Vec<&[u8]> = chunk.iter().map(|h| &h.0[..]).collect();
        let mut params: Vec<&(dyn tokio_postgres::types::ToSql + Sync)> = vec![&keys];
        params.extend_from_slice(rest);
        out.extend(c.query(sql, &params).await.map_err(server)?);
    }
    Ok(out)
}
