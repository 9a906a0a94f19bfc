//! The PostgreSQL backend as the [`Catalog`]: versions, heads, labels, commits, metadata,
//! the event log, GC's version deletion, settings, dump and restore; and the capabilities it
//! has beyond those ([`CatalogCapabilities`]): one round trip per call's first read, events
//! recorded behind the call, LISTEN/NOTIFY, its tables' size and durability.

use super::*;

impl Catalog for Postgres {
    fn version(&self, id: VersionId) -> Result<VersionRow> {
        let pc = self.reader()?;
        pc.driver().block(version(&pc, id))
    }

    fn versions(&self) -> Result<Vec<VersionRow>> {
        let pc = self.client()?;
        pc.driver().block(async {
            let rows = pc
                .query(
                    &format!("SELECT {VERSION_COLS} FROM versions ORDER BY id"),
                    &[],
                )
                .await
                .map_err(server)?;
            rows.iter().map(to_version).collect()
        })
    }

    fn head(&self, name: &str) -> Result<HeadRow> {
        let pc = self.reader()?;
        pc.driver().block(head(&pc, name))
    }

    fn heads(&self) -> Result<Vec<HeadRow>> {
        let pc = self.client()?;
        pc.driver().block(heads(&pc))
    }

    fn head_version(&self, name: &str) -> Result<(HeadRow, VersionRow)> {
        self.head_version_meta(name).map(|(h, v, _)| (h, v))
    }

    fn lineage(&self, name: &str, limit: usize) -> Result<Vec<VersionRow>> {
        let pc = self.client()?;
        pc.driver().block(async {
            let h = head(&pc, name).await?;
            let limit = i64::try_from(limit).unwrap_or(i64::MAX);
            let cols: Vec<String> = VERSION_COLS.split(", ").map(|c| format!("v.{c}")).collect();
            let rows = pc
                .query(
                    &format!(
                        "WITH RECURSIVE l(id, depth) AS (
                             SELECT $1::bigint, 0::bigint
                             UNION ALL
                             SELECT v.parent, l.depth + 1 FROM l JOIN versions v ON v.id = l.id
                             WHERE v.parent IS NOT NULL AND l.depth + 1 < $2
                         )
                         SELECT {} FROM l JOIN versions v ON v.id = l.id ORDER BY l.depth",
                        cols.join(", ")
                    ),
                    &[&h.version.0, &limit],
                )
                .await
                .map_err(server)?;
            // A collected version ends the lineage (the join finds no row for it).
            let mut out = Vec::new();
            let mut want = Some(h.version);
            for r in &rows {
                let v = to_version(r)?;
                if Some(v.id) != want || out.len() as i64 >= limit {
                    break;
                }
                want = v.parent;
                out.push(v);
            }
            Ok(out)
        })
    }

    fn labels(&self) -> Result<Vec<(String, VersionId)>> {
        let pc = self.client()?;
        pc.driver().block(labels(&pc))
    }

    fn version_count(&self, workspace: &str) -> Result<u64> {
        let pc = self.client()?;
        pc.driver().block(async {
            let r = pc
                .query_one(
                    "SELECT count(*) FROM versions WHERE workspace = $1",
                    &[&workspace],
                )
                .await
                .map_err(server)?;
            Ok(r.get::<_, i64>(0) as u64)
        })
    }

    fn version_counts(&self) -> Result<HashMap<String, u64>> {
        let pc = self.client()?;
        pc.driver().block(async {
            let rows = pc
                .query(
                    "SELECT workspace, count(*) FROM versions GROUP BY workspace",
                    &[],
                )
                .await
                .map_err(server)?;
            Ok(rows
                .iter()
                .map(|r| (r.get::<_, String>(0), r.get::<_, i64>(1) as u64))
                .collect())
        })
    }

    fn totals(&self) -> Result<(u64, u64)> {
        let pc = self.client()?;
        pc.driver().block(async {
            let r = pc
                .query_one(
                    "SELECT (SELECT count(*) FROM versions), (SELECT count(*) FROM heads)",
                    &[],
                )
                .await
                .map_err(server)?;
            Ok((r.get::<_, i64>(0) as u64, r.get::<_, i64>(1) as u64))
        })
    }

    fn create_workspace(
        &self,
        v: &NewVersion<'_>,
        objects: &[NewObject<'_>],
        guard: Option<Guard<'_>>,
    ) -> Result<VersionId> {
        let mut pc = self.client()?;
        pc.driver().block(async {
            let tx = begin_write(&mut pc).await?;
            check_guard(&tx, guard).await?;
            put_objects(&tx, objects).await?;
            let id = insert_version(&tx, v).await?;
            insert_head(&tx, v.workspace, id).await?;
            finish(tx, id).await
        })
    }

    fn create_head(&self, name: &str, v: VersionId) -> Result<()> {
        let mut pc = self.client()?;
        pc.driver().block(async {
            let tx = begin_write(&mut pc).await?;
            version(&tx, v).await?;
            insert_head(&tx, name, v).await?;
            finish(tx, ()).await
        })
    }

    fn fork(&self, source: &str, names: &[&str]) -> Result<VersionId> {
        // One statement, so one round trip and atomic by itself: a taken name fails the
        // whole insert. The source head is read as of the statement's start, so the fork
        // takes effect before any commit that was waiting for the writer lock with it.
        let pc = self.client()?;
        pc.driver().block(async {
            let names: Vec<&str> = names.to_vec();
            let r = pc
                .query_one(
                    "WITH w AS (SELECT 1 FROM burrow_meta WHERE key = 'writer' FOR UPDATE),
                          s AS (SELECT h.version, h.quota_bytes, h.quota_entries
                                FROM heads h, w WHERE h.name = $1),
                          i AS (INSERT INTO heads(name, version, created, quota_bytes,
                                                  quota_entries)
                                SELECT n, s.version, $3, s.quota_bytes, s.quota_entries
                                FROM s, unnest($2::text[]) AS n RETURNING name)
                     SELECT (SELECT version FROM s), (SELECT count(*) FROM i)",
                    &[&source, &names, &now_ns()],
                )
                .await;
            match r {
                Ok(row) => match row.get::<_, Option<i64>>(0) {
                    Some(v) => Ok(VersionId(v)),
                    None => Err(Error::NoWorkspace(source.to_string())),
                },
                Err(e) if unique_violation(&e) => {
                    // Which name: the first that is taken now (or repeated in `names`).
                    let taken = pc
                        .query("SELECT name FROM heads WHERE name = ANY($1)", &[&names])
                        .await
                        .map_err(server)?;
                    let taken: Vec<String> = taken.iter().map(|r| r.get(0)).collect();
                    let name = names
                        .iter()
                        .enumerate()
                        .find(|(i, n)| taken.iter().any(|t| t == *n) || names[..*i].contains(n))
                        .map(|(_, n)| n.to_string())
                        .unwrap_or_default();
                    Err(Error::WorkspaceExists(name))
                }
                Err(e) => Err(server(e)),
            }
        })
    }

    fn delete_head(&self, name: &str) -> Result<()> {
        // Events sent without waiting are in the table before it is read or cleared.
        self.pool.settle_idle();
        let mut pc = self.client()?;
        pc.driver().block(async {
            let tx = begin_write(&mut pc).await?;
            let n = tx
                .execute("DELETE FROM heads WHERE name = $1", &[&name])
                .await
                .map_err(server)?;
            if n == 0 {
                return Err(Error::NoWorkspace(name.to_string()));
            }
            tx.execute("DELETE FROM workspace_meta WHERE workspace = $1", &[&name])
                .await
                .map_err(server)?;
            finish(tx, ()).await
        })
    }

    fn set_quota(&self, name: &str, quota: Quota) -> Result<()> {
        let mut pc = self.client()?;
        pc.driver().block(async {
            let tx = begin_write(&mut pc).await?;
            set_quota(&tx, name, quota).await?;
            finish(tx, ()).await
        })
    }

    fn set_label(&self, name: &str, v: VersionId) -> Result<()> {
        let mut pc = self.client()?;
        pc.driver().block(async {
            let tx = begin_write(&mut pc).await?;
            version(&tx, v).await?;
            tx.execute(
                "INSERT INTO labels(name, version, created) VALUES ($1, $2, $3)
                 ON CONFLICT (name) DO UPDATE SET version = excluded.version",
                &[&name, &v.0, &now_ns()],
            )
            .await
            .map_err(server)?;
            finish(tx, ()).await
        })
    }

    fn delete_label(&self, name: &str) -> Result<()> {
        let mut pc = self.client()?;
        pc.driver().block(async {
            let tx = begin_write(&mut pc).await?;
            let n = tx
                .execute("DELETE FROM labels WHERE name = $1", &[&name])
                .await
                .map_err(server)?;
            if n == 0 {
                return Err(Error::NoLabel(name.to_string()));
            }
            finish(tx, ()).await
        })
    }

    fn commit(
        &self,
        record: &CommitRecord<'_>,
        objects: &[NewObject<'_>],
    ) -> Result<(VersionId, Option<i64>)> {
        // A tool call's commit waits for the WAL flush only with `Durability::Full` (see
        // [`Postgres::open`]).
        let relaxed = self.durability == Durability::Normal;
        let pc = self.client()?;
        let pc = &pc;
        if record.guard.is_none() && batches(objects).nth(1).is_none() {
            // No guard to check before committing, and the objects in one insert: one round
            // trip, `COMMIT` included. A head that moved leaves only the objects' rows,
            // which are garbage until something refers to them (GC's to collect).
            return pc.driver().block(async {
                for sql in [PUT_OBJECTS, COMMIT_STATEMENT] {
                    pc.ready(sql).await.map_err(server)?;
                }
                in_one_trip(pc, async {
                    let ((), out) = futures::future::try_join(
                        put_objects(pc, objects),
                        commit_statement(pc, record, relaxed),
                    )
                    .await?;
                    Ok(out)
                })
                .await
            });
        }
        // One round trip, then `COMMIT`: `BEGIN`; for a guarded commit the writer lock and
        // the guard's setting ([`fenced`]); the objects' inserts; and the commit's statement,
        // all sent without waiting between. A guard that no longer holds rolls back what
        // the statements after it did. On a connection's first guarded commit the guard's
        // statements are prepared first, so the commit's statement may go out before them;
        // that is still sound: it takes the writer lock itself, and the setting is read
        // after the lock either way.
        pc.driver().block(pipelined(pc, async {
            let guard = async {
                match record.guard {
                    Some(g) => fenced(pc, g).await,
                    None => Ok(false),
                }
            };
            let (fenced, (), out) = futures::future::try_join3(
                guard,
                put_objects(pc, objects),
                commit_statement(pc, record, relaxed),
            )
            .await?;
            if fenced {
                return Err(Error::Fenced);
            }
            Ok(out)
        }))
    }

    fn checkout(&self, workspace: &str, target: VersionId, message: &str) -> Result<VersionId> {
        let mut pc = self.client()?;
        pc.driver().block(async {
            let tx = begin_write(&mut pc).await?;
            let h = head(&tx, workspace).await?;
            let t = version(&tx, target).await?;
            let cur = version(&tx, h.version).await?;
            let v = insert_version(
                &tx,
                &NewVersion {
                    root: t.root,
                    parent: Some(h.version),
                    workspace,
                    message,
                    next_ino: cur.next_ino.max(t.next_ino),
                    bytes: t.bytes,
                    entries: t.entries,
                },
            )
            .await?;
            cas_head(&tx, workspace, h.version, v).await?;
            finish(tx, v).await
        })
    }

    fn set_meta(&self, workspace: &str, key: &str, value: Option<&str>) -> Result<()> {
        let mut pc = self.client()?;
        pc.driver().block(async {
            let tx = begin_write(&mut pc).await?;
            head(&tx, workspace).await?;
            let r = match value {
                Some(v) => {
                    tx.execute(
                        "INSERT INTO workspace_meta(workspace, key, value) VALUES ($1, $2, $3)
                         ON CONFLICT (workspace, key) DO UPDATE SET value = excluded.value",
                        &[&workspace, &key, &v],
                    )
                    .await
                }
                None => {
                    tx.execute(
                        "DELETE FROM workspace_meta WHERE workspace = $1 AND key = $2",
                        &[&workspace, &key],
                    )
                    .await
                }
            };
            match r {
                Ok(_) => finish(tx, ()).await,
                Err(e) if unique_violation(&e) => Err(Error::WorkspaceExists(
                    value.unwrap_or_default().to_string(),
                )),
                Err(e) => Err(server(e)),
            }
        })
    }

    fn meta(&self, workspace: &str) -> Result<BTreeMap<String, String>> {
        let pc = self.client()?;
        pc.driver().block(async {
            let rows = pc.query(META, &[&workspace]).await.map_err(server)?;
            Ok(rows.iter().map(|r| (r.get(0), r.get(1))).collect())
        })
    }

    fn find_by_meta(&self, key: &str, value: &str) -> Result<Option<String>> {
        let pc = self.client()?;
        pc.driver().block(async {
            let row = pc
                .query_opt(FIND_BY_META, &[&key, &value])
                .await
                .map_err(server)?;
            Ok(row.map(|r| r.get(0)))
        })
    }

    fn append_event(&self, e: &NewEvent<'_>) -> Result<i64> {
        let NewEvent {
            workspace,
            kind,
            before,
            after,
            data,
        } = *e;
        // One statement in a transaction of its own (one round trip, where a transaction
        // around four statements took six): the writer lock is taken before the event's
        // sequence number is drawn, since the insert reads the locked row, and is held to
        // the commit, so sequence numbers still follow commit order. `last_active` is set
        // after the insert, and the notification goes out at the commit.
        //
        // The event of a call that changed nothing (a read: the same version before and
        // after) does not wait for the server's WAL flush (`synchronous_commit` off for its
        // transaction alone, a tenth of a millisecond of a read call here): a crash of the
        // database server can lose the last such events, never a version or a session's
        // creation or deletion, and what it keeps stays consistent. This is the durability
        // of the SQLite store's WAL with `synchronous=NORMAL`, and `Durability::Full` turns
        // it off.
        let changed_nothing = self.relaxed_event(e);
        let pc = self.client()?;
        pc.driver().block(async {
            let row = pc
                .query_one(
                    APPEND_EVENT,
                    &[
                        &workspace,
                        &now_ns(),
                        &kind,
                        &before.map(|v| v.0),
                        &after.map(|v| v.0),
                        &data,
                        &EVENTS_CHANNEL,
                        &changed_nothing,
                    ],
                )
                .await
                .map_err(server)?;
            Ok(row.get(0))
        })
    }

    fn events(&self, filter: &EventFilter) -> Result<Vec<Event>> {
        // Events sent without waiting are in the table before it is read or cleared.
        self.pool.settle_idle();
        let pc = self.client()?;
        pc.driver().block(async {
            let limit = if filter.limit == 0 {
                i64::MAX
            } else {
                filter.limit as i64
            };
            let rows = pc
                .query(
                    "SELECT seq, workspace, time, kind, version_before, version_after, data
                     FROM events
                     WHERE seq > $1 AND ($2::text IS NULL OR workspace = $2)
                       AND ($3::text IS NULL OR kind = $3)
                     ORDER BY seq LIMIT $4",
                    &[&filter.after, &filter.workspace, &filter.kind, &limit],
                )
                .await
                .map_err(server)?;
            Ok(rows.iter().map(to_event).collect())
        })
    }

    fn delete_versions(&self, seen: &RefSnapshot, doomed: &[VersionId]) -> Result<bool> {
        // Events sent without waiting are in the table before it is read or cleared.
        self.pool.settle_idle();
        let mut pc = self.client()?;
        pc.driver().block(async {
            let tx = begin_write(&mut pc).await?;
            let now = RefSnapshot {
                heads: heads(&tx)
                    .await?
                    .into_iter()
                    .map(|h| (h.name, h.version))
                    .collect(),
                labels: labels(&tx).await?,
            };
            if &now != seen {
                return Ok(false);
            }
            let ids: Vec<i64> = doomed.iter().map(|v| v.0).collect();
            tx.execute("DELETE FROM versions WHERE id = ANY($1)", &[&ids])
                .await
                .map_err(server)?;
            finish(tx, true).await
        })
    }

    fn setting(&self, key: &str) -> Result<Option<String>> {
        let pc = self.client()?;
        pc.driver().block(setting(&pc, key))
    }

    fn swap_setting(&self, key: &str, expected: Option<&str>, new: Option<&str>) -> Result<bool> {
        let mut pc = self.client()?;
        pc.driver().block(async {
            // Under the writer lock, which serialises the swap with guarded writes.
            let tx = begin_write(&mut pc).await?;
            if setting(&tx, key).await?.as_deref() != expected {
                return Ok(false);
            }
            let key = format!("setting:{key}");
            match new {
                Some(v) => {
                    tx.execute(
                        "INSERT INTO burrow_meta(key, value) VALUES ($1, $2)
                         ON CONFLICT (key) DO UPDATE SET value = excluded.value",
                        &[&key, &v],
                    )
                    .await
                }
                None => {
                    tx.execute("DELETE FROM burrow_meta WHERE key = $1", &[&key])
                        .await
                }
            }
            .map_err(server)?;
            finish(tx, true).await
        })
    }

    fn dump(&self) -> Result<CatalogDump> {
        self.pool.settle_idle();
        let mut pc = self.client()?;
        pc.driver().block(async {
            let (client, statements) = pc.exclusive().await?;
            let tx = Tx {
                tx: client
                    .build_transaction()
                    .isolation_level(tokio_postgres::IsolationLevel::RepeatableRead)
                    .read_only(true)
                    .start()
                    .await
                    .map_err(server)?,
                statements,
            };
            let q = |sql: &'static str| tx.query(sql, &[]);
            let versions = q(
                "SELECT id, root, parent, workspace, time, message, next_ino, bytes, entries
                              FROM versions ORDER BY id",
            )
            .await
            .map_err(server)?
            .iter()
            .map(to_version)
            .collect::<Result<_>>()?;
            let heads = heads(&tx).await?;
            let labels = q("SELECT name, version, created FROM labels ORDER BY name")
                .await
                .map_err(server)?
                .iter()
                .map(|r| (r.get(0), VersionId(r.get(1)), r.get(2)))
                .collect();
            let meta =
                q("SELECT workspace, key, value FROM workspace_meta ORDER BY workspace, key")
                    .await
                    .map_err(server)?
                    .iter()
                    .map(|r| (r.get(0), r.get(1), r.get(2)))
                    .collect();
            let events = q(
                "SELECT seq, workspace, time, kind, version_before, version_after, data
                            FROM events ORDER BY seq",
            )
            .await
            .map_err(server)?
            .iter()
            .map(to_event)
            .collect();
            Ok(CatalogDump {
                versions,
                heads,
                labels,
                meta,
                events,
            })
        })
    }

    fn restore(&self, d: &CatalogDump) -> Result<()> {
        let mut pc = self.client()?;
        pc.driver().block(async {
            let tx = begin_write(&mut pc).await?;
            let n: i64 = tx
                .query_one(
                    "SELECT (SELECT count(*) FROM versions) + (SELECT count(*) FROM heads)",
                    &[],
                )
                .await
                .map_err(server)?
                .get(0);
            if n > 0 {
                return Err(Error::Invalid("the destination store is not empty"));
            }
            // Through the connection's statements, so prepared once (or sent unnamed behind
            // a pooler in transaction mode: nothing prepared here would outlive the
            // transaction there).
            let st = format!(
                "INSERT INTO versions({VERSION_COLS}) VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9)"
            );
            for v in &d.versions {
                tx.execute(
                        &st,
                        &[
                            &v.id.0,
                            &&v.root.0[..],
                            &v.parent.map(|p| p.0),
                            &v.workspace,
                            &v.time,
                            &v.message,
                            &(v.next_ino as i64),
                            &(v.bytes as i64),
                            &(v.entries as i64),
                        ],
                    )
                    .await
                    .map_err(server)?;
            }
            for h in &d.heads {
                tx.execute(
                    &format!("INSERT INTO heads({HEAD_COLS}) VALUES ($1, $2, $3, $4, $5, $6)"),
                    &[
                        &h.name,
                        &h.version.0,
                        &h.created,
                        &h.quota.bytes.map(|b| b as i64),
                        &h.quota.entries.map(|e| e as i64),
                        &h.last_active,
                    ],
                )
                .await
                .map_err(server)?;
            }
            for (name, v, created) in &d.labels {
                tx.execute(
                    "INSERT INTO labels(name, version, created) VALUES ($1, $2, $3)",
                    &[name, &v.0, created],
                )
                .await
                .map_err(server)?;
            }
            for (w, k, v) in &d.meta {
                tx.execute(
                    "INSERT INTO workspace_meta(workspace, key, value) VALUES ($1, $2, $3)",
                    &[w, k, v],
                )
                .await
                .map_err(server)?;
            }
            let st = "INSERT INTO events(seq, workspace, time, kind, version_before, version_after, data)
                     VALUES ($1, $2, $3, $4, $5, $6, $7)";
            for e in &d.events {
                tx.execute(
                        st,
                        &[
                            &e.seq,
                            &e.workspace,
                            &e.time,
                            &e.kind,
                            &e.version_before.map(|v| v.0),
                            &e.version_after.map(|v| v.0),
                            &e.data,
                        ],
                    )
                    .await
                    .map_err(server)?;
            }
            // New ids continue after the copied ones.
            tx.batch_execute(
                "SELECT setval('versions_id_seq', coalesce((SELECT max(id) FROM versions), 0) + 1, false);
                 SELECT setval('events_seq_seq', coalesce((SELECT max(seq) FROM events), 0) + 1, false);",
            )
            .await
            .map_err(server)?;
            finish(tx, ()).await
        })
    }
}

impl CatalogCapabilities for Postgres {
    fn head_version_meta(
        &self,
        name: &str,
    ) -> Result<(HeadRow, VersionRow, BTreeMap<String, String>)> {
        let pc = self.reader()?;
        pc.driver().block(async {
            let row = pc
                .query_opt(&HEAD_VERSION_META, &[&name])
                .await
                .map_err(server)?
                .ok_or_else(|| Error::NoWorkspace(name.to_string()))?;
            let h = to_head(&row);
            if row.get::<_, Option<i64>>(6).is_none() {
                return Err(Error::NoVersion(h.version));
            }
            let v = VersionRow {
                id: VersionId(row.get(6)),
                root: hash_of(row.get::<_, &[u8]>(7))?,
                parent: row.get::<_, Option<i64>>(8).map(VersionId),
                workspace: row.get(9),
                time: row.get(10),
                message: row.get(11),
                next_ino: row.get::<_, i64>(12) as u64,
                bytes: row.get::<_, i64>(13) as u64,
                entries: row.get::<_, i64>(14) as u64,
            };
            let keys: Vec<String> = row.get::<_, Option<Vec<String>>>(15).unwrap_or_default();
            let vals: Vec<String> = row.get::<_, Option<Vec<String>>>(16).unwrap_or_default();
            Ok((h, v, keys.into_iter().zip(vals).collect()))
        })
    }

    /// The event of a call that changed nothing (the same version before and after) is sent
    /// without waiting for its answer, with the durability [`Catalog::append_event`] gives it:
    /// the call's own round trip is then the head's query alone. The connection's next use
    /// reads the answer on the way (one of this process's calls that follows on the same
    /// connection is numbered after it), and reading the log, deleting a workspace, GC and
    /// dropping the store wait for every such answer first. Another process reading the log
    /// may see the event a fraction of a millisecond after the call returned; one that fails
    /// (the database gone) is logged rather than reported to the call. `Durability::Full`
    /// waits, as every other event does.
    fn record_event(&self, e: &NewEvent<'_>) -> Result<()> {
        let NewEvent {
            workspace,
            kind,
            before,
            after,
            data,
        } = *e;
        let changed_nothing = self.relaxed_event(e);
        if !changed_nothing {
            return self.append_event(e).map(|_| ());
        }
        let pc = self.client()?;
        // Prepared now (once per connection) so that the statement goes out at once; or,
        // when statements are not prepared, sent unnamed with its types.
        let st = match self.pool.prepares() {
            true => Some(
                pc.driver()
                    .block(async { pc.statement(APPEND_EVENT).await.map_err(server) })?,
            ),
            false => None,
        };
        let client = pc.shared_client();
        let (workspace, kind, data) = (workspace.to_string(), kind.to_string(), data.to_string());
        let (before, after, now) = (before.map(|v| v.0), after.map(|v| v.0), now_ns());
        pc.defer(Box::pin(async move {
            let params: [&(dyn tokio_postgres::types::ToSql + Sync); 8] = [
                &workspace,
                &now,
                &kind,
                &before,
                &after,
                &data,
                &EVENTS_CHANNEL,
                &true,
            ];
            match st {
                Some(st) => client.execute(&st, &params).await,
                None => {
                    client
                        .execute_typed(APPEND_EVENT, &pooler::typed(APPEND_EVENT, &params))
                        .await
                }
            }
        }));
        Ok(())
    }

    fn compact(&self) -> Result<()> {
        // VACUUM cannot run inside a transaction; autovacuum does this work anyway.
        let pc = self.client()?;
        pc.driver()
            .block(async { pc.batch_execute("VACUUM objects").await.map_err(server) })
    }

    fn catalog_bytes(&self) -> Result<Option<u64>> {
        let pc = self.client()?;
        pc.driver().block(async {
            let row = pc
                .query_one(
                    "SELECT sum(pg_total_relation_size(t))::BIGINT FROM unnest(ARRAY[
                        'versions', 'heads', 'labels', 'workspace_meta', 'events', 'burrow_meta'
                     ]::regclass[]) AS t",
                    &[],
                )
                .await
                .map_err(server)?;
            Ok(row.get::<_, Option<i64>>(0).map(|b| b as u64))
        })
    }

    fn flushes_writes(&self) -> Result<bool> {
        let pc = self.client()?;
        pc.driver().block(async {
            let row = pc
                .query_one("SELECT current_setting('synchronous_commit') <> 'off'", &[])
                .await
                .map_err(server)?;
            Ok(row.get(0))
        })
    }

    fn watch(&self, wake: std::sync::Arc<dyn Fn() + Send + Sync>) -> Result<bool> {
        use futures::StreamExt;
        // Behind a pooler in transaction mode, a LISTEN would last one transaction on some
        // server session: no listener, and event streams poll.
        if self.pooler.transaction {
            tracing::info!(
                "the store URL says pool_mode=transaction: no LISTEN for other processes' \
                 events, event streams poll (a session-mode or direct URL wakes them at once)"
            );
            return Ok(false);
        }
        let (config, tls) = (self.target.config.clone(), self.target.tls.clone());
        // A connection of its own that LISTENs, on the backend's runtime, reconnecting when
        // it is lost (a restarted server), with a wake after each (re)connect for what was
        // missed meanwhile.
        self.rt().spawn(async move {
            loop {
                if let Ok((client, mut conn)) = config.connect(tls.clone()).await {
                    let on_message = wake.clone();
                    let driver = tokio::spawn(async move {
                        let mut messages =
                            futures::stream::poll_fn(move |cx| conn.poll_message(cx));
                        while let Some(m) = messages.next().await {
                            match m {
                                Ok(tokio_postgres::AsyncMessage::Notification(_)) => on_message(),
                                Ok(_) => {}
                                Err(_) => break,
                            }
                        }
                    });
                    if client
                        .batch_execute(&format!("LISTEN {EVENTS_CHANNEL}"))
                        .await
                        .is_ok()
                    {
                        wake();
                    }
                    let _ = driver.await;
                    drop(client);
                }
                tokio::time::sleep(std::time::Duration::from_secs(1)).await;
            }
        });
        Ok(true)
    }
}
