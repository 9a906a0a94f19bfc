// The wasmtime configuration of burrow's engine, in a file of its own because two builds use
// it: `engine.rs` (the running engine) and `build.rs`, which precompiles the built-in
// components with exactly this configuration so that a process on an empty disk never runs
// Cranelift for them. (Plain comments: the file is `include!`d.)

/// The engine's configuration; `pooling` selects the pooling instance allocator.
pub fn wasmtime_config(pooling: bool) -> wasmtime::Config {
    let mut c = wasmtime::Config::new();
    c.wasm_component_model(true);
    c.epoch_interruption(true);
    c.memory_init_cow(true);
    c.cranelift_opt_level(wasmtime::OptLevel::Speed);
    if pooling {
        let mut p = wasmtime::PoolingAllocationConfig::default();
        p.total_component_instances(64);
        p.total_core_instances(512);
        p.total_memories(128);
        p.total_tables(512);
        p.max_memory_size(4 << 30);
        p.table_elements(200_000);
        c.allocation_strategy(wasmtime::InstanceAllocationStrategy::Pooling(p));
    }
    c
}

/// The CPU features the build-time artifacts may use, so that a binary built on one machine
/// runs its precompiled components on another of the same architecture: x86-64-v3 (AVX2, BMI2,
/// FMA, LZCNT: Intel since Haswell (2013), AMD since Excavator (2015), every current cloud
/// and serverless x86 host) on x86-64, the architecture's baseline elsewhere. x86-64-v2 was
/// measured first and made a 4 KiB read call about 25% slower than code compiled for the
/// host; v3 matches it. A CPU without these features makes the engine reject the artifact,
/// and burrow compiles for the host instead (once, into the cache).
pub fn portable_cpu(c: &mut wasmtime::Config, arch: &str, triple: &str) -> wasmtime::Result<()> {
    c.target(triple)?;
    if arch == "x86_64" {
        for flag in [
            "has_sse3", "has_ssse3", "has_sse41", "has_sse42", "has_popcnt", "has_avx",
            "has_avx2", "has_bmi1", "has_bmi2", "has_fma", "has_lzcnt",
        ] {
            // SAFETY: these only select instructions; a CPU without them is refused at load
            // time by wasmtime's check of the artifact against the host's features.
            unsafe {
                c.cranelift_flag_enable(flag);
            }
        }
    }
    Ok(())
}
