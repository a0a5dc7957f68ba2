#![cfg(unix)]
//! `azlock` frozen with SIGSTOP past its 15 s lease while another holder takes the lock: its
//! command must write nothing after the new holder's first record. Two ways to freeze:
//!
//! * azlock and its command together (both process groups: a job stopped as a whole);
//! * azlock alone, its command keeps running (the case the sentinel exists for).
//!
//! The command appends `A <n>` lines to a log file, the test (the next holder) `B <n>` lines,
//! so the order of records is exact. Against Azurite; the times are printed.

use testkit as support;

use std::io::Read;
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::mpsc;
use std::time::{Duration, Instant};

use azstore::blob::BlobLock;
use azstore::blob::BlobServiceClient;
use azstore::lease::LeaseDuration;
use azstore::lock::LockOptions;

const AZLOCK: &str = env!("CARGO_BIN_EXE_azlock");

fn tmpdir(name: &str) -> PathBuf {
    let d = std::env::temp_dir().join(support::unique(name));
    std::fs::create_dir_all(&d).unwrap();
    d
}

fn records(log: &Path) -> Vec<String> {
    std::fs::read_to_string(log)
        .unwrap_or_default()
        .lines()
        .map(str::to_string)
        .collect()
}

/// kill(2) to a process group we created; ESRCH (already gone) is fine.
fn signal_group(pgid: i32, sig: i32) {
    assert!(pgid > 1);
    // SAFETY: kill(2) to the process group of a child this test spawned (or of its command).
    let rc = unsafe { libc::kill(-pgid, sig) };
    assert!(
        rc == 0 || std::io::Error::last_os_error().raw_os_error() == Some(libc::ESRCH),
        "kill(-{pgid}, {sig}): {}",
        std::io::Error::last_os_error()
    );
}

/// Kills azlock's group and the command's group (SIGKILL) if the test ends early.
struct Cleanup(Vec<i32>);

impl Drop for Cleanup {
    fn drop(&mut self) {
        for g in &self.0 {
            // SAFETY: as in signal_group; failures do not matter here.
            unsafe {
                libc::kill(-g, libc::SIGCONT);
                libc::kill(-g, libc::SIGKILL);
            }
        }
    }
}

fn wait_exit(child: &mut Child, within: Duration) -> std::process::ExitStatus {
    let t = Instant::now();
    loop {
        if let Some(st) = child.try_wait().unwrap() {
            return st;
        }
        assert!(
            t.elapsed() < within,
            "azlock did not exit within {within:?}"
        );
        std::thread::sleep(Duration::from_millis(20));
    }
}

fn frozen_holder(freeze_command_too: bool) {
    let c = support::unique("azlpause");
    let dir = tmpdir("azlpause");
    let log = dir.join("log");
    let started = dir.join("started");
    // azlock in a process group of its own, so the test can stop that group without
    // stopping itself.
    let _ = support::account(); // fail loudly without Azurite; azlock reads the environment
    let mut azlock = Command::new(AZLOCK)
        .args(["run", "--container", &c, "--blob", "l", "--duration", "15"])
        .args(["--grace", "2", "--", "sh", "-c"])
        .arg(format!(
            "echo $$ $AZLOCK_FENCING_TOKEN > {started}.tmp && mv {started}.tmp {started}; \
             i=0; while :; do echo \"A $i\" >> {log}; i=$((i+1)); sleep 0.05; done",
            started = started.display(),
            log = log.display()
        ))
        .stderr(Stdio::piped())
        .process_group(0)
        .spawn()
        .unwrap();
    let azlock_group = azlock.id() as i32;
    let mut cleanup = Cleanup(vec![azlock_group]);
    let t = Instant::now();
    let line = loop {
        if let Ok(s) = std::fs::read_to_string(&started) {
            break s;
        }
        assert!(
            t.elapsed() < Duration::from_secs(20),
            "command did not start"
        );
        std::thread::sleep(Duration::from_millis(20));
    };
    let mut parts = line.split_whitespace();
    let command_group: i32 = parts.next().unwrap().parse().unwrap();
    let a_token: u64 = parts.next().unwrap().parse().unwrap();
    cleanup.0.push(command_group);
    while records(&log).len() < 3 {
        assert!(
            t.elapsed() < Duration::from_secs(20),
            "command writes nothing"
        );
        std::thread::sleep(Duration::from_millis(20));
    }

    let frozen = Instant::now();
    signal_group(azlock_group, libc::SIGSTOP);
    if freeze_command_too {
        signal_group(command_group, libc::SIGSTOP);
    }

    // B takes the lock once the frozen holder's lease expires on the service.
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    let lock = BlobLock::with_options(
        BlobServiceClient::new(&support::account())
            .unwrap()
            .container(&c)
            .unwrap(),
        "l",
        LockOptions::default().duration(LeaseDuration::seconds(15).unwrap()),
    )
    .unwrap();
    let b = rt
        .block_on(lock.acquire_within(Duration::from_secs(40)))
        .unwrap()
        .expect("the frozen holder's lease expires and B gets the lock");
    let b_after = frozen.elapsed();
    assert!(b.fencing_token() > a_token);
    let (stop_b, stopped) = mpsc::channel::<()>();
    let b_log = log.clone();
    let writer = std::thread::spawn(move || {
        use std::io::Write;
        let mut f = std::fs::OpenOptions::new()
            .create(true)
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
    let resumed = Instant::now();
    signal_group(azlock_group, libc::SIGCONT);
    if freeze_command_too {
        signal_group(command_group, libc::SIGCONT);
    }
    let status = wait_exit(&mut azlock, Duration::from_secs(15));
    let resume_to_exit = resumed.elapsed();
    std::thread::sleep(Duration::from_millis(300));
    stop_b.send(()).unwrap();
    writer.join().unwrap();
    assert!(b.is_held(), "B is unaffected");
    rt.block_on(b.release()).unwrap();

    let mut err = String::new();
    azlock
        .stderr
        .as_mut()
        .unwrap()
        .read_to_string(&mut err)
        .unwrap();
    let recs = records(&log);
    let first_b = recs.iter().position(|r| r.starts_with("B ")).unwrap();
    let overlaps = recs[first_b..]
        .iter()
        .filter(|r| r.starts_with("A "))
        .count();
    eprintln!(
        "azlock frozen ({}): B acquired {:.1} s after the freeze; A records {first_b}, B records {}, \
         A after B {overlaps}; azlock exited {:.0} ms after the resume with {status}",
        if freeze_command_too {
            "with its command"
        } else {
            "alone"
        },
        b_after.as_secs_f64(),
        recs.len() - first_b - overlaps,
        resume_to_exit.as_secs_f64() * 1e3
    );
    assert_eq!(
        overlaps, 0,
        "the command wrote after B's first record\n{err}"
    );
    assert_eq!(status.code(), Some(70), "{err}");
    assert!(
        err.contains("no heartbeat from azlock"),
        "the sentinel acted: {err}"
    );
    assert!(err.contains("lost the lock"), "{err}");
}

#[test]
fn azlock_frozen_with_its_command_the_command_writes_nothing_after_the_next_holder() {
    frozen_holder(true);
}

#[test]
fn azlock_frozen_alone_the_sentinel_stops_its_command_before_the_lease_can_expire() {
    frozen_holder(false);
}

#[test]
fn azlock_killed_the_sentinel_stops_its_command_at_once() {
    let c = support::unique("azlkill");
    let dir = tmpdir("azlkill");
    let log = dir.join("log");
    let _ = support::account(); // fail loudly without Azurite; azlock reads the environment
    let mut azlock = Command::new(AZLOCK)
        .args(["run", "--container", &c, "--blob", "l", "--duration", "60"])
        .args(["--", "sh", "-c"])
        .arg(format!(
            "i=0; while :; do echo \"A $i\" >> {log}; i=$((i+1)); sleep 0.02; done",
            log = log.display()
        ))
        .stderr(Stdio::piped())
        .process_group(0)
        .spawn()
        .unwrap();
    let _cleanup = Cleanup(vec![azlock.id() as i32]);
    let t = Instant::now();
    while records(&log).len() < 3 {
        assert!(
            t.elapsed() < Duration::from_secs(20),
            "command writes nothing"
        );
        std::thread::sleep(Duration::from_millis(20));
    }
    // SIGKILL: azlock cannot clean up; its 60 s lease stays until it expires.
    azlock.kill().unwrap();
    azlock.wait().unwrap();
    std::thread::sleep(Duration::from_millis(1000));
    let after = records(&log).len();
    std::thread::sleep(Duration::from_millis(1000));
    assert_eq!(
        records(&log).len(),
        after,
        "the command kept writing after azlock died"
    );
    let mut err = String::new();
    azlock
        .stderr
        .as_mut()
        .unwrap()
        .read_to_string(&mut err)
        .unwrap();
    assert!(err.contains("stopping the command"), "{err}");
}
