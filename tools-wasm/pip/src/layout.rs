//! Where the Python toolchain is, inside the sandbox, and where a session's packages go:
//! shared by the launchers and pip.

use sh_utility::Ctx;

/// Where the python toolchain appears in the sandbox.
pub const PYTHON_DIR: &str = "/opt/burrow/toolchains/python";

/// The session's own packages (what pip installs), under `$HOME`.
pub fn site_packages(sh: &dyn Ctx) -> String {
    let home = sh
        .get("HOME")
        .filter(|h| !h.is_empty())
        .unwrap_or("/home/agent");
    format!("{home}/.local/lib/python3.12/site-packages")
}
