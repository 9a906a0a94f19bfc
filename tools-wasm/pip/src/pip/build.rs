//! Building a source distribution (or a project directory) into a wheel, as pip does on a
//! machine without a compiler: PEP 517 hooks run by the session's python3 in the call's
//! transaction, with the build requirements installed into a throw-away build environment
//! (PEP 518 isolation) by this same pip.
//!
//! There is no C compiler in a session (CPython is WebAssembly), so what builds is what needs
//! none: pure-Python projects published only as sdists, and projects whose native part is
//! optional (markupsafe, pyyaml, simplejson, msgpack, ...), whose build tries the compiler,
//! fails, and falls back to pure Python, exactly as on a machine without one. A backend that
//! insists on compiling fails with its own message and pip's, plus a line saying why.
//!
//! Everything happens under `/tmp/pip-build-*` inside the call and is removed when the build
//! ends; built wheels are not cached (the next install builds again).

use std::path::{Path, PathBuf};

use sh_utility::io::{Io, Sink, input};

use super::PipCx;

/// The PEP 517 side, run by python3 one step at a time.
const HOOKS: &str = include_str!("pep517.py");

/// How deep build environments may nest (a build requirement that is itself an sdist).
const MAX_DEPTH: u32 = 3;

/// What to build.
pub(super) enum Source<'a> {
    /// A downloaded (or local) sdist archive: its file name and bytes.
    Archive { filename: &'a str, bytes: &'a [u8] },
    /// A project directory (`pip install .`), built in place as pip does.
    Dir(&'a Path),
}

/// How to build.
pub(super) struct BuildOpts<'a> {
    /// The index the build requirements come from (the install's own).
    pub index: &'a str,
    /// `--extra-index-url`s, for the build requirements too.
    pub extra_index: &'a [String],
    /// PEP 518 isolation: a fresh build environment (`--no-build-isolation` turns it off and
    /// the backend sees the session's packages instead).
    pub isolate: bool,
    /// PEP 660 (`pip install -e`).
    pub editable: bool,
    /// `--config-settings` / `-C`, as a JSON object.
    pub config: &'a str,
}

/// A built wheel.
pub(super) struct Built {
    pub filename: String,
    pub wheel: Vec<u8>,
}

/// A temporary directory in the session, removed when dropped.
struct Scratch(PathBuf);

impl Scratch {
    fn new(ctx: &PipCx) -> Result<Scratch, String> {
        // std's temp_dir is not there on WASI: TMPDIR, as the shell has it, or /tmp.
        let base = ctx
            .sh
            .env("TMPDIR")
            .filter(|t| t.starts_with('/'))
            .map_or_else(|| PathBuf::from("/tmp"), PathBuf::from);
        let seed = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map(|d| d.subsec_nanos())
            .unwrap_or(0);
        for n in 0..1000u32 {
            let p = base.join(format!(
                "pip-build-{:08x}",
                seed.wrapping_add(n.wrapping_mul(0x9e37_79b9))
            ));
            match std::fs::create_dir(&p) {
                Ok(()) => return Ok(Scratch(p)),
                Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => continue,
                Err(e) => return Err(format!("{}: {e}", p.display())),
            }
        }
        Err("could not make a build directory under /tmp".into())
    }
}

impl Drop for Scratch {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

/// One run of the hooks script: its status, everything it printed, and its JSON answer.
fn step(ctx: &PipCx, args: &[String], result: &Path) -> (i32, String, serde_json::Value) {
    let (sink, buf) = Sink::buffer();
    let io = Io::new(input(Vec::new()), sink.clone(), sink);
    let mut argv = vec!["python3".to_string(), "-c".to_string(), HOOKS.to_string()];
    argv.extend(args.iter().cloned());
    let _ = std::fs::remove_file(result);
    let status = crate::interpreter::python(ctx.sh, &argv, &io);
    let output = String::from_utf8_lossy(&buf.borrow()).into_owned();
    let value = std::fs::read(result)
        .ok()
        .and_then(|b| serde_json::from_slice(&b).ok())
        .unwrap_or(serde_json::Value::Null);
    let status = if status == 0 && value.is_null() {
        1
    } else {
        status
    };
    (status, output, value)
}

/// pip's box around a failed subprocess's output.
fn failed_box(ctx: &PipCx, what: &str, status: i32, output: &str) {
    let lines: Vec<&str> = output.lines().collect();
    let mut s = format!(
        "  error: subprocess-exited-with-error\n  \n  × {what} did not run successfully.\n  │ exit code: {status}\n  ╰─> [{} lines of output]\n",
        lines.len()
    );
    for l in &lines {
        s.push_str(&format!("      {l}\n"));
    }
    s.push_str("      [end of output]\n  \n  note: This error originates from a subprocess, and is likely not a problem with pip.\n");
    ctx.io.eprint(&s);
}

/// The closing lines of a step that failed before the wheel was being built.
fn failed_before_build(ctx: &PipCx, what: &str) {
    ctx.io.eprint(&format!(
        "error: subprocess-exited-with-error\n\n× {what} did not run successfully.\n│ exit code: 1\n╰─> See above for output.\n\nnote: This error originates from a subprocess, and is likely not a problem with pip.\n"
    ));
}

/// What burrow adds when a build failed: why a compiler is not the answer here.
fn why_no_compiler(ctx: &PipCx, name: &str, output: &str) {
    let compiled = [
        "error: command",
        "'cc'",
        "'c++'",
        "CompileError",
        "compiler",
        "gcc",
        "clang",
        "cc1",
        "cargo",
        "rustc",
        "Cython",
        "setuptools-rust",
        "maturin",
        "meson",
        "cmake",
    ]
    .iter()
    .any(|w| output.contains(w));
    if compiled {
        ctx.io.eprint(&format!(
            "burrow: {name}'s build needs to compile native code; burrow's CPython runs as WebAssembly (WASI) with no compiler in the session, so only projects that are pure Python or whose native part is optional (they fall back to pure Python) build here\n"
        ));
    }
}

/// Installs `reqs` into the build environment `site` with this pip, quietly unless it fails.
fn install_build_requires(
    ctx: &PipCx,
    opts: &BuildOpts,
    env: &Path,
    reqs: &[String],
    what: &str,
) -> Result<(), i32> {
    if reqs.is_empty() {
        return Ok(());
    }
    let (sink, buf) = Sink::buffer();
    let io = Io::new(input(Vec::new()), sink.clone(), sink);
    let mut sub = PipCx {
        sh: ctx.sh,
        io: &io,
        quiet: false,
        site: env.join("site"),
        bin: env.join("bin"),
        depth: ctx.depth + 1,
    };
    let mut args = vec![
        "--index-url".to_string(),
        opts.index.to_string(),
        "--no-warn-script-location".to_string(),
    ];
    for extra in opts.extra_index {
        args.push("--extra-index-url".to_string());
        args.push(extra.clone());
    }
    args.extend(reqs.iter().cloned());
    let status = super::install(&mut sub, &args, false);
    if status != 0 {
        ctx.say(&format!("  {what} ... error"));
        let output = String::from_utf8_lossy(&buf.borrow()).into_owned();
        failed_box(
            ctx,
            "pip subprocess to install build dependencies",
            status,
            &output,
        );
        failed_before_build(ctx, "pip subprocess to install build dependencies");
        return Err(1);
    }
    Ok(())
}

/// Builds `source` (of the project `name`, as far as known) into a wheel. On failure the
/// messages are printed (pip's, then burrow's reason) and the status returned.
pub(super) fn build(
    ctx: &PipCx,
    name: &str,
    source: Source,
    opts: &BuildOpts,
) -> Result<Built, i32> {
    if ctx.depth >= MAX_DEPTH {
        ctx.io.eprint(&format!(
            "ERROR: building {name} needs build requirements nested more than {MAX_DEPTH} deep (each an sdist to build); burrow stops there\n"
        ));
        return Err(1);
    }
    let scratch = Scratch::new(ctx).map_err(|why| {
        ctx.io.eprint(&format!(
            "ERROR: Could not install packages due to an OSError: {why}\n"
        ));
        1
    })?;
    let dir = &scratch.0;
    let result = dir.join("answer.json");
    let origin = match &source {
        Source::Archive { filename, bytes } => {
            let path = dir.join(filename);
            if let Err(e) = std::fs::write(&path, bytes) {
                ctx.io.eprint(&format!(
                    "ERROR: Could not install packages due to an OSError: {}: {e}\n",
                    path.display()
                ));
                return Err(1);
            }
            path
        }
        Source::Dir(p) => p.to_path_buf(),
    };
    let s = |p: &Path| p.to_string_lossy().into_owned();
    // The source tree and its [build-system].
    let (status, output, info) = step(
        ctx,
        &[
            "prepare".into(),
            s(&origin),
            s(&dir.join("src")),
            s(&result),
        ],
        &result,
    );
    if status != 0 {
        failed_box(ctx, "Preparing the source tree", status, &output);
        failed_before_build(ctx, "Preparing the source tree");
        return Err(1);
    }
    let strings = |v: &serde_json::Value| -> Vec<String> {
        v.as_array()
            .map(|a| {
                a.iter()
                    .filter_map(|x| x.as_str().map(str::to_string))
                    .collect()
            })
            .unwrap_or_default()
    };
    let src = info["src"].as_str().unwrap_or_default().to_string();
    let backend = info["backend"].as_str().unwrap_or_default().to_string();
    let backend_path = serde_json::to_string(&info["backend_path"]).unwrap_or("[]".into());
    let via = if info["pyproject"].as_bool() == Some(true) {
        "pyproject.toml"
    } else {
        "setup.py"
    };
    let env = dir.join("env");
    let env_site = if opts.isolate {
        s(&env.join("site"))
    } else {
        String::new()
    };
    let isolate_from = if opts.isolate {
        s(&ctx.site)
    } else {
        String::new()
    };
    if opts.isolate {
        install_build_requires(
            ctx,
            opts,
            &env,
            &strings(&info["requires"]),
            "Installing build dependencies",
        )?;
        ctx.say("  Installing build dependencies ... done");
    }
    let hook = |name: &str, out: &Path| {
        step(
            ctx,
            &[
                "hook".into(),
                name.into(),
                src.clone(),
                env_site.clone(),
                isolate_from.clone(),
                backend.clone(),
                backend_path.clone(),
                s(out),
                opts.config.to_string(),
                s(&result),
            ],
            &result,
        )
    };
    let kind = if opts.editable { "editable" } else { "wheel" };
    let asking = format!("Getting requirements to build {kind}");
    let (status, output, more) = hook(&format!("get_requires_for_build_{kind}"), dir);
    if status != 0 {
        ctx.say(&format!("  {asking} ... error"));
        failed_box(ctx, &asking, status, &output);
        failed_before_build(ctx, &asking);
        why_no_compiler(ctx, name, &output);
        return Err(1);
    }
    ctx.say(&format!("  {asking} ... done"));
    if opts.isolate {
        install_build_requires(
            ctx,
            opts,
            &env,
            &strings(&more["value"]),
            "Installing backend dependencies",
        )?;
    }
    let building = if opts.editable {
        format!("Building editable for {name} ({via})")
    } else {
        format!("Building wheel for {name} ({via})")
    };
    let dist = dir.join("dist");
    let (status, output, built) = hook(&format!("build_{kind}"), &dist);
    let filename = built["value"].as_str().unwrap_or_default().to_string();
    let wheel = if status == 0 {
        std::fs::read(dist.join(&filename)).ok()
    } else {
        None
    };
    let Some(wheel) = wheel else {
        ctx.say(&format!("  {building} ... error"));
        failed_box(ctx, &building, status.max(1), &output);
        ctx.io
            .eprint(&format!("  ERROR: Failed building {kind} for {name}\n"));
        ctx.io.eprint(&format!("Failed to build {name}\nERROR: Could not build wheels for {name}, which is required to install pyproject.toml-based projects\n"));
        why_no_compiler(ctx, name, &output);
        return Err(1);
    };
    ctx.say(&format!("  {building} ... done"));
    // What came out must run here: a wheel with compiled code cannot (CPython for WASI
    // loads no extension modules). A project that declares an optional extension gets a
    // wheel tagged for this interpreter (`cp312-cp312-wasi_0_0_0_wasm32`) even when the
    // extension fell back to pure Python; what counts is what the wheel holds.
    let compiled = super::open_wheel(&wheel).map(|a| {
        a.file_names()
            .filter_map(|n| n.ok())
            .filter(|n| {
                [".so", ".pyd", ".dylib", ".dll"]
                    .iter()
                    .any(|e| n.ends_with(e) || n.contains(&format!("{e}.")))
            })
            .map(|n| n.to_string())
            .collect::<Vec<_>>()
    });
    match compiled {
        Ok(list) if list.is_empty() => {}
        Ok(list) => {
            ctx.io.eprint(&format!(
                "ERROR: {filename} is not a supported wheel on this platform.\nburrow: {name}'s build produced compiled code ({}); burrow's CPython runs as WebAssembly (WASI) and loads no extension modules\n",
                list.join(", ")
            ));
            return Err(1);
        }
        Err(why) => {
            ctx.io.eprint(&format!("ERROR: {filename}: {why}\n"));
            return Err(1);
        }
    }
    ctx.say(&format!(
        "  Created {kind} for {name}: filename={filename} size={} sha256={}",
        wheel.len(),
        super::hex_sha256(&wheel)
    ));
    Ok(Built { filename, wheel })
}
