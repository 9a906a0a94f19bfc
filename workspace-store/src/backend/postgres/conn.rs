//! Pooled PostgreSQL connections, driven on the thread that uses them.
//!
//! tokio-postgres splits a connection into a `Client`, which queues requests, and a
//! `Connection`, the future that does the socket I/O. Spawned on a runtime, that future runs
//! on the runtime's thread, so every round trip crossed threads twice: the caller woke the
//! runtime's thread to send, and it woke the caller with the answer. Here the connection's
//! socket is a nonblocking std socket, and [`Driver::block`] polls the caller's future and
//! the connection in turn on the calling thread, sleeping in `poll(2)` on the socket when
//! both wait (after looking for the answer for up to 50 µs, which a local server often
//! beats): a round trip is a write, a poll and a read on one thread. (The synchronous
//! `postgres` crate does the same with a runtime per connection; this needs none, so it also
//! works on a thread that is inside an async runtime.)
//!
//! TLS, when the URL's `sslmode` and the server agree on it (see `tls`), is
//! tokio-postgres-rustls's stream over that same socket: a wait still sleeps on the socket,
//! since the TLS stream reports nothing to read only once it has handed over everything it
//! decrypted.
//!
//! A URL with several hosts is tried host by host, as libpq does, skipping one whose
//! sessions are not what `target_session_attrs` asks for ([`Driver::connect`]): after a
//! failover, the next new connection finds the promoted server.
//!
//! A connection is only driven while a call uses it. A pooled one is polled once, without
//! waiting, when it is taken from the pool, so one the server closed (a restart) is seen
//! and replaced before a query is sent on it; and once more after each call, so that what
//! the call queued without waiting for an answer (a dropped transaction's `ROLLBACK`) is
//! sent at once rather than when the connection is next used, and no lock stays held.
//!
//! A statement whose answer the caller does not need at once (a read call's event) can be
//! sent without waiting for it ([`Pooled::defer`]): the connection keeps it, and every later
//! use of the connection reads its answer on the way, since the server answers in order.
//! A call's reads ([`Pool::get_read`]) go to a connection with nothing outstanding, so a call
//! made right after another does not queue behind the last one's event on the server (a
//! process making calls back to back ends up with two connections taking turns); anything
//! else ([`Pool::get`]) first reads the answers outstanding on the other idle connections,
//! so what it sends is ordered after them.

use std::collections::HashMap;
use std::future::Future;
use std::io::{self, Read, Write};
use std::pin::{Pin, pin};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::task::{Context, Poll, Wake, Waker};
use std::time::Duration;

use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};
use tokio_postgres::config::{Host, SslMode, TargetSessionAttrs};
use tokio_postgres::tls::{MakeTlsConnect, TlsConnect};
use tokio_postgres::types::ToSql;
use tokio_postgres::{
    Client, Config, Connection, GenericClient, Row, SimpleQueryMessage, Statement, Transaction,
};
use tokio_postgres_rustls::MakeRustlsConnect;

use super::{pooler, server};
use crate::error::{Error, Result};

/// The server's socket, nonblocking: reads and writes that would block return `Pending`
/// and leave the waiting to [`Driver::block`].
pub(super) struct Socket {
    stream: Stream,
    /// Set when a write would have blocked, so the wait includes `POLLOUT`.
    want_write: Arc<AtomicBool>,
}

enum Stream {
    Tcp(std::net::TcpStream),
    Unix(std::os::unix::net::UnixStream),
}

impl Stream {
    fn io(&mut self) -> &mut dyn ReadWrite {
        match self {
            Stream::Tcp(s) => s,
            Stream::Unix(s) => s,
        }
    }
}

trait ReadWrite: Read + Write {}
impl<T: Read + Write> ReadWrite for T {}

/// Retries an interrupted call, and turns "would block" into `Pending`.
fn nonblocking<T>(mut op: impl FnMut() -> io::Result<T>) -> Poll<io::Result<T>> {
    loop {
        return match op() {
            Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
            Err(e) if e.kind() == io::ErrorKind::WouldBlock => Poll::Pending,
            r => Poll::Ready(r),
        };
    }
}

impl AsyncRead for Socket {
    fn poll_read(
        self: Pin<&mut Self>,
        _: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<io::Result<()>> {
        let this = self.get_mut();
        let n = std::task::ready!(nonblocking(|| this
            .stream
            .io()
            .read(buf.initialize_unfilled())))?;
        buf.advance(n);
        Poll::Ready(Ok(()))
    }
}

impl AsyncWrite for Socket {
    fn poll_write(
        self: Pin<&mut Self>,
        _: &mut Context<'_>,
        data: &[u8],
    ) -> Poll<io::Result<usize>> {
        let this = self.get_mut();
        let r = nonblocking(|| this.stream.io().write(data));
        if r.is_pending() {
            this.want_write.store(true, Ordering::Relaxed);
        }
        r
    }

    fn poll_flush(self: Pin<&mut Self>, _: &mut Context<'_>) -> Poll<io::Result<()>> {
        // Nothing is buffered between the codec and the kernel.
        Poll::Ready(Ok(()))
    }

    fn poll_shutdown(self: Pin<&mut Self>, _: &mut Context<'_>) -> Poll<io::Result<()>> {
        let r = match &self.stream {
            Stream::Tcp(s) => s.shutdown(std::net::Shutdown::Write),
            Stream::Unix(s) => s.shutdown(std::net::Shutdown::Write),
        };
        Poll::Ready(r)
    }
}

/// The port of `config`'s host `i`: one port for all hosts, or one per host (libpq's rule);
/// 5432 when none is given.
fn port_of(config: &Config, i: usize) -> u16 {
    match config.get_ports() {
        [] => 5432,
        [p] => *p,
        ps => ps.get(i).copied().unwrap_or(5432),
    }
}

/// How `config`'s host `i` is named in errors: `name:port`, or the socket's path.
fn host_label(config: &Config, i: usize) -> String {
    let port = port_of(config, i);
    match config.get_hosts().get(i) {
        Some(Host::Tcp(name)) => format!("{name}:{port}"),
        Some(Host::Unix(dir)) => dir.join(format!(".s.PGSQL.{port}")).display().to_string(),
        None => "no host".to_string(),
    }
}

/// Opens a socket to `config`'s host `i`; with the name it was given by (what a TLS
/// certificate must name), `None` for a Unix socket.
fn open_socket(config: &Config, i: usize) -> io::Result<(Stream, Option<String>)> {
    let port = port_of(config, i);
    match config.get_hosts().get(i) {
        Some(Host::Tcp(name)) => open_tcp(config, i, name, port).map(|s| (s, Some(name.clone()))),
        Some(Host::Unix(dir)) => {
            std::os::unix::net::UnixStream::connect(dir.join(format!(".s.PGSQL.{port}")))
                .map(|s| (Stream::Unix(s), None))
        }
        None => Err(io::Error::new(
            io::ErrorKind::InvalidInput,
            "the URL names no host",
        )),
    }
}

fn open_tcp(config: &Config, i: usize, name: &str, port: u16) -> io::Result<Stream> {
    use std::net::{SocketAddr, ToSocketAddrs};
    // `hostaddr` names the address itself, so no lookup is made.
    let addrs: Vec<SocketAddr> = match config.get_hostaddrs().get(i) {
        Some(ip) => vec![SocketAddr::new(*ip, port)],
        None => (name, port).to_socket_addrs()?.collect(),
    };
    let mut last = io::Error::new(io::ErrorKind::NotFound, format!("{name} has no address"));
    for addr in addrs {
        let s = match config.get_connect_timeout() {
            Some(t) => std::net::TcpStream::connect_timeout(&addr, *t),
            None => std::net::TcpStream::connect(addr),
        };
        match s {
            Ok(s) => {
                // Queries are small and each waits for its answer: Nagle would hold them.
                s.set_nodelay(true)?;
                // As tokio-postgres does: a pooled connection to a peer that vanished
                // without a word is found out in time.
                if config.get_keepalives() {
                    rustix::net::sockopt::set_socket_keepalive(&s, true)?;
                    rustix::net::sockopt::set_tcp_keepidle(&s, config.get_keepalives_idle())?;
                }
                return Ok(Stream::Tcp(s));
            }
            Err(e) => last = e,
        }
    }
    Err(last)
}

/// Sleeps until the socket can be read (or written, when a write would have blocked).
struct Waiter {
    /// A duplicate of the socket's descriptor: the socket itself moves into the connection.
    fd: std::os::fd::OwnedFd,
    want_write: Arc<AtomicBool>,
}

impl Waiter {
    fn wait(&self) {
        use rustix::event::{PollFd, PollFlags, Timespec, poll};
        let mut flags = PollFlags::IN;
        if self.want_write.swap(false, Ordering::Relaxed) {
            flags |= PollFlags::OUT;
        }
        // A server on this machine answers a short query in a few tens of microseconds:
        // looking for the answer for that long before sleeping saves the wake-up (a
        // scheduler round of its own on a busy machine). Only with a core to spare, so the
        // looking never takes the core that the server needs to answer.
        if spare_core() {
            let zero = Timespec {
                tv_sec: 0,
                tv_nsec: 0,
            };
            let until = std::time::Instant::now() + SPIN;
            while std::time::Instant::now() < until {
                if poll(&mut [PollFd::new(&self.fd, flags)], Some(&zero)).unwrap_or(0) > 0 {
                    return;
                }
                // Yielding rather than spinning: a server process waiting for this core
                // runs first.
                std::thread::yield_now();
            }
        }
        let timeout = Timespec {
            tv_sec: 0,
            tv_nsec: WAIT.as_nanos() as _,
        };
        // An error (EINTR) or a timeout only means polling again.
        let _ = poll(&mut [PollFd::new(&self.fd, flags)], Some(&timeout));
    }

    /// Runs `f` to completion, calling `also` after each of its polls (to drive the
    /// connection; it returns false once there is no connection left to drive).
    fn run<T>(
        &self,
        f: impl Future<Output = T>,
        mut also: impl FnMut(&mut Context<'_>) -> bool,
    ) -> std::result::Result<T, Lost> {
        let signal = Arc::new(Signal(AtomicBool::new(false)));
        let waker = Waker::from(signal.clone());
        let mut cx = Context::from_waker(&waker);
        let mut f = pin!(f);
        loop {
            signal.0.store(false, Ordering::Release);
            if let Poll::Ready(out) = f.as_mut().poll(&mut cx) {
                return Ok(out);
            }
            let open = also(&mut cx);
            if signal.0.load(Ordering::Acquire) {
                continue;
            }
            if !open {
                // Nothing left that could wake the future.
                return Err(Lost);
            }
            self.wait();
        }
    }
}

/// The connection ended while a future still waited on it.
struct Lost;

fn lost() -> Error {
    Error::Server("the connection to PostgreSQL was lost".into())
}

/// How long a wait sleeps at most before polling again: only a wake from another thread,
/// which this code does not make, would need it.
const WAIT: Duration = Duration::from_millis(200);

/// How long a wait looks for the answer before it sleeps (see [`Waiter::wait`]).
const SPIN: Duration = Duration::from_micros(50);

/// Whether the machine has more than one core to run on.
fn spare_core() -> bool {
    static SPARE: std::sync::OnceLock<bool> = std::sync::OnceLock::new();
    *SPARE.get_or_init(|| std::thread::available_parallelism().is_ok_and(|n| n.get() > 1))
}

/// Wakes [`Waiter::run`]'s loop: a flag, since the waker runs on the same thread.
struct Signal(AtomicBool);

impl Wake for Signal {
    fn wake(self: Arc<Self>) {
        self.0.store(true, Ordering::Release);
    }
    fn wake_by_ref(self: &Arc<Self>) {
        self.0.store(true, Ordering::Release);
    }
}

/// The TLS session tokio-postgres-rustls makes on a socket (used only when the server and
/// `sslmode` agree on TLS; the connection is plain otherwise).
type Tls = <MakeRustlsConnect as MakeTlsConnect<Socket>>::TlsConnect;
type IoHalf = Pin<Box<Connection<Socket, <Tls as TlsConnect<Socket>>::Stream>>>;

/// Polls `connection` once; false once it has ended (and is dropped, which fails the
/// client's outstanding requests).
fn drive(connection: &mut Option<IoHalf>, cx: &mut Context<'_>) -> bool {
    let Some(c) = connection.as_mut() else {
        return false;
    };
    match c.as_mut().poll(cx) {
        Poll::Pending => true,
        Poll::Ready(r) => {
            if let Err(e) = r {
                tracing::warn!(error = %e, "postgres connection ended");
            }
            *connection = None;
            false
        }
    }
}

/// A statement sent without waiting for its answer (see [`Pooled::defer`]): it owns what it
/// needs (a handle on the client among it), so it can outlive the call that sent it.
pub(super) type Deferred =
    Pin<Box<dyn Future<Output = std::result::Result<u64, tokio_postgres::Error>> + Send>>;

/// Polls the deferred statements once, keeping those still waiting; one that failed is
/// logged (its caller has returned). When one ends, `cx` is woken: a future may be waiting
/// for the client to be no longer shared ([`Pooled::exclusive`]).
fn poll_deferred(deferred: &mut Vec<Deferred>, cx: &mut Context<'_>) {
    let before = deferred.len();
    deferred.retain_mut(|f| match f.as_mut().poll(cx) {
        Poll::Pending => true,
        Poll::Ready(Ok(_)) => false,
        Poll::Ready(Err(e)) => {
            tracing::warn!(error = %e, "a statement sent without waiting for its answer failed");
            false
        }
    });
    if deferred.len() < before {
        cx.waker().wake_by_ref();
    }
}

/// Statements a connection keeps sent without their answers read, at most.
const MAX_DEFERRED: usize = 64;

/// How long [`Driver::settle`] waits for those answers at most.
fn settle_deadline() -> std::time::Instant {
    std::time::Instant::now() + Duration::from_secs(10)
}

/// A connection's I/O half, polled by whoever uses the connection.
pub(super) struct Driver {
    /// `None` once it ended (the server closed it, or it failed).
    connection: Option<IoHalf>,
    waiter: Waiter,
    /// Statements sent whose answers are still to be read: their answers come before those of
    /// anything sent after them, so each later use of the connection reads them on the way.
    deferred: Vec<Deferred>,
}

impl Driver {
    /// Connects (with TLS when `config`'s `sslmode` and the server call for it) and
    /// authenticates, on the calling thread.
    ///
    /// With several hosts (`postgres://h1:p1,h2:p2/db`), as libpq: each in turn until one
    /// accepts the connection and, when the URL says `target_session_attrs=read-write` (or
    /// `read-only`), has sessions of that kind (`SHOW transaction_read_only`), so that after
    /// a failover a new connection finds the promoted server whichever host it is. The
    /// error names what each host answered.
    pub(super) fn connect(config: &Config, tls: &MakeRustlsConnect) -> Result<(Client, Driver)> {
        let hosts = config.get_hosts().len();
        if hosts <= 1 {
            return Driver::connect_to(config, tls, 0);
        }
        let mut failures = Vec::new();
        for i in 0..hosts {
            match Driver::connect_to(config, tls, i) {
                Ok(c) => return Ok(c),
                Err(Error::Server(why)) => {
                    failures.push(format!("{}: {why}", host_label(config, i)))
                }
                Err(e) => return Err(e),
            }
        }
        Err(Error::Server(format!(
            "no host of the store URL would do: {}",
            failures.join("; ")
        )))
    }

    /// [`Driver::connect`] to `config`'s host `i`.
    fn connect_to(config: &Config, tls: &MakeRustlsConnect, i: usize) -> Result<(Client, Driver)> {
        let io = |e: io::Error| Error::Server(format!("connecting: {e}"));
        let (stream, host) = open_socket(config, i).map_err(io)?;
        // As libpq: no TLS over a Unix socket, whatever `sslmode` says.
        let mut plain;
        let (config, host) = match host {
            Some(h) => (config, h),
            None => {
                plain = config.clone();
                plain.ssl_mode(SslMode::Disable);
                (&plain, "localhost".to_string())
            }
        };
        let tls: Tls = MakeTlsConnect::<Socket>::make_tls_connect(&mut tls.clone(), &host)
            .map_err(|e| Error::Server(format!("TLS to {host}: {e}")))?;
        let fd = match &stream {
            Stream::Tcp(s) => s
                .set_nonblocking(true)
                .and_then(|_| s.try_clone().map(Into::into)),
            Stream::Unix(s) => s
                .set_nonblocking(true)
                .and_then(|_| s.try_clone().map(Into::into)),
        }
        .map_err(io)?;
        let want_write = Arc::new(AtomicBool::new(false));
        let waiter = Waiter {
            fd,
            want_write: want_write.clone(),
        };
        let socket = Socket { stream, want_write };
        // The handshake reads and writes the socket itself: no connection to drive yet.
        let (client, connection) = waiter
            .run(config.connect_raw(socket, tls), |_| true)
            .unwrap_or_else(|Lost| unreachable!("the handshake does not wait on a connection"))
            .map_err(server)?;
        let mut driver = Driver {
            connection: Some(Box::pin(connection)),
            waiter,
            deferred: Vec::new(),
        };
        let want = config.get_target_session_attrs();
        if want != TargetSessionAttrs::Any {
            let read_only = driver.block(async {
                let rows = client
                    .simple_query("SHOW transaction_read_only")
                    .await
                    .map_err(server)?;
                Ok(rows.iter().any(|m| match m {
                    SimpleQueryMessage::Row(r) => r.get(0) == Some("on"),
                    _ => false,
                }))
            })?;
            if read_only && want == TargetSessionAttrs::ReadWrite {
                return Err(Error::Server(
                    "the server is read-only (a standby?) and the URL asks for \
                     target_session_attrs=read-write"
                        .into(),
                ));
            }
            if !read_only && want == TargetSessionAttrs::ReadOnly {
                return Err(Error::Server(
                    "the server accepts writes and the URL asks for target_session_attrs=read-only"
                        .into(),
                ));
            }
        }
        Ok((client, driver))
    }

    /// Whether the connection is still open, seen without waiting: it reads what the server
    /// sent meanwhile (a notice that it is shutting down, the end of the stream, the answers
    /// of deferred statements).
    pub(super) fn alive(&mut self) -> bool {
        let mut cx = Context::from_waker(Waker::noop());
        let open = drive(&mut self.connection, &mut cx);
        poll_deferred(&mut self.deferred, &mut cx);
        open
    }

    /// Whether statements sent without waiting still wait for their answers (as of the last
    /// poll).
    fn busy(&self) -> bool {
        !self.deferred.is_empty()
    }

    /// Runs `f`, a future of queries on this connection's client, to completion on the
    /// calling thread, driving the connection meanwhile.
    pub(super) fn block<T>(&mut self, f: impl Future<Output = Result<T>>) -> Result<T> {
        let Driver {
            connection,
            waiter,
            deferred,
        } = self;
        let out = waiter.run(f, |cx| {
            let open = drive(connection, cx);
            poll_deferred(deferred, cx);
            open
        });
        // Send what the future queued without waiting for its answer (a dropped
        // transaction's ROLLBACK), so that no lock stays held while the connection idles.
        drive(connection, &mut Context::from_waker(Waker::noop()));
        match out {
            Ok(r) => r,
            Err(Lost) => {
                deferred.clear();
                Err(lost())
            }
        }
    }

    /// Sends `f`'s statement now and leaves its answer to be read by a later use of the
    /// connection (or by [`Driver::settle`]).
    fn defer(&mut self, mut f: Deferred) {
        // A connection used for nothing else still reads its answers now and then.
        if self.deferred.len() >= MAX_DEFERRED {
            let _ = self.settle(settle_deadline());
        }
        let mut cx = Context::from_waker(Waker::noop());
        // The first poll queues the statement, the drive writes it to the socket (and reads
        // what has come in meanwhile).
        if f.as_mut().poll(&mut cx).is_pending() {
            self.deferred.push(f);
        }
        drive(&mut self.connection, &mut cx);
        poll_deferred(&mut self.deferred, &mut cx);
    }

    /// Reads the answers of the deferred statements, waiting for them until `deadline` at
    /// most (a server that vanished without a word must not hold up a process's exit).
    fn settle(&mut self, deadline: std::time::Instant) -> Result<()> {
        if self.deferred.is_empty() {
            return Ok(());
        }
        let done = std::cell::Cell::new(false);
        let Driver {
            connection,
            waiter,
            deferred,
        } = self;
        let out = waiter.run(
            // Polled again after each wait, which is [`WAIT`] at most.
            std::future::poll_fn(|_| {
                if done.get() {
                    Poll::Ready(Ok(()))
                } else if std::time::Instant::now() > deadline {
                    Poll::Ready(Err(Error::Server(
                        "PostgreSQL did not answer statements sent without waiting".into(),
                    )))
                } else {
                    Poll::Pending
                }
            }),
            |cx| {
                let open = drive(connection, cx);
                poll_deferred(deferred, cx);
                done.set(deferred.is_empty());
                open
            },
        );
        out.unwrap_or_else(|Lost| {
            deferred.clear();
            Err(lost())
        })
    }
}

/// Connections to one database, kept for reuse.
pub(super) struct Pool {
    config: Config,
    tls: MakeRustlsConnect,
    idle: Mutex<Vec<Conn>>,
    /// Whether statements are prepared (once per connection) or sent unnamed with their
    /// types: the URL's `prepared_statements` (see `pooler`), turned off for good when a
    /// server session loses one ([`pooler::lost_statement`]).
    prepare: Arc<AtomicBool>,
}

/// Idle connections kept at most.
const IDLE: usize = 8;

impl Pool {
    pub(super) fn new(config: Config, tls: MakeRustlsConnect, prepare: bool) -> Pool {
        Pool {
            config,
            tls,
            idle: Mutex::new(Vec::new()),
            prepare: Arc::new(AtomicBool::new(prepare)),
        }
    }

    /// Whether statements are prepared (see [`Pool::prepare`]).
    pub(super) fn prepares(&self) -> bool {
        self.prepare.load(Ordering::Relaxed)
    }

    /// A connection from the pool (a new one when the pool has none that is still open),
    /// back into the pool when dropped, once the statements that other idle connections sent
    /// without waiting have been answered: what is sent on it comes after them (a commit's
    /// event is numbered after the events of this process's calls before it).
    pub(super) fn get(&self) -> Result<Pooled<'_>> {
        let pc = self.take(false)?;
        self.settle_idle();
        Ok(pc)
    }

    /// A connection for a query that reads: one with no statement still waiting for its
    /// answer when there is one, so that the query is not answered after them. With only
    /// one idle connection and that one waiting (a process making calls one after another:
    /// the last call's event is still running on the server), a second is opened, and the
    /// two then take turns.
    pub(super) fn get_read(&self) -> Result<Pooled<'_>> {
        self.take(true)
    }

    fn take(&self, prefer_idle: bool) -> Result<Pooled<'_>> {
        let mut idle = self.idle.lock().unwrap_or_else(|p| p.into_inner());
        // The most recently used first; those still waiting for answers are at the bottom.
        let found = loop {
            let Some(top) = idle.len().checked_sub(1) else {
                break None;
            };
            if !idle[top].open() {
                idle.remove(top);
                continue;
            }
            if !prefer_idle || !idle[top].busy() {
                break Some(idle.remove(top));
            }
            // The top one waits: another that does not, else the oldest of two or more
            // waiting (the likeliest to be answered), else a new connection.
            if let Some(j) = idle[..top].iter().rposition(|c| c.open() && !c.busy()) {
                break Some(idle.remove(j));
            }
            if top == 0 {
                break None;
            }
            if idle[0].open() {
                break Some(idle.remove(0));
            }
            idle.remove(0);
        };
        drop(idle);
        let conn = match found {
            Some(c) => c,
            None => {
                let (client, driver) = Driver::connect(&self.config, &self.tls)?;
                Conn {
                    client: Arc::new(client),
                    statements: Statements {
                        prepared: Mutex::default(),
                        prepare: self.prepare.clone(),
                    },
                    driver: Drive(Arc::new(Mutex::new(driver))),
                }
            }
        };
        Ok(Pooled {
            pool: self,
            conn: Some(conn),
        })
    }

    /// Reads the answers of what idle connections sent without waiting ([`Pooled::defer`]),
    /// so that a query made after this sees what they wrote. A connection found lost is
    /// dropped.
    pub(super) fn settle_idle(&self) {
        let idle = {
            let mut idle = self.idle.lock().unwrap_or_else(|p| p.into_inner());
            // The usual case (every commit passes here): nothing outstanding, nothing to do.
            if !idle.iter().any(Conn::busy) {
                return;
            }
            std::mem::take(&mut *idle)
        };
        let deadline = settle_deadline();
        let kept: Vec<Conn> = idle
            .into_iter()
            .filter(|c| c.driver.lock().settle(deadline).is_ok())
            .collect();
        let mut pool = self.idle.lock().unwrap_or_else(|p| p.into_inner());
        for c in kept {
            if pool.len() < IDLE {
                pool.push(c);
            }
        }
    }
}

/// A connection: its client, the statements prepared on it, and its I/O half.
pub(super) struct Conn {
    /// Shared with the statements sent without waiting ([`Pooled::defer`]) until they are
    /// answered.
    pub(super) client: Arc<Client>,
    pub(super) statements: Statements,
    driver: Drive,
}

impl Conn {
    fn open(&self) -> bool {
        !self.client.is_closed() && self.driver.lock().alive()
    }

    fn busy(&self) -> bool {
        self.driver.lock().busy()
    }
}

/// A connection's [`Driver`], shared so that a call can drive it while its future borrows
/// the client.
#[derive(Clone)]
pub(super) struct Drive(Arc<Mutex<Driver>>);

impl Drive {
    fn lock(&self) -> std::sync::MutexGuard<'_, Driver> {
        self.0.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Runs `f` (queries on this connection) to completion on the calling thread.
    pub(super) fn block<T>(&self, f: impl Future<Output = Result<T>>) -> Result<T> {
        self.lock().block(f)
    }
}

/// Statements prepared on one connection, by their SQL text. A query through [`Cached`]
/// costs one round trip (bind and execute) instead of two (prepare, then bind and execute),
/// and the server parses and plans each text once per connection.
pub(super) struct Statements {
    prepared: Mutex<HashMap<String, Statement>>,
    /// The pool's [`Pool::prepare`].
    prepare: Arc<AtomicBool>,
}

impl Statements {
    /// More texts than the code has means texts are being built from values: start over
    /// rather than grow without bound.
    const MAX: usize = 256;

    fn get(&self, sql: &str) -> Option<Statement> {
        self.prepared
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .get(sql)
            .cloned()
    }

    fn put(&self, sql: &str, st: Statement) {
        let mut map = self.prepared.lock().unwrap_or_else(|p| p.into_inner());
        if map.len() >= Self::MAX {
            map.clear();
        }
        map.insert(sql.to_string(), st);
    }

    /// Whether statements are prepared, or sent unnamed with their parameters' types.
    pub(super) fn prepares(&self) -> bool {
        self.prepare.load(Ordering::Relaxed)
    }

    /// Notes a query's failure: one that says the server session lost a prepared statement
    /// turns preparing off for the whole pool (see `pooler`).
    fn failed(&self, e: &tokio_postgres::Error) {
        if pooler::lost_statement(e) && self.prepare.swap(false, Ordering::Relaxed) {
            tracing::warn!(
                error = %e,
                "PostgreSQL lost a prepared statement: a connection pooler in transaction mode? \
                 Statements are no longer prepared; add pool_mode=transaction to the store URL"
            );
        }
    }
}

/// One of [`Cached`]'s queries: the client's method of that name, run on the statement
/// prepared for `sql` on this connection, or its `_typed` twin, which sends `sql` as an
/// unnamed statement with the parameters' types, when statements are not prepared.
macro_rules! cached_query {
    ($name:ident, $typed:ident, $out:ty) => {
        async fn $name(
            &self,
            sql: &str,
            params: &[&(dyn ToSql + Sync)],
        ) -> std::result::Result<$out, tokio_postgres::Error> {
            let (c, cache) = self.parts();
            let out = if cache.prepares() {
                match self.statement(sql).await {
                    Ok(st) => c.$name(&st, params).await,
                    Err(e) => Err(e),
                }
            } else {
                c.$typed(sql, &pooler::typed(sql, params)).await
            };
            if let Err(e) = &out {
                cache.failed(e);
            }
            out
        }
    };
}

/// A connection or a transaction on it, querying through the connection's prepared
/// statements. The methods have the client's names and signatures, with SQL text only.
pub(super) trait Cached {
    type Client: GenericClient + Sync;

    fn parts(&self) -> (&Self::Client, &Statements);

    /// The statement prepared for `sql` on this connection (prepared now if it is not yet).
    async fn statement(&self, sql: &str) -> std::result::Result<Statement, tokio_postgres::Error> {
        let (c, cache) = self.parts();
        if let Some(st) = cache.get(sql) {
            return Ok(st);
        }
        match c.prepare(sql).await {
            Ok(st) => {
                cache.put(sql, st.clone());
                Ok(st)
            }
            Err(e) => {
                // Its name taken on the server session: another process's statement there.
                cache.failed(&e);
                Err(e)
            }
        }
    }

    /// Makes sure a query of `sql` goes out when first polled, with no round trip of its
    /// own ahead (preparing it now, when statements are prepared; an unnamed statement goes
    /// out at once anyway).
    async fn ready(&self, sql: &str) -> std::result::Result<(), tokio_postgres::Error> {
        if self.parts().1.prepares() {
            self.statement(sql).await?;
        }
        Ok(())
    }

    cached_query!(query, query_typed, Vec<Row>);
    cached_query!(query_opt, query_typed_opt, Option<Row>);
    cached_query!(query_one, query_typed_one, Row);
    cached_query!(execute, execute_typed, u64);
}

/// A pooled connection.
pub(super) struct Pooled<'a> {
    pool: &'a Pool,
    conn: Option<Conn>,
}

impl Pooled<'_> {
    /// The connection's driver: `pc.driver().block(async { ...pc... })`.
    pub(super) fn driver(&self) -> Drive {
        self.conn().driver.clone()
    }

    /// The client, to move into a statement sent with [`Pooled::defer`].
    pub(super) fn shared_client(&self) -> Arc<Client> {
        self.conn().client.clone()
    }

    /// Sends `f`'s statement (a future on [`Pooled::shared_client`]) without waiting for its
    /// answer: the connection's next use reads it on the way, as its answers come in order,
    /// and [`Pool::settle_idle`] waits for it. The statement must be prepared already, so
    /// that it goes out now; one that fails is logged.
    pub(super) fn defer(&self, f: Deferred) {
        self.conn().driver.lock().defer(f);
    }

    /// The client, to begin a transaction on, and the statements prepared on it: once the
    /// statements sent without waiting have been answered, which this waits for (inside
    /// [`Drive::block`], whose loop reads them).
    pub(super) async fn exclusive(&mut self) -> Result<(&mut Client, &Statements)> {
        let conn = self.conn_mut();
        std::future::poll_fn(|_| {
            if Arc::strong_count(&conn.client) == 1 {
                Poll::Ready(())
            } else {
                // Woken by the answer.
                Poll::Pending
            }
        })
        .await;
        let client = Arc::get_mut(&mut conn.client)
            .ok_or_else(|| Error::Server("a PostgreSQL connection is still shared".into()))?;
        Ok((client, &conn.statements))
    }

    fn conn(&self) -> &Conn {
        self.conn
            .as_ref()
            .expect("a pooled connection is present until drop")
    }

    pub(super) fn conn_mut(&mut self) -> &mut Conn {
        self.conn
            .as_mut()
            .expect("a pooled connection is present until drop")
    }
}

impl Cached for Pooled<'_> {
    type Client = Client;
    fn parts(&self) -> (&Client, &Statements) {
        let c = self.conn();
        (&c.client, &c.statements)
    }
}

impl std::ops::Deref for Pooled<'_> {
    type Target = Client;
    fn deref(&self) -> &Client {
        &self.conn().client
    }
}

impl Drop for Pooled<'_> {
    fn drop(&mut self) {
        // A thread that panics may leave a transaction open on it: closed, not pooled.
        if let Some(c) = self.conn.take()
            && !c.client.is_closed()
            && !std::thread::panicking()
        {
            let busy = c.busy();
            let mut pool = self.pool.idle.lock().unwrap_or_else(|p| p.into_inner());
            if pool.len() < IDLE {
                // One still waiting for answers goes to the bottom, to be taken last.
                if busy {
                    pool.insert(0, c);
                } else {
                    pool.push(c);
                }
            } else {
                drop(pool);
                // Not kept: what it sent without waiting is answered before it closes.
                let _ = c.driver.lock().settle(settle_deadline());
            }
        }
    }
}

/// A transaction on a pooled connection, querying through its prepared statements.
pub(super) struct Tx<'a> {
    pub(super) tx: Transaction<'a>,
    pub(super) statements: &'a Statements,
}

impl<'a> Tx<'a> {
    /// Begins a transaction (without the writer lock: see `begin_write`).
    pub(super) async fn begin(pc: &'a mut Pooled<'_>) -> Result<Tx<'a>> {
        let (client, statements) = pc.exclusive().await?;
        let tx = client.transaction().await.map_err(server)?;
        Ok(Tx { tx, statements })
    }
}

impl<'a> Cached for Tx<'a> {
    type Client = Transaction<'a>;
    fn parts(&self) -> (&Transaction<'a>, &Statements) {
        (&self.tx, self.statements)
    }
}

impl<'a> std::ops::Deref for Tx<'a> {
    type Target = Transaction<'a>;
    fn deref(&self) -> &Transaction<'a> {
        &self.tx
    }
}
