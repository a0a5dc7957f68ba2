//! A local Azure Files emulator: testkit's in-memory File service as a standalone process.
//!
//! ```text
//! azstore-file-emulator [--port PORT]     (default 10004; 0 picks a free port)
//! ```
//!
//! It prints `azstore-file-emulator: listening on http://127.0.0.1:PORT/devstoreaccount1` once it
//! accepts connections and runs until it is killed. `scripts/azurite` starts it beside Azurite and
//! puts its endpoint in the exported connection string. Scope and limits: testkit/README.md.

use std::process::ExitCode;

#[tokio::main(flavor = "current_thread")]
async fn main() -> ExitCode {
    let mut port: u16 = 10004;
    let mut args = std::env::args().skip(1);
    while let Some(arg) = args.next() {
        match arg.as_str() {
            "--port" => match args.next().and_then(|p| p.parse().ok()) {
                Some(p) => port = p,
                None => {
                    eprintln!("azstore-file-emulator: --port needs a number 0-65535");
                    return ExitCode::from(2);
                }
            },
            "-h" | "--help" => {
                println!(
                    "usage: azstore-file-emulator [--port PORT]   (default 10004; 0 = any free port)"
                );
                return ExitCode::SUCCESS;
            }
            other => {
                eprintln!("azstore-file-emulator: unknown argument {other:?} (try --help)");
                return ExitCode::from(2);
            }
        }
    }
    let server = match testkit::file_server::FileServer::start_on(port).await {
        Ok(s) => s,
        Err(e) => {
            eprintln!("azstore-file-emulator: cannot listen on 127.0.0.1:{port}: {e}");
            return ExitCode::from(1);
        }
    };
    println!("azstore-file-emulator: listening on {}", server.endpoint());
    std::future::pending::<()>().await;
    ExitCode::SUCCESS
}
