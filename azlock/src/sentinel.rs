//! The sentinel: a small process that stops the command when `azlock` itself stalls.
//!
//! `azlock run` and `azlock lead` renew the lease from their own process. If that process stops running — a
//! SIGSTOP, a debugger, a cgroup freeze, a swap storm — the lease runs out on the service while
//! the command keeps going: another host can take the lock while this one still writes. The
//! command's own process group cannot be trusted to notice (it does not know about the lease),
//! so `azlock` starts a sentinel (itself, re-executed as `azlock __azlock_sentinel`, with an
//! empty environment) in a process group of its own, before the command (`lead`: one for
//! each term of leadership):
//!
//! * `azlock` sends it, over a pipe, the command's process group and once a second a
//!   heartbeat carrying two readings of the system clock (`CLOCK_BOOTTIME` on Linux, shared by
//!   every process on the machine): the guard's loss deadline (the last renew that succeeded,
//!   as sent, plus the lease duration minus the safety margin) and the kill deadline (half the
//!   safety margin later, still before the lease can expire on the service).
//! * When the loss deadline passes without a heartbeat moving it, the sentinel sends SIGTERM
//!   to the command's process group; at the kill deadline SIGKILL (which also ends stopped
//!   processes). A SIGTERM sent to a stopped group waits until it is continued; the SIGKILL
//!   does not.
//! * If the pipe closes without `done` (`azlock` died), it does the same at once.
//! * `done` (the command ended, `azlock` takes over): it exits without touching anything.
//!
//! The sentinel cannot help when the whole machine stops (a VM freeze, a suspend): then it
//! is frozen too, and only writes conditioned on the lease id or checked against the fencing
//! token are safe.
//!
//! Protocol (one line each, ASCII): `beat <loss ns> <kill ns>`, `group <pgid>`, `done`.

use std::io::BufRead;
use std::process::ExitCode;
use std::sync::mpsc;
use std::time::Duration;

use azstore::clock::Clock;

enum Msg {
    Beat {
        term_at: Duration,
        kill_at: Duration,
    },
    Group(libc::pid_t),
    Done,
    Closed,
}

fn parse(line: &str) -> Option<Msg> {
    let mut parts = line.split_ascii_whitespace();
    let msg = match parts.next()? {
        "beat" => Msg::Beat {
            term_at: Duration::from_nanos(parts.next()?.parse().ok()?),
            kill_at: Duration::from_nanos(parts.next()?.parse().ok()?),
        },
        "group" => {
            let g: libc::pid_t = parts.next()?.parse().ok()?;
            // Never 0, 1 or negative: kill(-g) must name one real process group.
            if g <= 1 {
                return None;
            }
            Msg::Group(g)
        }
        "done" => Msg::Done,
        _ => return None,
    };
    parts.next().is_none().then_some(msg)
}

/// The longest the sentinel waits before looking at the clock again.
const TICK: Duration = Duration::from_millis(100);

pub(crate) fn main() -> ExitCode {
    let clock = Clock::system();
    let (tx, rx) = mpsc::channel();
    std::thread::spawn(move || {
        let stdin = std::io::stdin();
        for line in stdin.lock().lines() {
            let Ok(line) = line else { break };
            match parse(&line) {
                Some(msg) => {
                    if tx.send(msg).is_err() {
                        return;
                    }
                }
                None => eprintln!("azlock sentinel: ignoring a malformed line"),
            }
        }
        let _ = tx.send(Msg::Closed);
    });

    let mut group: Option<libc::pid_t> = None;
    let mut term_at: Option<Duration> = None;
    let mut kill_at: Option<Duration> = None;
    let mut termed = false;
    let mut closed = false;
    loop {
        let now = clock.now();
        if let Some(g) = group {
            if !group_exists(g) {
                // The command and everything it started are gone.
                return ExitCode::SUCCESS;
            }
            if !termed && term_at.is_some_and(|t| now >= t) {
                eprintln!(
                    "azlock: {}; stopping the command (SIGTERM to process group {g})",
                    if closed {
                        "azlock exited without stopping the command (killed?)"
                    } else {
                        "no heartbeat from azlock before the lease's loss deadline (azlock stalled)"
                    }
                );
                send(g, libc::SIGTERM);
                termed = true;
            }
            if kill_at.is_some_and(|k| now >= k) {
                if termed {
                    eprintln!("azlock: killing the command (SIGKILL to process group {g})");
                }
                send(g, libc::SIGKILL);
                return ExitCode::SUCCESS;
            }
        } else if closed {
            // azlock went away before starting the command: nothing to guard.
            return ExitCode::SUCCESS;
        }
        let next = [term_at.filter(|_| !termed), kill_at]
            .into_iter()
            .flatten()
            .map(|t| t.saturating_sub(now))
            .min()
            .unwrap_or(TICK)
            .min(TICK);
        if closed {
            std::thread::sleep(next);
            continue;
        }
        match rx.recv_timeout(next) {
            Ok(Msg::Beat {
                term_at: t,
                kill_at: k,
            }) => {
                // Once the command was told to stop, a late heartbeat does not save it: the
                // lease may have expired meanwhile.
                if !termed {
                    term_at = Some(t);
                    kill_at = Some(k.max(t));
                }
            }
            Ok(Msg::Group(g)) => group = Some(g),
            Ok(Msg::Done) => return ExitCode::SUCCESS,
            Ok(Msg::Closed) | Err(mpsc::RecvTimeoutError::Disconnected) => {
                closed = true;
                // azlock died without saying done: nobody renews the lease any more. Stop the
                // command now; SIGKILL at the kill deadline, or 10 s from now if that is sooner.
                if group.is_some() {
                    let now = clock.now();
                    term_at = Some(now);
                    kill_at = Some(
                        kill_at
                            .map_or(now, |k| k.max(now))
                            .min(now + Duration::from_secs(10)),
                    );
                }
            }
            Err(mpsc::RecvTimeoutError::Timeout) => {}
        }
    }
}

fn group_exists(g: libc::pid_t) -> bool {
    // SAFETY: kill(2) with signal 0 only checks that the process group exists.
    let rc = unsafe { libc::kill(-g, 0) };
    rc == 0 || std::io::Error::last_os_error().raw_os_error() != Some(libc::ESRCH)
}

fn send(g: libc::pid_t, sig: libc::c_int) {
    // SAFETY: kill(2) to the command's process group, whose id azlock sent us (> 1).
    unsafe {
        libc::kill(-g, sig);
    }
}

/// `azlock`'s end of the sentinel: the process and the pipe to it.
pub(crate) struct Sentinel {
    process: std::process::Child,
    pipe: Option<std::process::ChildStdin>,
}

impl Sentinel {
    /// Starts `azlock` itself as the sentinel, in a process group of its own (so that stopping
    /// azlock's group, or the command's, does not stop it). It gets an empty environment (it
    /// needs none: no credential, no account) and the hidden argument alone, so neither its
    /// `/proc/PID/environ` nor its `cmdline` shows a secret.
    pub(crate) fn start() -> std::io::Result<Sentinel> {
        use std::os::unix::process::CommandExt;
        let mut process = std::process::Command::new(std::env::current_exe()?)
            .arg(crate::SENTINEL_ARG)
            .env_clear()
            .stdin(std::process::Stdio::piped())
            .stdout(std::process::Stdio::null())
            .process_group(0)
            .spawn()?;
        let pipe = process.stdin.take();
        Ok(Sentinel { process, pipe })
    }

    fn send(&mut self, line: &str) -> std::io::Result<()> {
        use std::io::Write;
        let pipe = self
            .pipe
            .as_mut()
            .ok_or_else(|| std::io::Error::other("sentinel pipe closed"))?;
        pipe.write_all(line.as_bytes())?;
        pipe.flush()
    }

    /// A heartbeat: SIGTERM at `term_at`, SIGKILL at `kill_at` (readings of
    /// `Clock::system()`) unless another heartbeat moves them first.
    pub(crate) fn beat(&mut self, term_at: Duration, kill_at: Duration) -> std::io::Result<()> {
        self.send(&format!(
            "beat {} {}\n",
            term_at.as_nanos(),
            kill_at.as_nanos()
        ))
    }

    /// A heartbeat from the lease's loss deadline (`None`: nothing to tell yet): SIGTERM at
    /// it, SIGKILL `kill_delay` later.
    pub(crate) fn beat_from(
        &mut self,
        deadline: Option<Duration>,
        kill_delay: Duration,
    ) -> std::io::Result<()> {
        match deadline {
            Some(term_at) => self.beat(term_at, term_at + kill_delay),
            None => Ok(()),
        }
    }

    /// The command's process group.
    pub(crate) fn group(&mut self, pgid: u32) -> std::io::Result<()> {
        self.send(&format!("group {pgid}\n"))
    }

    /// The command is over: the sentinel exits without touching anything.
    pub(crate) fn done(mut self) {
        let _ = self.send("done\n");
        self.pipe = None;
        let t = std::time::Instant::now();
        while t.elapsed() < Duration::from_secs(2) {
            if !matches!(self.process.try_wait(), Ok(None)) {
                return;
            }
            std::thread::sleep(Duration::from_millis(5));
        }
    }
}

impl Drop for Sentinel {
    fn drop(&mut self) {
        // Without `done`, closing the pipe tells the sentinel that azlock is gone: it stops
        // the command (if it still runs). Reap it if it has exited; otherwise init will.
        self.pipe = None;
        let _ = self.process.try_wait();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_the_protocol_and_refuses_anything_else() {
        assert!(matches!(parse("beat 5 7"), Some(Msg::Beat { .. })));
        assert!(matches!(parse("group 4242"), Some(Msg::Group(4242))));
        assert!(matches!(parse("done"), Some(Msg::Done)));
        for bad in [
            "",
            "beat",
            "beat 1",
            "beat x 2",
            "beat 1 2 3",
            "group 1",
            "group 0",
            "group -5",
            "group",
            "done now",
            "kill 5",
        ] {
            assert!(parse(bad).is_none(), "{bad:?}");
        }
    }
}
