#![cfg(unix)]
//! The `azlock` CLI against Azurite: exit codes and environment, busy locks, mutual exclusion
//! of 4 processes, loss on break, a holder stalled with SIGSTOP past its lease, Ctrl-C, and
//! bad input refused before sending.

use testkit as support;

use std::path::{Path, PathBuf};
use std::process::{Child, Command, Output, Stdio};
use std::time::{Duration, Instant};

use azstore::blob::BlobLock;
use azstore::lease::LeaseDuration;
use azstore::lock::LockOptions;
use azstore::{Conditions, ErrorKind, LeaseId, blob::BlobServiceClient};

const AZLOCK: &str = env!("CARGO_BIN_EXE_azlock");

fn azlock() -> Command {
    // Fail loudly (never skip) when Azurite is absent.
    let _ = support::account();
    Command::new(AZLOCK)
}

fn tmpdir(name: &str) -> PathBuf {
    let d = std::env::temp_dir().join(support::unique(name));
    std::fs::create_dir_all(&d).unwrap();
    d
}

fn stderr(o: &Output) -> String {
    String::from_utf8_lossy(&o.stderr).into_owned()
}

fn rt() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap()
}

fn lock_for(container: &str, blob: &str) -> BlobLock {
    let c = BlobServiceClient::new(&support::account())
        .unwrap()
        .container(container)
        .unwrap();
    BlobLock::with_options(
        c,
        blob,
        LockOptions::default().duration(LeaseDuration::seconds(15).unwrap()),
    )
    .unwrap()
}

fn wait_for_file(p: &Path, within: Duration) -> String {
    let t = Instant::now();
    while t.elapsed() < within {
        if let Ok(s) = std::fs::read_to_string(p) {
            if s.ends_with('\n') {
                return s.trim().to_string();
            }
        }
        std::thread::sleep(Duration::from_millis(50));
    }
    panic!("{} not written within {within:?}", p.display());
}

/// `YYYY-MM-DDTHH:MM:SS.mmmZ`, the shape `azlock status` prints.
fn is_rfc3339_utc(s: &str) -> bool {
    let b = s.as_bytes();
    b.len() == 24
        && b.iter().enumerate().all(|(i, c)| match i {
            4 | 7 => *c == b'-',
            10 => *c == b'T',
            13 | 16 => *c == b':',
            19 => *c == b'.',
            23 => *c == b'Z',
            _ => c.is_ascii_digit(),
        })
}

fn signal(child: &Child, sig: i32) {
    // SAFETY: kill(2) on a child we spawned and have not reaped.
    assert_eq!(unsafe { libc::kill(child.id() as libc::pid_t, sig) }, 0);
}

#[test]
fn runs_the_command_with_lease_id_and_token_and_passes_its_exit_code() {
    let c = support::unique("azlrun");
    let out = azlock()
        .args([
            "run",
            "--container",
            &c,
            "--blob",
            "jobs/a",
            "--duration",
            "15",
            "--",
        ])
        .args([
            "sh",
            "-c",
            "echo \"$AZLOCK_LEASE_ID $AZLOCK_FENCING_TOKEN\"; exit 7",
        ])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(7), "{}", stderr(&out));
    let line = String::from_utf8(out.stdout).unwrap();
    let mut parts = line.split_whitespace();
    assert!(LeaseId::new(parts.next().unwrap()).is_ok(), "{line}");
    // The first token of a fresh lock is a clock value (ms since the epoch), not 1.
    let first: u64 = parts.next().unwrap().parse().unwrap();
    assert!(first > 1_700_000_000_000, "{line}");

    // Released on exit: the next run gets it at once, with the next token.
    let out = azlock()
        .args(["run", "--container", &c, "--blob", "jobs/a", "--"])
        .args(["sh", "-c", "echo $AZLOCK_FENCING_TOKEN"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let second: u64 = String::from_utf8_lossy(&out.stdout).trim().parse().unwrap();
    assert!(second > first, "{second} after {first}");

    let out = azlock()
        .args(["status", "--container", &c, "--blob", "jobs/a"])
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(text.contains("state:         available"), "{text}");
    assert!(text.contains(&format!("fencing token: {second}")), "{text}");
    // The default label is the program's name, not the quoted command line.
    assert!(text.contains("label=\"sh\""), "{text}");
    assert!(!text.contains("AZLOCK_FENCING_TOKEN"), "{text}");
    // Times are RFC 3339 (UTC).
    let at = text
        .lines()
        .find_map(|l| l.strip_prefix("acquired at:"))
        .unwrap_or_else(|| panic!("no acquisition time in {text}"))
        .trim();
    assert!(is_rfc3339_utc(at), "not RFC 3339: {at}");
}

#[test]
fn a_busy_lock_exits_75_without_running_the_command() {
    let c = support::unique("azlbusy");
    let dir = tmpdir("azlbusy");
    let marker = dir.join("ran");
    let rt = rt();
    let lock = lock_for(&c, "l");
    let held = rt.block_on(lock.try_acquire()).unwrap().unwrap();
    let t = Instant::now();
    let out = azlock()
        .args(["run", "--container", &c, "--blob", "l", "--wait", "1", "--"])
        .args(["touch", marker.to_str().unwrap()])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(75), "{}", stderr(&out));
    assert!(t.elapsed() >= Duration::from_secs(1));
    assert!(!marker.exists(), "the command must not run");
    assert!(stderr(&out).contains("busy"), "{}", stderr(&out));
    assert!(stderr(&out).contains(&format!("pid={}", std::process::id())));
    rt.block_on(held.release()).unwrap();
}

#[test]
fn four_processes_are_mutually_exclusive() {
    let c = support::unique("azlmx");
    let dir = tmpdir("azlmx");
    let script = "echo \"$(date +%s%N) enter $AZLOCK_FENCING_TOKEN\" >> \"$LOG\"; sleep 0.2; \
                  echo \"$(date +%s%N) exit $AZLOCK_FENCING_TOKEN\" >> \"$LOG\"";
    let threads: Vec<_> = (0..4)
        .map(|i| {
            let c = c.clone();
            let log = dir.join(format!("p{i}.log"));
            std::thread::spawn(move || {
                for _ in 0..2 {
                    let out = azlock()
                        .args(["run", "--container", &c, "--blob", "mx", "--duration", "15"])
                        .args(["--wait", "60", "--", "sh", "-c", script])
                        .env("LOG", &log)
                        .output()
                        .unwrap();
                    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
                }
                log
            })
        })
        .collect();
    let mut sections = Vec::new();
    for t in threads {
        let log = std::fs::read_to_string(t.join().unwrap()).unwrap();
        let lines: Vec<Vec<&str>> = log.lines().map(|l| l.split(' ').collect()).collect();
        assert_eq!(lines.len(), 4, "every process ran twice: {log}");
        for pair in lines.chunks(2) {
            assert_eq!((pair[0][1], pair[1][1]), ("enter", "exit"));
            let enter: u128 = pair[0][0].parse().unwrap();
            let exit: u128 = pair[1][0].parse().unwrap();
            let token: u64 = pair[0][2].parse().unwrap();
            sections.push((enter, exit, token));
        }
    }
    sections.sort();
    assert_eq!(sections.len(), 8);
    for w in sections.windows(2) {
        assert!(w[1].0 >= w[0].1, "sections overlap: {w:?}");
        assert!(w[1].2 > w[0].2, "tokens must grow: {w:?}");
    }
}

#[test]
fn a_broken_lease_stops_the_command_and_exits_70() {
    let c = support::unique("azlbrk");
    let dir = tmpdir("azlbrk");
    let started = dir.join("started");
    let child = azlock()
        .args(["run", "--container", &c, "--blob", "l", "--duration", "15"])
        .args(["--grace", "2", "--", "sh", "-c"])
        .arg(format!(
            "echo $AZLOCK_LEASE_ID > {}; exec sleep 60",
            started.display()
        ))
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let _lease = wait_for_file(&started, Duration::from_secs(20));
    let broke = Instant::now();
    // An immediate break only when asked for, with its consequence printed.
    let out = azlock()
        .args(["break", "--container", &c, "--blob", "l", "--now"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    assert!(String::from_utf8_lossy(&out.stdout).contains("ends in 0 s"));
    let warning = stderr(&out);
    assert!(
        warning.contains("the lock is free now") && warning.contains("alongside"),
        "{warning}"
    );
    let out = child.wait_with_output().unwrap();
    // Loss is seen at the next renew (every 5 s for a 15 s lease); the command is stopped.
    assert!(
        broke.elapsed() < Duration::from_secs(9),
        "{:?}",
        broke.elapsed()
    );
    assert_eq!(out.status.code(), Some(70));
    let err = stderr(&out);
    assert!(err.contains("lost the lock"), "{err}");
    assert!(err.contains("LeaseIsBrokenAndCannotBeRenewed"), "{err}");
}

#[test]
fn a_stalled_holder_loses_the_lock_and_its_fenced_writes_are_refused() {
    let c = support::unique("azlstall");
    let dir = tmpdir("azlstall");
    let started = dir.join("started");
    let mut holder = azlock()
        .args(["run", "--container", &c, "--blob", "l", "--duration", "15"])
        .args(["--grace", "2", "--", "sh", "-c"])
        .arg(format!(
            "echo $AZLOCK_LEASE_ID $AZLOCK_FENCING_TOKEN > {}; exec sleep 120",
            started.display()
        ))
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let line = wait_for_file(&started, Duration::from_secs(20));
    let mut parts = line.split_whitespace();
    let stale = LeaseId::new(parts.next().unwrap()).unwrap();
    let old_token: u64 = parts.next().unwrap().parse().unwrap();

    // Freeze the holder: no renewals while it is stopped.
    signal(&holder, libc::SIGSTOP);
    let rt = rt();
    let lock = lock_for(&c, "l");
    let t = Instant::now();
    let next = rt
        .block_on(lock.acquire_within(Duration::from_secs(30)))
        .unwrap()
        .expect("the stalled holder's lease expires and another contender gets it");
    // Not before the 15 s lease ran out (at most one 5 s renew interval before we stopped it).
    assert!(t.elapsed() >= Duration::from_secs(9), "{:?}", t.elapsed());
    assert!(next.fencing_token() > old_token);

    // The stale holder's writes carrying its lease id are refused by the service.
    let err = rt
        .block_on(lock.blob().upload("stale", &Conditions::lease(&stale)))
        .unwrap_err();
    assert_eq!(err.kind(), ErrorKind::LeaseLost, "{err}");

    // Resume it: its guard sees that no renew succeeded within the safe window and reports the
    // loss at once, without trying to renew. (That matters on Azurite, which — unlike Azure —
    // accepts renewing an expired lease even after the blob was modified.)
    signal(&holder, libc::SIGCONT);
    let resumed = Instant::now();
    let status = loop {
        if let Some(st) = holder.try_wait().unwrap() {
            break st;
        }
        assert!(
            resumed.elapsed() < Duration::from_secs(10),
            "holder did not stop"
        );
        std::thread::sleep(Duration::from_millis(50));
    };
    assert_eq!(status.code(), Some(70));
    let mut err = String::new();
    std::io::Read::read_to_string(holder.stderr.as_mut().unwrap(), &mut err).unwrap();
    assert!(err.contains("lost the lock"), "{err}");
    assert!(err.contains("no lease renew succeeded"), "{err}");
    // The new holder is unaffected.
    assert!(next.is_held());
    rt.block_on(next.release()).unwrap();
}

#[test]
fn ctrl_c_stops_the_command_and_releases_the_lock() {
    let c = support::unique("azlint");
    let dir = tmpdir("azlint");
    let started = dir.join("started");
    let mut child = azlock()
        .args(["run", "--container", &c, "--blob", "l", "--duration", "60"])
        .args(["--grace", "2", "--", "sh", "-c"])
        .arg(format!("echo go > {}; exec sleep 60", started.display()))
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    wait_for_file(&started, Duration::from_secs(20));
    signal(&child, libc::SIGINT);
    let t = Instant::now();
    let status = child.wait().unwrap();
    assert!(t.elapsed() < Duration::from_secs(5));
    assert_eq!(status.code(), Some(130));
    // Released although the 60 s lease had plenty of time left.
    let rt = rt();
    let lock = lock_for(&c, "l");
    assert!(!rt.block_on(lock.status()).unwrap().is_locked());
    assert!(rt.block_on(lock.try_acquire()).unwrap().is_some());
}

#[test]
fn bad_input_is_refused_before_sending() {
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(1)
        .enable_all()
        .build()
        .unwrap();
    let server = rt.block_on(support::scripted::Scripted::start(vec![
        support::scripted::Reply::status(500),
    ]));
    let cs = format!(
        "DefaultEndpointsProtocol=http;AccountName=devstoreaccount1;\
         AccountKey=Eby8vdM02xNOcqFlqUwJPLlmEtlCDXJ1OUzFT50uSRZ6IFsuFq2UVErCz4I6tq/K1SZFPTOtr/KBHBeksoGMGw==;\
         BlobEndpoint=http://127.0.0.1:{}/devstoreaccount1",
        server.port
    );
    let cases: &[&[&str]] = &[
        &[
            "run",
            "--container",
            "c1c",
            "--blob",
            "l",
            "--duration",
            "14",
            "--",
            "true",
        ],
        &[
            "run",
            "--container",
            "c1c",
            "--blob",
            "l",
            "--duration",
            "61",
            "--",
            "true",
        ],
        &["run", "--container", "c1c", "--blob", "l/", "--", "true"],
        &[
            "run",
            "--container",
            "Bad_Name",
            "--blob",
            "l",
            "--",
            "true",
        ],
        &[
            "run",
            "--container",
            "c1c",
            "--blob",
            "l",
            "--wait=-1",
            "--",
            "true",
        ],
        &[
            "run",
            "--container",
            "c1c",
            "--blob",
            "l",
            "--wait=1e300",
            "--",
            "true",
        ],
        &[
            "break",
            "--container",
            "c1c",
            "--blob",
            "l",
            "--period",
            "61",
        ],
        &["status", "--container", "c1c", "--blob", "ends."],
    ];
    for args in cases {
        let out = Command::new(AZLOCK)
            .args(*args)
            .env("AZURE_STORAGE_CONNECTION_STRING", &cs)
            .output()
            .unwrap();
        assert_eq!(out.status.code(), Some(2), "{args:?}: {}", stderr(&out));
        assert!(
            stderr(&out).contains("InvalidInput"),
            "{args:?}: {}",
            stderr(&out)
        );
        // Secrets never printed.
        assert!(!stderr(&out).contains("Eby8vdM02"));
    }
    // --now and --period contradict each other.
    let out = Command::new(AZLOCK)
        .args([
            "break",
            "--container",
            "c1c",
            "--blob",
            "l",
            "--now",
            "--period",
            "5",
        ])
        .env("AZURE_STORAGE_CONNECTION_STRING", &cs)
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2), "{}", stderr(&out));
    // No command at all is a usage error too.
    let out = Command::new(AZLOCK)
        .args(["run", "--container", "c1c", "--blob", "l"])
        .env("AZURE_STORAGE_CONNECTION_STRING", &cs)
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    // --help does not print the connection string either.
    let out = Command::new(AZLOCK)
        .args(["run", "--help"])
        .env("AZURE_STORAGE_CONNECTION_STRING", &cs)
        .output()
        .unwrap();
    let help = String::from_utf8_lossy(&out.stdout);
    assert!(
        help.contains("AZLOCK_FENCING_TOKEN") && help.contains("75"),
        "{help}"
    );
    assert!(!help.contains("Eby8vdM02"));
    assert_eq!(server.count(), 0);
}

fn records(log: &Path) -> Vec<String> {
    std::fs::read_to_string(log)
        .unwrap_or_default()
        .lines()
        .map(str::to_string)
        .collect()
}

/// Kills the holder's process group (azlock's, and through it the command's) if the test ends
/// early.
struct KillGroup(i32);

impl Drop for KillGroup {
    fn drop(&mut self) {
        // SAFETY: kill(2) to the process group of a child this test spawned; failures do not
        // matter here.
        unsafe {
            libc::kill(-self.0, libc::SIGKILL);
        }
    }
}

/// What the overlap probe saw.
struct BreakProbe {
    /// `azlock break`'s stdout and stderr.
    said: String,
    warned: String,
    /// A's records after B's first.
    overlaps: usize,
    /// A's azlock's exit status and stderr.
    status: std::process::ExitStatus,
    err: String,
}

/// The overlap probe of `azlock break`: holder A runs under azlock (15 s lease) and appends
/// `A <n>` records to a log every 50 ms; `azlock break <flags>`; holder B (the test) waits for
/// the lock and appends `B <n>` records for 2 s; then A's azlock must have exited. Counts A's
/// records after B's first.
fn break_probe(flags: &[&str]) -> BreakProbe {
    use std::os::unix::process::CommandExt;
    let c = support::unique("azlbrkdef");
    let dir = tmpdir("azlbrkdef");
    let log = dir.join("log");
    let started = dir.join("started");
    let mut holder = azlock()
        .args(["run", "--container", &c, "--blob", "l", "--duration", "15"])
        .args(["--grace", "2", "--", "sh", "-c"])
        .arg(format!(
            "echo $AZLOCK_FENCING_TOKEN > {started}.tmp && mv {started}.tmp {started}; \
             i=0; while :; do echo \"A $i\" >> {log}; i=$((i+1)); sleep 0.05; done",
            started = started.display(),
            log = log.display()
        ))
        .stderr(Stdio::piped())
        .process_group(0)
        .spawn()
        .unwrap();
    let _cleanup = KillGroup(holder.id() as i32);
    let a_token: u64 = wait_for_file(&started, Duration::from_secs(20))
        .parse()
        .unwrap();
    let t = Instant::now();
    while records(&log).len() < 3 {
        assert!(t.elapsed() < Duration::from_secs(20), "A writes nothing");
        std::thread::sleep(Duration::from_millis(20));
    }

    let broke = Instant::now();
    let out = azlock()
        .args(["break", "--container", &c, "--blob", "l"])
        .args(flags)
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let said = String::from_utf8_lossy(&out.stdout).into_owned();
    let warned = stderr(&out);

    let rt = rt();
    let lock = lock_for(&c, "l");
    let b = rt
        .block_on(lock.acquire_within(Duration::from_secs(40)))
        .unwrap()
        .expect("the broken lease ends and B gets the lock");
    let b_after = broke.elapsed();
    assert!(b.fencing_token() > a_token);
    {
        use std::io::Write;
        let mut f = std::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(&log)
            .unwrap();
        for i in 0..100 {
            writeln!(f, "B {i}").unwrap();
            std::thread::sleep(Duration::from_millis(20));
        }
    }
    let status = loop {
        if let Some(st) = holder.try_wait().unwrap() {
            break st;
        }
        assert!(
            broke.elapsed() < Duration::from_secs(60),
            "A's azlock did not exit"
        );
        std::thread::sleep(Duration::from_millis(20));
    };
    assert!(b.is_held(), "B is unaffected");
    rt.block_on(b.release()).unwrap();
    let mut err = String::new();
    std::io::Read::read_to_string(holder.stderr.as_mut().unwrap(), &mut err).unwrap();

    let recs = records(&log);
    let first_b = recs.iter().position(|r| r.starts_with("B ")).unwrap();
    let overlaps = recs[first_b..]
        .iter()
        .filter(|r| r.starts_with("A "))
        .count();
    eprintln!(
        "azlock break {flags:?}: {}; B acquired {:.1} s after the break; A records {first_b}, \
         A after B's first {overlaps}; A's azlock exited with {status}:\n{err}",
        said.trim(),
        b_after.as_secs_f64(),
    );
    BreakProbe {
        said,
        warned,
        overlaps,
        status,
        err,
    }
}

/// `azlock break` with its defaults waits out the holder's lease, and A's azlock stops its
/// command at its next renew, before that: no A record follows B's first.
#[test]
fn break_with_defaults_never_runs_two_holders_at_once() {
    let BreakProbe {
        said,
        warned,
        overlaps,
        status,
        err,
    } = break_probe(&[]);
    assert_eq!(overlaps, 0, "A wrote after B's first record\n{err}");
    assert_eq!(status.code(), Some(70), "{err}");
    assert!(err.contains("lost the lock"), "{err}");
    // The refusal reads like every other error: one line, `[request id …]`, no raw
    // "RequestId:…/Time:…" tail.
    assert!(
        err.contains("[request id ") && !err.contains("RequestId:"),
        "{err}"
    );
    // The default waits out the rest of the holder's 15 s lease (renewed every 5 s): at least
    // 9 s, more than A's azlock needs to notice at its next renew. (B got the lock sooner
    // because A's azlock, once its command was stopped, released the breaking lease.)
    let ends_in: u64 = said
        .split("ends in ")
        .nth(1)
        .and_then(|r| r.split(' ').next())
        .and_then(|n| n.parse().ok())
        .unwrap_or_else(|| panic!("{said}"));
    assert!(ends_in >= 9, "{said}");
    assert!(!warned.contains("warning"), "{warned}");
}

/// `azlock break --now` does what it says, and says what it costs: the lock is free at once
/// while A's azlock notices only at its next renew, so A's command runs beside B's until then
/// (the baseline the default is measured against; the count is printed, not asserted).
#[test]
fn break_now_frees_the_lock_at_once_and_warns_of_the_overlap() {
    let probe = break_probe(&["--now"]);
    assert!(probe.said.contains("ends in 0 s"), "{}", probe.said);
    assert!(
        probe.warned.contains("warning") && probe.warned.contains("alongside"),
        "{}",
        probe.warned
    );
    // A is still stopped, at its next renew.
    assert_eq!(probe.status.code(), Some(70), "{}", probe.err);
    assert!(probe.err.contains("lost the lock"), "{}", probe.err);
}

/// An explicit period warns of its consequence only when it can end before the holder's
/// lease would have: a period the service cut short to the rest of the lease is the default.
#[test]
fn an_explicit_period_warns_only_when_it_can_end_before_the_lease() {
    let rt = rt();
    for (period, warns) in [("60", false), ("3", true)] {
        let c = support::unique("azlbrkper");
        let lock = lock_for(&c, "l");
        let held = rt.block_on(lock.try_acquire()).unwrap().unwrap();
        let out = azlock()
            .args([
                "break",
                "--container",
                &c,
                "--blob",
                "l",
                "--period",
                period,
            ])
            .output()
            .unwrap();
        assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
        let said = String::from_utf8_lossy(&out.stdout);
        assert_eq!(stderr(&out).contains("warning"), warns, "{period}: {said}");
        assert_eq!(
            said.contains("when the holder's lease would have expired"),
            !warns,
            "{period}: {said}"
        );
        drop(held);
    }
}

/// (enter ns, exit ns, fencing token, slot) from the commands' own log lines.
fn sections_from(logs: &[PathBuf]) -> Vec<(u128, u128, u64, String)> {
    let mut sections = Vec::new();
    for log in logs {
        let log = std::fs::read_to_string(log).unwrap();
        let lines: Vec<Vec<&str>> = log.lines().map(|l| l.split(' ').collect()).collect();
        for pair in lines.chunks(2) {
            assert_eq!((pair[0][1], pair[1][1]), ("enter", "exit"), "{log}");
            sections.push((
                pair[0][0].parse().unwrap(),
                pair[1][0].parse().unwrap(),
                pair[0][2].parse().unwrap(),
                pair[0][3].to_string(),
            ));
        }
    }
    sections
}

#[test]
fn six_processes_with_two_permits_run_at_most_two_at_once_and_all_run() {
    let c = support::unique("azlsem");
    let dir = tmpdir("azlsem");
    let script = "echo \"$(date +%s%N) enter $AZLOCK_FENCING_TOKEN $AZLOCK_PERMIT_SLOT\" >> \"$LOG\"; \
                  sleep 0.5; \
                  echo \"$(date +%s%N) exit $AZLOCK_FENCING_TOKEN $AZLOCK_PERMIT_SLOT\" >> \"$LOG\"";
    let threads: Vec<_> = (0..6)
        .map(|i| {
            let c = c.clone();
            let log = dir.join(format!("p{i}.log"));
            std::thread::spawn(move || {
                let out = azlock()
                    .args(["run", "--container", &c, "--blob", "jobs", "--permits", "2"])
                    .args(["--duration", "15", "--wait", "60", "--", "sh", "-c", script])
                    .env("LOG", &log)
                    .output()
                    .unwrap();
                assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
                log
            })
        })
        .collect();
    let logs: Vec<PathBuf> = threads.into_iter().map(|t| t.join().unwrap()).collect();
    let sections = sections_from(&logs);
    assert_eq!(sections.len(), 6, "all 6 commands ran once");
    let mut events: Vec<(u128, i32)> = sections
        .iter()
        .flat_map(|s| [(s.0, 1), (s.1, -1)])
        .collect();
    events.sort();
    let (mut now, mut most) = (0, 0);
    for (_, d) in events {
        now += d;
        most = most.max(now);
    }
    assert!(
        most <= 2,
        "{most} commands ran at once with 2 permits: {sections:?}"
    );
    assert!(
        most == 2,
        "two permits let two commands run at once: {sections:?}"
    );
    for a in &sections {
        assert!(a.3 == "0" || a.3 == "1", "AZLOCK_PERMIT_SLOT: {a:?}");
        for b in &sections {
            if a.1 <= b.0 {
                assert!(a.2 < b.2, "tokens follow grant order: {a:?} then {b:?}");
            }
        }
    }
}

#[test]
fn status_shows_the_permit_holders_and_a_writer_waits_for_a_reader() {
    use azstore::blob::BlobLocks;
    use azstore::lock::{RwLock, Semaphore};
    let c = support::unique("azlsst");
    let rt = rt();
    let container = BlobServiceClient::new(&support::account())
        .unwrap()
        .container(&c)
        .unwrap();
    let locks = BlobLocks::new(
        container,
        LockOptions::default().duration(LeaseDuration::seconds(15).unwrap()),
    );
    let sem = Semaphore::new(&locks, "pool", 3, "holder-x").unwrap();
    let permit = rt.block_on(sem.try_acquire()).unwrap().unwrap();
    let out = azlock()
        .args([
            "status",
            "--container",
            &c,
            "--blob",
            "pool",
            "--permits",
            "3",
        ])
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&out.stdout).into_owned();
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    assert!(
        text.contains("permits:       3 (1 held, 0 waiting in line)"),
        "{text}"
    );
    assert!(text.contains("label=\"holder-x\""), "{text}");
    assert!(text.contains(&format!("slot {}:", permit.slot())), "{text}");
    rt.block_on(permit.release()).unwrap();

    let rw = RwLock::new(&locks, "catalog", 4, "reader-y").unwrap();
    let read = rt
        .block_on(rw.read_within(Duration::from_secs(10)))
        .unwrap()
        .unwrap();
    let marker = tmpdir("azlrw").join("ran");
    let out = azlock()
        .args([
            "run",
            "--container",
            &c,
            "--blob",
            "catalog",
            "--write",
            "--max-readers",
            "4",
        ])
        .args(["--duration", "15", "--wait", "1", "--", "touch"])
        .arg(&marker)
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(75), "{}", stderr(&out));
    assert!(
        !marker.exists(),
        "the writer must not run while a reader reads"
    );
    assert!(stderr(&out).contains("reader-y"), "{}", stderr(&out));
    let out = azlock()
        .args([
            "run",
            "--container",
            &c,
            "--blob",
            "catalog",
            "--read",
            "--max-readers",
            "4",
        ])
        .args(["--duration", "15", "--wait", "10", "--", "touch"])
        .arg(&marker)
        .output()
        .unwrap();
    assert_eq!(
        out.status.code(),
        Some(0),
        "readers share: {}",
        stderr(&out)
    );
    assert!(marker.exists());
    rt.block_on(read.release()).unwrap();
}
