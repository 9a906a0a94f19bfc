//! The computed parts of the guest's root filesystem: `/` and every directory above a mount
//! point (`/home` above `/home/agent`, `/opt/burrow` above the tool layer...), the devices of
//! `/dev` and the files of `/etc`. Read-only and never stored: nothing here is the session's
//! data, so the same tree is offered to every run. What lives below a mount point is the
//! mount's (the workspace, the system area, a host directory).

use std::sync::Arc;

use super::bindings::wasi::filesystem::types::{DescriptorStat, DescriptorType, DirectoryEntry};
use super::datetime;

/// A device of `/dev`, with its Linux behaviour.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Dev {
    /// Reads end at once, writes vanish.
    Null,
    /// Reads give zeros, writes vanish.
    Zero,
    /// Reads give random bytes (`/dev/random` and `/dev/urandom`), writes vanish.
    Random,
    /// The run's own streams: `/dev/stdin` (and `/dev/fd/0`) reads the run's standard
    /// input from its start; `/dev/stdout`, `/dev/stderr` (`/dev/fd/1`, `/dev/fd/2`) write to
    /// its output.
    Stdin,
    Stdout,
    Stderr,
    /// `/dev/burrow`: the host's control device (`control.rs`), each open a channel.
    Burrow,
}

/// A synthetic node.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Synth {
    /// The directory at this absolute guest path.
    Dir(String),
    /// A read-only file (its absolute path and contents).
    File(String, Arc<[u8]>),
    Dev(String, Dev),
}

impl Synth {
    pub(crate) fn path(&self) -> &str {
        match self {
            Synth::Dir(p) | Synth::File(p, _) | Synth::Dev(p, _) => p,
        }
    }

    pub(crate) fn kind(&self) -> DescriptorType {
        match self {
            Synth::Dir(_) => DescriptorType::Directory,
            Synth::File(..) => DescriptorType::RegularFile,
            Synth::Dev(..) => DescriptorType::CharacterDevice,
        }
    }

    pub(crate) fn stat(&self) -> DescriptorStat {
        let size = match self {
            Synth::Dir(_) => 4096,
            Synth::File(_, data) => data.len() as u64,
            Synth::Dev(..) => 0,
        };
        // The sandbox's boot: the start of 2026 (a fixed time, so listings are stable).
        let t = Some(datetime(1_767_225_600_000_000_000));
        DescriptorStat {
            type_: self.kind(),
            link_count: if matches!(self, Synth::Dir(_)) { 2 } else { 1 },
            size,
            data_access_timestamp: t,
            data_modification_timestamp: t,
            status_change_timestamp: t,
        }
    }
}

/// What a guest path is in the composed root.
pub(crate) enum Lookup {
    Synth(Synth),
    /// Inside the mount with this guest path: the rest of the path below it (`.` for its root).
    Mount(String, String),
    NotFound,
}

// `UTILITIES`: the shell's built-in utilities (extracted from its sources by build.rs).
include!(concat!(env!("OUT_DIR"), "/utilities.rs"));

/// Whether `dir` is one of the directories that list the built-in utilities.
fn is_bin(dir: &str) -> bool {
    dir == "/usr/bin" || dir == "/bin"
}

/// The `/etc` files: a Linux-looking, truthful description of the sandbox.
fn etc(name: &str) -> Option<String> {
    Some(match name {
        "os-release" => format!(
            "NAME=\"burrow\"\nID=burrow\nVERSION=\"{v}\"\nVERSION_ID=\"{v}\"\nPRETTY_NAME=\"burrow {v} (WebAssembly sandbox)\"\nHOME_URL=\"https://github.com/\"\n",
            v = env!("CARGO_PKG_VERSION")
        ),
        "passwd" => {
            "root:x:0:0:root:/root:/bin/bash\nagent:x:1000:1000:agent:/home/agent:/bin/bash\n"
                .into()
        }
        "group" => "root:x:0:\nagent:x:1000:\n".into(),
        "hostname" => "burrow\n".into(),
        "hosts" => "127.0.0.1\tlocalhost\n::1\tlocalhost\n127.0.1.1\tburrow\n".into(),
        "resolv.conf" => String::new(),
        "timezone" => "Etc/UTC\n".into(),
        _ => return None,
    })
}

const ETC: [&str; 7] = [
    "group",
    "hostname",
    "hosts",
    "os-release",
    "passwd",
    "resolv.conf",
    "timezone",
];
const DEV: [(&str, Dev); 8] = [
    ("burrow", Dev::Burrow),
    ("null", Dev::Null),
    ("random", Dev::Random),
    ("stderr", Dev::Stderr),
    ("stdin", Dev::Stdin),
    ("stdout", Dev::Stdout),
    ("urandom", Dev::Random),
    ("zero", Dev::Zero),
];

/// `/dev/fd/N` for the three standard streams.
const FD: [(&str, Dev); 3] = [("0", Dev::Stdin), ("1", Dev::Stdout), ("2", Dev::Stderr)];

/// The composed root: its mount points (absolute, normalised guest paths).
#[derive(Debug, Clone, Default)]
pub(crate) struct Root {
    mounts: Vec<String>,
}

/// `path` made absolute against `base`, with `.`, `..` and repeated slashes folded (`/..`
/// is `/`, as on Linux).
pub(crate) fn normalise(base: &str, path: &str) -> String {
    let mut parts: Vec<&str> = Vec::new();
    let joined = if path.starts_with('/') {
        path.to_string()
    } else {
        format!("{base}/{path}")
    };
    for c in joined.split('/') {
        match c {
            "" | "." => {}
            ".." => {
                parts.pop();
            }
            c => parts.push(c),
        }
    }
    format!("/{}", parts.join("/"))
}

impl Root {
    pub(crate) fn new(mounts: impl IntoIterator<Item = String>) -> Root {
        Root {
            mounts: mounts.into_iter().collect(),
        }
    }

    /// The mount containing `abs`, with the rest of the path below it.
    fn mount_of(&self, abs: &str) -> Option<(String, String)> {
        self.mounts
            .iter()
            .filter(|m| abs == m.as_str() || abs.starts_with(&format!("{m}/")))
            .max_by_key(|m| m.len())
            .map(|m| {
                let rest = abs[m.len()..].trim_start_matches('/');
                (
                    m.clone(),
                    if rest.is_empty() {
                        ".".into()
                    } else {
                        rest.into()
                    },
                )
            })
    }

    /// The entries of the synthetic directory `dir`.
    pub(crate) fn children(&self, dir: &str) -> Vec<DirectoryEntry> {
        let mut out: Vec<DirectoryEntry> = Vec::new();
        let prefix = if dir == "/" {
            "/".to_string()
        } else {
            format!("{dir}/")
        };
        for m in &self.mounts {
            if let Some(rest) = m.strip_prefix(&prefix)
                && let Some(first) = rest.split('/').next()
                && !out.iter().any(|e| e.name == first)
            {
                out.push(DirectoryEntry {
                    type_: DescriptorType::Directory,
                    name: first.to_string(),
                });
            }
        }
        match dir {
            "/" => {
                for d in ["bin", "dev", "etc", "usr"] {
                    out.push(DirectoryEntry {
                        type_: DescriptorType::Directory,
                        name: d.into(),
                    });
                }
            }
            "/dev" => {
                out.push(DirectoryEntry {
                    type_: DescriptorType::Directory,
                    name: "fd".into(),
                });
                out.extend(DEV.iter().map(|(n, _)| DirectoryEntry {
                    type_: DescriptorType::CharacterDevice,
                    name: (*n).into(),
                }));
            }
            "/dev/fd" => out.extend(FD.iter().map(|(n, _)| DirectoryEntry {
                type_: DescriptorType::CharacterDevice,
                name: (*n).into(),
            })),
            "/etc" => out.extend(ETC.iter().map(|n| DirectoryEntry {
                type_: DescriptorType::RegularFile,
                name: (*n).into(),
            })),
            "/usr" => out.push(DirectoryEntry {
                type_: DescriptorType::Directory,
                name: "bin".into(),
            }),
            d if is_bin(d) => out.extend(UTILITIES.iter().map(|n| DirectoryEntry {
                type_: DescriptorType::RegularFile,
                name: (*n).into(),
            })),
            _ => {}
        }
        out.sort_by(|a, b| a.name.cmp(&b.name));
        out
    }

    /// What the absolute guest path `abs` is.
    pub(crate) fn lookup(&self, abs: &str) -> Lookup {
        if let Some((m, rest)) = self.mount_of(abs) {
            return Lookup::Mount(m, rest);
        }
        if matches!(abs, "/" | "/dev" | "/dev/fd" | "/etc" | "/usr") || is_bin(abs) {
            return Lookup::Synth(Synth::Dir(abs.into()));
        }
        if self
            .mounts
            .iter()
            .any(|m| m.starts_with(&format!("{abs}/")))
        {
            return Lookup::Synth(Synth::Dir(abs.into()));
        }
        if let Some(name) = abs.strip_prefix("/dev/")
            && let Some((_, d)) = DEV.iter().find(|(n, _)| *n == name)
        {
            return Lookup::Synth(Synth::Dev(abs.into(), *d));
        }
        if let Some(name) = abs.strip_prefix("/dev/fd/")
            && let Some((_, d)) = FD.iter().find(|(n, _)| *n == name)
        {
            return Lookup::Synth(Synth::Dev(abs.into(), *d));
        }
        // A built-in utility: an empty file there (the shell runs `/usr/bin/cat` as `cat`).
        if let Some((dir, name)) = abs.rsplit_once('/')
            && is_bin(dir)
            && UTILITIES.contains(&name)
        {
            return Lookup::Synth(Synth::File(abs.into(), Arc::from(Vec::new())));
        }
        if let Some(name) = abs.strip_prefix("/etc/")
            && let Some(text) = etc(name)
        {
            return Lookup::Synth(Synth::File(abs.into(), Arc::from(text.into_bytes())));
        }
        Lookup::NotFound
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn composed_root() {
        let r = Root::new(
            [
                "/workspace",
                "/tmp",
                "/home/agent",
                "/run/burrow",
                "/opt/burrow/bin",
            ]
            .map(String::from),
        );
        let names =
            |d: &str| -> Vec<String> { r.children(d).into_iter().map(|e| e.name).collect() };
        assert_eq!(
            names("/"),
            [
                "bin",
                "dev",
                "etc",
                "home",
                "opt",
                "run",
                "tmp",
                "usr",
                "workspace"
            ]
        );
        assert!(names("/usr/bin").iter().any(|n| n == "cat"));
        assert!(names("/bin").iter().any(|n| n == "grep"));
        assert!(matches!(
            r.lookup("/usr/bin/sed"),
            Lookup::Synth(Synth::File(..))
        ));
        assert_eq!(names("/home"), ["agent"]);
        assert_eq!(names("/opt"), ["burrow"]);
        assert_eq!(
            names("/dev"),
            [
                "burrow", "fd", "null", "random", "stderr", "stdin", "stdout", "urandom", "zero"
            ]
        );
        assert_eq!(names("/dev/fd"), ["0", "1", "2"]);
        assert!(matches!(r.lookup("/home"), Lookup::Synth(Synth::Dir(_))));
        assert!(matches!(
            r.lookup("/dev/null"),
            Lookup::Synth(Synth::Dev(_, Dev::Null))
        ));
        assert!(matches!(r.lookup("/nope"), Lookup::NotFound));
        match r.lookup("/workspace/src/a.rs") {
            Lookup::Mount(m, rest) => {
                assert_eq!((m.as_str(), rest.as_str()), ("/workspace", "src/a.rs"))
            }
            _ => panic!(),
        }
        match r.lookup("/tmp") {
            Lookup::Mount(m, rest) => assert_eq!((m.as_str(), rest.as_str()), ("/tmp", ".")),
            _ => panic!(),
        }
        assert_eq!(normalise("/home", ".."), "/");
        assert_eq!(normalise("/", "../../etc//passwd"), "/etc/passwd");
        let Lookup::Synth(Synth::File(_, os)) = r.lookup("/etc/os-release") else {
            panic!()
        };
        assert!(std::str::from_utf8(&os).unwrap().contains("ID=burrow\n"));
    }
}
