//! The shell as its utilities see it: the interpreter's side of [`sh_utility::Ctx`].

use sh_utility::{Ctx, Io, Status};

use super::Shell;

impl Ctx for Shell {
    fn cwd(&self) -> &str {
        &self.cwd
    }

    fn get(&self, name: &str) -> Option<&str> {
        Shell::get(self, name)
    }

    fn exported(&self) -> Vec<(String, String)> {
        self.vars
            .iter()
            .filter(|(_, v)| v.exported)
            .map(|(k, v)| (k.clone(), v.value.clone()))
            .collect()
    }

    fn dispatch(&mut self, argv: &[String], io: &Io) -> Status {
        Shell::dispatch(self, argv, io)
    }

    fn env(&self, name: &str) -> Option<&str> {
        self.vars
            .get(name)
            .filter(|v| v.exported)
            .map(|v| v.value.as_str())
    }

    fn run_in_copy(&self, script: &str, io: &Io) -> i32 {
        let mut sub = self.clone();
        match Shell::run_script(&mut sub, script, io) {
            Ok(s) | Err(sh_utility::Flow::Exit(s)) => s,
            Err(_) => 0,
        }
    }

    fn in_dir(&self, cwd: &str) -> Box<dyn Ctx + '_> {
        let mut sub = self.clone();
        sub.cwd = cwd.to_string();
        Box::new(sub)
    }

    fn spawn_installed(
        &self,
        program: &str,
        argv: &[String],
        env: &[(String, String)],
        io: &Io,
    ) -> i32 {
        super::process::spawn(
            self,
            super::process::Program::Installed(program.into()),
            argv,
            env,
            io,
        )
    }
}
