//! sh-jq: jq for burrow's shell, on the jaq crates (jq's language, standard library and JSON
//! values).

use jaq_core::load::{Arena, File, Loader};
use jaq_core::{Compiler, Ctx, Vars, data, unwrap_valr};
use jaq_json::Val;

use sh_utility::Status;
use sh_utility::format::io_msg;
use sh_utility::io::{Io, read_all};

fn usage(io: &Io) -> i32 {
    io.eprint("Usage:\tjq [OPTIONS] FILTER [FILES...]\n");
    2
}

pub fn run(sh: &dyn sh_utility::Ctx, args: &[String], io: &Io) -> Status {
    let (mut raw, mut join, mut compact, mut null_input, mut slurp, mut exit_status, mut sort) =
        (false, false, false, false, false, false, false);
    let mut indent = "  ".to_string();
    let mut names: Vec<String> = Vec::new();
    let mut values: Vec<Val> = Vec::new();
    let mut filter: Option<String> = None;
    let mut files: Vec<String> = Vec::new();
    let mut i = 0;
    while i < args.len() {
        let a = args[i].as_str();
        match a {
            "-r" | "--raw-output" => raw = true,
            "-j" | "--join-output" => {
                raw = true;
                join = true;
            }
            "-c" | "--compact-output" => compact = true,
            "-n" | "--null-input" => null_input = true,
            "-s" | "--slurp" => slurp = true,
            "-e" | "--exit-status" => exit_status = true,
            "-S" | "--sort-keys" => sort = true,
            "-M" | "-C" | "--monochrome-output" | "--color-output" => {}
            "--tab" => indent = "\t".into(),
            "--indent" => {
                i += 1;
                let n: usize = args.get(i).and_then(|n| n.parse().ok()).unwrap_or(2);
                indent = " ".repeat(n.min(7));
            }
            "--arg" | "--argjson" => {
                let (Some(name), Some(v)) = (args.get(i + 1), args.get(i + 2)) else {
                    io.eprint(&format!(
                        "jq: error: {a} takes two parameters (e.g. {a} varname value)\n"
                    ));
                    return Ok(2);
                };
                let val = if a == "--arg" {
                    Val::from(v.clone())
                } else {
                    match jaq_json::read::parse_single(v.as_bytes()) {
                        Ok(v) => v,
                        Err(_) => {
                            io.eprint("jq: error: invalid JSON text passed to --argjson\n");
                            return Ok(2);
                        }
                    }
                };
                names.push(format!("${name}"));
                values.push(val);
                i += 2;
            }
            _ if a.starts_with('-') && a.len() > 1 && filter.is_none() => {
                // Combined short flags, e.g. -rc.
                let flags = &a[1..];
                if flags.chars().all(|c| "rjcnseSMC".contains(c)) {
                    for c in flags.chars() {
                        match c {
                            'r' => raw = true,
                            'j' => {
                                raw = true;
                                join = true;
                            }
                            'c' => compact = true,
                            'n' => null_input = true,
                            's' => slurp = true,
                            'e' => exit_status = true,
                            'S' => sort = true,
                            _ => {}
                        }
                    }
                } else {
                    io.eprint(&format!("jq: Unknown option: {a}\n"));
                    return Ok(usage(io));
                }
            }
            _ => {
                if filter.is_none() {
                    filter = Some(a.to_string());
                } else {
                    files.push(a.to_string());
                }
            }
        }
        i += 1;
    }
    let filter = filter.unwrap_or_else(|| ".".into());

    // Inputs.
    let mut data = Vec::new();
    if files.is_empty() {
        data.extend(read_all(&io.stdin));
    } else {
        for f in &files {
            match sh_utility::sys::read(sh.path(f)) {
                Ok(d) => {
                    data.extend(d);
                    data.push(b'\n');
                }
                Err(e) => {
                    io.eprint(&format!("jq: error: Could not open {f}: {}\n", io_msg(&e)));
                    return Ok(2);
                }
            }
        }
    }
    let mut inputs = Vec::new();
    if !null_input {
        for v in jaq_json::read::parse_many(&data) {
            match v {
                Ok(v) => inputs.push(v),
                Err(e) => {
                    io.eprint(&format!(
                        "jq: error (at <stdin>:0): Cannot parse input: {e}\n"
                    ));
                    return Ok(2);
                }
            }
        }
    }
    let inputs: Vec<Val> = if null_input {
        vec![Val::Null]
    } else if slurp {
        vec![inputs.into_iter().collect()]
    } else {
        inputs
    };

    // Compile.
    let defs = jaq_core::defs()
        .chain(jaq_std::defs())
        .chain(jaq_json::defs());
    let funs = jaq_core::funs()
        .chain(jaq_std::funs())
        .chain(jaq_json::funs());
    let loader = Loader::new(defs);
    let arena = Arena::default();
    let program = File {
        code: filter.as_str(),
        path: (),
    };
    let modules = match loader.load(&arena, program) {
        Ok(m) => m,
        Err(errs) => {
            io.eprint(&format!(
                "jq: error: syntax error in filter {filter:?} ({} error(s))\njq: 1 compile error\n",
                errs.len()
            ));
            return Ok(3);
        }
    };
    let compiled = match Compiler::default()
        .with_funs(funs)
        .with_global_vars(names.iter().map(String::as_str))
        .compile(modules)
    {
        Ok(f) => f,
        Err(errs) => {
            let what: Vec<String> = errs
                .iter()
                .flat_map(|(_, es)| es.iter().map(|(name, _)| name.to_string()))
                .collect();
            io.eprint(&format!(
                "jq: error: {} is not defined\njq: 1 compile error\n",
                what.join(", ")
            ));
            return Ok(3);
        }
    };

    // Run.
    let pp = jaq_json::write::Pp {
        indent: if compact { None } else { Some(indent) },
        sort_keys: sort,
        // jq writes `"key": value` when pretty and `"key":value` when compact.
        sep_space: !compact,
        ..Default::default()
    };
    let mut out = Vec::new();
    let mut last: Option<bool> = None;
    let mut status = 0;
    for input in inputs {
        let ctx = Ctx::<data::JustLut<Val>>::new(&compiled.lut, Vars::new(values.clone()));
        for r in compiled.id.run((ctx, input)).map(unwrap_valr) {
            match r {
                Ok(v) => {
                    last = Some(!matches!(v, Val::Null | Val::Bool(false)));
                    match (&v, raw) {
                        (Val::TStr(s), true) => out.extend_from_slice(s),
                        _ => {
                            let _ = jaq_json::write::write(&mut out, &pp, 0, &v);
                        }
                    }
                    if !join {
                        out.push(b'\n');
                    }
                }
                Err(e) => {
                    io.out.write(&out);
                    out.clear();
                    io.eprint(&format!("jq: error (at <stdin>:0): {e}\n"));
                    status = 5;
                }
            }
        }
    }
    io.out.write(&out);
    if exit_status && status == 0 {
        status = match last {
            Some(true) => 0,
            Some(false) => 1,
            None => 4,
        };
    }
    Ok(status)
}

/// jq, for the shell's registry.
pub static COMMANDS: &[&[sh_utility::Command]] = &[&[sh_utility::Command {
    name: "jq",
    run: |sh, argv, io| run(sh, &argv[1..], io),
}]];
