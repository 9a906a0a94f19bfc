//! Simple commands: assignments and their prefixes, words to argv, and running a name as a
//! function, a shell builtin, a program on PATH or a built-in utility; functions' frames,
//! process substitution and `$(...)` capture.

use super::*;

impl Shell {
    pub(super) fn run_simple(&mut self, sc: &ast::SimpleCommand, io: &Io) -> Status {
        let mut assignments = Vec::new();
        let mut words: Vec<ast::Word> = Vec::new();
        let mut redirects = Vec::new();
        for item in sc.prefix.iter().flat_map(|p| p.0.iter()) {
            match item {
                ast::CommandPrefixOrSuffixItem::AssignmentWord(a, _) => assignments.push(a.clone()),
                ast::CommandPrefixOrSuffixItem::IoRedirect(r) => redirects.push(r.clone()),
                ast::CommandPrefixOrSuffixItem::Word(w) => words.push(w.clone()),
                ast::CommandPrefixOrSuffixItem::ProcessSubstitution(kind, cmd) => {
                    match self.process_substitution(kind, cmd, io)? {
                        Some(w) => words.push(w),
                        None => return Ok(2),
                    }
                }
            }
        }
        if let Some(w) = &sc.word_or_name {
            words.push(w.clone());
        }
        // `declare -a a=(...)`, `local arr=("$@")`: a declaration builtin's array assignments
        // are assignments (their items expanded as an array's), not words.
        let declaration = sc.word_or_name.as_ref().is_some_and(|w| {
            matches!(
                w.value.as_str(),
                "readonly" | "declare" | "local" | "typeset"
            )
        });
        let mut array_assignments = Vec::new();
        for item in sc.suffix.iter().flat_map(|p| p.0.iter()) {
            match item {
                ast::CommandPrefixOrSuffixItem::Word(w) => words.push(w.clone()),
                ast::CommandPrefixOrSuffixItem::IoRedirect(r) => redirects.push(r.clone()),
                ast::CommandPrefixOrSuffixItem::AssignmentWord(a, _)
                    if declaration && matches!(a.value, ast::AssignmentValue::Array(_)) =>
                {
                    array_assignments.push(a.clone());
                }
                ast::CommandPrefixOrSuffixItem::AssignmentWord(_, w) => words.push(w.clone()),
                ast::CommandPrefixOrSuffixItem::ProcessSubstitution(kind, cmd) => {
                    match self.process_substitution(kind, cmd, io)? {
                        Some(w) => words.push(w),
                        None => return Ok(2),
                    }
                }
            }
        }
        // Aliases: the first word, unquoted.
        if let Some(first) = words.first()
            && let Some(alias) = self.aliases.get(&first.value).cloned()
        {
            let rest: Vec<String> = words[1..].iter().map(|w| w.value.clone()).collect();
            let src = format!("{alias} {}", rest.join(" "));
            let io = match self.apply_redirects(&redirects, io)? {
                Some(io) => io,
                None => return Ok(1),
            };
            let mut s = self.clone();
            s.aliases.remove(&first.value);
            let r = s.run_script(&src, &io);
            // Keep state changes of the expanded alias (it runs in this shell).
            let aliases = std::mem::take(&mut self.aliases);
            *self = s;
            self.aliases = aliases;
            return r;
        }
        self.subst_status = None;
        // A declaration builtin's assignment arguments (`export x=~/bin:~/lib`, `local f=$1`)
        // are expanded as assignments are, as in bash: tildes after `=` and each `:`, and no
        // field splitting or globbing of the value.
        let declaring = words.first().is_some_and(|w| {
            matches!(
                w.value.as_str(),
                "export" | "readonly" | "declare" | "local" | "typeset"
            )
        });
        let mut assignment_args = vec![false; words.len()];
        if declaring {
            for (k, w) in words.iter_mut().enumerate().skip(1) {
                if let Some(eq) = w.value.find('=')
                    && eq > 0
                    && crate::shell::builtins::is_assignable(w.value[..eq].trim_end_matches('+'))
                {
                    let (name, value) = w.value.split_at(eq + 1);
                    // `:` before the value makes a leading `~` one to expand as well.
                    let value = crate::shell::expand::assignment_tildes(self, &format!(":{value}"));
                    w.value = format!("{name}{}", &value[1..]);
                    assignment_args[k] = true;
                }
            }
        }
        let argv = if declaring {
            let mut argv = Vec::new();
            for (w, assignment) in words.iter().zip(&assignment_args) {
                if *assignment {
                    argv.extend(crate::shell::expand::assignment_argument(self, w, io)?);
                } else {
                    argv.extend(crate::shell::expand::words(
                        self,
                        std::slice::from_ref(w),
                        io,
                    )?);
                }
            }
            argv
        } else {
            crate::shell::expand::words(self, &words, io)?
        };
        // `exec` with only redirections (and `{var}` names for them) changes the shell's own
        // descriptors for the rest of the call.
        if argv.first().map(String::as_str) == Some("exec")
            && !redirects.is_empty()
            && argv[1..].iter().all(|a| a == "--" || fd_var(a).is_some())
        {
            let names: Vec<String> = argv[1..].iter().filter(|a| *a != "--").cloned().collect();
            return self.exec_redirects(&names, &redirects, io);
        }
        let io2 = match self.apply_redirects(&redirects, io)? {
            Some(io) => io,
            None => return Ok(1),
        };
        if let Some(a) = array_assignments.last() {
            // `$_`: an array declaration's last name.
            let name = match &a.name {
                ast::AssignmentName::VariableName(n) => n.clone(),
                ast::AssignmentName::ArrayElementName(n, _) => n.clone(),
            };
            let r = self.declare_arrays(&argv, &array_assignments, &io2);
            self.set_last_arg(name);
            return r;
        }
        if argv.is_empty() {
            crate::shell::xtrace::take();
            for a in &assignments {
                // $PS4 as it is before the assignment it traces.
                let prefix = self.options.xtrace.then(|| self.trace_prefix());
                if !self.assign(a, io)? {
                    return Err(Flow::Abort(1));
                }
                if let Some(prefix) = prefix {
                    for t in crate::shell::xtrace::take() {
                        io2.eprint(&format!("{prefix}{t}\n"));
                    }
                }
            }
            self.set_last_arg(String::new());
            // No command: the status is the last command substitution's, as in bash.
            return Ok(self.subst_status.take().unwrap_or(0));
        }
        // Assignments before a command apply to that command only (exported to it).
        crate::shell::xtrace::take();
        let mut saved = Vec::new();
        for a in &assignments {
            let name = match &a.name {
                ast::AssignmentName::VariableName(n) => n.clone(),
                ast::AssignmentName::ArrayElementName(n, _) => n.clone(),
            };
            saved.push((name.clone(), self.vars.get(&name).cloned()));
            if !self.assign(a, io)? {
                // bash runs no command when one of its assignments is refused.
                saved.pop();
                for (name, old) in saved {
                    match old {
                        Some(v) => self.vars.insert(name, v),
                        None => self.vars.remove(&name),
                    };
                }
                return Err(Flow::Abort(1));
            }
            if let Some(v) = self.vars.get_mut(&name) {
                v.exported = true;
            }
        }
        if self.options.xtrace {
            self.trace_words(&argv, &io2);
        }
        let mut r = self.dispatch(&argv, &io2);
        if let Some(last) = argv.last() {
            self.set_last_arg(last.clone());
        }
        // It wrote to a pipe whose reader has gone: SIGPIPE ends it (and the stage it is in).
        if r.is_ok() && io.out.broken() {
            r = Err(Flow::Exit(141));
        }
        for (name, old) in saved {
            match old {
                Some(v) => {
                    self.vars.insert(name, v);
                }
                None => {
                    self.vars.remove(&name);
                }
            }
        }
        io2.out.flush();
        r
    }

    /// A declaration builtin with array assignments (`declare -A m=([k]=v) n`): each array is
    /// declared with the options (so `-A`, `-i` and a function's `local` apply first), then
    /// assigned as `a=(...)` is, then made readonly if asked; the other names follow.
    pub(super) fn declare_arrays(
        &mut self,
        argv: &[String],
        arrays: &[ast::Assignment],
        io: &Io,
    ) -> Status {
        let Some(cmd) = argv.first() else {
            return Ok(0);
        };
        let options: Vec<String> = argv[1..]
            .iter()
            .take_while(|a| a.len() > 1 && (a.starts_with('-') || a.starts_with('+')) && *a != "--")
            .cloned()
            .collect();
        let readonly = cmd == "readonly"
            || options
                .iter()
                .any(|o| o.starts_with('-') && o.contains('r'));
        // The declaration itself: never readonly yet (the values are still to come).
        let mut first: Vec<String> = vec![if cmd == "readonly" {
            "declare".to_string()
        } else {
            cmd.clone()
        }];
        if cmd == "readonly" {
            first.push("-g".to_string());
        }
        for o in &options {
            let o = o.replace('r', "");
            if o.len() > 1 {
                first.push(o);
            }
        }
        let mut status = 0;
        for a in arrays {
            let name = match &a.name {
                ast::AssignmentName::VariableName(n)
                | ast::AssignmentName::ArrayElementName(n, _) => n.clone(),
            };
            if self.readonly_refused(&name, io) {
                status = 1;
                continue;
            }
            let mut declare = first.clone();
            declare.push(name.clone());
            let s = self.dispatch(&declare, io)?;
            if s != 0 {
                status = s;
                continue;
            }
            if !self.assign(a, io)? {
                status = 1;
                continue;
            }
            if readonly {
                self.set_attr(&name, 'r', true);
            }
        }
        let names = argv.len() - 1 - options.len();
        if names > 0 {
            let s = self.dispatch(argv, io)?;
            if s != 0 {
                status = s;
            }
        }
        Ok(status)
    }

    /// An assignment statement (or a command's prefix assignment). False when it was refused
    /// (a readonly variable), with bash's message printed.
    pub fn assign(&mut self, a: &ast::Assignment, io: &Io) -> Result<bool, Flow> {
        // Through a nameref: to what it names (an element when it names one).
        let followed;
        let a = match &a.name {
            ast::AssignmentName::VariableName(n) | ast::AssignmentName::ArrayElementName(n, _)
                if self.is_ref(n) =>
            {
                let target = self.resolve_ref(n);
                if target.is_empty() {
                    io.eprint(&format!("bash: warning: {n}: circular name reference\n"));
                    return Ok(false);
                }
                let mut b = a.clone();
                b.name = match (&a.name, crate::shell::nameref::element(&target)) {
                    (ast::AssignmentName::VariableName(_), Some((base, index))) => {
                        ast::AssignmentName::ArrayElementName(base.into(), index.into())
                    }
                    (ast::AssignmentName::ArrayElementName(_, index), None) => {
                        ast::AssignmentName::ArrayElementName(target.clone(), index.clone())
                    }
                    _ => ast::AssignmentName::VariableName(target.clone()),
                };
                followed = b;
                &followed
            }
            _ => a,
        };
        let name = match &a.name {
            ast::AssignmentName::VariableName(n) => n.clone(),
            ast::AssignmentName::ArrayElementName(n, index) => {
                let value = match &a.value {
                    ast::AssignmentValue::Scalar(w) => {
                        crate::shell::expand::single(self, &w.value, io)?
                    }
                    ast::AssignmentValue::Array(_) => {
                        io.eprint(&format!(
                            "bash: {n}[{index}]: cannot assign list to array member\n"
                        ));
                        return Ok(false);
                    }
                };
                if self.readonly_refused(n, io) {
                    return Ok(false);
                }
                if self.options.xtrace {
                    let op = if a.append { "+=" } else { "=" };
                    let shown = crate::shell::xtrace::quote_value(&value);
                    crate::shell::xtrace::note(format!("{n}[{index}]{op}{shown}"));
                }
                self.array_set(n, index, value, a.append);
                return Ok(true);
            }
        };
        if self.readonly_refused(&name, io) {
            return Ok(false);
        }
        match &a.value {
            ast::AssignmentValue::Scalar(w) => {
                let raw = crate::shell::expand::assignment_tildes(self, &w.value);
                let value = crate::shell::expand::single(self, &raw, io)?;
                if self.options.xtrace {
                    let op = if a.append { "+=" } else { "=" };
                    let shown = crate::shell::xtrace::quote_value(&value);
                    crate::shell::xtrace::note(format!("{name}{op}{shown}"));
                }
                let old = a.append.then(|| self.get(&name).unwrap_or("").to_string());
                let value = self.shaped(&name, value, old.as_deref(), "", io)?;
                self.set_shaped(&name, value);
            }
            ast::AssignmentValue::Array(items) => {
                if self.options.xtrace {
                    crate::shell::xtrace::note(a.to_string());
                }
                let assoc = matches!(self.arrays.get(&name), Some(Array::Assoc(_)));
                let mut array = match (a.append, self.arrays.remove(&name)) {
                    (true, Some(existing)) => existing,
                    (true, None) => {
                        let mut m = BTreeMap::new();
                        if let Some(v) = self.vars.remove(&name) {
                            m.insert(0, v.value);
                        }
                        Array::Indexed(m)
                    }
                    (false, _) if assoc => Array::Assoc(BTreeMap::new()),
                    (false, _) => Array::Indexed(BTreeMap::new()),
                };
                self.vars.remove(&name);
                let mut next = array.next_index();
                for (key, w) in items {
                    let key = match key {
                        Some(k) => Some(crate::shell::expand::single(self, &k.value, io)?),
                        None => None,
                    };
                    let vals = match &key {
                        // `[k]=v` is one value, unsplit.
                        Some(_) => vec![crate::shell::expand::single(self, &w.value, io)?],
                        None => crate::shell::expand::words(self, std::slice::from_ref(w), io)?,
                    };
                    for v in vals {
                        match &mut array {
                            Array::Indexed(m) => {
                                let i = match &key {
                                    Some(k) => {
                                        crate::shell::expand::arith_str(self, k, io).unwrap_or(0)
                                    }
                                    None => next,
                                };
                                m.insert(i, v);
                                next = i + 1;
                            }
                            Array::Assoc(m) => {
                                m.insert(key.clone().unwrap_or_default(), v);
                            }
                        }
                    }
                }
                if self.attrs.contains_key(&name) {
                    let mut shaped = array.clone();
                    match &mut shaped {
                        Array::Indexed(m) => {
                            for v in m.values_mut() {
                                *v = self.attr_value(&name, std::mem::take(v), None);
                            }
                        }
                        Array::Assoc(m) => {
                            for v in m.values_mut() {
                                *v = self.attr_value(&name, std::mem::take(v), None);
                            }
                        }
                    }
                    array = shaped;
                }
                self.arrays.insert(name, array);
            }
        }
        Ok(true)
    }

    /// Runs a command by name: a function, a shell builtin, a program or script on PATH (which
    /// may shadow the built-in utilities, as /workspace/.bin comes first), a built-in
    /// utility; else bash's 127.
    pub fn dispatch(&mut self, argv: &[String], io: &Io) -> Status {
        // A `timeout` whose time is up stops its command here, before the next one.
        if crate::sys::deadline_passed() {
            return Err(Flow::Exit(124));
        }
        // `/usr/bin/cat` and `/bin/cat` are the built-in `cat` (the sandbox lists every
        // built-in utility there, as empty files).
        if let Some(base) = argv[0]
            .strip_prefix("/usr/bin/")
            .or_else(|| argv[0].strip_prefix("/bin/"))
            && crate::shell::builtins::is_builtin(base)
            && (!crate::shell::builtins::is_shell_builtin(base)
                || matches!(
                    base,
                    "echo" | "printf" | "true" | "false" | "test" | "[" | "pwd"
                ))
        {
            let mut argv = argv.to_vec();
            argv[0] = base.to_string();
            return crate::sys::with_stdin(&io.stdin, || self.dispatch_name(&argv, io));
        }
        crate::sys::with_stdin(&io.stdin, || self.dispatch_name(argv, io))
    }

    pub(super) fn dispatch_name(&mut self, argv: &[String], io: &Io) -> Status {
        let name = argv[0].as_str();
        if let Some((_, def)) = self.functions.get(name).cloned() {
            return self.call_function(&def, argv, io);
        }
        if !crate::shell::builtins::is_shell_builtin(name)
            && let Some(path) = crate::shell::process::find(self, name)
        {
            return crate::shell::process::exec(self, &path, argv, io);
        }
        if let Some(s) = crate::shell::builtins::run(self, argv, io) {
            return s;
        }
        if name.contains('/') {
            let p = self.path(name);
            if p.is_dir() {
                io.eprint(&format!("bash: {name}: Is a directory\n"));
                return Ok(126);
            }
            io.eprint(&format!("bash: {name}: No such file or directory\n"));
            return Ok(127);
        }
        io.eprint(&format!("bash: {name}: command not found\n"));
        Ok(127)
    }

    pub(super) fn call_function(
        &mut self,
        def: &ast::FunctionDefinition,
        argv: &[String],
        io: &Io,
    ) -> Status {
        // bash's FUNCNEST, fixed: the interpreter recurses on the guest stack, and a clear
        // error beats a trap when a function recurses without end.
        if self.locals.len() >= MAX_FUNCTION_NESTING {
            io.eprint(&format!(
                "bash: {}: maximum function nesting level exceeded ({MAX_FUNCTION_NESTING})\n",
                argv[0]
            ));
            return Ok(1);
        }
        let saved_pos = std::mem::replace(&mut self.positional, argv[1..].to_vec());
        self.locals.push(Vec::new());
        let ast::FunctionBody(body, redirects) = &def.body;
        let io = match redirects {
            Some(r) => match self.apply_redirects(&r.0, io)? {
                Some(io) => io,
                None => return Ok(1),
            },
            None => io.clone(),
        };
        // FUNCNAME and BASH_LINENO: the call stack, innermost first.
        let line = self.lineno.to_string();
        self.push_frame("FUNCNAME", argv[0].clone());
        self.push_frame("BASH_LINENO", line);
        let r = self.run_compound(body, &io);
        self.pop_frame("FUNCNAME");
        self.pop_frame("BASH_LINENO");
        let frame = self.locals.pop().unwrap_or_default();
        for (name, old_var, old_array, old_attrs) in frame.into_iter().rev() {
            match old_attrs {
                Some(a) => self.attrs.insert(name.clone(), a),
                None => self.attrs.remove(&name),
            };
            match old_var {
                Some(v) => {
                    self.vars.insert(name.clone(), v);
                }
                None => {
                    self.vars.remove(&name);
                }
            }
            match old_array {
                Some(a) => {
                    self.arrays.insert(name, a);
                }
                None => {
                    self.arrays.remove(&name);
                }
            }
        }
        self.positional = saved_pos;
        match r {
            Err(Flow::Return(s)) => Ok(s),
            other => other,
        }
    }

    /// Puts `value` first in the call-stack array `name`.
    fn push_frame(&mut self, name: &str, value: String) {
        let mut values = match self.arrays.get(name) {
            Some(a) => a.values(),
            None => Vec::new(),
        };
        values.insert(0, value);
        self.arrays.insert(name.to_string(), Array::list(values));
    }

    /// Takes the first element off the call-stack array `name` (unset when it empties).
    fn pop_frame(&mut self, name: &str) {
        let mut values = match self.arrays.get(name) {
            Some(a) => a.values(),
            None => return,
        };
        if !values.is_empty() {
            values.remove(0);
        }
        if values.is_empty() {
            self.arrays.remove(name);
            return;
        }
        self.arrays.insert(name.to_string(), Array::list(values));
    }

    /// `<(cmd)`: runs cmd now in a copy of the shell (bash runs it alongside; its output is
    /// the same) and gives the word `/dev/fd/N` that reads its output, which the built-in
    /// utilities open like a file. `>(cmd)` is refused (None after the message).
    pub(super) fn process_substitution(
        &mut self,
        kind: &ast::ProcessSubstitutionKind,
        cmd: &ast::SubshellCommand,
        io: &Io,
    ) -> Result<Option<ast::Word>, Flow> {
        if matches!(kind, ast::ProcessSubstitutionKind::Write) {
            // `>(cmd)`: the command writes into a buffer; cmd reads it when the command ends
            // (see `run_command`), with this shell's output.
            let (name, buf) = crate::sys::output_substitution();
            PENDING_OUTPUTS.with(|p| p.borrow_mut().push((buf, cmd.clone(), io.clone())));
            return Ok(Some(ast::Word {
                value: name,
                loc: None,
            }));
        }
        let (r, bytes) = self.in_subshell(io, |sub, sub_io| sub.run_list(&cmd.list, sub_io));
        match r {
            Ok(_) | Err(Flow::Exit(_)) | Err(Flow::Return(_)) | Err(Flow::Abort(_)) => {}
            Err(f) => return Err(f),
        }
        let name = crate::sys::substitution(bytes);
        Ok(Some(ast::Word {
            value: name,
            loc: None,
        }))
    }

    /// Runs `f` in a copy of the shell with empty stdin and stdout captured: its result and
    /// the bytes it wrote (for `$(...)` and `<(...)`).
    pub(super) fn in_subshell(
        &mut self,
        io: &Io,
        f: impl FnOnce(&mut Shell, &Io) -> Status,
    ) -> (Status, Vec<u8>) {
        let (out, buf) = Sink::buffer();
        // Like `( ... )`, its `exec` redirections end with it.
        let fds = crate::shell::io::shell_fds();
        // The capture is the subshell's descriptor 1, so that its own `exec >file` moves
        // what it writes afterwards (`x=$(exec >/dev/null; echo inner)` captures nothing).
        crate::shell::io::set_shell_fd(1, Some(out));
        let sub_io = Io {
            stdin: input(Vec::new()),
            out: Sink::Stdout,
            err: io.err.clone(),
            fds: io.fds.clone(),
        };
        let mut sub = self.subshell();
        let r = match f(&mut sub, &sub_io) {
            Ok(s) | Err(Flow::Exit(s)) | Err(Flow::Abort(s)) => Ok(sub.finish(s, &sub_io)),
            other => other,
        };
        crate::shell::io::restore_shell_fds(fds);
        let bytes = buf.borrow().clone();
        (r, bytes)
    }

    /// Runs `src` in a copy of the shell and returns its stdout (for `$(...)`).
    pub fn capture(&mut self, src: &str, io: &Io) -> Result<String, Flow> {
        // Outside POSIX mode bash clears -e in command substitutions (unless
        // `shopt -s inherit_errexit`).
        let (r, bytes) = self.in_subshell(io, |sub, sub_io| {
            sub.options.errexit &= sub.options.shopt("inherit_errexit");
            sub.run_script(src, sub_io)
        });
        let status = match r {
            Ok(s) | Err(Flow::Exit(s)) | Err(Flow::Return(s)) | Err(Flow::Abort(s)) => s,
            Err(_) => 0,
        };
        self.last_status = status;
        self.subst_status = Some(status);
        // A shell string cannot hold a NUL byte: bash drops them, with a warning.
        let bytes = if bytes.contains(&0) {
            io.eprint("bash: warning: command substitution: ignored null byte in input\n");
            bytes.into_iter().filter(|b| *b != 0).collect()
        } else {
            bytes
        };
        let mut text = String::from_utf8_lossy(&bytes).into_owned();
        while text.ends_with('\n') {
            text.pop();
        }
        Ok(text)
    }
}
