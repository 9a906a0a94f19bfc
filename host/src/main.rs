//! The `burrow` command-line interface.
fn main() {}
