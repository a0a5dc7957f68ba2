//! The Unix implementation of `azlock` (signals, process control).

use std::process::ExitCode;
use std::time::Duration;

use azstore::blob::{BlobClient, BlobLockTarget, BlobLocks};
use azstore::blob::{BlobLock, HeldBlobLock};
use azstore::lease::LeaseLoss;
use azstore::lease::{BreakPeriod, GuardState, LeaseDuration, ReleaseOutcome};
use azstore::lock::{LockOptions, Permit, RwLock, Semaphore, WriteGuard};
use azstore::{ErrorKind, StorageAccount, blob::BlobServiceClient};
use clap::{Args, Parser, Subcommand};

use crate::process::{CommandArgs, CommandEnv, describe, io_error, kill_group, stop};
use crate::sentinel::Sentinel;

/// How often azlock tells its sentinel the lease's current deadlines.
const HEARTBEAT: Duration = Duration::from_secs(1);

/// Exit code when the lock could not be had within --wait (EX_TEMPFAIL).
const EXIT_BUSY: u8 = 75;
/// Exit code when the lock was lost while the command ran (EX_SOFTWARE).
const EXIT_LOST: u8 = 70;
/// Exit code for an error talking to storage or starting the command.
const EXIT_ERROR: u8 = 1;
/// Exit code for invalid arguments (as clap uses).
const EXIT_USAGE: u8 = 2;
/// Exit code for missing or invalid storage account settings: the environment, a connection
/// string file or `--connection-string` (EX_CONFIG).
pub(crate) const EXIT_CONFIG: u8 = 78;

/// How azlock finds the storage account: the top command's and every subcommand's help.
macro_rules! account_help {
    () => {
        "\
STORAGE ACCOUNT (the first that applies):
  --connection-string-file PATH     a connection string (portal: Access keys, or a SAS
                                    connection string) read from PATH (-: standard input)
  AZURE_STORAGE_CONNECTION_STRING   the same; UseDevelopmentStorage=true for Azurite. With
                                    endpoints only, the credential comes from those below
  --connection-string CS            the same in argv, which local users can read (warned)
  AZURE_STORAGE_ACCOUNT_NAME (or AZURE_STORAGE_ACCOUNT)  the account, with one of:
    AZURE_STORAGE_KEY (or AZURE_STORAGE_ACCOUNT_KEY, AZURE_STORAGE_ACCESS_KEY)  its key
    AZURE_STORAGE_SAS_TOKEN (or AZURE_STORAGE_SAS_KEY)                          a SAS
    AZURE_STORAGE_TOKEN                                                 a bearer token
    nothing: Microsoft Entra ID (service principal AZURE_CLIENT_ID + AZURE_TENANT_ID +
      AZURE_CLIENT_SECRET, workload identity, managed identity, or `az login`); the
      identity needs a data role on the account, e.g. Storage Blob Data Contributor
  AZURE_STORAGE_AUTH_MODE=login     Entra ID even when a key is set (=key: insist on a key)
"
    };
}

/// What the command and the sentinel see: only on `azlock --help`.
macro_rules! credentials_help {
    () => {
        "\
CREDENTIALS (what the command and the sentinel see):
  The command's environment has no credential variable (AZURE_STORAGE_CONNECTION_STRING,
  AZURE_STORAGE_KEY/_ACCOUNT_KEY/_ACCESS_KEY, AZURE_STORAGE_SAS_TOKEN/_SAS_KEY,
  AZURE_STORAGE_TOKEN, AZURE_CLIENT_SECRET, AZURE_CLIENT_CERTIFICATE_PASSWORD, AZURE_PASSWORD,
  IDENTITY_HEADER, MSI_SECRET) unless --pass-credentials; account names, client and tenant
  ids and file paths stay. The sentinel process gets an empty environment.
"
    };
}

/// The exit status block of `status` and `break`.
macro_rules! exit_help {
    () => {
        "\
EXIT STATUS:
  0    done;  1  storage error;  2  invalid arguments
  78   the storage account settings are missing or invalid (environment, connection string)
"
    };
}

/// What the command sees and what `azlock run` exits with.
macro_rules! run_help {
    () => {
        "\
The command runs with:
  AZLOCK_LEASE_ID        the lease id of the lock blob (writes to it must carry it)
  AZLOCK_FENCING_TOKEN   a number larger than every earlier holder's: pass it to what you
                         protect and have it refuse smaller ones
  AZLOCK_PERMIT_SLOT     --permits, --read: the slot held (0 to N-1), whose lease id it is
  and no credential variable unless --pass-credentials (`azlock --help`: CREDENTIALS)

EXIT STATUS:
  the command's own exit status (128+N if it was killed by signal N)
  75   the lock could not be had within --wait; the command was not run
  70   the lock was lost while the command ran; its process group was sent SIGTERM (SIGKILL
       after --grace), or the sentinel had stopped it (`azlock --help` explains)
  130/143  azlock was interrupted (Ctrl-C / SIGTERM); the command was stopped, the lock released
  1    storage or start-up error;  2  invalid arguments
  78   the storage account settings are missing or invalid (environment, connection string)
"
    };
}

/// The essay: only on `azlock --help`.
macro_rules! essay_help {
    () => {
        "\
PAUSES (what is guaranteed, and what still needs the fencing token):
  The command runs in a process group of its own (like timeout(1): it is not the terminal's
  foreground job, so an interactive command that reads the terminal stops). azlock renews the
  lease every third of --duration and treats it as lost when no renew succeeded for 5/6 of
  --duration (measured on CLOCK_BOOTTIME, which counts suspend); then it stops the command
  (exit 70).
  If azlock itself stalls (SIGSTOP, debugger, cgroup freeze, swap storm), a sentinel process
  (azlock re-executed in its own process group, fed heartbeats over a pipe) sends SIGTERM to
  the command's process group at that loss deadline and SIGKILL --duration/12 later, still
  before the lease can expire on the service; if azlock dies, it does so at once. So the
  command does not outlive the lease as long as the sentinel runs.
  azlock lead starts one for each term of leadership: the same guarantee.
  Not covered: the whole machine frozen (the sentinel is frozen too), processes that leave the
  command's process group, and any write that was already under way (a check then a write can
  always be split by a pause). For those, have the resource refuse AZLOCK_FENCING_TOKEN values
  smaller than the largest it has seen, or write to the lock blob with AZLOCK_LEASE_ID.

FAILOVER:
  A holder that exits releases the lock at once. A holder killed with kill -9 (or a host that
  dies) keeps it until its lease expires: up to --duration (Azure's minimum lease is 15 s),
  and a waiting `azlock run --wait` takes it within about a second after that.

BREAK (azlock break):
  Without --period or --now, the lock is free only when the holder's lease would have expired
  (at most --duration after its last renew). The holder's azlock sees the break at its next
  renew (within a third of --duration) and stops its command then; its sentinel kills the
  command at the latest a twelfth of --duration before the lock is free. --now (or a short
  --period) frees the lock sooner: until the holder's azlock notices, two commands can run.

EXAMPLE (crontab: at most one nightly backup across all hosts, skip if one is running):
  0 2 * * *  AZURE_STORAGE_CONNECTION_STRING=... azlock run --container locks --blob nightly-backup --duration 60 -- /usr/local/bin/backup.sh
"
    };
}

/// Run a command under a distributed lock on Azure Blob Storage.
///
/// The lock is the lease of a blob (created on first use). `azlock run` acquires it, runs the
/// command, renews the lease in the background while the command runs, and releases it when
/// the command exits. If the lease is lost (broken by `azlock break`, or not renewable in
/// time), the command is stopped before another holder can take over — unless the break was
/// `--now` or shorter than the lease.
#[derive(Parser, Debug)]
#[command(
    name = "azlock",
    version,
    after_help = concat!(account_help!(), "\n", credentials_help!(), "\n", exit_help!()),
    after_long_help = concat!(
        account_help!(),
        "\n",
        credentials_help!(),
        "\n",
        exit_help!(),
        "\n",
        essay_help!()
    )
)]
struct Cli {
    /// Connection string (local users can read argv: prefer --connection-string-file).
    #[arg(
        long,
        global = true,
        value_name = "CS",
        conflicts_with = "connection_string_file"
    )]
    connection_string: Option<String>,

    /// Read the storage account connection string from PATH (`-`: standard input).
    #[arg(long, global = true, value_name = "PATH")]
    connection_string_file: Option<std::path::PathBuf>,

    /// Keep the credential variables in the command's environment (removed by default).
    #[arg(long, global = true)]
    pass_credentials: bool,

    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand, Debug)]
enum Command {
    /// Acquire the lock, run COMMAND while renewing it, release it when COMMAND exits.
    #[command(after_help = concat!(run_help!(), "\n", account_help!()))]
    Run(RunArgs),
    /// Show the lock's lease state, fencing token and (last) holder; with --permits or --rw,
    /// the holders of a semaphore or reader-writer lock.
    #[command(after_help = concat!(exit_help!(), "\n", account_help!()))]
    Status(StatusArgs),
    /// Break the lock's lease (administrative). By default the lock is free only when the
    /// holder's lease would have expired; the holder's azlock stops its command before that,
    /// at its next renew.
    #[command(after_help = concat!(exit_help!(), "\n", account_help!()))]
    Break(BreakArgs),
    /// Run COMMAND only while leading an election on the lock blob; campaign again when it
    /// exits or the leadership is lost (epoch in AZLOCK_EPOCH).
    #[command(after_help = crate::lead::LEAD_AFTER_HELP)]
    Lead(crate::lead::LeadArgs),
}

#[derive(Args, Debug)]
struct Target {
    /// Container of the lock blob (created when missing).
    #[arg(long)]
    container: String,
    /// Name of the lock blob, e.g. locks/nightly (created when missing).
    #[arg(long)]
    blob: String,
}

/// Which primitive the blob name stands for.
#[derive(Args, Debug, Clone)]
struct Kind {
    /// A semaphore of N permits named by --blob: up to N commands run at once (slots
    /// `<blob>/permits/<k>`, fencing tokens from `<blob>/fence`). Every process must pass the
    /// same N.
    #[arg(long, value_name = "N", conflicts_with_all = ["read", "write"])]
    permits: Option<u32>,
    /// A read hold of the reader-writer lock named by --blob: any number of readers (up to
    /// --max-readers at once) or one writer.
    #[arg(long, conflicts_with = "write")]
    read: bool,
    /// The write hold of the reader-writer lock named by --blob: no reader and no other
    /// writer; new readers wait from the moment a writer waits.
    #[arg(long)]
    write: bool,
    /// Readers admitted at once by the reader-writer lock (every process must pass the same).
    #[arg(long, default_value_t = 16, value_name = "N")]
    max_readers: u32,
}

#[derive(Args, Debug)]
struct StatusArgs {
    #[command(flatten)]
    target: Target,
    /// Show the holders of the semaphore of N permits named by --blob.
    #[arg(long, value_name = "N", conflicts_with = "rw")]
    permits: Option<u32>,
    /// Show the readers and the writer of the reader-writer lock named by --blob.
    #[arg(long)]
    rw: bool,
    /// Readers of the reader-writer lock (as passed to run).
    #[arg(long, default_value_t = 16, value_name = "N")]
    max_readers: u32,
}

#[derive(Args, Debug)]
struct RunArgs {
    #[command(flatten)]
    target: Target,
    #[command(flatten)]
    kind: Kind,
    /// Lease duration in seconds, 15 to 60. A holder
    /// that dies keeps the lock at most this long; one that exits releases it at once.
    #[arg(long, default_value_t = 30, value_name = "SECONDS")]
    duration: u64,
    /// How long to wait for the lock, in seconds (0: try once).
    #[arg(long, default_value_t = 0.0, value_name = "SECONDS")]
    wait: f64,
    /// Label recorded with the holder's host and pid (default: the command's program name).
    #[arg(long)]
    label: Option<String>,
    #[command(flatten)]
    command: CommandArgs,
}

#[derive(Args, Debug)]
struct BreakArgs {
    #[command(flatten)]
    target: Target,
    /// Break period in seconds (0-60): the lock is free after this long, or when the holder's
    /// lease would have expired if that is sooner. Default: when the holder's lease would have
    /// expired, so the holder's azlock has stopped its command before anyone else can take
    /// the lock. A period that can end before that is reported with its consequence.
    #[arg(long, value_name = "SECONDS", conflicts_with = "now")]
    period: Option<u64>,
    /// Free the lock at once (the same as --period 0). The holder's azlock notices only at its
    /// next renew (up to a third of its --duration later), so until then its command runs
    /// alongside the next holder's: only a fencing token keeps them apart.
    #[arg(long)]
    now: bool,
}

pub(crate) fn main() -> ExitCode {
    let cli = Cli::parse();
    let runtime = match tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
    {
        Ok(rt) => rt,
        Err(e) => {
            eprintln!("azlock: cannot start the runtime: {e}");
            return ExitCode::from(EXIT_ERROR);
        }
    };
    match runtime.block_on(real_main(cli)) {
        Ok(code) => ExitCode::from(code),
        Err(Fail::Config(e)) => {
            eprintln!("azlock: {e}");
            ExitCode::from(EXIT_CONFIG)
        }
        Err(Fail::Other(e)) => {
            eprintln!("azlock: {e}");
            ExitCode::from(if e.kind() == ErrorKind::InvalidInput {
                EXIT_USAGE
            } else {
                EXIT_ERROR
            })
        }
    }
}

/// Why azlock ends without a command's status: the account settings (exit 78), or anything
/// else (2 for invalid arguments, 1 otherwise).
enum Fail {
    Config(azstore::Error),
    Other(azstore::Error),
}

impl From<azstore::Error> for Fail {
    fn from(e: azstore::Error) -> Fail {
        Fail::Other(e)
    }
}

/// Checked here, before the account: the library's own message offers an infinite lease,
/// which azlock never takes (a holder that dies would keep the lock for ever).
fn check_duration(duration: u64) -> azstore::Result<()> {
    if (15..=60).contains(&duration) {
        Ok(())
    } else {
        Err(azstore::Error::invalid_input(format!(
            "--duration must be 15 to 60 seconds (got {duration})"
        )))
    }
}

/// The storage account: a connection string from `--connection-string`,
/// `--connection-string-file` or the environment, and everything else
/// `StorageAccount::from_env` reads (see account_help!).
fn account(cli: &Cli) -> azstore::Result<StorageAccount> {
    let (cs, from) = if let Some(cs) = &cli.connection_string {
        eprintln!(
            "azlock: warning: --connection-string puts the connection string (and its key or \
             SAS) on azlock's command line, which every local user can read (ps, \
             /proc/PID/cmdline); use --connection-string-file PATH or \
             AZURE_STORAGE_CONNECTION_STRING instead"
        );
        (cs.clone(), "--connection-string")
    } else if let Some(path) = &cli.connection_string_file {
        (read_connection_string(path)?, "--connection-string-file")
    } else {
        return StorageAccount::from_env();
    };
    let cs = cs.trim().to_string();
    StorageAccount::from_env_with(|k| {
        if k == azstore::CONNECTION_STRING_ENV {
            Some(cs.clone())
        } else {
            std::env::var(k).ok()
        }
    })
    .map_err(|e| {
        // The library names the variable; here the string came from elsewhere.
        let prefix = format!("{}: ", azstore::CONNECTION_STRING_ENV);
        let msg = e.message();
        azstore::Error::invalid_input(format!(
            "{from}: {}",
            msg.strip_prefix(&prefix).unwrap_or(msg)
        ))
    })
}

/// A connection string from a file (`-`: standard input), warning when other users can read
/// the file.
fn read_connection_string(path: &std::path::Path) -> azstore::Result<String> {
    use std::io::Read;
    let shown = path.display();
    let text = if path.as_os_str() == "-" {
        let mut s = String::new();
        std::io::stdin().read_to_string(&mut s).map_err(|e| {
            azstore::Error::invalid_input(format!(
                "--connection-string-file -: cannot read standard input: {e}"
            ))
        })?;
        s
    } else {
        use std::os::unix::fs::PermissionsExt;
        let text = std::fs::read_to_string(path).map_err(|e| {
            azstore::Error::invalid_input(format!(
                "--connection-string-file {shown}: cannot read it: {e}"
            ))
        })?;
        if std::fs::metadata(path).is_ok_and(|m| m.permissions().mode() & 0o004 != 0) {
            eprintln!(
                "azlock: warning: {shown} can be read by every local user (chmod o-r {shown})"
            );
        }
        text
    };
    if text.trim().is_empty() {
        return Err(azstore::Error::invalid_input(format!(
            "--connection-string-file {shown}: empty"
        )));
    }
    Ok(text)
}

async fn real_main(cli: Cli) -> Result<u8, Fail> {
    // Validate every argument before anything is sent: the command line first (exit 2), then
    // the account settings (exit 78).
    match &cli.command {
        Command::Run(args) => check_duration(args.duration)?,
        Command::Lead(args) => check_duration(args.duration())?,
        Command::Status(_) | Command::Break(_) => {}
    }
    let account = account(&cli).map_err(Fail::Config)?;
    let env = CommandEnv {
        pass_credentials: cli.pass_credentials,
    };
    let blobs = BlobServiceClient::new(&account)?;
    match cli.command {
        Command::Run(args) => {
            let duration = LeaseDuration::seconds(args.duration)?;
            let wait = Duration::try_from_secs_f64(args.wait).map_err(|_| {
                azstore::Error::invalid_input("--wait must be a non-negative number of seconds")
            })?;
            let label = args
                .label
                .clone()
                .unwrap_or_else(|| args.command.default_label());
            let container = blobs.container(&args.target.container)?;
            let options = LockOptions::default()
                .duration(duration)
                .label(label.clone());
            let locks = BlobLocks::new(container.clone(), options.clone());
            let name = &args.target.blob;
            let k = &args.kind;
            let guarded = match (k.permits, k.read, k.write) {
                (Some(n), _, _) => Guarded::Permits(Semaphore::new(&locks, name, n, &label)?),
                (None, true, _) => Guarded::Read(RwLock::new(&locks, name, k.max_readers, &label)?),
                (None, _, true) => {
                    Guarded::Write(RwLock::new(&locks, name, k.max_readers, &label)?)
                }
                _ => Guarded::Lock(BlobLock::with_options(container, name, options)?),
            };
            let display = format!("{}/{}", args.target.container, args.target.blob);
            Ok(run(guarded, display, &args, wait, &env).await?)
        }
        Command::Lead(args) => Ok(crate::lead::lead(blobs, args, &env).await?),
        Command::Status(args) if args.permits.is_some() || args.rw => {
            let locks = BlobLocks::new(
                blobs.container(&args.target.container)?,
                LockOptions::default(),
            );
            let name = &args.target.blob;
            println!("lock:          {}/{}", args.target.container, name);
            let (holders, token) = match args.permits {
                Some(n) => {
                    let s = Semaphore::new(&locks, name, n, "status")?.status().await?;
                    println!(
                        "permits:       {} ({} held, {} waiting in line)",
                        s.permits,
                        s.holders.len(),
                        s.waiting
                    );
                    if !s.closed.is_empty() {
                        println!("closed slots:  {:?}", s.closed);
                    }
                    (s.holders, s.fencing_token)
                }
                None => {
                    let s = RwLock::new(&locks, name, args.max_readers, "status")?
                        .status()
                        .await?;
                    match (&s.writer.owner, s.writer.locked) {
                        (Some(w), true) => println!("writer:        {w}"),
                        _ => println!("writer:        none"),
                    }
                    println!(
                        "readers:       {} ({} waiting in line)",
                        s.readers.len(),
                        s.readers_waiting
                    );
                    println!("writers:       {} waiting in line", s.writers_waiting);
                    (s.readers, s.fencing_token)
                }
            };
            match token {
                Some(t) => println!("fencing token: {t}"),
                None => println!("fencing token: none (never acquired)"),
            }
            for h in holders {
                let who = h
                    .owner
                    .as_ref()
                    .map_or_else(|| "unknown".to_string(), ToString::to_string);
                let since = h
                    .owner
                    .as_ref()
                    .and_then(|o| o.acquired_at)
                    .map(|t| format!(" since {}", rfc3339(t)))
                    .unwrap_or_default();
                let breaking = if h.breaking { " (breaking)" } else { "" };
                println!("slot {:<8} {who}{since}{breaking}", format!("{}:", h.slot));
            }
            Ok(0)
        }
        Command::Status(StatusArgs { target, .. }) => {
            let lock = BlobLock::new(blobs.container(&target.container)?, &target.blob)?;
            let status = lock.status().await?;
            println!("lock:          {}/{}", target.container, target.blob);
            if !status.exists {
                println!("state:         available (the lock blob does not exist yet)");
                return Ok(0);
            }
            let state = match (status.breaking, status.locked) {
                (true, _) => "breaking",
                (false, true) => "leased",
                (false, false) => "available",
            };
            println!("state:         {state}");
            match status.fencing_token {
                Some(t) => println!("fencing token: {t}"),
                None => println!("fencing token: none (never acquired)"),
            }
            if let Some(owner) = &status.owner {
                let who = if status.is_locked() {
                    "holder:       "
                } else {
                    "last holder:  "
                };
                println!("{who} {owner}");
                if let Some(t) = owner.acquired_at {
                    println!("acquired at:   {}", rfc3339(t));
                }
            }
            Ok(0)
        }
        Command::Break(args) => {
            let period = match (args.now, args.period) {
                (true, _) => Some(BreakPeriod::immediate()),
                (false, Some(p)) => Some(BreakPeriod::seconds(p)?),
                (false, None) => None,
            };
            let lock = BlobLock::new(blobs.container(&args.target.container)?, &args.target.blob)?;
            let broken = lock.break_lock(period).await?;
            let secs = broken.remaining.as_secs();
            let name = format!("{}/{}", args.target.container, args.target.blob);
            match period {
                // No period, or one the service cut short to the rest of the holder's lease.
                p if p.is_none_or(|p| secs < u64::from(p.as_secs())) => println!(
                    "lease of {name} broken; it ends in {secs} s, when the holder's lease would \
                     have expired. The holder's azlock stops its command at its next renew (within \
                     a third of its --duration) and then releases the lock, which frees it sooner."
                ),
                _ => {
                    println!("lease of {name} broken; it ends in {secs} s");
                    eprintln!("{}", early_break_warning(secs));
                }
            }
            Ok(0)
        }
    }
}

/// The consequence of an explicit break period: it may end before the holder notices.
fn early_break_warning(secs: u64) -> String {
    let when = if secs == 0 {
        "now".to_string()
    } else {
        format!("in {secs} s")
    };
    format!(
        "azlock: warning: the lock is free {when}, possibly before the holder's lease would have \
         expired. The holder's azlock notices the break only at its next renew (up to a third of \
         its --duration after the break) and stops its command then: until that moment the \
         holder's command may run alongside the next holder's (only the fencing token keeps \
         them apart). Without --period and --now, azlock break waits out the holder's lease."
    )
}

/// RFC 3339 in UTC with milliseconds: `2026-11-26T21:31:08.598Z`.
fn rfc3339(t: azstore::OffsetDateTime) -> String {
    let utc =
        azstore::OffsetDateTime::from_unix_timestamp_nanos(t.unix_timestamp_nanos()).unwrap_or(t);
    format!(
        "{:04}-{:02}-{:02}T{:02}:{:02}:{:02}.{:03}Z",
        utc.year(),
        u8::from(utc.month()),
        utc.day(),
        utc.hour(),
        utc.minute(),
        utc.second(),
        utc.millisecond()
    )
}

enum Outcome {
    Exited(std::process::ExitStatus),
    Lost(azstore::lease::LeaseLoss),
    Signal(i32),
    SentinelGone(std::io::Error),
}

/// Tells the sentinel the lease's deadlines: SIGTERM at the guard's loss deadline, SIGKILL
/// `kill_delay` later (half the safety margin: still before the lease can expire).
fn heartbeat(sentinel: &mut Sentinel, held: &Hold, kill_delay: Duration) -> std::io::Result<()> {
    sentinel.beat_from(held.deadline(), kill_delay)
}

/// What `azlock run` takes: a lock, a semaphore's permit, or a hold of a reader-writer lock.
enum Guarded {
    Lock(BlobLock),
    Permits(Semaphore<BlobLockTarget>),
    Read(RwLock<BlobLockTarget>),
    Write(RwLock<BlobLockTarget>),
}

impl Guarded {
    /// One attempt for a zero wait, else a wait of `wait`.
    async fn take(&self, wait: Duration) -> azstore::Result<Option<Hold>> {
        let once = wait.is_zero();
        Ok(match self {
            Guarded::Lock(l) if once => l.try_acquire().await?.map(Hold::Lock),
            Guarded::Lock(l) => l.acquire_within(wait).await?.map(Hold::Lock),
            Guarded::Permits(s) if once => s.try_acquire().await?.map(Hold::Permit),
            Guarded::Permits(s) => s.acquire_within(wait).await?.map(Hold::Permit),
            // A zero wait still makes one round (the deadline cuts off what is in flight).
            Guarded::Read(rw) => rw
                .read_within(wait.max(Duration::from_secs(1)))
                .await?
                .map(Hold::Permit),
            Guarded::Write(rw) => rw
                .write_within(wait.max(Duration::from_secs(1)))
                .await?
                .map(Hold::Write),
        })
    }

    /// Who holds it, for the "busy" message.
    async fn holders(&self) -> String {
        let owners: Vec<String> = match self {
            Guarded::Lock(l) => l
                .status()
                .await
                .ok()
                .and_then(|s| s.owner)
                .map(|o| o.to_string())
                .into_iter()
                .collect(),
            Guarded::Permits(s) => s
                .status()
                .await
                .map(|s| s.holders)
                .unwrap_or_default()
                .into_iter()
                .filter_map(|h| h.owner.map(|o| o.to_string()))
                .collect(),
            Guarded::Read(rw) | Guarded::Write(rw) => match rw.status().await {
                Ok(s) if s.writer.locked => s
                    .writer
                    .owner
                    .map(|o| format!("writer {o}"))
                    .into_iter()
                    .collect(),
                Ok(s) => s
                    .readers
                    .into_iter()
                    .filter_map(|h| h.owner.map(|o| format!("reader {o}")))
                    .collect(),
                Err(_) => Vec::new(),
            },
        };
        if owners.is_empty() {
            String::new()
        } else {
            format!(" (held by {})", owners.join(", "))
        }
    }
}

/// What `azlock run` holds while the command runs.
enum Hold {
    Lock(HeldBlobLock),
    Permit(Permit<BlobClient>),
    Write(WriteGuard<BlobClient>),
}

impl Hold {
    fn deadline(&self) -> Option<Duration> {
        match self {
            Hold::Lock(h) => h.deadline(),
            Hold::Permit(p) => p.deadline(),
            Hold::Write(w) => w.deadline(),
        }
    }

    fn lease_id(&self) -> String {
        match self {
            Hold::Lock(h) => h.lease_id().as_str().to_string(),
            Hold::Permit(p) => p.lease_id().as_str().to_string(),
            Hold::Write(w) => w.lease_id().as_str().to_string(),
        }
    }

    fn fencing_token(&self) -> u64 {
        match self {
            Hold::Lock(h) => h.fencing_token(),
            Hold::Permit(p) => p.fencing_token(),
            Hold::Write(w) => w.fencing_token(),
        }
    }

    fn slot(&self) -> Option<u32> {
        match self {
            Hold::Permit(p) => Some(p.slot()),
            _ => None,
        }
    }

    fn state(&self) -> GuardState {
        match self {
            Hold::Lock(h) => h.state(),
            Hold::Permit(p) => p.state(),
            Hold::Write(w) => w.state(),
        }
    }

    fn lost(&self) -> std::pin::Pin<Box<dyn std::future::Future<Output = LeaseLoss> + Send>> {
        match self {
            Hold::Lock(h) => Box::pin(h.lost()),
            Hold::Permit(p) => Box::pin(p.lost()),
            Hold::Write(w) => Box::pin(w.lost()),
        }
    }

    async fn release(self) -> azstore::Result<ReleaseOutcome> {
        match self {
            Hold::Lock(h) => h.release().await,
            Hold::Permit(p) => p.release().await,
            Hold::Write(w) => w.release().await,
        }
    }
}

async fn run(
    lock: Guarded,
    name: String,
    args: &RunArgs,
    wait: Duration,
    env: &CommandEnv,
) -> azstore::Result<u8> {
    use tokio::signal::unix::{SignalKind, signal};
    let mut sigint = signal(SignalKind::interrupt()).map_err(io_error)?;
    let mut sigterm = signal(SignalKind::terminate()).map_err(io_error)?;

    let acquired = tokio::select! {
        r = lock.take(wait) => r?,
        _ = sigint.recv() => return Ok(128 + libc::SIGINT as u8),
        _ = sigterm.recv() => return Ok(128 + libc::SIGTERM as u8),
    };
    let Some(held) = acquired else {
        let holder = lock.holders().await;
        eprintln!("azlock: lock {name} is busy{holder}; not running the command");
        return Ok(EXIT_BUSY);
    };

    // The sentinel stops the command if azlock itself stalls past the lease (see
    // sentinel.rs). Half the default safety margin (a sixth of the duration).
    let kill_delay = Duration::from_secs(args.duration) / 12;
    let mut sentinel = match Sentinel::start()
        .and_then(|mut s| heartbeat(&mut s, &held, kill_delay).map(|()| s))
    {
        Ok(s) => s,
        Err(e) => {
            eprintln!("azlock: cannot start the sentinel process: {e}; not running the command");
            release(held).await;
            return Ok(EXIT_ERROR);
        }
    };

    let lease_id = held.lease_id();
    let token = held.fencing_token().to_string();
    let slot = held.slot().map(|k| k.to_string());
    let mut vars = vec![
        ("AZLOCK_LEASE_ID", lease_id.as_str()),
        ("AZLOCK_FENCING_TOKEN", token.as_str()),
    ];
    if let Some(k) = &slot {
        vars.push(("AZLOCK_PERMIT_SLOT", k.as_str()));
    }
    let mut child = match args.command.spawn(&vars, env) {
        Ok(c) => c,
        Err(code) => {
            sentinel.done();
            release(held).await;
            return Ok(code);
        }
    };

    // The command's process group id is its pid (kept: `child.id()` is gone once reaped).
    let group = child.id().map_or(0, |pid| pid as libc::pid_t);
    if let Err(e) = child
        .id()
        .ok_or_else(|| std::io::Error::other("the command exited at once"))
        .and_then(|pid| sentinel.group(pid))
    {
        // Without a working sentinel the command may not run (it could outlive the lease).
        eprintln!("azlock: cannot reach the sentinel process: {e}; stopping the command");
        stop(&mut child, args.command.grace()).await;
        release(held).await;
        return Ok(EXIT_ERROR);
    }

    let lost = held.lost();
    tokio::pin!(lost);
    let mut beats = tokio::time::interval(HEARTBEAT);
    beats.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Skip);
    let outcome = loop {
        tokio::select! {
            st = child.wait() => break match st {
                Ok(st) => Outcome::Exited(st),
                Err(e) => {
                    eprintln!("azlock: waiting for the command failed: {e}");
                    release(held).await;
                    return Ok(EXIT_ERROR);
                }
            },
            loss = &mut lost => break Outcome::Lost(loss),
            _ = sigint.recv() => break Outcome::Signal(libc::SIGINT),
            _ = sigterm.recv() => break Outcome::Signal(libc::SIGTERM),
            _ = beats.tick() => {
                // state() decides from the deadline: right at once after azlock was paused.
                if let GuardState::Lost(loss) = held.state() {
                    break Outcome::Lost(loss);
                }
                if let Err(e) = heartbeat(&mut sentinel, &held, kill_delay) {
                    break Outcome::SentinelGone(e);
                }
            }
        }
    };
    let grace = args.command.grace();
    let code = match outcome {
        // The command ended, but the lease was lost meanwhile (e.g. azlock was paused past it
        // and the sentinel stopped the command): that is a loss, not the command's result.
        Outcome::Exited(st) => match held.state() {
            GuardState::Lost(loss) => {
                eprintln!(
                    "azlock: lost the lock {name}: {loss}; the command had ended ({})",
                    describe(st)
                );
                // Whatever it left running in its group goes too.
                kill_group(group, libc::SIGKILL);
                EXIT_LOST
            }
            _ => exit_code(st),
        },
        Outcome::SentinelGone(e) => {
            eprintln!("azlock: the sentinel process is gone ({e}); stopping the command");
            stop(&mut child, grace).await;
            EXIT_ERROR
        }
        Outcome::Lost(loss) => {
            eprintln!(
                "azlock: lost the lock {name}: {loss}; stopping the command (SIGTERM, SIGKILL after {} s)",
                grace.as_secs()
            );
            stop(&mut child, grace).await;
            EXIT_LOST
        }
        Outcome::Signal(sig) => {
            eprintln!("azlock: interrupted; stopping the command and releasing the lock");
            stop(&mut child, grace).await;
            128 + sig as u8
        }
    };
    sentinel.done();
    release(held).await;
    Ok(code)
}

async fn release(held: Hold) {
    match held.release().await {
        Ok(ReleaseOutcome::Released) | Ok(ReleaseOutcome::AlreadyGone { .. }) => {}
        Ok(_) => {}
        Err(e) => eprintln!("azlock: could not release the lock (it expires on its own): {e}"),
    }
}

fn exit_code(st: std::process::ExitStatus) -> u8 {
    use std::os::unix::process::ExitStatusExt;
    match (st.code(), st.signal()) {
        (Some(c), _) => (c & 0xff) as u8,
        (None, Some(sig)) => 128u8.wrapping_add(sig as u8),
        _ => EXIT_ERROR,
    }
}
