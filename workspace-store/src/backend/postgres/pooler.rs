//! A connection pooler between burrow and PostgreSQL (PgBouncer, a hosted provider's pooler):
//! what the store URL says about it, and the one-shot statements burrow sends when it must
//! not keep prepared statements.
//!
//! burrow's own options, taken out of the URL before the rest goes to tokio-postgres:
//!
//! - `pool_mode=session|transaction` (PgBouncer's names for its modes). `session`, the
//!   default, is also a direct connection: a server session per pooled connection, so
//!   statements are prepared once per connection and the event listener `LISTEN`s.
//!   `transaction`: each transaction may run on another server session, so nothing may
//!   depend on a session outliving its transaction. Statements are then sent unprepared
//!   (unless `prepared_statements=on` says the pooler keeps them, as PgBouncer 1.21 and
//!   later do with `max_prepared_statements`), and `Catalog::watch` starts no listener
//!   (`LISTEN` needs a session of its own): event streams poll. `statement` is refused:
//!   burrow's writes are transactions of several statements.
//! - `prepared_statements=on|off`: whether statements are prepared (named, once per pooled
//!   connection) or each sent as an unnamed statement with its parameters' types, which
//!   costs the server a parse per statement and no extra round trip.
//!
//! Without either, a server that answers "prepared statement ... does not exist" (or
//! "already exists") is taken to be a pooler in transaction mode: the process stops
//! preparing statements from then on, and the call that met it fails with an error that
//! names `pool_mode=transaction` (see [`lost_statement`]).
//!
//! Everything else burrow sets is transaction-local (`set_config(..., true)`), and it takes
//! no advisory locks and makes no temporary tables, so nothing else depends on a session.

use std::collections::HashMap;
use std::sync::Mutex;

use tokio_postgres::error::SqlState;
use tokio_postgres::types::{ToSql, Type};

use crate::error::{Error, Result};

/// What the store URL says about a pooler in front of the database.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Pooler {
    /// `pool_mode=transaction`: no session outlives a transaction.
    pub transaction: bool,
    /// Whether statements are prepared and kept per connection.
    pub prepared: bool,
}

impl Default for Pooler {
    fn default() -> Pooler {
        Pooler {
            transaction: false,
            prepared: true,
        }
    }
}

fn bad(what: impl std::fmt::Display) -> Error {
    Error::Config(format!("the store URL: {what}"))
}

/// Takes `pool_mode` and `prepared_statements` out of `url`'s query; returns the rest of the
/// URL and what they say.
pub(crate) fn split(url: &str) -> Result<(String, Pooler)> {
    let Some((base, query)) = url.split_once('?') else {
        return Ok((url.to_string(), Pooler::default()));
    };
    let mut transaction = None;
    let mut prepared = None;
    let mut rest = Vec::new();
    for pair in query.split('&').filter(|p| !p.is_empty()) {
        let (k, v) = pair.split_once('=').unwrap_or((pair, ""));
        match super::tls::decode(k)?.as_str() {
            "pool_mode" => {
                transaction = Some(match super::tls::decode(v)?.as_str() {
                    "session" => false,
                    "transaction" => true,
                    "statement" => {
                        return Err(bad(
                            "pool_mode=statement is not supported: burrow's writes are \
                             transactions of several statements (use transaction)",
                        ));
                    }
                    other => {
                        return Err(bad(format!(
                            "invalid pool_mode value: \"{other}\" (session or transaction)"
                        )));
                    }
                })
            }
            "prepared_statements" => {
                prepared = Some(match super::tls::decode(v)?.as_str() {
                    "on" | "true" | "1" => true,
                    "off" | "false" | "0" => false,
                    other => {
                        return Err(bad(format!(
                            "invalid prepared_statements value: \"{other}\" (on or off)"
                        )));
                    }
                })
            }
            _ => rest.push(pair),
        }
    }
    let transaction = transaction.unwrap_or(false);
    let pooler = Pooler {
        transaction,
        prepared: prepared.unwrap_or(!transaction),
    };
    let url = if rest.is_empty() {
        base.to_string()
    } else {
        format!("{base}?{}", rest.join("&"))
    };
    Ok((url, pooler))
}

/// Whether `e` says that a prepared statement this connection made is not on the server
/// session that got the statement (or that its name is taken there): what a pooler in
/// transaction mode does to prepared statements.
pub(super) fn lost_statement(e: &tokio_postgres::Error) -> bool {
    matches!(
        e.code(),
        Some(c) if *c == SqlState::INVALID_SQL_STATEMENT_NAME || *c == SqlState::DUPLICATE_PSTATEMENT
    )
}

/// What [`lost_statement`]'s error adds to the server's message.
pub(super) const LOST_STATEMENT_HINT: &str = "the server session lost a statement burrow \
     prepared: is the store URL a connection pooler in transaction mode? Add \
     pool_mode=transaction to the URL (this process no longer prepares statements)";

/// The types that parameters of burrow's statements have, tried in this order.
const TYPES: [Type; 11] = [
    Type::INT8,
    Type::TEXT,
    Type::BYTEA,
    Type::BOOL,
    Type::INT4,
    Type::INT2,
    Type::INT8_ARRAY,
    Type::TEXT_ARRAY,
    Type::BYTEA_ARRAY,
    Type::INT4_ARRAY,
    Type::INT2_ARRAY,
];

/// The PostgreSQL type of a parameter: the first of [`TYPES`] its Rust type encodes to
/// (`UNKNOWN`, which its encoding then refuses with tokio-postgres's own error, when none).
fn type_of(p: &(dyn ToSql + Sync)) -> Type {
    let mut buf = bytes::BytesMut::new();
    for t in TYPES {
        buf.clear();
        if p.to_sql_checked(&t, &mut buf).is_ok() {
            return t;
        }
    }
    Type::UNKNOWN
}

/// `params` with their types, for a statement sent unprepared (`query_typed`): found once
/// per statement text and kept (a probe encodes the value once), so later sends only look
/// them up.
pub(super) fn typed<'a>(
    sql: &str,
    params: &[&'a (dyn ToSql + Sync)],
) -> Vec<(&'a (dyn ToSql + Sync), Type)> {
    static KNOWN: Mutex<Option<HashMap<String, Vec<Type>>>> = Mutex::new(None);
    let types = {
        let known = KNOWN.lock().unwrap_or_else(|p| p.into_inner());
        known
            .as_ref()
            .and_then(|k| k.get(sql))
            .filter(|t| t.len() == params.len())
            .cloned()
    };
    let types = types.unwrap_or_else(|| {
        let types: Vec<Type> = params.iter().map(|p| type_of(*p)).collect();
        let mut known = KNOWN.lock().unwrap_or_else(|p| p.into_inner());
        let known = known.get_or_insert_with(HashMap::new);
        // Texts built from values would grow it without bound: start over instead.
        if known.len() >= 512 {
            known.clear();
        }
        known.insert(sql.to_string(), types.clone());
        types
    });
    params.iter().copied().zip(types).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pool_mode_and_prepared_statements_come_out_of_the_url() {
        let (url, p) = split("postgres://u@h/db").unwrap();
        assert_eq!((url.as_str(), p), ("postgres://u@h/db", Pooler::default()));
        let (url, p) = split("postgres://u@h/db?sslmode=disable&pool_mode=transaction").unwrap();
        assert_eq!(url, "postgres://u@h/db?sslmode=disable");
        assert!(p.transaction && !p.prepared);
        let (_, p) =
            split("postgres://u@h/db?pool_mode=transaction&prepared_statements=on").unwrap();
        assert!(p.transaction && p.prepared);
        let (url, p) =
            split("postgres://u@h/db?prepared_statements=off&application_name=x").unwrap();
        assert_eq!(url, "postgres://u@h/db?application_name=x");
        assert!(!p.transaction && !p.prepared);
        let (_, p) = split("postgres://u@h/db?pool_mode=session").unwrap();
        assert_eq!(p, Pooler::default());
        for wrong in [
            "postgres://h/db?pool_mode=statement",
            "postgres://h/db?pool_mode=tx",
            "postgres://h/db?prepared_statements=maybe",
        ] {
            assert!(matches!(split(wrong), Err(Error::Config(_))), "{wrong}");
        }
    }

    #[test]
    fn parameters_get_the_types_their_values_encode_to() {
        let (i, s, b, o): (i64, &str, &[u8], Option<i64>) = (1, "x", b"y", None);
        let (hashes, names): (Vec<&[u8]>, Vec<&str>) = (vec![b"h"], vec![]);
        let flag = true;
        let small: Vec<i16> = vec![1];
        let params: [&(dyn ToSql + Sync); 7] = [&i, &s, &b, &o, &hashes, &names, &flag];
        let types: Vec<Type> = typed("test 1", &params)
            .into_iter()
            .map(|(_, t)| t)
            .collect();
        assert_eq!(
            types,
            [
                Type::INT8,
                Type::TEXT,
                Type::BYTEA,
                Type::INT8,
                Type::BYTEA_ARRAY,
                Type::TEXT_ARRAY,
                Type::BOOL
            ]
        );
        assert_eq!(typed("test 2", &[&small])[0].1, Type::INT2_ARRAY);
    }
}
