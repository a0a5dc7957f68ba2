#![cfg(unix)]
//! What the command and the sentinel see of azlock's credentials, against Azurite: the
//! command's environment has no credential variable unless `--pass-credentials`, for `run`
//! and `lead`; the sentinel's `/proc/PID/environ` is empty.

use testkit as support;

use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

const AZLOCK: &str = env!("CARGO_BIN_EXE_azlock");

/// Secret-bearing variables azlock is given on top of Azurite's connection string (which
/// carries the credential it uses, so these are not read).
const EXTRA: &[(&str, &str)] = &[
    ("AZURE_STORAGE_KEY", "c2VjcmV0LWtleQ=="),
    ("AZURE_STORAGE_ACCOUNT_KEY", "c2VjcmV0LWtleQ=="),
    ("AZURE_STORAGE_ACCESS_KEY", "c2VjcmV0LWtleQ=="),
    ("AZURE_STORAGE_SAS_TOKEN", "sv=1&sig=c2ln"),
    ("AZURE_STORAGE_SAS_KEY", "sv=1&sig=c2ln"),
    ("AZURE_STORAGE_TOKEN", "tok.en.value"),
    ("AZURE_CLIENT_SECRET", "client-secret"),
    ("AZURE_CLIENT_CERTIFICATE_PASSWORD", "cert-password"),
    ("AZURE_PASSWORD", "password"),
    ("IDENTITY_HEADER", "identity-header"),
    ("MSI_SECRET", "msi-secret"),
    // Not secrets: they stay.
    ("AZURE_CLIENT_ID", "client-id"),
    ("AZURE_TENANT_ID", "tenant-id"),
];

const SECRET_VARS: &[&str] = &[
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

fn tmpdir(name: &str) -> PathBuf {
    let d = std::env::temp_dir().join(support::unique(name));
    std::fs::create_dir_all(&d).unwrap();
    d
}

fn wait_for(p: &Path) -> String {
    let t = Instant::now();
    loop {
        if let Ok(s) = std::fs::read_to_string(p) {
            if s.ends_with("END\n") {
                return s;
            }
        }
        assert!(
            t.elapsed() < Duration::from_secs(30),
            "{} not written",
            p.display()
        );
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// Variable names of `/proc/PID/environ`-style or `env`-style text.
fn names(text: &str, sep: char) -> Vec<String> {
    text.split(sep)
        .filter_map(|kv| kv.split_once('=').map(|(k, _)| k.to_string()))
        .collect()
}

/// `azlock SUB ... -- sh -c 'env > OUT; echo END >> OUT; sleep 30'` with the extra variables;
/// returns the child and the command's `env` output.
fn start(sub: &str, pass: bool, out: &Path) -> (Child, String) {
    let _ = support::account(); // fail loudly without Azurite; azlock reads the environment
    let container = support::unique("azlcred");
    let mut c = Command::new(AZLOCK);
    c.arg(sub);
    if pass {
        c.arg("--pass-credentials");
    }
    let child = c
        .args(["--container", &container, "--blob", "l", "--", "sh", "-c"])
        .arg(format!(
            "env > {out}.tmp; echo END >> {out}.tmp; mv {out}.tmp {out}; sleep 30",
            out = out.display()
        ))
        .envs(EXTRA.iter().copied())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let env = wait_for(out);
    (child, env)
}

/// The sentinel: azlock's child whose command line is the hidden argument.
fn sentinel_of(azlock: u32) -> u32 {
    let t = Instant::now();
    loop {
        for entry in std::fs::read_dir("/proc").unwrap().flatten() {
            let Ok(pid) = entry.file_name().to_string_lossy().parse::<u32>() else {
                continue;
            };
            let Ok(stat) = std::fs::read_to_string(format!("/proc/{pid}/stat")) else {
                continue;
            };
            // pid (comm) state ppid ...: comm may hold spaces, so split after the last ')'.
            let ppid = stat
                .rsplit_once(')')
                .and_then(|(_, rest)| rest.split_whitespace().nth(1))
                .and_then(|p| p.parse::<u32>().ok());
            let cmdline = std::fs::read(format!("/proc/{pid}/cmdline")).unwrap_or_default();
            if ppid == Some(azlock)
                && String::from_utf8_lossy(&cmdline).contains("__azlock_sentinel")
            {
                return pid;
            }
        }
        assert!(t.elapsed() < Duration::from_secs(10), "no sentinel found");
        std::thread::sleep(Duration::from_millis(20));
    }
}

fn stop(mut child: Child) {
    // SAFETY: kill(2) to the azlock process this test started; it stops its command.
    unsafe {
        libc::kill(child.id() as libc::pid_t, libc::SIGTERM);
    }
    assert_eq!(child.wait().unwrap().code(), Some(143));
}

fn check(sub: &str) {
    let dir = tmpdir("azlcred");
    // Default: no credential variable in the command's environment; the sentinel has none.
    let (child, env) = start(sub, false, &dir.join("default"));
    let seen = names(&env, '\n');
    for v in SECRET_VARS {
        assert!(
            !seen.iter().any(|s| s == v),
            "azlock {sub}: the command sees {v}"
        );
    }
    for v in [
        "AZURE_CLIENT_ID",
        "AZURE_TENANT_ID",
        "AZLOCK_FENCING_TOKEN",
        "AZLOCK_LEASE_ID",
    ] {
        assert!(seen.iter().any(|s| s == v), "azlock {sub}: {v} missing");
    }
    let sentinel = sentinel_of(child.id());
    let environ = std::fs::read(format!("/proc/{sentinel}/environ")).unwrap();
    assert!(
        environ.is_empty(),
        "azlock {sub}: the sentinel's environment: {:?}",
        names(&String::from_utf8_lossy(&environ), '\0')
    );
    stop(child);

    // --pass-credentials: the command gets them all.
    let (child, env) = start(sub, true, &dir.join("pass"));
    let seen = names(&env, '\n');
    for v in SECRET_VARS {
        assert!(
            seen.iter().any(|s| s == v),
            "azlock {sub} --pass-credentials: {v} missing"
        );
    }
    let sentinel = sentinel_of(child.id());
    assert!(
        std::fs::read(format!("/proc/{sentinel}/environ"))
            .unwrap()
            .is_empty()
    );
    stop(child);
}

#[test]
fn run_keeps_credentials_from_the_command_and_the_sentinel() {
    check("run");
}

#[test]
fn lead_keeps_credentials_from_the_command_and_the_sentinel() {
    check("lead");
}
