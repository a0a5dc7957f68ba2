//! `histories`: the writer processes, the checker and the campaign runner.
//!
//! ```text
//! histories campaign --model=MODEL|all [--histories=N] [--writers=W] [--ops=N] [--seed=S]
//!                    [--variant=correct|broken] [--keep=DIR]
//!                    [--shards=N] [--workers-per-writer=K]   # shard models
//! histories check --model=MODEL FILE      # decide a kept history (prints JSON)
//! histories writer ...                    # started by the campaign
//! ```

use std::path::PathBuf;

use histories::campaign::{Plan, run};
use histories::check::{check_file, model_of};
use histories::model::{Model, Variant};
use histories::writer::{self, WriterArgs};

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let Some(cmd) = args.first() else {
        usage("no command");
    };
    let rest = &args[1..];
    match cmd.as_str() {
        "writer" => match WriterArgs::parse(rest) {
            Ok(a) => writer::main(a),
            Err(e) => usage(&e),
        },
        "check" => check(rest),
        "campaign" => campaign(rest),
        other => usage(&format!("unknown command {other:?}")),
    }
}

fn usage(msg: &str) -> ! {
    eprintln!(
        "histories: {msg}\nusage: histories campaign --model=MODEL|all [--histories=N] \
         [--writers=W] [--ops=N] [--seed=S] [--variant=correct|broken] [--keep=DIR] \
         [--shards=N] [--workers-per-writer=K]\n       \
         histories check [--model=MODEL] FILE"
    );
    std::process::exit(2);
}

fn flag<'a>(args: &'a [String], name: &str) -> Option<&'a str> {
    args.iter()
        .find_map(|a| a.strip_prefix(&format!("--{name}=")))
}

fn check(args: &[String]) {
    let Some(file) = args.iter().find(|a| !a.starts_with("--")) else {
        usage("check needs a history file");
    };
    let path = PathBuf::from(file);
    let model = match flag(args, "model") {
        Some(m) => Model::parse(m).unwrap_or_else(|e| usage(&e)),
        None => {
            let events = histories::history::load(&path).unwrap_or_else(|e| usage(&e.to_string()));
            model_of(&events).unwrap_or_else(|| usage("the file names no model: pass --model"))
        }
    };
    let verdict = check_file(model, &path).unwrap_or_else(|e| usage(&format!("{file}: {e}")));
    println!(
        "{}",
        serde_json::json!({
            "operations": verdict.operations,
            "anomalies": verdict.anomalies,
            "transfers": verdict.transfers,
            "fenced_overlaps": verdict.fenced_overlaps,
        })
    );
}

fn campaign(args: &[String]) {
    let num = |name: &str, default: u64| -> u64 {
        flag(args, name).map_or(default, |v| {
            v.parse()
                .unwrap_or_else(|_| usage(&format!("--{name} wants a number")))
        })
    };
    let models: Vec<Model> = match flag(args, "model").unwrap_or("all") {
        "all" => Model::all(),
        m => vec![Model::parse(m).unwrap_or_else(|e| usage(&e))],
    };
    let seed = flag(args, "seed").map_or_else(
        || {
            std::time::SystemTime::now()
                .duration_since(std::time::UNIX_EPOCH)
                .map_or(1, |d| d.as_nanos() as u64 % 1_000_000_000)
        },
        |s| s.parse().unwrap_or_else(|_| usage("--seed wants a number")),
    );
    let variant =
        Variant::parse(flag(args, "variant").unwrap_or("correct")).unwrap_or_else(|e| usage(&e));
    let keep = PathBuf::from(flag(args, "keep").unwrap_or("target/histories"));
    let exe = std::env::current_exe().expect("own executable");
    eprintln!("campaign seed {seed}");
    let rt = tokio::runtime::Runtime::new().expect("tokio runtime");
    let mut lines = Vec::new();
    let mut anomalies = 0;
    for model in models {
        let plan = Plan {
            model,
            variant,
            histories: num("histories", 3),
            writers: num("writers", 5),
            ops: num("ops", 50),
            seed,
            nemesis: true,
            sanity: flag(args, "sanity").is_some_and(|v| v == "1" || v == "true"),
            keep_all: std::env::var_os("HISTORIES_KEEP_ALL").is_some(),
            keep_dir: keep.clone(),
            exe: exe.clone(),
            shards: num("shards", histories::writer::SHARDS as u64) as usize,
            workers_per_writer: num("workers-per-writer", 1).max(1),
        };
        let report = rt.block_on(run(&plan));
        anomalies += report.anomalies;
        lines.push(report.line(model, seed));
    }
    println!("--");
    for l in &lines {
        println!("{l}");
    }
    if anomalies > 0 {
        std::process::exit(1);
    }
}
