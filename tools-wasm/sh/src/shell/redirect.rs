//! Redirections: files, descriptors, here-documents and here-strings applied to a command's
//! `Io`, and `exec`'s lasting ones (`exec 3> file`, `{fd}>`, `exec 3<&-`).

use super::*;

impl Shell {
    /// Applies redirections; None when one failed (already reported).
    pub fn apply_redirects(
        &mut self,
        redirects: &[IoRedirect],
        io: &Io,
    ) -> Result<Option<Io>, Flow> {
        let mut io = io.clone();
        for r in redirects {
            match r {
                IoRedirect::File(fd, kind, target) => {
                    let fd = fd.unwrap_or(match kind {
                        IoFileRedirectKind::Read
                        | IoFileRedirectKind::DuplicateInput
                        | IoFileRedirectKind::ReadAndWrite => 0,
                        _ => 1,
                    });
                    match (kind, target) {
                        (IoFileRedirectKind::DuplicateOutput, IoFileRedirectTarget::Fd(_))
                        | (
                            IoFileRedirectKind::DuplicateOutput,
                            IoFileRedirectTarget::Duplicate(_),
                        ) => {
                            let src = match target {
                                IoFileRedirectTarget::Fd(s) => Some(*s),
                                IoFileRedirectTarget::Duplicate(w) => {
                                    let t = crate::shell::expand::single(self, &w.value, &io)?;
                                    if t == "-" {
                                        set_fd(&mut io, fd, Sink::Null);
                                        continue;
                                    }
                                    t.parse().ok()
                                }
                                _ => None,
                            };
                            let opened = src.filter(|n| *n >= 3).and_then(|n| io.output_fd(n));
                            let sink = match (src, opened) {
                                (_, Some(s)) => s,
                                (Some(1), _) => io.out.clone(),
                                (Some(2), _) => io.err.clone(),
                                _ => {
                                    io.eprint(&format!(
                                        "bash: {}: Bad file descriptor\n",
                                        src.unwrap_or(-1)
                                    ));
                                    return Ok(None);
                                }
                            };
                            set_fd(&mut io, fd, sink);
                        }
                        (IoFileRedirectKind::DuplicateInput, _) => {
                            // `<&3`, `3<&0`, `<&-`: fd reads what the other reads (one shared
                            // offset), or nothing once closed.
                            let src = match target {
                                IoFileRedirectTarget::Fd(s) => s.to_string(),
                                IoFileRedirectTarget::Duplicate(w) => {
                                    crate::shell::expand::single(self, &w.value, &io)?
                                }
                                _ => String::new(),
                            };
                            if src == "-" {
                                if fd == 0 {
                                    io.stdin = input(Vec::new());
                                } else {
                                    io.fds.remove(&fd);
                                }
                                continue;
                            }
                            match src.parse::<i32>().ok().and_then(|n| io.input_fd(n)) {
                                Some(from) => set_input(&mut io, fd, from),
                                None => {
                                    io.eprint(&format!("bash: {src}: Bad file descriptor\n"));
                                    return Ok(None);
                                }
                            }
                        }
                        (_, IoFileRedirectTarget::Filename(w)) => {
                            let name = crate::shell::expand::single(self, &w.value, &io)?;
                            let path = self.path(&name);
                            match kind {
                                IoFileRedirectKind::Read if name == "/dev/null" => {
                                    set_input(&mut io, fd, input(Vec::new()))
                                }
                                // `< /dev/stdin` leaves the input as it is.
                                IoFileRedirectKind::Read if crate::sys::is_stdin(&path) => {
                                    let stdin = io.stdin.clone();
                                    set_input(&mut io, fd, stdin);
                                }
                                // `<> file` is opened for reading and writing: created when
                                // missing and never truncated, and read as the input.
                                IoFileRedirectKind::Read | IoFileRedirectKind::ReadAndWrite => {
                                    let opened = match kind {
                                        IoFileRedirectKind::ReadAndWrite => {
                                            std::fs::OpenOptions::new()
                                                .read(true)
                                                .write(true)
                                                .create(true)
                                                .truncate(false)
                                                .open(&path)
                                                .map(drop)
                                        }
                                        _ => Ok(()),
                                    };
                                    match opened.and_then(|()| read_input(&path)) {
                                        Ok(i) => set_input(&mut io, fd, i),
                                        Err(e) => {
                                            io.eprint(&format!(
                                                "bash: {name}: {}\n",
                                                crate::shell::builtins::io_msg(&e)
                                            ));
                                            return Ok(None);
                                        }
                                    }
                                }
                                _ => {
                                    let append = matches!(kind, IoFileRedirectKind::Append);
                                    if name == "/dev/null" {
                                        set_fd(&mut io, fd, Sink::Null);
                                        continue;
                                    }
                                    if name == "/dev/stderr" || name == "/dev/fd/2" {
                                        let s = io.err.clone();
                                        set_fd(&mut io, fd, s);
                                        continue;
                                    }
                                    if name == "/dev/stdout" || name == "/dev/fd/1" {
                                        let s = io.out.clone();
                                        set_fd(&mut io, fd, s);
                                        continue;
                                    }
                                    if let Some(buf) = crate::sys::output_buffer(&path) {
                                        set_fd(&mut io, fd, Sink::Buf(buf));
                                        continue;
                                    }
                                    if self.options.noclobber
                                        && matches!(kind, IoFileRedirectKind::Write)
                                        && path.is_file()
                                    {
                                        io.eprint(&format!(
                                            "bash: {name}: cannot overwrite existing file\n"
                                        ));
                                        return Ok(None);
                                    }
                                    let f = std::fs::OpenOptions::new()
                                        .write(true)
                                        .create(true)
                                        .append(append)
                                        .truncate(!append)
                                        .open(&path);
                                    match f {
                                        Ok(f) => set_fd(&mut io, fd, Sink::file(f, &path)),
                                        Err(e) => {
                                            io.eprint(&format!(
                                                "bash: {name}: {}\n",
                                                crate::shell::builtins::io_msg(&e)
                                            ));
                                            return Ok(None);
                                        }
                                    }
                                }
                            }
                        }
                        (
                            IoFileRedirectKind::Write
                            | IoFileRedirectKind::Append
                            | IoFileRedirectKind::Clobber,
                            IoFileRedirectTarget::ProcessSubstitution(
                                k @ ast::ProcessSubstitutionKind::Write,
                                cmd,
                            ),
                        ) => {
                            // `> >(cmd)`: the output goes to cmd when the command ends.
                            let Some(w) = self.process_substitution(k, cmd, &io)? else {
                                return Ok(None);
                            };
                            let Some(buf) =
                                crate::sys::output_buffer(std::path::Path::new(&w.value))
                            else {
                                return Ok(None);
                            };
                            set_fd(&mut io, fd, Sink::Buf(buf));
                        }
                        (
                            IoFileRedirectKind::Read,
                            IoFileRedirectTarget::ProcessSubstitution(k, cmd),
                        ) => {
                            // `< <(cmd)`: cmd's output on stdin (its fd is free again).
                            let mark = crate::sys::substitutions_mark();
                            let Some(w) = self.process_substitution(k, cmd, &io)? else {
                                return Ok(None);
                            };
                            let bytes = crate::sys::read(&w.value).unwrap_or_default();
                            crate::sys::substitutions_release(mark);
                            io.stdin = input(bytes);
                        }
                        _ => {
                            io.eprint("bash: unsupported redirection\n");
                            return Ok(None);
                        }
                    }
                }
                IoRedirect::HereDocument(fd, doc) => {
                    let text = if doc.requires_expansion {
                        crate::shell::expand::heredoc(self, &doc.doc.value, &io)?
                    } else {
                        doc.doc.value.clone()
                    };
                    set_input(&mut io, fd.unwrap_or(0), input(text.into_bytes()));
                }
                IoRedirect::HereString(fd, w) => {
                    let mut text = crate::shell::expand::single(self, &w.value, &io)?;
                    text.push('\n');
                    set_input(&mut io, fd.unwrap_or(0), input(text.into_bytes()));
                }
                IoRedirect::OutputAndError(w, append) => {
                    let name = crate::shell::expand::single(self, &w.value, &io)?;
                    if name == "/dev/null" {
                        io.out = Sink::Null;
                        io.err = Sink::Null;
                        continue;
                    }
                    if self.options.noclobber && !*append && self.path(&name).is_file() {
                        io.eprint(&format!("bash: {name}: cannot overwrite existing file\n"));
                        return Ok(None);
                    }
                    let path = self.path(&name);
                    let f = std::fs::OpenOptions::new()
                        .write(true)
                        .create(true)
                        .append(*append)
                        .truncate(!*append)
                        .open(&path);
                    match f {
                        Ok(f) => {
                            let s = Sink::file(f, &path);
                            io.out = s.clone();
                            io.err = s;
                        }
                        Err(e) => {
                            io.eprint(&format!(
                                "bash: {name}: {}\n",
                                crate::shell::builtins::io_msg(&e)
                            ));
                            return Ok(None);
                        }
                    }
                }
            }
        }
        Ok(Some(io))
    }

    /// `exec 3> file`, `exec >> log 2>&1`, `exec {fd}> file`, `exec 3>&-`, `exec 3< file`,
    /// `exec 4<<EOF`: points the shell's descriptors at files, here-documents or other
    /// descriptors, or closes them. `exec < file` (or a here-document, or `<&-`) gives the
    /// shell a new standard input: what the commands after it read.
    pub(super) fn exec_redirects(
        &mut self,
        names: &[String],
        redirects: &[IoRedirect],
        io: &Io,
    ) -> Status {
        let mut names = names.iter().filter_map(|n| fd_var(n));
        for r in redirects {
            let (fd, kind, target) = match r {
                IoRedirect::File(fd, kind, target) => (fd, kind, target),
                IoRedirect::HereDocument(Some(fd), _) | IoRedirect::HereString(Some(fd), _)
                    if *fd >= 3 =>
                {
                    let Some(opened) = self.apply_redirects(std::slice::from_ref(r), io)? else {
                        return Ok(1);
                    };
                    crate::shell::io::set_shell_input(*fd, opened.input_fd(*fd));
                    continue;
                }
                // `exec <<EOF` / `exec <<< word`: the shell's standard input from now on.
                _ => {
                    let Some(opened) = self.apply_redirects(std::slice::from_ref(r), io)? else {
                        return Ok(1);
                    };
                    replace_stdin(io, &opened.stdin);
                    continue;
                }
            };
            let closing = match target {
                IoFileRedirectTarget::Duplicate(w) => {
                    crate::shell::expand::single(self, &w.value, io)? == "-"
                }
                _ => false,
            };
            let input = matches!(
                kind,
                IoFileRedirectKind::Read
                    | IoFileRedirectKind::DuplicateInput
                    | IoFileRedirectKind::ReadAndWrite
            );
            let fd = match (fd, names.next()) {
                (Some(n), _) => *n,
                (None, Some(var)) if closing => match self.get(var).and_then(|v| v.parse().ok()) {
                    Some(n) => n,
                    None => {
                        io.eprint(&format!("bash: {var}: ambiguous redirect\n"));
                        return Ok(1);
                    }
                },
                (None, Some(var)) => {
                    let n = crate::shell::io::free_shell_fd();
                    self.set(var, n.to_string());
                    n
                }
                (None, None) if input => 0,
                (None, None) => 1,
            };
            if closing && fd == 0 {
                replace_stdin(io, &crate::shell::io::input(Vec::new()));
                continue;
            }
            if closing {
                let closed = (fd <= 2).then_some(Sink::Null);
                crate::shell::io::set_shell_fd(fd, closed);
                continue;
            }
            if input && fd >= 3 {
                let one = IoRedirect::File(Some(fd), kind.clone(), target.clone());
                let Some(opened) = self.apply_redirects(&[one], io)? else {
                    return Ok(1);
                };
                crate::shell::io::set_shell_input(fd, opened.input_fd(fd));
                continue;
            }
            if input && fd == 0 {
                let one = IoRedirect::File(Some(0), kind.clone(), target.clone());
                let Some(opened) = self.apply_redirects(&[one], io)? else {
                    return Ok(1);
                };
                replace_stdin(io, &opened.stdin);
                continue;
            }
            if input {
                io.eprint(&format!(
                    "bash: exec: {fd}<: reading from the shell's stdout or stderr is not supported in burrow's shell\n"
                ));
                return Ok(1);
            }
            // Open it as the command's stdout would be, then keep that sink as `fd`.
            let one = IoRedirect::File(Some(1), kind.clone(), target.clone());
            let Some(opened) = self.apply_redirects(&[one], io)? else {
                return Ok(1);
            };
            crate::shell::io::set_shell_fd(fd, Some(opened.out));
        }
        Ok(0)
    }
}

/// Makes what `from` has left the shell's standard input: the input every later command of
/// this shell reads (they share one cursor), as a new descriptor 0 would be.
fn replace_stdin(io: &Io, from: &crate::shell::io::Input) {
    if std::rc::Rc::ptr_eq(&io.stdin, from) {
        return;
    }
    let rest = crate::shell::io::read_all(from);
    *io.stdin.borrow_mut().cursor() = std::io::Cursor::new(rest);
}

/// What `< path` reads: a regular file is read as its readers ask (`wc -l < big` holds a piece
/// at a time), up to the length it has now (as `cat`'s reads are); anything else (a device,
/// a process substitution's `/dev/fd/N`, a directory's error) as `sys::read` gives it.
fn read_input(path: &std::path::Path) -> std::io::Result<crate::shell::io::Input> {
    if !path.starts_with("/dev") {
        let file = std::fs::File::open(path)?;
        let meta = file.metadata()?;
        if meta.is_file() {
            return Ok(crate::shell::io::file(Box::new(std::io::Read::take(
                file,
                meta.len(),
            ))));
        }
    }
    crate::sys::read(path).map(input)
}
