//! A lock holder *process* frozen with SIGSTOP past its 15 s lease while another holder takes
//! the lock, then resumed: it must write nothing after the new holder's first record, in all
//! three ways of asking (`is_held()` and `check()` in an async loop, `is_held()` from a plain
//! OS thread). The holder is testkit's `lease_holder` binary (built by `scripts/test`); both
//! append to one local log file, so the order of records is exact. Prints the time from the
//! resume to the loss signal.
//!
//! The holder is frozen while it sleeps between records (the test waits for a record to
//! appear, then stops it at once). A freeze *between* a check and a write is the window no
//! local check can close (see "Pauses, clocks and fencing" in the lease docs): there the lease
//! id on the write, or the fencing token, does the job.
#![cfg(unix)]

use testkit as support;

use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::mpsc;
use std::time::{Duration, Instant};

use azstore::blob::BlobLock;
use azstore::blob::BlobServiceClient;
use azstore::clock::Clock;
use azstore::lease::LeaseDuration;
use azstore::lock::LockOptions;

const MODES: [&str; 3] = ["async-is-held", "async-check", "thread-is-held"];
const RUNS_PER_MODE: usize = 2;

fn holder_binary() -> PathBuf {
    // target/debug/deps/it-<hash> -> target/debug/lease_holder
    let exe = std::env::current_exe().unwrap();
    let bin = exe
        .parent()
        .and_then(Path::parent)
        .unwrap()
        .join(format!("lease_holder{}", std::env::consts::EXE_SUFFIX));
    assert!(
        bin.exists(),
        "{} is missing: build it with `cargo build -p testkit --bins` (scripts/test does)",
        bin.display()
    );
    bin
}

/// Kills (SIGKILL, by pid) the holder it owns if the test ends early.
struct Holder {
    child: Child,
    lines: mpsc::Receiver<String>,
    seen: Vec<String>,
}

impl Holder {
    fn signal(&self, sig: i32) {
        // SAFETY: kill(2) on a child we spawned and have not reaped.
        assert_eq!(
            unsafe { libc::kill(self.child.id() as libc::pid_t, sig) },
            0
        );
    }

    /// The value of the line starting with `prefix` (lines seen before are kept, so the
    /// order in which the holder prints does not matter).
    fn expect_line(&mut self, prefix: &str, within: Duration) -> String {
        let end = Instant::now() + within;
        loop {
            if let Some(line) = self.seen.iter().find(|l| l.starts_with(prefix)) {
                return line[prefix.len()..].trim().to_string();
            }
            let left = end.saturating_duration_since(Instant::now());
            match self.lines.recv_timeout(left) {
                Ok(line) => self.seen.push(line),
                Err(e) => panic!("holder did not print {prefix:?} within {within:?}: {e}"),
            }
        }
    }
}

impl Drop for Holder {
    fn drop(&mut self) {
        if self.child.try_wait().ok().flatten().is_none() {
            let _ = self.child.kill();
            let _ = self.child.wait();
        }
    }
}

fn records(log: &Path) -> Vec<String> {
    std::fs::read_to_string(log)
        .unwrap_or_default()
        .lines()
        .map(str::to_string)
        .collect()
}

#[derive(Debug)]
struct Report {
    mode: &'static str,
    a_before: usize,
    b_records: usize,
    overlaps: usize,
    resume_to_lost: Duration,
    resume_to_signal: Duration,
}

fn one_run(mode: &'static str) -> Report {
    let container = support::unique("pausestop");
    let dir = std::env::temp_dir().join(support::unique("pausestop"));
    std::fs::create_dir_all(&dir).unwrap();
    let log = dir.join("log");
    let mut child = Command::new(holder_binary())
        .args([&container, "lock", log.to_str().unwrap(), mode])
        .env(
            "AZURE_STORAGE_CONNECTION_STRING",
            std::env::var("AZURE_STORAGE_CONNECTION_STRING").unwrap(),
        )
        .stdout(Stdio::piped())
        .spawn()
        .unwrap();
    let stdout = child.stdout.take().unwrap();
    let (tx, lines) = mpsc::channel();
    std::thread::spawn(move || {
        for line in BufReader::new(stdout).lines().map_while(Result::ok) {
            if tx.send(line).is_err() {
                return;
            }
        }
    });
    let mut holder = Holder {
        child,
        lines,
        seen: Vec::new(),
    };
    let a_token: u64 = holder
        .expect_line("ACQUIRED ", Duration::from_secs(30))
        .parse()
        .unwrap();

    // Freeze it right after a record appears, i.e. while it sleeps before the next check.
    let t = Instant::now();
    while records(&log).len() < 5 {
        assert!(
            t.elapsed() < Duration::from_secs(10),
            "holder writes nothing"
        );
        std::thread::sleep(Duration::from_millis(5));
    }
    let n = std::fs::metadata(&log).unwrap().len();
    while std::fs::metadata(&log).unwrap().len() == n {
        std::hint::spin_loop();
    }
    holder.signal(libc::SIGSTOP);

    // B takes the lock once A's lease expires on the service.
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    let lock = BlobLock::with_options(
        BlobServiceClient::new(&support::account())
            .unwrap()
            .container(&container)
            .unwrap(),
        "lock",
        LockOptions::default().duration(LeaseDuration::seconds(15).unwrap()),
    )
    .unwrap();
    let b = rt
        .block_on(lock.acquire_within(Duration::from_secs(40)))
        .unwrap()
        .expect("the frozen holder's lease expires and B gets the lock");
    assert!(b.fencing_token() > a_token);

    // B appends to the log while A is resumed.
    let (stop_b, stopped) = mpsc::channel::<()>();
    let b_log = log.clone();
    let writer = std::thread::spawn(move || {
        use std::io::Write;
        let mut f = std::fs::OpenOptions::new()
            .append(true)
            .open(b_log)
            .unwrap();
        let mut i = 0;
        while stopped.try_recv().is_err() {
            writeln!(f, "B {i}").unwrap();
            i += 1;
            std::thread::sleep(Duration::from_millis(5));
        }
    });
    std::thread::sleep(Duration::from_millis(500));
    let clock = Clock::system();
    let resumed = clock.now();
    holder.signal(libc::SIGCONT);
    let lost_at: u64 = holder
        .expect_line("LOST ", Duration::from_secs(10))
        .parse()
        .unwrap();
    let signal_at: u64 = holder
        .expect_line("SIGNAL ", Duration::from_secs(10))
        .parse()
        .unwrap();
    std::thread::sleep(Duration::from_millis(300));
    stop_b.send(()).unwrap();
    writer.join().unwrap();
    assert!(b.is_held(), "B is unaffected");
    rt.block_on(b.release()).unwrap();

    let recs = records(&log);
    let first_b = recs
        .iter()
        .position(|r| r.starts_with("B "))
        .expect("B wrote");
    let since = |ns: u64| Duration::from_nanos(ns).saturating_sub(resumed);
    Report {
        mode,
        a_before: first_b,
        b_records: recs[first_b..]
            .iter()
            .filter(|r| r.starts_with("B "))
            .count(),
        overlaps: recs[first_b..]
            .iter()
            .filter(|r| r.starts_with("A "))
            .count(),
        resume_to_lost: since(lost_at),
        resume_to_signal: since(signal_at),
    }
}

#[test]
fn a_holder_frozen_past_its_lease_writes_nothing_after_the_next_holder_starts() {
    let _ = support::account(); // fail loudly without Azurite
    let runs: Vec<_> = MODES
        .iter()
        .flat_map(|m| std::iter::repeat_n(*m, RUNS_PER_MODE))
        .map(|mode| std::thread::spawn(move || one_run(mode)))
        .collect();
    let reports: Vec<Report> = runs.into_iter().map(|r| r.join().unwrap()).collect();
    eprintln!("mode            A records  B records  A after B  resume->LOST  resume->lost()");
    for r in &reports {
        eprintln!(
            "{:<15} {:>9}  {:>9}  {:>9}  {:>9.1} ms  {:>11.1} ms",
            r.mode,
            r.a_before,
            r.b_records,
            r.overlaps,
            r.resume_to_lost.as_secs_f64() * 1e3,
            r.resume_to_signal.as_secs_f64() * 1e3
        );
    }
    for r in &reports {
        assert!(r.a_before >= 5 && r.b_records > 0, "{r:?}");
        assert_eq!(
            r.overlaps, 0,
            "the frozen holder wrote after B's first record: {r:?}"
        );
    }
}
