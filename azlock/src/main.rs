//! `azlock`: run a command under a distributed lock on Azure Blob Storage — the `flock(1)` of
//! Azure. See `azlock --help`.

#[cfg(unix)]
mod unix;

#[cfg(unix)]
fn main() -> std::process::ExitCode {
    unix::main()
}

#[cfg(not(unix))]
fn main() -> std::process::ExitCode {
    eprintln!("azlock: only Unix-like systems are supported (it relies on POSIX signals)");
    std::process::ExitCode::from(1)
}
