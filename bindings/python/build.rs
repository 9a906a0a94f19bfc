//! Links the extension the way Python loads it: libpython's symbols come from the interpreter
//! that imports the module (on macOS this needs `-undefined dynamic_lookup`), so a plain
//! `cargo build` / `cargo clippy` of the workspace builds it without a libpython to link.

fn main() {
    pyo3_build_config::add_extension_module_link_args();
}
