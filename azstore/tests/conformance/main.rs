//! Conformance with the real Azure Storage service: replays the recordings of live Azure
//! traffic in `../shared/azure-recordings` (or `$AZSTORE_RECORDINGS`) against azstore.
//!
//! For every recording, each recorded request is mapped to the azstore public-API call that
//! must produce it ([`blob`], [`queue`], [`table`], [`file`]). The calls run against a
//! [`ReplayServer`] that answers with the recorded responses, byte for byte. Per interaction
//! the suite checks the request azstore sent (method, path, query, semantic headers, body as
//! data) and that azstore's typed result says what the service said (success or the error's
//! kind and code, ETags, dates, lease ids, content, markers, messages, entities, batch
//! results). A recording with any request azstore cannot express is not driven; each such
//! recording is named with its reason in `tests/conformance/NOT_SUPPORTED.md`, and the
//! suite fails when that list and the run disagree.
//!
//! The last line printed is the summary:
//! `conformance: R recordings, I interactions, P passed, F failed, N not supported`
//! (R recordings driven with I interactions, of which P passed and F failed; N recordings
//! not driven).

mod acl;
mod behaviours;
mod blob;
mod compare;
mod cx;
mod file;
mod queue;
mod req;
mod table;

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::sync::Arc;
use std::time::Duration;

use testkit::replay::{Interaction, Recording, ReplayServer, corpus_dir};

use crate::cx::{Cx, Plan};

/// Every call gets at most this long; the replay server answers at once.
const STEP_TIMEOUT: Duration = Duration::from_secs(20);

/// The outcome of one recording.
enum Verdict {
    Driven {
        interactions: usize,
        failures: Vec<String>,
    },
    NotSupported(String),
}

fn plan_recording(rec: &Recording) -> Result<Vec<Plan>, String> {
    let service = rec.name.split('/').next().unwrap_or_default();
    let mut plans = Vec::new();
    let mut i = 0;
    while i < rec.interactions.len() {
        let plan = match service {
            "blob" => blob::plan(&rec.interactions, i),
            "queue" => queue::plan(&rec.interactions, i),
            "table" => table::plan(&rec.interactions, i),
            "file" => file::plan(&rec.interactions, i),
            other => Err(format!("unknown service folder {other}")),
        }
        .map_err(|why| format!("interaction {i}: {why}"))?;
        if plan.requests == 0 {
            return Err(format!("interaction {i}: planner consumed nothing"));
        }
        i += plan.requests;
        plans.push(plan);
    }
    Ok(plans)
}

async fn drive(rec: &Recording, plans: Vec<Plan>) -> Verdict {
    let responses = rec
        .interactions
        .iter()
        .map(|it| it.response.clone())
        .collect();
    let server = match ReplayServer::start(responses).await {
        Ok(s) => s,
        Err(e) => {
            return Verdict::Driven {
                interactions: rec.interactions.len(),
                failures: vec![format!("replay server did not start: {e}")],
            };
        }
    };
    let cx = Arc::new(Cx::new(&server.url()));
    let mut failures = Vec::new();
    let mut index = 0;
    let mut refused: Option<String> = None;
    for plan in plans {
        let n = plan.requests;
        let its: Vec<Interaction> = rec.interactions[index..index + n].to_vec();
        let first = index;
        index += n;
        let result = tokio::time::timeout(STEP_TIMEOUT, (plan.run)(cx.clone(), its.clone())).await;
        let captured = server.take_captured();
        let mut step_failures = Vec::new();
        if let Ok(Err(e)) = &result {
            // azstore refused the input before sending, and the service refused it too: a
            // deliberate difference (listed in NOT_SUPPORTED.md), not a failure.
            if captured.is_empty()
                && e.contains(REFUSED_MARK)
                && its[0].response.status >= 400
                && its[0].response.status < 500
            {
                refused = Some(format!(
                    "interaction {first}: azstore refuses the input before sending ({}), the service answered {} {}",
                    e.split(REFUSED_MARK).nth(1).unwrap_or_default().trim(),
                    its[0].response.status,
                    compare::recorded_error_code(&its[0].response).unwrap_or_default()
                ));
                break;
            }
        }
        match result {
            Err(_) => step_failures.push(format!("timed out after {STEP_TIMEOUT:?}")),
            Ok(Err(e)) => step_failures.push(format!("response: {e}")),
            Ok(Ok(())) => {}
        }
        if captured.len() != n {
            step_failures.push(format!(
                "sent {} request(s), recorded {n}: {:?}",
                captured.len(),
                captured
                    .iter()
                    .map(|c| format!("{} {}?{}", c.method, c.path, c.query))
                    .collect::<Vec<_>>()
            ));
        }
        for (k, (it, got)) in its.iter().zip(&captured).enumerate() {
            if let Err(e) = compare::compare_request(&it.request, got) {
                step_failures.push(format!("#{}: request: {e}", first + k));
            }
        }
        if !step_failures.is_empty() {
            failures.push(format!(
                "interaction {first} ({} {}): {}",
                its[0].request.method,
                its[0].request.uri,
                step_failures.join(" | ")
            ));
            if captured.len() != n {
                // The recording and the client are out of step: the rest cannot be judged.
                let rest = rec.interactions.len() - index;
                for j in 0..rest {
                    failures.push(format!("interaction {}: not reached", index + j));
                }
                break;
            }
        }
    }
    if let Some(why) = refused {
        return Verdict::NotSupported(why);
    }
    Verdict::Driven {
        interactions: rec.interactions.len(),
        failures,
    }
}

/// Names the operation a generic planner refusal stands for, where azstore deliberately does
/// not offer it.
fn explain(why: String) -> String {
    const KNOWN: &[(&str, &str)] = &[(
        "\"content-md5\"",
        "Put Block List with a transactional Content-MD5 of the block-list XML: azstore offers \
         transactional checksums on the data writes (Put Blob, Put Block, Append Block, Put \
         Page), not on the commit, whose XML body it writes itself (so its MD5 could never match \
         the recorded one)",
    )];
    for (needle, reason) in KNOWN {
        if why.contains(needle) {
            let at = why.split(':').next().unwrap_or_default();
            return format!("{at}: {reason}");
        }
    }
    why
}

/// How `compare::outcome` and the planners report an `InvalidInput` error.
pub const REFUSED_MARK: &str = "InvalidInput:";

/// The recordings named in NOT_SUPPORTED.md (lines `- \`folder/file.yaml\`: reason`).
fn listed_not_supported(path: &Path) -> BTreeMap<String, String> {
    let text = std::fs::read_to_string(path).unwrap_or_default();
    text.lines()
        .filter_map(|l| {
            let l = l.trim().strip_prefix("- `")?;
            let (name, rest) = l.split_once('`')?;
            Some((
                name.to_string(),
                rest.trim_start_matches(':').trim().to_string(),
            ))
        })
        .collect()
}

fn recordings_in(dir: &Path) -> Vec<String> {
    let mut names = Vec::new();
    for folder in ["blob", "file", "queue", "table"] {
        if let Ok(entries) = std::fs::read_dir(dir.join(folder)) {
            for e in entries.flatten() {
                let n = e.file_name().to_string_lossy().into_owned();
                if n.ends_with(".yaml") {
                    names.push(format!("{folder}/{n}"));
                }
            }
        }
    }
    names.sort();
    names
}

#[tokio::main]
async fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    // `cargo test` passes harness flags (e.g. `--nocapture`); a bare word filters recordings.
    let filter: Option<String> = args.iter().find(|a| !a.starts_with('-')).cloned();
    let ci = std::env::var("CI").is_ok_and(|v| v == "true" || v == "1");
    let dir = corpus_dir();
    if !dir.join("INDEX.tsv").is_file() {
        let msg = format!(
            "conformance: NOT RUN: the recordings of live Azure traffic are not at {} \
             (set AZSTORE_RECORDINGS to their folder)",
            dir.display()
        );
        eprintln!("{msg}");
        println!("{msg}");
        return if ci {
            ExitCode::FAILURE
        } else {
            ExitCode::SUCCESS
        };
    }
    let list_path =
        PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/conformance/NOT_SUPPORTED.md");
    let listed = listed_not_supported(&list_path);
    let verbose = std::env::var_os("CONFORMANCE_VERBOSE").is_some();

    let (mut r, mut i, mut p, mut f, mut n) = (0usize, 0usize, 0usize, 0usize, 0usize);
    let mut problems = Vec::new();
    let mut not_supported = BTreeMap::new();
    let names = recordings_in(&dir);
    for name in &names {
        if filter.as_ref().is_some_and(|f| !name.contains(f.as_str())) {
            continue;
        }
        let rec = match Recording::load(&dir, name) {
            Ok(rec) => rec,
            Err(e) => {
                problems.push(format!("{name}: cannot load: {e}"));
                continue;
            }
        };
        let verdict = match plan_recording(&rec) {
            Err(why) => Verdict::NotSupported(explain(why)),
            Ok(plans) => drive(&rec, plans).await,
        };
        match verdict {
            Verdict::NotSupported(why) => {
                n += 1;
                if verbose {
                    println!("not supported {name}: {why}");
                }
                not_supported.insert(name.clone(), why);
            }
            Verdict::Driven {
                interactions,
                failures,
            } => {
                r += 1;
                i += interactions;
                let failed = failures.len().min(interactions);
                f += failed;
                p += interactions - failed;
                if failures.is_empty() {
                    if verbose {
                        println!("ok {name} ({interactions} interactions)");
                    }
                } else {
                    println!("FAILED {name}:");
                    for fl in &failures {
                        println!("    {fl}");
                    }
                }
            }
        }
    }
    // The checked-in list must name exactly the recordings not driven (only checked on a
    // full run).
    if filter.is_none() {
        for (name, why) in &not_supported {
            if !listed.contains_key(name) {
                problems.push(format!(
                    "{name} is not driven ({why}) but is not listed in NOT_SUPPORTED.md"
                ));
            }
        }
        for name in listed.keys() {
            if !not_supported.contains_key(name) {
                problems.push(format!(
                    "{name} is listed in NOT_SUPPORTED.md but was driven (or does not exist)"
                ));
            }
        }
        if r + n != names.len() {
            problems.push(format!(
                "{} recordings found, {} accounted for",
                names.len(),
                r + n
            ));
        }
    }
    // The real-service behaviours named in issue 15, each with the recording that shows it.
    if filter.is_none() {
        problems.extend(behaviours::run_all().await);
    }
    for pb in &problems {
        println!("PROBLEM {pb}");
    }
    println!(
        "conformance: {r} recordings, {i} interactions, {p} passed, {f} failed, {n} not supported"
    );
    if f > 0 || !problems.is_empty() {
        ExitCode::FAILURE
    } else {
        ExitCode::SUCCESS
    }
}
