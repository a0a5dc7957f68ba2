#![cfg(unix)]
//! `azlock lead` against Azurite: two leaders take turns (the command runs only while leading,
//! with increasing epochs in its environment), and SIGTERM to the leader hands over at once.

use testkit as support;

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
