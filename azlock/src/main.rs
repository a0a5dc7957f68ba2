//! `azlock`: run a command under a distributed lock on Azure Blob Storage — the `flock(1)` of
//! Azure. See `azlock --help`.

#[cfg(unix)]
mod lead;
#[cfg(unix)]
mod process;
#[cfg(unix)]
mod sentinel;
#[cfg(unix)]
mod unix;

/// The hidden first argument that makes `azlock` act as its own sentinel process (see
/// `sentinel.rs`); never shown in `--help`.
#[cfg(unix)]
const SENTINEL_ARG: &str = "__azlock_sentinel";

#[cfg(unix)]
fn main() -> std::process::ExitCode {
    if std::env::args_os()
        .nth(1)
        .is_some_and(|a| a == SENTINEL_ARG)
    {
        return sentinel::main();
    }
    unix::main()
}

#[cfg(not(unix))]
fn main() -> std::process::ExitCode {
    eprintln!("azlock: only Unix-like systems are supported (it relies on POSIX signals)");
    std::process::ExitCode::from(1)
}
