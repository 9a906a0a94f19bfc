//! Deterministic calls (a session created with `--deterministic`): what a call's programs
//! would otherwise take from the world comes from values recorded in the call's event, so
//! the call can be run again (`burrow replay`) and give the same output and the same tree.
//!
//! - **Clocks.** Each run's wall clock starts at the call's recorded start time and its
//!   monotonic clock at one second; every reading advances the clock that was read by
//!   [`CLOCK_STEP`]. Time passes only as it is read: a `sleep` still waits, but the clocks do
//!   not see the wait.
//! - **Random numbers.** `wasi:random` (secure and insecure, and the insecure seed),
//!   `/dev/urandom` and the host's own random names (the agent_toolset's saved outputs) come
//!   from generators seeded by the call's seed and the run's place in the call: the n-th run
//!   the call started, the n-th program a run started. Never by timing, so programs running
//!   on threads of their own (streaming stages) draw the same numbers every time.
//! - **The tree.** Everything the call changes is stamped with the call's start time
//!   ([`burrow_store::Txn::set_time`]), so its tree hashes the same on replay.
//! - **The network.** The call's replies (status, headers and body, or how the request
//!   failed) are recorded in its event in the order the requests were made, and a replay
//!   answers the same requests from there without reaching the network. Bodies and headers
//!   are recorded as the guest saw them, after the egress layer put secrets' placeholders
//!   back where a server echoed a value, so a secret's value is never recorded; a request is
//!   named by a hash of its method and URL, never the URL in clear.
//! - **The environment** the call ran with is recorded, and a replay runs with it.
//!
//! A [`Determinism`] travels in the call's [`crate::Limits`]: every run of the call (and the
//! programs they start) shares its tape of replies.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use rand::SeedableRng as _;
use serde::{Deserialize, Serialize};

/// How far a deterministic clock moves each time it is read.
pub const CLOCK_STEP: Duration = Duration::from_millis(1);

/// The largest response body a deterministic call records; a larger one is answered to the
/// guest as usual but recorded as not replayable.
pub const MAX_RECORDED_BODY: usize = 4 << 20;

/// A generator shared by the streams that draw from it (`/dev/urandom` of one run).
pub(crate) type SharedRng = Arc<Mutex<rand::rngs::StdRng>>;

/// A deterministic call: its seed, its clock, its environment and its tape of network
/// replies (being recorded, or being replayed). Clones share the tape.
#[derive(Clone)]
pub struct Determinism {
    call: Arc<Call>,
    /// The seed of the run these limits are for, when its caller chose it (a nested run).
    run: Option<u64>,
}

struct Call {
    seed: u64,
    clock_ns: i64,
    env: Vec<(String, String)>,
    /// The inode number the call's first new file gets (recorded when the call begins).
    ino: Mutex<Option<u64>>,
    /// Runs the call itself started so far (each gets the next seed).
    runs: AtomicU64,
    /// The host's own draws (names the tool families make up).
    host: Mutex<rand::rngs::StdRng>,
    tape: Mutex<Tape>,
}

struct Tape {
    replaying: bool,
    replies: Vec<Reply>,
    next: usize,
}

/// What a deterministic call recorded: the values its event keeps (`"deterministic"`) and
/// a replay starts from.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Recording {
    /// The call's seed, 16 hex digits.
    pub seed: String,
    /// The call's start time, in nanoseconds since the Unix epoch.
    pub clock: i64,
    /// The environment the call's programs saw (secrets as their placeholders).
    #[serde(default)]
    pub env: Vec<(String, String)>,
    /// The inode number the call's first new file got.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ino: Option<u64>,
    /// The replies to the call's network requests, in the order they were made.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub net: Vec<Reply>,
}

/// One network reply of a deterministic call.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Reply {
    /// blake3 of the request's method and URL (as the guest wrote it), hex.
    pub request: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub status: Option<u16>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub headers: Vec<(String, String)>,
    /// The body, base64.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub body: Option<String>,
    /// How the request failed (a `wasi:http` error code's name) and why.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error: Option<(String, String)>,
    /// The body was larger than [`MAX_RECORDED_BODY`]: the reply cannot be replayed.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub too_large: bool,
}

/// The name a request has on the tape.
pub(crate) fn request_key(method: &str, uri: &str) -> String {
    blake3::hash(format!("{method} {uri}").as_bytes())
        .to_hex()
        .to_string()
}

/// A seed for the `n`-th thing of kind `tag` under `seed`.
fn mix(seed: u64, tag: &str, n: u64) -> u64 {
    let mut h = blake3::Hasher::new();
    h.update(&seed.to_le_bytes());
    h.update(tag.as_bytes());
    h.update(&n.to_le_bytes());
    let b = h.finalize();
    let mut out = [0u8; 8];
    out.copy_from_slice(&b.as_bytes()[..8]);
    u64::from_le_bytes(out)
}

impl Determinism {
    /// A new deterministic call: a random seed, the clock's time now, `env`.
    pub fn record(env: Vec<(String, String)>) -> Determinism {
        let mut b = [0u8; 8];
        // A seed the operating system could not give is still a seed: the call is recorded
        // with it and replays the same.
        let _ = getrandom::fill(&mut b);
        let clock = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |d| i64::try_from(d.as_nanos()).unwrap_or(i64::MAX));
        Determinism::new(u64::from_le_bytes(b), clock, env, None, Vec::new(), false)
    }

    /// The call `recording` describes, to run again: its replies are answered from the tape.
    pub fn replay(recording: &Recording) -> Result<Determinism, String> {
        let seed = u64::from_str_radix(&recording.seed, 16)
            .map_err(|_| format!("bad recorded seed {:?}", recording.seed))?;
        Ok(Determinism::new(
            seed,
            recording.clock,
            recording.env.clone(),
            recording.ino,
            recording.net.clone(),
            true,
        ))
    }

    fn new(
        seed: u64,
        clock_ns: i64,
        env: Vec<(String, String)>,
        ino: Option<u64>,
        replies: Vec<Reply>,
        replaying: bool,
    ) -> Determinism {
        Determinism {
            call: Arc::new(Call {
                seed,
                clock_ns,
                env,
                ino: Mutex::new(ino),
                runs: AtomicU64::new(0),
                host: Mutex::new(rand::rngs::StdRng::seed_from_u64(mix(seed, "host", 0))),
                tape: Mutex::new(Tape {
                    replaying,
                    replies,
                    next: 0,
                }),
            }),
            run: None,
        }
    }

    /// The call's start time (what its changes are stamped with).
    pub fn clock_ns(&self) -> i64 {
        self.call.clock_ns
    }

    /// The environment the call runs with.
    pub fn env(&self) -> &[(String, String)] {
        &self.call.env
    }

    /// What the call's event keeps.
    pub fn recording(&self) -> Recording {
        let tape = self.call.tape.lock().unwrap_or_else(|p| p.into_inner());
        Recording {
            seed: format!("{:016x}", self.call.seed),
            clock: self.call.clock_ns,
            env: self.call.env.clone(),
            ino: *self.call.ino.lock().unwrap_or_else(|p| p.into_inner()),
            net: tape.replies.clone(),
        }
    }

    /// The inode number the call's first new file gets: the recorded one (a replay), or
    /// `next` (the transaction's, recorded now).
    pub fn first_ino(&self, next: u64) -> u64 {
        *self
            .call
            .ino
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .get_or_insert(next)
    }

    /// Fills `buf` from the host's own generator of the call.
    pub fn fill(&self, buf: &mut [u8]) {
        use rand::Rng as _;
        self.call
            .host
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .fill_bytes(buf);
    }

    /// Whether the call's requests are answered from its tape.
    pub(crate) fn replaying(&self) -> bool {
        self.call
            .tape
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .replaying
    }

    /// Records the reply to a request (a call being recorded).
    pub(crate) fn push_reply(&self, reply: Reply) {
        let mut tape = self.call.tape.lock().unwrap_or_else(|p| p.into_inner());
        if !tape.replaying {
            tape.replies.push(reply);
        }
    }

    /// The recorded reply to the next request, which must be `request`.
    pub(crate) fn next_reply(&self, request: &str) -> Result<Reply, String> {
        let mut tape = self.call.tape.lock().unwrap_or_else(|p| p.into_inner());
        let n = tape.next;
        let Some(r) = tape.replies.get(n).cloned() else {
            return Err(format!(
                "replay: request {} was not made when the call was recorded (it made {})",
                n + 1,
                tape.replies.len()
            ));
        };
        if r.request != request {
            return Err(format!(
                "replay: request {} is not the one the call made when it was recorded",
                n + 1
            ));
        }
        tape.next += 1;
        Ok(r)
    }

    /// The determinism of one run of the call: the run its caller chose a seed for, else the
    /// call's next run.
    pub(crate) fn for_run(&self) -> RunDeterminism {
        let seed = self.run.unwrap_or_else(|| {
            mix(
                self.call.seed,
                "run",
                self.call.runs.fetch_add(1, Ordering::SeqCst),
            )
        });
        RunDeterminism {
            call: self.clone(),
            seed,
            children: Arc::new(AtomicU64::new(0)),
        }
    }
}

impl std::fmt::Debug for Determinism {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Determinism")
            .field("seed", &format_args!("{:016x}", self.call.seed))
            .field("clock", &self.call.clock_ns)
            .field("run", &self.run)
            .finish()
    }
}

/// Two calls are alike when they have the same seed and clock.
impl PartialEq for Determinism {
    fn eq(&self, other: &Determinism) -> bool {
        self.call.seed == other.call.seed
            && self.call.clock_ns == other.call.clock_ns
            && self.run == other.run
    }
}

impl Eq for Determinism {}

/// One run's share of its call's determinism: the seed of its generators and clocks, and
/// the seeds of the programs it starts.
#[derive(Clone)]
pub(crate) struct RunDeterminism {
    call: Determinism,
    seed: u64,
    children: Arc<AtomicU64>,
}

impl RunDeterminism {
    /// The determinism of the next program this run starts.
    pub fn child(&self) -> Determinism {
        Determinism {
            call: self.call.call.clone(),
            run: Some(mix(
                self.seed,
                "child",
                self.children.fetch_add(1, Ordering::SeqCst),
            )),
        }
    }

    fn rng(&self, tag: &str) -> rand::rngs::StdRng {
        rand::rngs::StdRng::seed_from_u64(mix(self.seed, tag, 0))
    }

    /// Sets the run's clocks and generators.
    pub fn configure(&self, b: &mut wasmtime_wasi::WasiCtxBuilder) {
        b.wall_clock(WallClock {
            start: u64::try_from(self.call.call.clock_ns).unwrap_or(0),
            reads: AtomicU64::new(0),
        });
        b.monotonic_clock(MonotonicClock {
            reads: AtomicU64::new(0),
        });
        b.secure_random(self.rng("secure"));
        b.insecure_random(self.rng("insecure"));
        let seed = mix(self.seed, "insecure-seed", 0);
        b.insecure_random_seed((u128::from(seed) << 64) | u128::from(!seed));
    }

    /// The generator behind the run's `/dev/urandom`.
    pub fn dev_random(&self) -> SharedRng {
        Arc::new(Mutex::new(self.rng("dev")))
    }
}

fn step_ns() -> u64 {
    CLOCK_STEP.as_nanos() as u64
}

/// A wall clock that moves only when read.
struct WallClock {
    start: u64,
    reads: AtomicU64,
}

impl wasmtime_wasi::HostWallClock for WallClock {
    fn resolution(&self) -> Duration {
        CLOCK_STEP
    }

    fn now(&self) -> Duration {
        let n = self.reads.fetch_add(1, Ordering::SeqCst);
        Duration::from_nanos(self.start.saturating_add(n.saturating_mul(step_ns())))
    }
}

/// A monotonic clock that starts at one second and moves only when read.
struct MonotonicClock {
    reads: AtomicU64,
}

impl wasmtime_wasi::HostMonotonicClock for MonotonicClock {
    fn resolution(&self) -> u64 {
        step_ns()
    }

    fn now(&self) -> u64 {
        let n = self.reads.fetch_add(1, Ordering::SeqCst);
        1_000_000_000u64.saturating_add(n.saturating_mul(step_ns()))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn runs_and_children_draw_from_their_place_not_from_timing() {
        let a = Determinism::replay(&Recording {
            seed: "00000000000000ff".into(),
            clock: 5,
            env: vec![],
            ino: None,
            net: vec![],
        })
        .unwrap();
        let b = Determinism::replay(&a.recording()).unwrap();
        let (ra, rb) = (a.for_run(), b.for_run());
        assert_eq!(ra.seed, rb.seed);
        let (ca1, ca2) = (ra.child(), ra.child());
        assert_ne!(ca1.run, ca2.run);
        assert_eq!(ca1.run, rb.child().run);
        // The second run of a call differs from its first.
        assert_ne!(a.for_run().seed, ra.seed);
    }

    #[test]
    fn the_tape_answers_in_order_and_refuses_another_request() {
        let rec = Determinism::record(vec![]);
        rec.push_reply(Reply {
            request: request_key("GET", "http://a/"),
            status: Some(200),
            headers: vec![],
            body: None,
            error: None,
            too_large: false,
        });
        let again = Determinism::replay(&rec.recording()).unwrap();
        assert!(again.next_reply(&request_key("GET", "http://b/")).is_err());
        assert_eq!(
            again
                .next_reply(&request_key("GET", "http://a/"))
                .unwrap()
                .status,
            Some(200)
        );
        assert!(again.next_reply(&request_key("GET", "http://a/")).is_err());
    }
}
