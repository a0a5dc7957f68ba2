//! `azlock lead`: run a command only while this process leads an election on a lock blob, and
//! campaign again whenever the command exits or the leadership is lost.

use std::time::Duration;

use azstore::blob::BlobLock;
use azstore::blob::BlobServiceClient;
use azstore::leader::{Election, ElectionOptions};
use azstore::lease::{GuardState, LeaseDuration};
use azstore::lock::LockOptions;
use clap::Args;

use crate::process::{CommandArgs, describe, io_error, kill_group, stop};
use crate::sentinel::Sentinel;

pub(crate) const LEAD_AFTER_HELP: &str = "\
ENVIRONMENT (of the command):
  AZLOCK_EPOCH           the leadership's epoch: larger than every earlier leader's. Pass it
                         with every write and have the resource refuse smaller ones
  AZLOCK_FENCING_TOKEN   the same number (the lock's fencing token)
  AZLOCK_LEASE_ID        the lease id of the lock blob
  and no credential variable unless --pass-credentials (`azlock --help`: CREDENTIALS)

BEHAVIOUR:
  azlock campaigns (waits to lead), runs the command while leading, and when the command exits
  stops what it left in its process group, resigns and campaigns again. When the leadership is
  lost (the lease could not be renewed for 5/6 of --duration), the command's process group
  gets SIGTERM, then SIGKILL after --grace, and azlock campaigns again. SIGTERM or Ctrl-C
  stops the command and resigns at once, so another azlock lead takes over within a second
  instead of waiting out the lease.

GUARANTEE: no command outlives its leadership. For each term azlock starts a sentinel process
  (as azlock run does; empty environment, a process group of its own) before the command. If
  azlock is killed (kill -9) the sentinel sends SIGTERM to the command's process group at once;
  if azlock is frozen (SIGSTOP, debugger) it does so at the loss deadline; either way SIGKILL
  follows at the latest --duration/12 after that deadline, before the lease can expire, so the
  command's group is gone before any other azlock lead can be granted the lease. A killed
  leader's lease ends --duration after its last renew: that is the failover time.
  Not covered: the whole machine frozen (the sentinel too) and processes that leave the
  command's process group; AZLOCK_EPOCH keeps those apart from the next leader's writes.

EXIT STATUS (lead):
  130/143  interrupted (Ctrl-C / SIGTERM): the command was stopped and the leadership resigned
  1    storage or start-up error;  2  invalid arguments
  78   the storage account settings are missing or invalid (environment, connection string)

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

impl LeadArgs {
    /// The lease duration asked for, in seconds.
    pub(crate) fn duration(&self) -> u64 {
        self.duration
    }
}

enum Term {
    Exited(std::process::ExitStatus),
    Lost(azstore::lease::LeaseLoss),
    Signal(i32),
    SentinelGone(std::io::Error),
}

/// How often azlock tells the term's sentinel the lease's current deadlines.
const HEARTBEAT: Duration = Duration::from_secs(1);

pub(crate) async fn lead(
    blobs: BlobServiceClient,
    args: LeadArgs,
    env: &crate::process::CommandEnv,
) -> azstore::Result<u8> {
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
    // As `azlock run`: SIGKILL half the default safety margin (a twelfth of the lease) after
    // the loss deadline, still before the lease can expire on the service.
    let kill_delay = Duration::from_secs(args.duration) / 12;
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
        // A sentinel for this term, before the command: if azlock is killed or frozen, it
        // stops the command's process group before the lease can pass to another leader.
        let mut sentinel = match Sentinel::start().and_then(|mut s| {
            s.beat_from(leadership.held().deadline(), kill_delay)
                .map(|()| s)
        }) {
            Ok(s) => s,
            Err(e) => {
                eprintln!(
                    "azlock: cannot start the sentinel process: {e}; not running the command"
                );
                resign(leadership).await;
                return Ok(1);
            }
        };
        let lease_id = leadership.held().lease_id().as_str().to_string();
        let vars = [
            ("AZLOCK_EPOCH", epoch.as_str()),
            ("AZLOCK_FENCING_TOKEN", epoch.as_str()),
            ("AZLOCK_LEASE_ID", lease_id.as_str()),
        ];
        let mut child = match args.command.spawn(&vars, env) {
            Ok(c) => c,
            Err(code) => {
                sentinel.done();
                let _ = leadership.resign().await;
                return Ok(code);
            }
        };
        let group = child.id().map_or(0, |pid| pid as libc::pid_t);
        if let Err(e) = child
            .id()
            .ok_or_else(|| std::io::Error::other("the command exited at once"))
            .and_then(|pid| sentinel.group(pid))
        {
            eprintln!("azlock: cannot reach the sentinel process: {e}; stopping the command");
            stop(&mut child, grace).await;
            sentinel.done();
            resign(leadership).await;
            return Ok(1);
        }
        let lost = leadership.lost();
        tokio::pin!(lost);
        let mut beats = tokio::time::interval(HEARTBEAT);
        beats.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Skip);
        let term = loop {
            tokio::select! {
                st = child.wait() => break match st {
                    Ok(st) => Term::Exited(st),
                    Err(e) => {
                        eprintln!("azlock: waiting for the command failed: {e}");
                        stop(&mut child, grace).await;
                        sentinel.done();
                        let _ = leadership.resign().await;
                        return Ok(1);
                    }
                },
                loss = &mut lost => break Term::Lost(loss),
                _ = sigint.recv() => break Term::Signal(libc::SIGINT),
                _ = sigterm.recv() => break Term::Signal(libc::SIGTERM),
                _ = beats.tick() => {
                    // state() decides from the deadline: right at once after azlock was paused.
                    if let GuardState::Lost(loss) = leadership.held().state() {
                        break Term::Lost(loss);
                    }
                    if let Err(e) = sentinel.beat_from(leadership.held().deadline(), kill_delay) {
                        break Term::SentinelGone(e);
                    }
                }
            }
        };
        // While the command (or anything left in its group) is being stopped, the sentinel
        // keeps its last deadlines: it kills the group before the lease can expire even when
        // --grace is longer. It is told `done` only once the group is gone.
        match term {
            Term::Exited(st) => {
                if let GuardState::Lost(loss) = leadership.held().state() {
                    eprintln!(
                        "azlock: lost the leadership of {name} (epoch {epoch}): {loss}; the \
                         command had ended ({})",
                        describe(st)
                    );
                    kill_group(group, libc::SIGKILL);
                    sentinel.done();
                    drop(leadership);
                    continue;
                }
                eprintln!(
                    "azlock: the command ended ({}); resigning epoch {epoch} and campaigning again",
                    describe(st)
                );
                // What the command left running in its group ends with its term.
                stop_group(group, grace).await;
                sentinel.done();
                resign(leadership).await;
                // Let another campaigner have a turn before competing again.
                tokio::time::sleep(Duration::from_secs(1)).await;
            }
            Term::Lost(loss) => {
                eprintln!(
                    "azlock: lost the leadership of {name} (epoch {epoch}): {loss}; stopping the \
                     command (SIGTERM, SIGKILL after {} s or when the lease could expire)",
                    grace.as_secs()
                );
                stop(&mut child, grace).await;
                sentinel.done();
                drop(leadership);
            }
            Term::SentinelGone(e) => {
                eprintln!(
                    "azlock: the sentinel process is gone ({e}); stopping the command and resigning"
                );
                stop(&mut child, grace).await;
                drop(sentinel);
                resign(leadership).await;
                return Ok(1);
            }
            Term::Signal(sig) => {
                eprintln!("azlock: interrupted; stopping the command and resigning");
                stop(&mut child, grace).await;
                sentinel.done();
                resign(leadership).await;
                return Ok(128 + sig as u8);
            }
        }
    }
}

/// SIGTERM to what is left of a process group whose leader has exited, SIGKILL to the rest
/// after `grace`.
async fn stop_group(group: libc::pid_t, grace: Duration) {
    if group <= 1 || !group_exists(group) {
        return;
    }
    kill_group(group, libc::SIGTERM);
    let t = tokio::time::Instant::now();
    while group_exists(group) && t.elapsed() < grace {
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    kill_group(group, libc::SIGKILL);
}

fn group_exists(g: libc::pid_t) -> bool {
    // SAFETY: kill(2) with signal 0 only checks that the process group exists.
    let rc = unsafe { libc::kill(-g, 0) };
    rc == 0 || std::io::Error::last_os_error().raw_os_error() != Some(libc::ESRCH)
}

async fn resign(leadership: azstore::leader::Leadership<azstore::blob::BlobClient>) {
    if let Err(e) = leadership.resign().await {
        eprintln!("azlock: could not resign (the lease expires on its own): {e}");
    }
}
