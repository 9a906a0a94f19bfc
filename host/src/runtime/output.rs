//! Capture of a guest's stdout and stderr: each stream and their in-order merge keep their
//! last `capture` bytes (counting what was dropped), and the total written is held to the
//! run's output limit.

use std::collections::VecDeque;
use std::pin::Pin;
use std::sync::{Arc, Mutex};
use std::task::{Context, Poll};

use wasmtime_wasi::cli::{IsTerminal, StdoutStream};
use wasmtime_wasi_io::bytes::Bytes;
use wasmtime_wasi_io::streams::{OutputStream, StreamError, StreamResult};

/// A bounded tail of a byte stream.
#[derive(Debug, Default, Clone)]
pub struct Tail {
    buf: VecDeque<u8>,
    cap: usize,
    /// Bytes written but no longer kept.
    pub dropped: u64,
}

impl Tail {
    fn new(cap: usize) -> Tail {
        Tail {
            buf: VecDeque::new(),
            cap,
            dropped: 0,
        }
    }

    fn push(&mut self, bytes: &[u8]) {
        self.buf.extend(bytes);
        let excess = self.buf.len().saturating_sub(self.cap);
        if excess > 0 {
            self.buf.drain(..excess);
            self.dropped += excess as u64;
        }
    }

    /// The bytes kept.
    pub fn bytes(&self) -> Vec<u8> {
        self.buf.iter().copied().collect()
    }
}

struct Inner {
    streams: [Tail; 2],
    merged: Tail,
    total: u64,
    limit: u64,
    over: bool,
    /// Runs of (stream, bytes) in write order, when asked for (programs started by programs).
    order: Option<Vec<(u8, u32)>>,
}

/// Shared capture of one run's output.
#[derive(Clone)]
pub(crate) struct Capture(Arc<Mutex<Inner>>);

impl Capture {
    pub(crate) fn new(capture: usize, limit: u64) -> Capture {
        Capture(Arc::new(Mutex::new(Inner {
            streams: [Tail::new(capture), Tail::new(capture)],
            merged: Tail::new(capture),
            total: 0,
            limit,
            over: false,
            order: None,
        })))
    }

    /// Also records the order of writes between the two streams.
    pub(crate) fn keep_order(&self) {
        self.lock().order = Some(Vec::new());
    }

    /// Runs of (stream 1 or 2, bytes) in write order (empty unless `keep_order`).
    pub(crate) fn order(&self) -> Vec<(u8, u32)> {
        self.lock().order.clone().unwrap_or_default()
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Inner> {
        self.0.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// A pipe writing to stream 0 (stdout) or 1 (stderr).
    pub(crate) fn pipe(&self, which: usize) -> Pipe {
        Pipe {
            cap: self.clone(),
            which,
        }
    }

    /// Did the guest write more than the limit?
    pub(crate) fn over_limit(&self) -> bool {
        self.lock().over
    }

    /// (stdout, stderr, merged).
    pub(crate) fn take(&self) -> (Tail, Tail, Tail) {
        let g = self.lock();
        (g.streams[0].clone(), g.streams[1].clone(), g.merged.clone())
    }

    fn write(&self, which: usize, bytes: &[u8]) -> Result<(), ()> {
        let mut g = self.lock();
        g.total += bytes.len() as u64;
        if g.total > g.limit {
            g.over = true;
            return Err(());
        }
        g.streams[which].push(bytes);
        g.merged.push(bytes);
        if let Some(order) = &mut g.order {
            let fd = which as u8 + 1;
            let n = bytes.len() as u32;
            match order.last_mut() {
                Some((last, len)) if *last == fd => *len += n,
                _ => order.push((fd, n)),
            }
        }
        Ok(())
    }
}

/// One of the two output streams.
#[derive(Clone)]
pub(crate) struct Pipe {
    cap: Capture,
    which: usize,
}

#[wasmtime_wasi_io::async_trait]
impl wasmtime_wasi_io::poll::Pollable for Pipe {
    async fn ready(&mut self) {}
}

impl OutputStream for Pipe {
    fn write(&mut self, bytes: Bytes) -> StreamResult<()> {
        self.cap
            .write(self.which, &bytes)
            .map_err(|()| StreamError::trap("output limit exceeded"))
    }

    fn flush(&mut self) -> StreamResult<()> {
        Ok(())
    }

    fn check_write(&mut self) -> StreamResult<usize> {
        Ok(1 << 20)
    }
}

impl IsTerminal for Pipe {
    fn is_terminal(&self) -> bool {
        false
    }
}

impl StdoutStream for Pipe {
    fn async_stream(&self) -> Box<dyn tokio::io::AsyncWrite + Send + Sync> {
        Box::new(self.clone())
    }

    fn p2_stream(&self) -> Box<dyn OutputStream> {
        Box::new(self.clone())
    }
}

impl tokio::io::AsyncWrite for Pipe {
    fn poll_write(
        self: Pin<&mut Self>,
        _cx: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<std::io::Result<usize>> {
        Poll::Ready(
            self.cap
                .write(self.which, buf)
                .map(|()| buf.len())
                .map_err(|()| std::io::Error::other("output limit exceeded")),
        )
    }

    fn poll_flush(self: Pin<&mut Self>, _cx: &mut Context<'_>) -> Poll<std::io::Result<()>> {
        Poll::Ready(Ok(()))
    }

    fn poll_shutdown(self: Pin<&mut Self>, _cx: &mut Context<'_>) -> Poll<std::io::Result<()>> {
        Poll::Ready(Ok(()))
    }
}
