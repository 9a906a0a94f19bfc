//! Running programs: lists, `&&`/`||`, `set -e` and its exemptions, pipelines (stages in
//! copies of the shell, PIPESTATUS, pipefail), and the compound commands (if, loops, case,
//! subshells, groups, `[[ ]]`, `(( ))`).

use super::*;

impl Shell {
    /// Runs a script; returns its status.
    pub fn run_script(&mut self, src: &str, io: &Io) -> Status {
        self.run_program(src, io, false)
    }

    /// Runs `eval`'s or `source`'s text: as [`run_script`], but a syntax error is status 1,
    /// as bash gives it there.
    ///
    /// [`run_script`]: Shell::run_script
    pub fn run_sourced(&mut self, src: &str, io: &Io) -> Status {
        self.run_program_with(src, io, false, 1)
    }

    /// Runs a whole shell's script (the call's, `bash -c`, a script file): as [`run_script`],
    /// except that an error that aborts a complete command ([`Flow::Abort`]) goes on with
    /// the next one.
    ///
    /// [`run_script`]: Shell::run_script
    pub fn run_top(&mut self, src: &str, io: &Io) -> Status {
        self.run_program(src, io, true)
    }

    pub(super) fn run_program(&mut self, src: &str, io: &Io, top: bool) -> Status {
        self.run_program_with(src, io, top, 2)
    }

    fn run_program_with(&mut self, src: &str, io: &Io, top: bool, syntax_error: i32) -> Status {
        let program = match parse(src) {
            Ok(p) => p,
            Err(e) => {
                io.eprint(&format!("{e}\n"));
                return Ok(syntax_error);
            }
        };
        let mut status = 0;
        for cc in &program.complete_commands {
            status = match self.run_list(cc, io) {
                Err(Flow::Abort(s)) if top => {
                    self.last_status = s;
                    s
                }
                other => other?,
            };
        }
        Ok(status)
    }

    pub fn run_list(&mut self, list: &CompoundList, io: &Io) -> Status {
        let mut status = 0;
        for item in &list.0 {
            // `cmd &` runs in the foreground: a sandboxed call has no background jobs.
            let ast::CompoundListItem(and_or, _separator) = item;
            status = self.run_and_or(and_or, io)?;
        }
        Ok(status)
    }

    pub(super) fn run_and_or(&mut self, list: &ast::AndOrList, io: &Io) -> Status {
        let has_more = !list.additional.is_empty();
        if has_more {
            self.condition_depth += 1;
        }
        // Whether the pipeline that gave the status was negated with `!` (exempt from -e),
        // or is one compound command (its own commands met -e already: `{ a && b; }` that
        // ends on a skipped `b` does not exit, as in bash).
        let mut negated = list.first.bang || errexit_exempt(&list.first);
        let mut status = self.run_pipeline(&list.first, io);
        for (i, next) in list.additional.iter().enumerate() {
            let last = i + 1 == list.additional.len();
            let s = match status {
                Ok(s) => s,
                Err(f) => {
                    self.condition_depth -= 1;
                    return Err(f);
                }
            };
            let (run, p) = match next {
                AndOr::And(p) => (s == 0, p),
                AndOr::Or(p) => (s != 0, p),
            };
            if last {
                self.condition_depth -= 1;
            }
            if run {
                negated = p.bang || errexit_exempt(p);
            }
            status = if run { self.run_pipeline(p, io) } else { Ok(s) };
            if last && !run {
                // The list ended on a skipped operand: its status is not an error for -e.
                return status;
            }
        }
        let s = status?;
        if !negated {
            self.check_errexit(s, io)?;
        }
        Ok(s)
    }

    /// A command failed where `set -e` applies (not in a condition, not negated): the ERR
    /// trap runs, then -e exits.
    pub(super) fn check_errexit(&mut self, status: i32, io: &Io) -> Result<(), Flow> {
        if status == 0 || self.condition_depth > 0 {
            return Ok(());
        }
        if let Some(action) = self
            .options
            .traps
            .get("ERR")
            .filter(|a| !a.is_empty())
            .cloned()
        {
            // The trap's own failures do not trigger it again.
            self.condition_depth += 1;
            self.lineno_fixed += 1;
            let r = self.run_script(&action, io);
            self.lineno_fixed -= 1;
            self.condition_depth -= 1;
            self.last_status = status;
            if let Err(Flow::Exit(n)) = r {
                return Err(Flow::Exit(n));
            }
        }
        if self.options.errexit {
            return Err(Flow::Exit(status));
        }
        Ok(())
    }

    /// The end of a shell (a subshell, `bash -c`, a script, the call's shell on `exit`):
    /// runs the EXIT trap, once. `status` is the shell's; an `exit` in the trap replaces it.
    pub fn finish(&mut self, status: i32, io: &Io) -> i32 {
        let Some(action) = self.options.traps.remove("EXIT").filter(|a| !a.is_empty()) else {
            return status;
        };
        self.last_status = status;
        self.condition_depth += 1;
        let r = self.run_script(&action, io);
        self.condition_depth -= 1;
        match r {
            Err(Flow::Exit(n)) => n,
            _ => status,
        }
    }

    /// A copy of this shell for a subshell: traps are reset (ignored ones stay ignored), as
    /// bash resets them.
    pub fn subshell(&self) -> Shell {
        let mut sub = self.clone();
        sub.options.traps.retain(|_, a| a.is_empty());
        sub
    }

    pub(super) fn run_pipeline(&mut self, p: &Pipeline, io: &Io) -> Status {
        if p.bang {
            self.condition_depth += 1;
        }
        let started = p.timed.as_ref().map(|_| std::time::Instant::now());
        let result = self.run_pipeline_inner(p, io);
        // `time PIPELINE`: the report goes to the shell's stderr, after the pipeline.
        if let (Some(t), Some(start)) = (&p.timed, started) {
            let posix = matches!(t, brush_parser::ast::PipelineTimed::TimedWithPosixOutput(_));
            let format = match self.get("TIMEFORMAT") {
                Some(f) if !posix => f.to_string(),
                None if !posix => "\nreal\t%3lR\nuser\t%3lU\nsys\t%3lS".to_string(),
                _ => "real %2R\nuser %2U\nsys %2S".to_string(),
            };
            if !format.is_empty() {
                io.eprint(&format!("{}\n", time_report(&format, start.elapsed())));
            }
        }
        if p.bang {
            self.condition_depth -= 1;
        }
        let s = result?;
        let s = if p.bang { i32::from(s == 0) } else { s };
        self.last_status = s;
        Ok(s)
    }

    pub(super) fn run_pipeline_inner(&mut self, p: &Pipeline, io: &Io) -> Status {
        if p.seq.len() == 1 {
            let r = self.run_command(&p.seq[0], io);
            // bash sets PIPESTATUS after every pipeline, one command long included, when that
            // command is a simple one, a subshell, `[[ ]]` or `(( ))`; the other compound
            // commands leave what their last inner command set (`case` without a match,
            // nothing).
            let sets = matches!(
                &p.seq[0],
                Command::Simple(_)
                    | Command::ExtendedTest(..)
                    | Command::Compound(
                        CompoundCommand::Subshell(_) | CompoundCommand::Arithmetic(_),
                        _
                    )
            );
            if let Ok(s) = &r
                && sets
            {
                self.arrays.insert(
                    "PIPESTATUS".into(),
                    Array::Indexed([(0, s.to_string())].into_iter().collect()),
                );
            }
            return r;
        }
        // Where each stage writes, made before any runs (last first): a stage that may
        // stream is started by the pipe into it, while the stage before it is still writing.
        let n = p.seq.len();
        let mut outs: Vec<StageOut> = Vec::with_capacity(n);
        // The shell as the stages start (each expands its words in a copy of it), taken once.
        let mut snapshot: Option<std::rc::Rc<Shell>> = None;
        for i in (0..n).rev() {
            let out = if i + 1 == n {
                StageOut::Direct(io.out.clone())
            } else if let Some(wants) = reads_prefix(self, &p.seq[i + 1]) {
                let (s, pipe) = Sink::pipe(wants);
                StageOut::Pipe(s, pipe)
            } else if let Some(words) = stream_words(self, &p.seq[i + 1]) {
                let shell = snapshot
                    .get_or_insert_with(|| std::rc::Rc::new(self.clone()))
                    .clone();
                let (next, err) = (outs.last().map(StageOut::sink), io.err.clone());
                // Whether the stage ends an endless writer: head does, and so does a grep
                // that stops at a count or its first match.
                let stops = |w: &ast::Word| {
                    let v = w.value.as_str();
                    v.starts_with("--max-count")
                        || matches!(v, "--quiet" | "--silent")
                        || v.starts_with('-')
                            && !v.starts_with("--")
                            && (v.contains('m') || v.contains('q'))
                };
                let ends = match (words[0].value.as_str(), &next) {
                    ("head", _) => crate::shell::io::Ends::Itself,
                    ("grep" | "egrep" | "fgrep", _) if words[1..].iter().any(stops) => {
                        crate::shell::io::Ends::Itself
                    }
                    // A sed script with a `q` in it may quit (a `q` elsewhere, as in
                    // `s/q/x/`, only loses the guard against an endless writer that bash
                    // does not have either); without one, it writes lines on unless -n.
                    ("sed", _) if words[1..].iter().any(|w| w.value.contains('q')) => {
                        crate::shell::io::Ends::Itself
                    }
                    // An awk program with `exit` in it may stop reading; one without
                    // ends when the reader after it does, as bash's awk meets SIGPIPE at
                    // its next write (one that writes nothing more would read on forever).
                    ("awk", _) if words[1..].iter().any(|w| w.value.contains("exit")) => {
                        crate::shell::io::Ends::Itself
                    }
                    ("cat" | "awk", Some(next)) => crate::shell::io::Ends::Through(next.clone()),
                    ("sed", Some(next))
                        if !words[1..].iter().any(|w| w.value.starts_with("-n")) =>
                    {
                        crate::shell::io::Ends::Through(next.clone())
                    }
                    _ => crate::shell::io::Ends::Never,
                };
                let (s, spill) = Sink::spill(
                    Box::new(move || {
                        let next = next?;
                        let mut sub = (*shell).clone();
                        // Expanded as the stage's subshell would: its errors are its own, and it
                        // then runs in the shell after the writer, as it would have.
                        let argv =
                            crate::shell::expand::words(&mut sub, &words, &Io::discard()).ok()?;
                        // A built-in utility that reads its input a piece at a time runs
                        // as this shell again; a WebAssembly program on PATH as itself.
                        let program = match argv.first() {
                            Some(name) if STREAM_FILTERS.contains(&name.as_str()) => {
                                streams_stdin(&argv).then_some(None)?
                            }
                            Some(name) => Some(crate::shell::process::program_at(&sub, name)?),
                            None => return None,
                        };
                        if sub.options.xtrace {
                            let quoted: Vec<String> = argv
                                .iter()
                                .map(|w| crate::shell::xtrace::quote(w))
                                .collect();
                            err.write(sub.trace_line(&quoted.join(" ")).as_bytes());
                        }
                        crate::shell::process::Stage::start(&sub, &argv, program, next, err)
                            .map(|s| std::rc::Rc::new(s) as std::rc::Rc<dyn sh_utility::io::Stage>)
                    }),
                    ends,
                );
                StageOut::Spill(s, spill)
            } else {
                let (s, b) = Sink::buffer();
                StageOut::Buf(s, b)
            };
            outs.push(out);
        }
        outs.reverse();
        let mut stdin = io.stdin.clone();
        let mut statuses = Vec::new();
        let mut started: Option<std::rc::Rc<dyn sh_utility::io::Stage>> = None;
        for (i, cmd) in p.seq.iter().enumerate() {
            let s = if let Some(stage) = started.take() {
                // It ran alongside the stage before it; what is left is its end.
                stage.finish()
            } else {
                let stage_io = Io {
                    stdin: stdin.clone(),
                    out: outs[i].sink(),
                    err: io.err.clone(),
                    fds: io.fds.clone(),
                };
                // Each stage is a subshell: `set -e` ends the stage (not the shell) at its
                // first failure, and the ERR trap is not inherited, as in bash.
                let mut sub = self.clone();
                sub.options.traps.remove("ERR");
                match sub.run_command(cmd, &stage_io) {
                    Ok(s) => s,
                    Err(Flow::Exit(s)) | Err(Flow::Return(s)) | Err(Flow::Abort(s)) => s,
                    Err(_) => 0,
                }
            };
            statuses.push(s);
            match &outs[i] {
                StageOut::Direct(_) => {}
                StageOut::Buf(_, b) => stdin = input(std::mem::take(&mut *b.borrow_mut())),
                StageOut::Pipe(_, pipe) => {
                    stdin = input(std::mem::take(&mut pipe.borrow_mut().data));
                }
                StageOut::Spill(_, spill) => match spill.stage() {
                    Some(stage) => started = Some(stage),
                    None => stdin = input(spill.take()),
                },
            }
        }
        let last = *statuses.last().unwrap_or(&0);
        self.arrays.insert(
            "PIPESTATUS".into(),
            Array::list(statuses.iter().map(i32::to_string)),
        );
        if self.options.pipefail {
            return Ok(statuses
                .iter()
                .rev()
                .find(|&&s| s != 0)
                .copied()
                .unwrap_or(0));
        }
        Ok(last)
    }

    pub fn run_command(&mut self, cmd: &Command, io: &Io) -> Status {
        // A process substitution's `/dev/fd/N` lives as long as the command that names it; a
        // `>(...)` reads what the command wrote there once it has ended.
        let mark = crate::sys::substitutions_mark();
        let pending = PENDING_OUTPUTS.with(|p| p.borrow().len());
        let r = self.run_command_here(cmd, io);
        let waiting: Vec<PendingOutput> =
            PENDING_OUTPUTS.with(|p| p.borrow_mut().drain(pending..).collect());
        for (buf, sub, sub_io) in waiting {
            let input_bytes = buf.borrow().clone();
            let mut copy = self.clone();
            let child_io = Io {
                stdin: input(input_bytes),
                out: sub_io.out.clone(),
                err: sub_io.err.clone(),
                fds: sub_io.fds.clone(),
            };
            match copy.run_list(&sub.list, &child_io) {
                Ok(_) | Err(Flow::Exit(_)) | Err(Flow::Return(_)) | Err(Flow::Abort(_)) => {}
                Err(f) => {
                    crate::sys::substitutions_release(mark);
                    return Err(f);
                }
            }
        }
        crate::sys::substitutions_release(mark);
        r
    }

    pub(super) fn run_command_here(&mut self, cmd: &Command, io: &Io) -> Status {
        // `set -n`: nothing more runs.
        if self.options.noexec {
            return Ok(0);
        }
        // `[[`, `((` and `for` words read $LINENO too: the line they start on.
        if matches!(
            cmd,
            Command::ExtendedTest(..)
                | Command::Compound(
                    CompoundCommand::Arithmetic(_) | CompoundCommand::ForClause(_),
                    _
                )
        ) && self.lineno_fixed == 0
            && let Some(loc) = ast::SourceLocation::location(cmd)
        {
            self.lineno = loc.start.line;
        }
        match cmd {
            Command::Simple(sc) => {
                // $LINENO: the line the command starts on, in the script being run.
                if self.lineno_fixed == 0
                    && let Some(loc) = ast::SourceLocation::location(sc)
                {
                    self.lineno = loc.start.line;
                }
                self.run_simple(sc, io)
            }
            Command::Compound(cc, redirects) => {
                let io = match redirects {
                    Some(r) => match self.apply_redirects(&r.0, io)? {
                        Some(io) => io,
                        None => return Ok(1),
                    },
                    None => io.clone(),
                };
                self.run_compound(cc, &io)
            }
            Command::Function(def) => {
                let name = def.fname.value.clone();
                self.functions.insert(name, (def.to_string(), def.clone()));
                Ok(0)
            }
            Command::ExtendedTest(t, redirects) => {
                let io = match redirects {
                    Some(r) => match self.apply_redirects(&r.0, io)? {
                        Some(io) => io,
                        None => return Ok(1),
                    },
                    None => io.clone(),
                };
                match crate::shell::test::extended(self, &t.expr, &io) {
                    Ok(true) => Ok(0),
                    Ok(false) => Ok(1),
                    Err(e) => {
                        io.eprint(&format!("bash: {e}\n"));
                        Ok(2)
                    }
                }
            }
        }
    }

    pub(super) fn run_compound(&mut self, cc: &CompoundCommand, io: &Io) -> Status {
        match cc {
            CompoundCommand::BraceGroup(g) => self.run_list(&g.list, io),
            CompoundCommand::Subshell(s) => {
                let mut sub = self.subshell();
                // A subshell's `exec` redirections end with it.
                let fds = crate::shell::io::shell_fds();
                let status = match sub.run_list(&s.list, io) {
                    Ok(s) => s,
                    Err(Flow::Abort(s)) => s,
                    // A fatal error ends a subshell with 1, as bash's do.
                    Err(Flow::Exit(s)) => {
                        if crate::sys::take_fatal() {
                            1
                        } else {
                            s
                        }
                    }
                    Err(f) => {
                        crate::shell::io::restore_shell_fds(fds);
                        return Err(f);
                    }
                };
                let status = sub.finish(status, io);
                crate::shell::io::restore_shell_fds(fds);
                Ok(status)
            }
            CompoundCommand::IfClause(c) => {
                self.condition_depth += 1;
                let cond = self.run_list(&c.condition, io);
                self.condition_depth -= 1;
                if cond? == 0 {
                    return self.run_list(&c.then, io);
                }
                for e in c.elses.iter().flatten() {
                    match &e.condition {
                        Some(cond) => {
                            self.condition_depth += 1;
                            let r = self.run_list(cond, io);
                            self.condition_depth -= 1;
                            if r? == 0 {
                                return self.run_list(&e.body, io);
                            }
                        }
                        None => return self.run_list(&e.body, io),
                    }
                }
                Ok(0)
            }
            CompoundCommand::ForClause(f) => {
                let name = &f.variable_name;
                if !crate::shell::builtins::is_identifier(name) {
                    io.eprint(&format!("bash: `{name}': not a valid identifier\n"));
                    return Ok(1);
                }
                let values = match &f.values {
                    Some(words) => crate::shell::expand::words(self, words, io)?,
                    None => self.positional.clone(),
                };
                let mut status = 0;
                self.loop_depth += 1;
                let r = (|| {
                    for v in values {
                        self.set(&f.variable_name, v);
                        if !self.iteration(&f.body.list, io, &mut status)? {
                            break;
                        }
                    }
                    Ok(status)
                })();
                self.loop_depth -= 1;
                r
            }
            CompoundCommand::ArithmeticForClause(f) => {
                let eval = |sh: &mut Shell,
                            e: &Option<ast::UnexpandedArithmeticExpr>|
                 -> Result<i64, Flow> {
                    match e {
                        Some(e) => crate::shell::expand::arith_str(sh, &e.value, io),
                        None => Ok(1),
                    }
                };
                eval(self, &f.initializer)?;
                let mut status = 0;
                self.loop_depth += 1;
                let r = (|| {
                    while eval(self, &f.condition)? != 0 {
                        if !self.iteration(&f.body.list, io, &mut status)? {
                            break;
                        }
                        eval(self, &f.updater)?;
                    }
                    Ok(status)
                })();
                self.loop_depth -= 1;
                r
            }
            CompoundCommand::WhileClause(w) | CompoundCommand::UntilClause(w) => {
                let until = matches!(cc, CompoundCommand::UntilClause(_));
                let mut status = 0;
                self.loop_depth += 1;
                let r = (|| {
                    loop {
                        self.condition_depth += 1;
                        let c = self.run_list(&w.0, io);
                        self.condition_depth -= 1;
                        // `while break; do`: break in the condition ends this loop, as in
                        // bash, and so does a `continue` there (bash leaves the loop too).
                        let c = match c {
                            Err(Flow::Break(n)) if n > 1 => return Err(Flow::Break(n - 1)),
                            Err(Flow::Continue(n)) if n > 1 => {
                                return Err(Flow::Continue(n - 1));
                            }
                            Err(Flow::Break(_) | Flow::Continue(_)) => break,
                            other => other?,
                        };
                        if (c == 0) == until {
                            break;
                        }
                        if !self.iteration(&w.1.list, io, &mut status)? {
                            break;
                        }
                    }
                    Ok(status)
                })();
                self.loop_depth -= 1;
                r
            }
            CompoundCommand::CaseClause(c) => {
                let value = crate::shell::expand::single(self, &c.value.value, io)?;
                let mut i = 0;
                let mut fallthrough = false;
                let mut status = 0;
                while i < c.cases.len() {
                    let item = &c.cases[i];
                    let mut matched = fallthrough;
                    if !matched {
                        for p in &item.patterns {
                            let pat = crate::shell::expand::pattern(self, &p.value, io)?;
                            if crate::shell::expand::shell_pattern_matches(self, &pat, &value) {
                                matched = true;
                                break;
                            }
                        }
                    }
                    if matched {
                        if let Some(cmd) = &item.cmd {
                            status = self.run_list(cmd, io)?;
                        }
                        match item.post_action {
                            ast::CaseItemPostAction::ExitCase => return Ok(status),
                            ast::CaseItemPostAction::UnconditionallyExecuteNextCaseItem => {
                                fallthrough = true;
                            }
                            ast::CaseItemPostAction::ContinueEvaluatingCases => fallthrough = false,
                        }
                    }
                    i += 1;
                }
                Ok(status)
            }
            CompoundCommand::Arithmetic(a) => {
                if self.options.xtrace {
                    let line = self.trace_line(&format!("(({}))", a.expr.value));
                    io.eprint(&line);
                }
                crate::shell::expand::arith_command(self, &a.expr.value, io)
            }
            CompoundCommand::Coprocess(_) => {
                io.eprint("bash: coproc: not supported in burrow's shell\n");
                Ok(2)
            }
        }
    }

    /// Runs one loop iteration's body; false when the loop must stop (`break`). `break N` and
    /// `continue N` for N > 1 propagate to the enclosing loop with N - 1.
    pub(super) fn iteration(
        &mut self,
        body: &CompoundList,
        io: &Io,
        status: &mut i32,
    ) -> Result<bool, Flow> {
        match self.run_list(body, io) {
            Ok(s) => {
                *status = s;
                Ok(true)
            }
            Err(Flow::Break(n)) if n > 1 => Err(Flow::Break(n - 1)),
            Err(Flow::Break(_)) => Ok(false),
            Err(Flow::Continue(n)) if n > 1 => Err(Flow::Continue(n - 1)),
            Err(Flow::Continue(_)) => Ok(true),
            Err(f) => Err(f),
        }
    }
}

/// bash's TIMEFORMAT: `%[p][l]R` (real), `%[p][l]U` (user), `%[p][l]S` (system), `%P` (CPU
/// percentage), `%%`; p is 0 to 3 decimals (3 by default), l the `MmS.FFFs` form. The sandbox
/// has no CPU accounting: a call runs on one thread, so user time is reported as the real
/// time and system time as zero.
pub(super) fn time_report(format: &str, elapsed: std::time::Duration) -> String {
    let real = elapsed.as_secs_f64();
    let mut out = String::new();
    let mut chars = format.chars().peekable();
    while let Some(c) = chars.next() {
        if c != '%' {
            out.push(c);
            continue;
        }
        let mut precision = 3usize;
        let mut long = false;
        if let Some(d) = chars.peek().and_then(|d| d.to_digit(10)) {
            precision = (d as usize).min(3);
            chars.next();
        }
        if chars.peek() == Some(&'l') {
            long = true;
            chars.next();
        }
        let value = match chars.next() {
            Some('R') | Some('U') => real,
            Some('S') => 0.0,
            Some('P') => {
                out.push_str(if real > 0.0 { "100.00" } else { "0.00" });
                continue;
            }
            Some('%') => {
                out.push('%');
                continue;
            }
            Some(o) => {
                out.push('%');
                out.push(o);
                continue;
            }
            None => {
                out.push('%');
                break;
            }
        };
        // Truncated, not rounded, as bash does.
        let scale = 10f64.powi(precision as i32);
        let v = (value * scale).floor() / scale;
        if long {
            let minutes = (v / 60.0).floor();
            out.push_str(&format!(
                "{}m{:.precision$}s",
                minutes as u64,
                v - minutes * 60.0
            ));
        } else {
            out.push_str(&format!("{v:.precision$}"));
        }
    }
    out
}

/// Where one stage of a pipeline writes.
enum StageOut {
    /// The pipeline's own output (the last stage).
    Direct(Sink),
    /// A buffer the next stage reads once this one is done.
    Buf(Sink, std::rc::Rc<std::cell::RefCell<Vec<u8>>>),
    /// Into a next stage that reads a known prefix.
    Pipe(
        Sink,
        std::rc::Rc<std::cell::RefCell<crate::shell::io::Pipe>>,
    ),
    /// Into a next stage that may stream.
    Spill(Sink, std::rc::Rc<crate::shell::io::Spill>),
}

impl StageOut {
    fn sink(&self) -> Sink {
        match self {
            StageOut::Direct(s)
            | StageOut::Buf(s, _)
            | StageOut::Pipe(s, _)
            | StageOut::Spill(s, _) => s.clone(),
        }
    }
}

/// `sh` and `bash` run as commands: a new whole shell (options, `-c` or a script file or
/// stdin), its variables ending with it and its EXIT trap run at its end.
pub fn bash_command(sh: &Shell, args: &[String], io: &Io) -> Status {
    use sh_utility::format::io_msg;
    use sh_utility::io::read_all;
    let mut sub = sh.subshell();
    // Leading shell options (`bash -e -u -c ...`, `sh -x script`, `-o pipefail`) are
    // the new shell's `set` options.
    let mut k = 0;
    let mut sets: Vec<String> = vec!["set".into()];
    while let Some(a) = args.get(k)
        && a.len() > 1
        && (a.starts_with('-') || a.starts_with('+'))
        && a != "-c"
        && !a.starts_with("--")
    {
        if a == "-o" || a == "+o" {
            sets.extend(args[k..(k + 2).min(args.len())].iter().cloned());
            k += 2;
        } else {
            sets.push(a.clone());
            k += 1;
        }
    }
    if k > 0 {
        match crate::shell::builtins::run(&mut sub, &sets, io) {
            Some(Ok(0)) => {}
            _ => return Ok(2),
        }
    }
    let args = &args[k..];
    let dash_c = args.iter().any(|a| a == "-c");
    sub.invocation = if dash_c {
        Some('c')
    } else if args.is_empty() {
        Some('s')
    } else {
        None
    };
    let src = if let Some(i) = args.iter().position(|a| a == "-c") {
        sub.arg0 = args.get(i + 2).cloned().unwrap_or_else(|| "bash".into());
        sub.positional = args.get(i + 3..).map(|s| s.to_vec()).unwrap_or_default();
        args.get(i + 1).cloned().unwrap_or_default()
    } else if let Some(f) = args.first() {
        match std::fs::read_to_string(sh.path(f)) {
            Ok(src) => {
                sub.arg0 = f.clone();
                sub.positional = args[1..].to_vec();
                src
            }
            Err(e) => {
                io.eprint(&format!("bash: {f}: {}\n", io_msg(&e)));
                return Ok(127);
            }
        }
    } else {
        // The script on stdin, as `bash < file` or `... | bash` run it.
        String::from_utf8_lossy(&read_all(&io.stdin)).into_owned()
    };
    // A whole shell: its variables end with it and its EXIT trap runs at its end.
    let status = match sub.run_top(&src, io) {
        Ok(s) => s,
        // A fatal error (`${x?}`, a bad substitution) ends `bash -c` with 127 and a
        // script (a file or stdin) with 1, as bash does.
        Err(crate::shell::Flow::Exit(s)) => match crate::sys::take_fatal() {
            true if dash_c => 127,
            true => 1,
            false => s,
        },
        Err(_) => 0,
    };
    Ok(sub.finish(status, io))
}
