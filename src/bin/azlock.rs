//! `azlock`: run a command under a distributed lock on Azure Blob Storage.
fn main() {
    eprintln!("azlock: not implemented yet");
    std::process::exit(2);
}
