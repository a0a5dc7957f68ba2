#![cfg(unix)]
//! `azlock lead` against Azurite: two leaders take turns (the command runs only while leading,
//! with increasing epochs in its environment), SIGTERM to the leader hands over at once, and a
//! leader's azlock killed (SIGKILL) or frozen (SIGSTOP) while its command runs: the command
//! stops before the next leader's starts, five rounds of each at once.

use testkit as support;

use std::io::Read;
use std::os::unix::process::ExitStatusExt;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

const AZLOCK: &str = env!("CARGO_BIN_EXE_azlock");

fn lead(container: &str, label: &str, script: &str) -> Child {
    // Fail loudly (never skip) when Azurite is absent.
    let _ = support::account();
    Command::new(AZLOCK)
        .args([
            "lead",
            "--container",
            container,
            "--blob",
            "leaders/test",
            "--label",
            label,
            "--grace",
            "2",
            "--",
            "sh",
            "-c",
            script,
        ])
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap()
}

fn tmpdir(name: &str) -> PathBuf {
    let d = std::env::temp_dir().join(support::unique(name));
    std::fs::create_dir_all(&d).unwrap();
    d
}

fn term(child: &Child) {
    // SAFETY: kill(2) to a child process this test started.
    unsafe {
        libc::kill(child.id() as libc::pid_t, libc::SIGTERM);
    }
}

fn wait_until(p: &Path, within: Duration, what: impl Fn(&str) -> bool) -> String {
    let t = Instant::now();
    loop {
        let s = std::fs::read_to_string(p).unwrap_or_default();
        if what(&s) {
            return s;
        }
        assert!(t.elapsed() < within, "not within {within:?}: {s:?}");
        std::thread::sleep(Duration::from_millis(20));
    }
}

#[test]
fn two_leaders_take_turns_with_increasing_epochs_never_together() {
    let container = support::unique("lead");
    let dir = tmpdir("lead");
    let log = dir.join("log");
    // Each term: "start LABEL EPOCH", half a second of work, "end LABEL EPOCH".
    let script = |label: &str| {
        format!(
            "echo \"start {label} $AZLOCK_EPOCH $AZLOCK_FENCING_TOKEN\" >> {log}; sleep 0.5; echo \"end {label} $AZLOCK_EPOCH\" >> {log}",
            log = log.display()
        )
    };
    let mut a = lead(&container, "A", &script("A"));
    let mut b = lead(&container, "B", &script("B"));
    wait_until(&log, Duration::from_secs(60), |s| {
        s.lines().filter(|l| l.starts_with("end")).count() >= 4
    });
    term(&a);
    term(&b);
    assert_eq!(a.wait().unwrap().code(), Some(143));
    assert_eq!(b.wait().unwrap().code(), Some(143));
    let text = std::fs::read_to_string(&log).unwrap();
    let lines: Vec<Vec<&str>> = text.lines().map(|l| l.split(' ').collect()).collect();
    let mut last_epoch = 0u64;
    let mut labels = std::collections::BTreeSet::new();
    let mut open: Option<(String, u64)> = None;
    for l in &lines {
        match l.as_slice() {
            ["start", label, epoch, token] => {
                assert!(open.is_none(), "two commands at once: {text}");
                let epoch: u64 = epoch.parse().unwrap();
                assert_eq!(
                    epoch.to_string(),
                    *token,
                    "AZLOCK_FENCING_TOKEN = AZLOCK_EPOCH"
                );
                assert!(epoch > last_epoch, "epochs must increase: {text}");
                last_epoch = epoch;
                labels.insert(label.to_string());
                open = Some((label.to_string(), epoch));
            }
            ["end", label, epoch] => {
                let (l, e) = open.take().expect("end without start");
                assert_eq!((l.as_str(), e), (*label, epoch.parse().unwrap()), "{text}");
            }
            _ => panic!("unexpected line in {text}"),
        }
    }
    // A resigns after each run and waits a second before campaigning again: B gets turns.
    assert_eq!(labels.len(), 2, "both took turns: {text}");
}

#[test]
fn sigterm_to_the_leader_hands_over_within_a_second() {
    let container = support::unique("leadterm");
    let dir = tmpdir("leadterm");
    let (fa, fb) = (dir.join("a"), dir.join("b"));
    let mut a = lead(
        &container,
        "A",
        &format!("echo $AZLOCK_EPOCH > {}; sleep 60", fa.display()),
    );
    let epoch_a: u64 = wait_until(&fa, Duration::from_secs(30), |s| s.ends_with('\n'))
        .trim()
        .parse()
        .unwrap();
    let b = lead(
        &container,
        "B",
        &format!("echo $AZLOCK_EPOCH > {}; sleep 60", fb.display()),
    );
    std::thread::sleep(Duration::from_secs(2));
    assert!(!fb.exists(), "B must not run while A leads");
    let t0 = Instant::now();
    term(&a);
    let epoch_b: u64 = wait_until(&fb, Duration::from_secs(10), |s| s.ends_with('\n'))
        .trim()
        .parse()
        .unwrap();
    let handover = t0.elapsed();
    // A's command is stopped (SIGTERM to its group) before it resigns.
    assert_eq!(a.wait().unwrap().code(), Some(143));
    assert!(epoch_b > epoch_a);
    assert!(
        handover < Duration::from_millis(1500),
        "SIGTERM handed over in {handover:?}"
    );
    term(&b);
    let out = b.wait_with_output().unwrap();
    assert_eq!(out.status.code(), Some(143));
    assert!(
        String::from_utf8_lossy(&out.stderr).contains("resigning"),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
}

/// How the first leader's azlock is taken out while its command runs.
#[derive(Clone, Copy, Debug)]
enum Fault {
    /// `kill -9` of azlock: its sentinel must stop the command at once.
    Kill,
    /// SIGSTOP of azlock alone (its command and sentinel keep running): the sentinel must
    /// stop the command before the lease can expire.
    Freeze,
}

/// One round: A leads, B campaigns, A's azlock gets `fault`, B takes over once A's lease
/// expires on the service. Both commands append to one log (O_APPEND: the order of lines is
/// the order of the writes) with their own nanosecond timestamps. Returns what was measured.
fn leader_taken_out(fault: Fault, round: usize) -> String {
    let container = support::unique("leadfault");
    let dir = tmpdir("leadfault");
    let log = dir.join("log");
    let writer = |who: &str| {
        format!(
            "echo \"start {who} $$ $AZLOCK_EPOCH $(date +%s%N)\" >> {log}; \
             while :; do echo \"{who} $(date +%s%N)\" >> {log}; sleep 0.05; done",
            log = log.display()
        )
    };
    let mut a = lead(&container, "A", &writer("A"));
    // Read on a thread: if the command outlived azlock, it would hold the pipe open and a
    // plain read would never end (the round must fail, not hang).
    let a_err = drain(a.stderr.take().unwrap());
    let mut cleanup = Cleanup(Vec::new());
    let started = wait_until(&log, Duration::from_secs(30), |s| {
        s.lines().filter(|l| l.starts_with("A ")).count() >= 3
    });
    let a_group: i32 = started
        .lines()
        .find_map(|l| l.strip_prefix("start A "))
        .and_then(|l| l.split(' ').next())
        .and_then(|g| g.parse().ok())
        .expect("A's command wrote its process group");
    cleanup.0.push(-a_group);
    cleanup.0.push(a.id() as i32);
    let mut b = lead(&container, "B", &writer("B"));
    cleanup.0.push(b.id() as i32);
    // B campaigns while A leads (it must not run).
    std::thread::sleep(Duration::from_secs(2));
    assert!(
        !std::fs::read_to_string(&log).unwrap().contains("start B"),
        "B ran while A led"
    );

    let t0 = Instant::now();
    let sig = match fault {
        Fault::Kill => libc::SIGKILL,
        Fault::Freeze => libc::SIGSTOP,
    };
    // SAFETY: kill(2) to the azlock process this test started (not its group: the command and
    // the sentinel keep running).
    assert_eq!(unsafe { libc::kill(a.id() as libc::pid_t, sig) }, 0);
    let text = wait_until(&log, Duration::from_secs(40), |s| s.contains("start B"));
    let takeover = t0.elapsed();
    if let Some(g) = text
        .lines()
        .find_map(|l| l.strip_prefix("start B "))
        .and_then(|l| l.split(' ').next())
        .and_then(|g| g.parse::<i32>().ok())
    {
        cleanup.0.push(-g);
    }
    // Let B write for a while, then look at the whole log.
    std::thread::sleep(Duration::from_millis(700));
    let a_status = match fault {
        Fault::Kill => a.wait().unwrap(),
        Fault::Freeze => {
            // SAFETY: as above.
            unsafe { libc::kill(a.id() as libc::pid_t, libc::SIGCONT) };
            std::thread::sleep(Duration::from_millis(1500));
            term(&a);
            a.wait().unwrap()
        }
    };
    let text = {
        let _ = text;
        std::fs::read_to_string(&log).unwrap()
    };
    let a_pid = a.id() as i32;
    cleanup.0.retain(|&t| t != a_pid); // reaped: the pid may be reused
    term(&b);
    let b_status = b.wait().unwrap();
    let b_pid = b.id() as i32;
    cleanup.0.retain(|&t| t != b_pid);

    let lines: Vec<&str> = text.lines().collect();
    let b_start = lines.iter().position(|l| l.starts_with("start B")).unwrap();
    let a_after_b = lines[b_start..]
        .iter()
        .filter(|l| l.starts_with("A ") || l.starts_with("start A"))
        .count();
    let stamp = |l: &str| -> u128 { l.rsplit(' ').next().unwrap().parse().unwrap() };
    let last_a = lines[..b_start]
        .iter()
        .rev()
        .find(|l| l.starts_with("A "))
        .map(|l| stamp(l))
        .unwrap();
    let b_first = stamp(lines[b_start]);
    let epochs: Vec<u64> = lines
        .iter()
        .filter(|l| l.starts_with("start "))
        .map(|l| l.split(' ').nth(3).unwrap().parse().unwrap())
        .collect();

    let report = format!(
        "lead {fault:?} round {round}: B's command started {:.1} s after the fault; A's last \
         record {:.2} s before B's first; A records after B's start: {a_after_b}",
        takeover.as_secs_f64(),
        (b_first as f64 - last_a as f64) / 1e9
    );
    assert_eq!(a_after_b, 0, "{report}\n{text}");
    assert!(last_a < b_first, "{report}");
    assert!(epochs.windows(2).all(|w| w[0] < w[1]), "{epochs:?}");
    let a_err = a_err
        .recv_timeout(Duration::from_secs(15))
        .expect("A's stderr closes: azlock, its sentinel and its command are gone");
    // The sentinel acted, for the reason the fault gives.
    let why = match fault {
        Fault::Kill => "azlock exited without stopping the command",
        Fault::Freeze => "no heartbeat from azlock",
    };
    assert!(a_err.contains(why), "{report}\n{a_err}");
    match fault {
        Fault::Kill => assert_eq!(a_status.signal(), Some(libc::SIGKILL)),
        // Resumed, A saw the loss, campaigned again and was then interrupted.
        Fault::Freeze => {
            assert_eq!(a_status.code(), Some(143), "{a_err}");
            assert!(a_err.contains("lost the leadership"), "{a_err}");
        }
    }
    assert_eq!(b_status.code(), Some(143));
    // A's command group is gone.
    // SAFETY: signal 0 only checks that the group exists.
    let gone = unsafe { libc::kill(-a_group, 0) } == -1;
    assert!(gone, "A's command group {a_group} still exists");
    cleanup.0.clear(); // everything ended
    report
}

/// Everything a pipe gives until it closes, read on a thread of its own.
fn drain(mut pipe: impl Read + Send + 'static) -> std::sync::mpsc::Receiver<String> {
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        let mut s = String::new();
        let _ = pipe.read_to_string(&mut s);
        let _ = tx.send(s);
    });
    rx
}

/// Runs `ROUNDS` rounds of `fault` at once, each on its own container.
fn rounds(fault: Fault) {
    const ROUNDS: usize = 5;
    let t = Instant::now();
    let handles: Vec<_> = (0..ROUNDS)
        .map(|i| std::thread::spawn(move || leader_taken_out(fault, i)))
        .collect();
    let mut failed = Vec::new();
    for h in handles {
        match h.join() {
            Ok(report) => eprintln!("{report}"),
            Err(e) => failed.push(
                e.downcast_ref::<String>()
                    .cloned()
                    .or_else(|| e.downcast_ref::<&str>().map(|s| s.to_string()))
                    .unwrap_or_default(),
            ),
        }
    }
    eprintln!(
        "lead {fault:?}: {ROUNDS} rounds at once in {:.1} s",
        t.elapsed().as_secs_f64()
    );
    assert!(failed.is_empty(), "{}", failed.join("\n---\n"));
}

#[test]
fn leader_killed_its_command_stops_before_the_next_leaders_starts() {
    rounds(Fault::Kill);
}

#[test]
fn leader_frozen_its_command_stops_before_the_next_leaders_starts() {
    rounds(Fault::Freeze);
}

/// SIGKILL to what a round started (azlock pids, and the commands' groups as negative ids)
/// when it ends; failures (already gone) do not matter.
struct Cleanup(Vec<i32>);

impl Drop for Cleanup {
    fn drop(&mut self) {
        for &target in &self.0 {
            // SAFETY: kill(2) to a process or process group this round started.
            unsafe {
                libc::kill(target, libc::SIGCONT);
                libc::kill(target, libc::SIGKILL);
            }
        }
    }
}
