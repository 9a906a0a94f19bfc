//! `git config`: get (`KEY`, `--get KEY`), set (`KEY VALUE`), `--unset KEY` and `--list`, in
//! `.git/config` or with `--global` in `$HOME/.gitconfig`.

use std::path::Path;

use sh_utility::Ctx;
use sh_utility::io::Io;

use super::args::{Next, Opt, Spec, Unknown};
use crate::plumbing::repo::Repo;

/// `git config`, in the repository of the working directory if there is one.
pub(crate) fn config(sh: &dyn Ctx, args: &[String], io: &Io) -> i32 {
    let cwd = std::path::PathBuf::from(&sh.cwd());
    config_in(sh, Repo::discover(&cwd).as_ref(), args, io)
}

/// What `git config` was asked for.
#[derive(Default)]
struct Opts {
    global: bool,
    local: bool,
    unset: bool,
    list: bool,
}

const SPEC: Spec<Opts> = Spec {
    name: "config",
    // git's config names the misuse without its usage.
    usage: "",
    options: &[
        Opt::flag("--global", |o| o.global = true),
        Opt::flag("--local", |o| o.local = true),
        Opt::mode("--get", |_| {}),
        Opt::mode("--unset", |o| o.unset = true),
        Opt::mode("-l/--list", |o| o.list = true),
    ],
    refused: "",
    unknown: Unknown::Own(|arg| (format!("git: 'config {arg}' is not supported in burrow"), 1)),
    help: &[],
};

/// `git config`: get (`KEY`, `--get KEY`), set (`KEY VALUE`), `--unset KEY` and
/// `--list`, in the repository's `.git/config` or with `--global` in `$HOME/.gitconfig`.
fn config_in(sh: &dyn Ctx, repo: Option<&Repo>, args: &[String], io: &Io) -> i32 {
    let mut o = Opts::default();
    // Options end at the first operand (`git config KEY --global` sets KEY to `--global`).
    // The operands are the arguments from the first one on, as given (a `--` among them is
    // a value); a `--` before them ends the options.
    let rest = match SPEC.parse_with(args, &mut o, io, &mut |_, _| Ok(Next::Stop)) {
        Ok((first, Some(after))) if first.is_empty() => after,
        Ok((first, after)) => {
            let n = first.len() + after.map_or(0, |a| a.len() + 1);
            args[args.len() - n..].to_vec()
        }
        Err(code) => return code,
    };
    if o.global && o.local {
        io.eprint("error: only one config file at a time\n");
        return 129;
    }
    let Opts {
        global,
        unset,
        list,
        ..
    } = o;
    let home = sh.get("HOME").unwrap_or("/home/agent").to_string();
    let global_path = Path::new(&home).join(".gitconfig");
    let global_text = std::fs::read_to_string(&global_path).unwrap_or_default();
    let local_path = repo.map(|r| r.git_dir.join("config"));
    let local_text = local_path
        .as_ref()
        .and_then(|p| std::fs::read_to_string(p).ok())
        .unwrap_or_default();
    if list {
        let mut out = String::new();
        for t in if global {
            vec![&global_text]
        } else {
            vec![&global_text, &local_text]
        } {
            for (k, v) in crate::plumbing::repo::config_entries(t) {
                out.push_str(&format!("{k}={v}\n"));
            }
        }
        io.print(&out);
        return 0;
    }
    let Some(key) = rest.first() else {
        io.eprint("error: no action specified\n");
        return 129;
    };
    if !key.contains('.') || key.starts_with('.') || key.ends_with('.') {
        io.eprint(&format!("error: key does not contain a section: {key}\n"));
        return 2;
    }
    let target = if global {
        Some(global_path.clone())
    } else {
        local_path.clone()
    };
    if unset || rest.len() == 2 {
        let Some(target) = target else {
            io.eprint("fatal: not in a git directory\n");
            return 128;
        };
        let text = if global { &global_text } else { &local_text };
        let new = if unset {
            match crate::plumbing::repo::config_unset(text, key) {
                Some(t) => t,
                None => return 5,
            }
        } else {
            crate::plumbing::repo::config_set(text, key, &rest[1])
        };
        if let Err(e) = std::fs::write(&target, new) {
            io.eprint(&format!(
                "error: could not write config file {}: {e}\n",
                target.display()
            ));
            return 4;
        }
        return 0;
    }
    if rest.len() > 2 {
        io.eprint("error: wrong number of arguments, should be from 1 to 2\n");
        return 129;
    }
    let value = if global {
        crate::plumbing::repo::config_get(&global_text, key)
    } else {
        crate::plumbing::repo::config_get(&local_text, key)
            .or_else(|| crate::plumbing::repo::config_get(&global_text, key))
    };
    match value {
        Some(v) => {
            io.print(&format!("{v}\n"));
            0
        }
        None => 1,
    }
}
