//! Process helpers shared by `azlock run` and `azlock lead`: the default label, how a child
//! ended, stopping its process group, and the error of a signal-handler install.

use std::time::Duration;

use azstore::ErrorKind;

/// The program's file name (`/usr/local/bin/backup.sh` -> `backup.sh`), printable ASCII only.
pub(crate) fn default_label(command: &[String]) -> String {
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
