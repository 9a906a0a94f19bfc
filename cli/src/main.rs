//! The `burrow` binary: the command line of `burrow_cli::cli`.

fn main() -> std::process::ExitCode {
    burrow_cli::cli::main()
}
