//! Process helpers shared by `azlock run` and `azlock lead`: the command and its start in a
//! process group of its own, the default label, how a child ended, stopping its process group,
//! and the error of a signal-handler install.

use std::time::Duration;

use azstore::ErrorKind;
use clap::Args;

/// The command azlock runs (`-- COMMAND...`) and how it is stopped: the options `azlock run`
/// and `azlock lead` share.
#[derive(Args, Debug)]
pub(crate) struct CommandArgs {
    /// Seconds between SIGTERM and SIGKILL when the command must be stopped.
    #[arg(long, default_value_t = 10, value_name = "SECONDS")]
    grace: u64,
    /// The command and its arguments.
    #[arg(last = true, required = true, value_name = "COMMAND")]
    command: Vec<String>,
}

impl CommandArgs {
    /// The time between SIGTERM and SIGKILL.
    pub(crate) fn grace(&self) -> Duration {
        Duration::from_secs(self.grace)
    }

    /// The label recorded when none is given: the program's name.
    pub(crate) fn default_label(&self) -> String {
        default_label(&self.command)
    }

    /// Starts the command with `env` in a process group of its own (like timeout(1)), so that
    /// azlock and its sentinel can stop everything it started. When it cannot start, says why
    /// on stderr and gives the exit status to end with: 127 not found, 126 not executable, 1
    /// otherwise.
    /// Credential variables are removed from its environment unless `env` passes them.
    pub(crate) fn spawn(
        &self,
        vars: &[(&str, &str)],
        env: &CommandEnv,
    ) -> Result<tokio::process::Child, u8> {
        let mut cmd = tokio::process::Command::new(&self.command[0]);
        cmd.args(&self.command[1..]).process_group(0);
        if !env.pass_credentials {
            for k in CREDENTIAL_VARS {
                cmd.env_remove(k);
            }
        }
        for (k, v) in vars {
            cmd.env(k, v);
        }
        cmd.spawn().map_err(|e| {
            eprintln!("azlock: cannot run {:?}: {e}", self.command[0]);
            match e.kind() {
                std::io::ErrorKind::NotFound => 127,
                std::io::ErrorKind::PermissionDenied => 126,
                _ => 1,
            }
        })
    }
}

/// The variables that carry a secret (a key, a SAS, a token, a client secret or password):
/// azlock removes them from the command's environment unless `--pass-credentials`. Names that
/// identify without granting (AZURE_STORAGE_ACCOUNT, AZURE_CLIENT_ID, AZURE_TENANT_ID) and
/// paths to files the same user can read anyway (AZURE_FEDERATED_TOKEN_FILE,
/// AZURE_CLIENT_CERTIFICATE_PATH) stay.
pub(crate) const CREDENTIAL_VARS: &[&str] = &[
    "AZURE_STORAGE_CONNECTION_STRING",
    "AZURE_STORAGE_KEY",
    "AZURE_STORAGE_ACCOUNT_KEY",
    "AZURE_STORAGE_ACCESS_KEY",
    "AZURE_STORAGE_SAS_TOKEN",
    "AZURE_STORAGE_SAS_KEY",
    "AZURE_STORAGE_TOKEN",
    "AZURE_CLIENT_SECRET",
    "AZURE_CLIENT_CERTIFICATE_PASSWORD",
    "AZURE_PASSWORD",
    "IDENTITY_HEADER",
    "MSI_SECRET",
];

/// What of azlock's own environment the command gets.
#[derive(Debug, Clone, Copy)]
pub(crate) struct CommandEnv {
    /// Keep the credential variables (`--pass-credentials`).
    pub(crate) pass_credentials: bool,
}

/// The program's file name (`/usr/local/bin/backup.sh` -> `backup.sh`), printable ASCII only.
fn default_label(command: &[String]) -> String {
    let program = command.first().map(String::as_str).unwrap_or_default();
    let name = program
        .rsplit('/')
        .find(|p| !p.is_empty())
        .unwrap_or(program);
    let mut s: String = name
        .chars()
        .map(|c| if (' '..='~').contains(&c) { c } else { '?' })
        .collect();
    s.truncate(200);
    s.trim().to_string()
}

pub(crate) fn describe(st: std::process::ExitStatus) -> String {
    use std::os::unix::process::ExitStatusExt;
    match (st.code(), st.signal()) {
        (Some(c), _) => format!("exit status {c}"),
        (None, Some(sig)) => format!("killed by signal {sig}"),
        _ => "unknown status".to_string(),
    }
}

/// SIGTERM to the command's process group, then SIGKILL after `grace`; then SIGKILL to
/// whatever is left in the group.
pub(crate) async fn stop(child: &mut tokio::process::Child, grace: Duration) {
    let Some(pid) = child.id() else {
        return; // already reaped
    };
    let group = pid as libc::pid_t;
    kill_group(group, libc::SIGTERM);
    if tokio::time::timeout(grace, child.wait()).await.is_err() {
        kill_group(group, libc::SIGKILL);
        let _ = child.wait().await;
    }
    kill_group(group, libc::SIGKILL);
}

pub(crate) fn kill_group(group: libc::pid_t, sig: libc::c_int) {
    if group > 1 {
        // SAFETY: kill(2) to the process group azlock created for the command (its id is the
        // command's pid, > 1).
        unsafe {
            libc::kill(-group, sig);
        }
    }
}

pub(crate) fn io_error(e: std::io::Error) -> azstore::Error {
    azstore::Error::new(
        ErrorKind::Service,
        format!("cannot install signal handlers: {e}"),
    )
}
