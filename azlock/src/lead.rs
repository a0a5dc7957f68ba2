//! `azlock lead`: run a command only while this process leads an election on a lock blob, and
//! campaign again whenever the command exits or the leadership is lost.

use std::time::Duration;

use azstore::blob::BlobServiceClient;
use azstore::leader::{Election, ElectionOptions};
use azstore::lease::LeaseDuration;
use azstore::lock::{BlobLock, LockOptions};
use clap::Args;

use crate::process::{CommandArgs, describe, io_error, stop};

pub(crate) const LEAD_AFTER_HELP: &str = "\
ENVIRONMENT (of the command):
  AZLOCK_EPOCH           the leadership's epoch: larger than every earlier leader's. Pass it
                         with every write and have the resource refuse smaller ones
  AZLOCK_FENCING_TOKEN   the same number (the lock's fencing token)
  AZLOCK_LEASE_ID        the lease id of the lock blob

BEHAVIOUR:
  azlock campaigns (waits to lead), runs the command while leading, and when the command exits
  resigns and campaigns again. When the leadership is lost (the lease could not be renewed for
  5/6 of --duration), the command's process group gets SIGTERM, then SIGKILL after --grace,
  and azlock campaigns again. SIGTERM or Ctrl-C stops the command and resigns at once, so
  another azlock lead takes over within a second instead of waiting out the lease.
  A killed leader's lease ends --duration after its last renew: that is the failover time.
  Unlike azlock run, lead starts no sentinel: if azlock itself is frozen past its lease the
  command keeps running, and only AZLOCK_EPOCH keeps it apart from the next leader's.

EXIT STATUS (lead):
  130/143  interrupted (Ctrl-C / SIGTERM): the command was stopped and the leadership resigned
  1    storage or start-up error;  2  invalid arguments

EXAMPLE (one scheduler among three hosts; the others take over when it stops):
  azlock lead --container locks --blob scheduler --duration 15 -- ./scheduler --epoch-from-env
";

#[derive(Args, Debug)]
pub(crate) struct LeadArgs {
    /// Container of the lock blob (created when missing).
    #[arg(long)]
    container: String,
    /// Name of the lock blob, e.g. leaders/scheduler (created when missing).
    #[arg(long)]
    blob: String,
    /// Lease duration in seconds (15-60): the failover time after a leader dies.
    #[arg(long, default_value_t = 15, value_name = "SECONDS")]
    duration: u64,
    /// Identity recorded with the leader's host and pid (default: the command's program name).
    #[arg(long)]
    label: Option<String>,
    #[command(flatten)]
    command: CommandArgs,
}

enum Term {
    Exited(std::process::ExitStatus),
    Lost(azstore::lease::LeaseLoss),
    Signal(i32),
}

pub(crate) async fn lead(blobs: BlobServiceClient, args: LeadArgs) -> azstore::Result<u8> {
    use tokio::signal::unix::{SignalKind, signal};
    let label = args
        .label
        .clone()
        .unwrap_or_else(|| args.command.default_label());
    let lock = BlobLock::with_options(
        blobs.container(&args.container)?,
        &args.blob,
        LockOptions::default()
            .duration(LeaseDuration::seconds(args.duration)?)
            .label(label),
    )?;
    let election = Election::new(lock, ElectionOptions::default())?;
    let name = format!("{}/{}", args.container, args.blob);
    let grace = args.command.grace();
    let mut sigint = signal(SignalKind::interrupt()).map_err(io_error)?;
    let mut sigterm = signal(SignalKind::terminate()).map_err(io_error)?;
    loop {
        let leadership = tokio::select! {
            l = election.campaign() => l?,
            _ = sigint.recv() => return Ok(128 + libc::SIGINT as u8),
            _ = sigterm.recv() => return Ok(128 + libc::SIGTERM as u8),
        };
        let epoch = leadership.epoch().to_string();
        eprintln!(
            "azlock: leading {name} in epoch {epoch} as {:?}",
            election.identity()
        );
        let lease_id = leadership.held().lease_id().as_str().to_string();
        let env = [
            ("AZLOCK_EPOCH", epoch.as_str()),
            ("AZLOCK_FENCING_TOKEN", epoch.as_str()),
            ("AZLOCK_LEASE_ID", lease_id.as_str()),
        ];
        let mut child = match args.command.spawn(&env) {
            Ok(c) => c,
            Err(code) => {
                let _ = leadership.resign().await;
                return Ok(code);
            }
        };
        let term = tokio::select! {
            st = child.wait() => match st {
                Ok(st) => Term::Exited(st),
                Err(e) => {
                    eprintln!("azlock: waiting for the command failed: {e}");
                    let _ = leadership.resign().await;
                    return Ok(1);
                }
            },
            loss = leadership.lost() => Term::Lost(loss),
            _ = sigint.recv() => Term::Signal(libc::SIGINT),
            _ = sigterm.recv() => Term::Signal(libc::SIGTERM),
        };
        match term {
            Term::Exited(st) => {
                eprintln!(
                    "azlock: the command ended ({}); resigning epoch {epoch} and campaigning again",
                    describe(st)
                );
                resign(leadership).await;
                // Let another campaigner have a turn before competing again.
                tokio::time::sleep(Duration::from_secs(1)).await;
            }
            Term::Lost(loss) => {
                eprintln!(
                    "azlock: lost the leadership of {name} (epoch {epoch}): {loss}; stopping the \
                     command (SIGTERM, SIGKILL after {} s)",
                    grace.as_secs()
                );
                stop(&mut child, grace).await;
                drop(leadership);
            }
            Term::Signal(sig) => {
                eprintln!("azlock: interrupted; stopping the command and resigning");
                stop(&mut child, grace).await;
                resign(leadership).await;
                return Ok(128 + sig as u8);
            }
        }
    }
}

async fn resign(leadership: azstore::leader::Leadership<azstore::blob::BlobClient>) {
    if let Err(e) = leadership.resign().await {
        eprintln!("azlock: could not resign (the lease expires on its own): {e}");
    }
}
