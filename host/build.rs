//! Builds the tool components in `tools-wasm/` for wasm32-wasip2 and places them in OUT_DIR,
//! so the `burrow` binary embeds them and needs nothing else at run time. The nested build
//! uses its own target directory (no lock contention with the outer build) and is a no-op
//! when nothing changed.

use std::path::PathBuf;
use std::process::Command;

const TOOLS: &[&str] = &["fs-tools", "sh"];

fn main() {
    let manifest =
        PathBuf::from(std::env::var_os("CARGO_MANIFEST_DIR").expect("CARGO_MANIFEST_DIR"));
    let root = manifest.parent().expect("workspace root").to_path_buf();
    let out = PathBuf::from(std::env::var_os("OUT_DIR").expect("OUT_DIR"));
    let target = std::env::var_os("CARGO_TARGET_DIR")
        .map(PathBuf::from)
        .unwrap_or_else(|| root.join("target"))
        .join("tools-wasm");
    println!(
        "cargo:rerun-if-changed={}",
        root.join("tools-wasm").display()
    );
    println!(
        "cargo:rerun-if-changed={}",
        root.join("Cargo.lock").display()
    );
    let cargo = std::env::var_os("CARGO").unwrap_or_else(|| "cargo".into());
    let mut cmd = Command::new(cargo);
    cmd.current_dir(&root)
        .args([
            "build",
            "--release",
            "--target",
            "wasm32-wasip2",
            "--target-dir",
        ])
        .arg(&target);
    for t in TOOLS {
        cmd.args(["-p", t]);
    }
    // Flags meant for the host build must not leak into the wasm build.
    for var in ["RUSTFLAGS", "CARGO_BUILD_TARGET", "CARGO_TARGET_DIR"] {
        cmd.env_remove(var);
    }
    // WebAssembly SIMD (on in wasmtime by default): memchr and memmem, under grep, sed, wc and
    // the line splitting everywhere, scan 16 bytes at a time instead of 8.
    cmd.env("CARGO_ENCODED_RUSTFLAGS", "-Ctarget-feature=+simd128");
    let status = cmd
        .status()
        .expect("cannot run cargo to build the tool components");
    if !status.success() {
        panic!(
            "building the tool components for wasm32-wasip2 failed; \
             is the target installed? `rustup target add wasm32-wasip2`"
        );
    }
    for t in TOOLS {
        let built = target
            .join("wasm32-wasip2/release")
            .join(format!("{t}.wasm"));
        std::fs::copy(&built, out.join(format!("{t}.wasm")))
            .unwrap_or_else(|e| panic!("cannot copy {}: {e}", built.display()));
    }

    precompile(&out, &manifest);

    // The shell's utility names, for the sandbox's `/usr/bin` and `/bin` listings: its
    // registry of built-in utilities, and the shell builtins that are programs there too.
    let registry = root.join("tools-wasm/utility/src/registry.rs");
    println!("cargo:rerun-if-changed={}", registry.display());
    let mut names: Vec<String> = ["echo", "printf", "true", "false", "test", "[", "pwd"]
        .iter()
        .map(|s| s.to_string())
        .collect();
    names.extend(sh_registry::UTILITIES.iter().map(|u| u.name.to_string()));
    names.sort();
    names.dedup();
    std::fs::write(
        out.join("utilities.rs"),
        format!("pub const UTILITIES: &[&str] = &{names:?};\n"),
    )
    .expect("write utilities.rs");
}

mod sh_registry {
    #![allow(dead_code)]
    include!("../tools-wasm/utility/src/registry.rs");
}

mod engine_config {
    #![allow(dead_code)]
    include!("src/runtime/engine_config.rs");
}

/// Compiles the built-in components to native code now, with the engine's own configuration
/// (`src/runtime/engine_config.rs`) for a portable CPU baseline, so the binary embeds them ready to
/// load: the first call on an empty disk (a serverless cold start) runs no compiler. When the
/// build cross-compiles, or `BURROW_NO_PRECOMPILE` is set, the artifacts are left empty and
/// burrow compiles at first use as before.
fn precompile(out: &std::path::Path, manifest: &std::path::Path) {
    println!(
        "cargo:rerun-if-changed={}",
        manifest.join("src/runtime/engine_config.rs").display()
    );
    println!("cargo:rerun-if-env-changed=BURROW_NO_PRECOMPILE");
    let target = std::env::var("TARGET").unwrap_or_default();
    let host = std::env::var("HOST").unwrap_or_default();
    let arch = std::env::var("CARGO_CFG_TARGET_ARCH").unwrap_or_default();
    let wanted = target == host && std::env::var_os("BURROW_NO_PRECOMPILE").is_none();
    let engine = wanted
        .then(|| {
            let mut config = engine_config::wasmtime_config(false);
            engine_config::portable_cpu(&mut config, &arch, &target).ok()?;
            wasmtime::Engine::new(&config).ok()
        })
        .flatten();
    for t in TOOLS {
        let wasm = std::fs::read(out.join(format!("{t}.wasm"))).expect("read a built component");
        let cwasm = match &engine {
            Some(e) => e
                .precompile_component(&wasm)
                .unwrap_or_else(|err| panic!("precompiling {t}.wasm failed: {err:#}")),
            None => Vec::new(),
        };
        std::fs::write(out.join(format!("{t}.cwasm")), cwasm)
            .expect("write a precompiled component");
        // The key the engine's component table uses, computed once here rather than per process.
        std::fs::write(
            out.join(format!("{t}.blake3")),
            blake3::hash(&wasm).as_bytes(),
        )
        .expect("write a component hash");
    }
}
