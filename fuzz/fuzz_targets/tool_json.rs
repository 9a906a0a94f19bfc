//! Arbitrary JSON into every tool of every family. Invariants: no panic; the result is a
//! value (possibly is_error); a call that errors leaves the head where it was.
#![no_main]

use std::sync::OnceLock;

use burrow_host::session::{Family, Sandbox, SandboxConfig};
use libfuzzer_sys::fuzz_target;

struct World {
    _dir: tempfile::TempDir,
    sb: Sandbox,
    id: String,
}

fn world() -> &'static World {
    static W: OnceLock<World> = OnceLock::new();
    W.get_or_init(|| {
        let dir = tempfile::tempdir().unwrap();
        let sb = Sandbox::open_with(
            dir.path().join("f.db"),
            SandboxConfig { cache_dir: Some(dir.path().join("cache")), ..Default::default() },
        )
        .unwrap();
        let id = sb.create(None).unwrap().id;
        World { _dir: dir, sb, id }
    })
}

fuzz_target!(|data: &[u8]| {
    let Some((&pick, rest)) = data.split_first() else { return };
    let Ok(input) = serde_json::from_slice::<serde_json::Value>(rest) else { return };
    let families = [Family::AgentToolset, Family::ClaudeCode, Family::Api];
    let family = families[pick as usize % families.len()];
    let tools = family.tools();
    let tool = tools[(pick as usize / 3) % tools.len()];
    // bash could legitimately run for its whole timeout; the shell has its own corpus.
    if tool.eq_ignore_ascii_case("bash") {
        return;
    }
    let w = world();
    let before = w.sb.info(&w.id).unwrap().version;
    match w.sb.call(&w.id, family, tool, &input) {
        Ok(out) if out.is_error => {
            assert_eq!(w.sb.info(&w.id).unwrap().version, before, "a refused call changed the head");
        }
        Ok(_) => {}
        Err(e) => panic!("tool call failed outside the result: {e}"),
    }
});
