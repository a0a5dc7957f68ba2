#![cfg(unix)]
//! How `azlock` reaches a storage account: everything `StorageAccount::from_env` accepts
//! (a connection string, endpoints with a key or SAS from the variables), `--connection-string`
//! first, and `--help` naming every way in. Against Azurite.

use std::process::{Command, Output};

use azstore::credential::SharedKeyCredential;
use azstore::sas::SasBuilder;

const AZLOCK: &str = env!("CARGO_BIN_EXE_azlock");

/// The variables `StorageAccount::from_env` reads: none of them leak in from the test's own
/// environment.
const ACCOUNT_VARS: &[&str] = &[
    "AZURE_STORAGE_CONNECTION_STRING",
    "AZURE_STORAGE_ACCOUNT_NAME",
    "AZURE_STORAGE_ACCOUNT",
    "AZURE_STORAGE_KEY",
    "AZURE_STORAGE_ACCOUNT_KEY",
    "AZURE_STORAGE_ACCESS_KEY",
    "AZURE_STORAGE_SAS_TOKEN",
    "AZURE_STORAGE_SAS_KEY",
    "AZURE_STORAGE_TOKEN",
    "AZURE_STORAGE_AUTH_MODE",
];

/// `azlock ARGS` with only `vars` set of the account variables.
fn azlock(args: &[&str], vars: &[(&str, &str)]) -> Output {
    let mut c = Command::new(AZLOCK);
    for v in ACCOUNT_VARS {
        c.env_remove(v);
    }
    c.args(args).envs(vars.iter().copied()).output().unwrap()
}

fn text(o: &Output) -> String {
    format!(
        "status {:?}\nstdout: {}\nstderr: {}",
        o.status.code(),
        String::from_utf8_lossy(&o.stdout),
        String::from_utf8_lossy(&o.stderr)
    )
}

/// The Azurite that `scripts/azurite run` started: its Blob endpoint and the account's key,
/// taken apart from the connection string it exports (fails loudly when it is missing).
fn azurite() -> (String, String, String) {
    let cs = std::env::var("AZURE_STORAGE_CONNECTION_STRING").expect(
        "AZURE_STORAGE_CONNECTION_STRING is not set: run under `scripts/azurite run -- cargo test`",
    );
    let get = |k: &str| {
        cs.split(';')
            .find_map(|kv| kv.strip_prefix(&format!("{k}=")))
            .unwrap_or_else(|| panic!("no {k} in the Azurite connection string"))
            .to_string()
    };
    (get("AccountName"), get("AccountKey"), get("BlobEndpoint"))
}

/// A lock that exists: taken and released once with the full connection string.
fn make_lock(container: &str) {
    let (name, key, blob) = azurite();
    let cs = format!("AccountName={name};AccountKey={key};BlobEndpoint={blob}");
    let o = azlock(
        &["run", "--container", container, "--blob", "l", "--", "true"],
        &[("AZURE_STORAGE_CONNECTION_STRING", &cs)],
    );
    assert_eq!(o.status.code(), Some(0), "{}", text(&o));
}

#[test]
fn status_with_endpoints_from_the_connection_string_and_the_key_from_its_variable() {
    let container = testkit::unique("azlenv");
    make_lock(&container);
    let (name, key, blob) = azurite();
    let endpoints = format!("AccountName={name};BlobEndpoint={blob}");
    for key_var in ["AZURE_STORAGE_KEY", "AZURE_STORAGE_ACCOUNT_KEY"] {
        let o = azlock(
            &["status", "--container", &container, "--blob", "l"],
            &[
                ("AZURE_STORAGE_CONNECTION_STRING", &endpoints),
                (key_var, &key),
            ],
        );
        assert_eq!(o.status.code(), Some(0), "{key_var}: {}", text(&o));
        let out = String::from_utf8_lossy(&o.stdout);
        assert!(out.contains("fencing token: 1"), "{out}");
        assert!(!text(&o).contains(&key[..12]), "the key is never printed");
    }
}

#[test]
fn status_with_an_account_sas_from_its_variable() {
    let container = testkit::unique("azlsas");
    make_lock(&container);
    let (name, key, blob) = azurite();
    let sas = SasBuilder::new(
        "rl",
        azstore::OffsetDateTime::now_utc() + std::time::Duration::from_secs(600),
    )
    .account(&SharedKeyCredential::new(&name, &key).unwrap(), "b", "co")
    .unwrap();
    let o = azlock(
        &["status", "--container", &container, "--blob", "l"],
        &[
            (
                "AZURE_STORAGE_CONNECTION_STRING",
                &format!("AccountName={name};BlobEndpoint={blob}"),
            ),
            ("AZURE_STORAGE_SAS_TOKEN", sas.expose_secret()),
        ],
    );
    assert_eq!(o.status.code(), Some(0), "{}", text(&o));
    assert!(
        String::from_utf8_lossy(&o.stdout).contains("fencing token: 1"),
        "{}",
        text(&o)
    );
}

#[test]
fn the_connection_string_option_comes_first() {
    let container = testkit::unique("azlopt");
    make_lock(&container);
    let (name, key, blob) = azurite();
    let cs = format!("AccountName={name};AccountKey={key};BlobEndpoint={blob}");
    // The environment names an account that cannot work; the option wins.
    let o = azlock(
        &[
            "status",
            "--connection-string",
            &cs,
            "--container",
            &container,
            "--blob",
            "l",
        ],
        &[
            ("AZURE_STORAGE_ACCOUNT_NAME", "nosuchaccount"),
            ("AZURE_STORAGE_KEY", "not base64!"),
        ],
    );
    assert_eq!(o.status.code(), Some(0), "{}", text(&o));
}

/// The ways in to an account that both the configuration error and `azlock --help` name.
const WAYS_IN: [&str; 6] = [
    "AZURE_STORAGE_CONNECTION_STRING",
    "AZURE_STORAGE_ACCOUNT_NAME",
    "AZURE_STORAGE_KEY",
    "AZURE_STORAGE_SAS_TOKEN",
    "AZURE_STORAGE_TOKEN",
    "Entra ID",
];

#[test]
fn no_account_is_a_configuration_error_naming_every_way_in() {
    let o = azlock(&["status", "--container", "c1c", "--blob", "l"], &[]);
    // 78 (EX_CONFIG): the environment is wrong, not the command line (2).
    assert_eq!(o.status.code(), Some(78), "{}", text(&o));
    let err = String::from_utf8_lossy(&o.stderr);
    for v in WAYS_IN {
        assert!(err.contains(v), "{v} missing from: {err}");
    }
}

#[test]
fn help_lists_the_ways_in_and_only_the_top_command_has_the_essay() {
    let top = azlock(&["--help"], &[]);
    let top = String::from_utf8_lossy(&top.stdout);
    let more = ["AZURE_STORAGE_AUTH_MODE", "PAUSES", "FAILOVER"];
    for v in ["--connection-string"]
        .into_iter()
        .chain(WAYS_IN)
        .chain(more)
    {
        assert!(top.contains(v), "{v} missing from azlock --help:\n{top}");
    }
    let run = azlock(&["run", "--help"], &[]);
    let run = String::from_utf8_lossy(&run.stdout);
    assert!(
        run.contains("AZLOCK_FENCING_TOKEN") && run.contains("75"),
        "{run}"
    );
    assert!(run.contains("AZURE_STORAGE_ACCOUNT_NAME"), "{run}");
    assert!(!run.contains("PAUSES") && !run.contains("BREAK ("), "{run}");
    // One screen: the lock, semaphore (--permits) and reader-writer (--read/--write) options.
    assert!(run.lines().count() < 56, "azlock run --help: {run}");
    // azlock refuses an infinite lease, so its help does not offer one.
    assert!(
        !run.contains("infinite") || run.contains("never takes an infinite"),
        "{run}"
    );
    for bad in ["5", "61"] {
        let o = azlock(
            &[
                "run",
                "--container",
                "c1c",
                "--blob",
                "l",
                "--duration",
                bad,
                "--",
                "true",
            ],
            &[(
                "AZURE_STORAGE_CONNECTION_STRING",
                "UseDevelopmentStorage=true",
            )],
        );
        assert_eq!(o.status.code(), Some(2), "{}", text(&o));
        let err = String::from_utf8_lossy(&o.stderr);
        assert!(err.contains("15 to 60"), "{err}");
        assert!(!err.contains("infinite"), "{err}");
    }
}

/// An account SAS for Blob with what `azlock run` needs (create the container and blob, lease).
fn blob_sas(name: &str, key: &str) -> String {
    SasBuilder::new(
        "racwdlup",
        azstore::OffsetDateTime::now_utc() + std::time::Duration::from_secs(600),
    )
    .account(&SharedKeyCredential::new(name, key).unwrap(), "b", "sco")
    .unwrap()
    .expose_secret()
    .to_string()
}

/// `azlock run` then `azlock status` with `vars`: the lock is taken, released and shown.
fn run_and_status(vars: &[(&str, &str)], what: &str) {
    let container = testkit::unique("azlform");
    let o = azlock(
        &[
            "run",
            "--container",
            &container,
            "--blob",
            "l",
            "--",
            "true",
        ],
        vars,
    );
    assert_eq!(o.status.code(), Some(0), "{what}: {}", text(&o));
    let o = azlock(&["status", "--container", &container, "--blob", "l"], vars);
    assert_eq!(o.status.code(), Some(0), "{what}: {}", text(&o));
    assert!(
        String::from_utf8_lossy(&o.stdout).contains("fencing token:"),
        "{what}: {}",
        text(&o)
    );
}

#[test]
fn every_connection_string_form_from_the_environment() {
    let (name, key, blob) = azurite();
    let sas = blob_sas(&name, &key);
    let cs = "AZURE_STORAGE_CONNECTION_STRING";
    // The portal's SAS connection string: no AccountName, the account read off the endpoint.
    run_and_status(
        &[(
            cs,
            &format!("BlobEndpoint={blob};SharedAccessSignature={sas}"),
        )],
        "SAS connection string",
    );
    // Endpoints only; the key (and optionally the account) from the variables.
    let endpoints = format!("BlobEndpoint={blob}");
    run_and_status(
        &[(cs, &endpoints), ("AZURE_STORAGE_KEY", &key)],
        "endpoints + AZURE_STORAGE_KEY",
    );
    run_and_status(
        &[
            (cs, &endpoints),
            ("AZURE_STORAGE_ACCOUNT", &name),
            ("AZURE_STORAGE_ACCOUNT_KEY", &key),
        ],
        "endpoints + AZURE_STORAGE_ACCOUNT + AZURE_STORAGE_ACCOUNT_KEY",
    );
    // Endpoints only with a SAS from its variable.
    run_and_status(
        &[(cs, &endpoints), ("AZURE_STORAGE_SAS_TOKEN", &sas)],
        "endpoints + AZURE_STORAGE_SAS_TOKEN",
    );
    // A key and endpoints without AccountName.
    run_and_status(
        &[(cs, &format!("AccountKey={key};BlobEndpoint={blob}"))],
        "AccountKey + BlobEndpoint",
    );
}

#[test]
fn the_connection_string_from_a_file_or_standard_input() {
    let (name, key, blob) = azurite();
    let dir = std::env::temp_dir().join(testkit::unique("azlcsfile"));
    std::fs::create_dir_all(&dir).unwrap();
    let file = dir.join("cs");
    // Endpoints and a SAS, with a trailing newline as `echo` writes it.
    let cs = format!(
        "BlobEndpoint={blob};SharedAccessSignature={}\n",
        blob_sas(&name, &key)
    );
    std::fs::write(&file, &cs).unwrap();
    use std::os::unix::fs::PermissionsExt;
    std::fs::set_permissions(&file, std::fs::Permissions::from_mode(0o600)).unwrap();
    let container = testkit::unique("azlfile");
    let path = file.to_str().unwrap();
    let o = azlock(
        &[
            "run",
            "--connection-string-file",
            path,
            "--container",
            &container,
            "--blob",
            "l",
            "--",
            "true",
        ],
        &[],
    );
    assert_eq!(o.status.code(), Some(0), "{}", text(&o));
    assert!(!text(&o).contains("warning"), "{}", text(&o));
    // Standard input: the endpoints with the key from its variable.
    let mut child = Command::new(AZLOCK);
    for v in ACCOUNT_VARS {
        child.env_remove(v);
    }
    let mut child = child
        .args([
            "status",
            "--connection-string-file",
            "-",
            "--container",
            &container,
            "--blob",
            "l",
        ])
        .env("AZURE_STORAGE_KEY", &key)
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    {
        use std::io::Write;
        let mut stdin = child.stdin.take().unwrap();
        writeln!(stdin, "BlobEndpoint={blob}").unwrap();
    }
    let o = child.wait_with_output().unwrap();
    assert_eq!(o.status.code(), Some(0), "{}", text(&o));
    assert!(String::from_utf8_lossy(&o.stdout).contains("fencing token: "));
    // A file other users can read is used, with a warning.
    std::fs::set_permissions(&file, std::fs::Permissions::from_mode(0o644)).unwrap();
    let o = azlock(
        &[
            "status",
            "--connection-string-file",
            path,
            "--container",
            &container,
            "--blob",
            "l",
        ],
        &[],
    );
    assert_eq!(o.status.code(), Some(0), "{}", text(&o));
    assert!(text(&o).contains("every local user"), "{}", text(&o));
    // A missing file is an account-settings error (78), naming the option.
    let o = azlock(
        &[
            "status",
            "--connection-string-file",
            dir.join("nope").to_str().unwrap(),
            "--container",
            &container,
            "--blob",
            "l",
        ],
        &[],
    );
    assert_eq!(o.status.code(), Some(78), "{}", text(&o));
    assert!(
        text(&o).contains("--connection-string-file"),
        "{}",
        text(&o)
    );
}

#[test]
fn the_connection_string_option_warns_that_argv_is_public() {
    let container = testkit::unique("azlwarn");
    make_lock(&container);
    let (name, key, blob) = azurite();
    let cs = format!("AccountName={name};AccountKey={key};BlobEndpoint={blob}");
    let o = azlock(
        &[
            "status",
            "--connection-string",
            &cs,
            "--container",
            &container,
            "--blob",
            "l",
        ],
        &[],
    );
    assert_eq!(o.status.code(), Some(0), "{}", text(&o));
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(
        err.contains("warning") && err.contains("--connection-string-file"),
        "{err}"
    );
    assert!(!err.contains(&key[..12]), "the key is never printed: {err}");
}

#[test]
fn bad_account_settings_exit_78_and_a_bad_command_line_2() {
    for (vars, what) in [
        (
            vec![(
                "AZURE_STORAGE_CONNECTION_STRING",
                "AccountName=acct;Bogus=1",
            )],
            "unknown key",
        ),
        (
            // A key, and no account name anywhere (a custom domain names none).
            vec![
                (
                    "AZURE_STORAGE_CONNECTION_STRING",
                    "BlobEndpoint=https://files.example.com",
                ),
                ("AZURE_STORAGE_KEY", "a2V5"),
            ],
            "key without an account",
        ),
        (
            vec![(
                "AZURE_STORAGE_CONNECTION_STRING",
                "BlobEndpoint=https://user:pw@acct.blob.core.windows.net;SharedAccessSignature=sv=1&sig=c2ln",
            )],
            "userinfo",
        ),
        (vec![("AZURE_STORAGE_AUTH_MODE", "magic")], "auth mode"),
    ] {
        let o = azlock(&["status", "--container", "c1c", "--blob", "l"], &vars);
        assert_eq!(o.status.code(), Some(78), "{what}: {}", text(&o));
        assert!(!text(&o).contains("pw@"), "{}", text(&o));
    }
    // The command line is checked first: a bad one is 2 even when the account is bad too.
    let o = azlock(
        &[
            "run",
            "--container",
            "c1c",
            "--blob",
            "l",
            "--duration",
            "5",
            "--",
            "true",
        ],
        &[],
    );
    assert_eq!(o.status.code(), Some(2), "{}", text(&o));
    let o = azlock(&["status", "--container", "c1c"], &[]);
    assert_eq!(o.status.code(), Some(2), "{}", text(&o));
    // Every subcommand's help names both codes.
    for sub in ["run", "lead", "status", "break"] {
        let o = azlock(&[sub, "--help"], &[]);
        let help = String::from_utf8_lossy(&o.stdout);
        assert!(
            help.contains("EXIT STATUS")
                && help.contains("78")
                && help.contains("invalid arguments"),
            "azlock {sub} --help:\n{help}"
        );
    }
}
