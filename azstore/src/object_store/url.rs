//! The container and prefix of an Azure URL, in the forms `object_store::parse_url` takes.

use crate::error::{Error, Result};
use crate::{Service, StorageAccount};

/// What a URL names.
#[derive(Debug, PartialEq, Eq)]
pub(crate) struct Parsed {
    pub(crate) container: String,
    pub(crate) prefix: String,
}

/// Parses `url` against `account` (whose name must match the URL's account, if it names one).
pub(crate) fn parse(url: &str, account: &StorageAccount) -> Result<Parsed> {
    let bad = |why: &str| {
        Error::invalid_input(format!(
            "{why}: expected az://<container>/<path>, abfs[s]://<container>@<account>.dfs.core.windows.net/<path> \
             or https://<account>.blob.core.windows.net/<container>/<path>"
        ))
    };
    let (scheme, rest) = url.split_once("://").ok_or_else(|| bad("not a URL"))?;
    let rest = rest.split(['?', '#']).next().unwrap_or_default();
    let (authority, path) = rest.split_once('/').unwrap_or((rest, ""));
    let check_account = |name: &str| {
        if name != account.name() {
            return Err(Error::invalid_input(format!(
                "the URL names the account {name}, the credentials are for {}",
                account.name()
            )));
        }
        Ok(())
    };
    let host_account = |host: &str| -> Option<String> {
        let (name, suffix) = host.split_once('.')?;
        let service = suffix.split('.').next()?;
        matches!(service, "blob" | "dfs").then(|| name.to_string())
    };
    let (container, prefix) = match scheme.to_ascii_lowercase().as_str() {
        "az" | "azure" | "adl" => (authority.to_string(), path.to_string()),
        "abfs" | "abfss" => {
            let (container, host) = authority
                .split_once('@')
                .ok_or_else(|| bad("abfs URLs name <container>@<host>"))?;
            if let Some(name) = host_account(host) {
                check_account(&name)?;
            }
            (container.to_string(), path.to_string())
        }
        "https" | "http" => {
            // The account's own blob endpoint (Azurite, a custom domain, a proxy) first.
            let own = account.endpoint(Service::Blob).ok().and_then(|ep| {
                let base = ep.url();
                let base = base.trim_end_matches('/');
                url.strip_prefix(base)
                    .and_then(|r| r.strip_prefix('/'))
                    .map(str::to_string)
            });
            let within = match own {
                Some(r) => r,
                None => {
                    let host = authority.rsplit('@').next().unwrap_or(authority);
                    let host = host.split(':').next().unwrap_or(host);
                    let name = host_account(host)
                        .ok_or_else(|| bad("not an Azure Storage blob or dfs endpoint"))?;
                    check_account(&name)?;
                    path.to_string()
                }
            };
            let within = within.split(['?', '#']).next().unwrap_or_default();
            let (container, prefix) = within.split_once('/').unwrap_or((within, ""));
            (container.to_string(), prefix.to_string())
        }
        other => return Err(bad(&format!("the scheme {other} is not Azure's"))),
    };
    if container.is_empty() {
        return Err(bad("no container"));
    }
    Ok(Parsed {
        container,
        prefix: prefix.trim_matches('/').to_string(),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn forms() {
        let dev = StorageAccount::development();
        let real = StorageAccount::new("acct", "a2V5").unwrap();
        let ok = |url: &str, account: &StorageAccount, c: &str, p: &str| {
            assert_eq!(
                parse(url, account).unwrap(),
                Parsed {
                    container: c.into(),
                    prefix: p.into()
                },
                "{url}"
            );
        };
        ok("az://lake", &dev, "lake", "");
        ok("az://lake/a/b/", &dev, "lake", "a/b");
        ok("azure://lake/a", &dev, "lake", "a");
        ok(
            "abfss://lake@acct.dfs.core.windows.net/t/x",
            &real,
            "lake",
            "t/x",
        );
        ok("abfs://lake@acct.dfs.core.windows.net", &real, "lake", "");
        ok(
            "https://acct.blob.core.windows.net/lake/t",
            &real,
            "lake",
            "t",
        );
        ok("https://acct.dfs.core.windows.net/lake", &real, "lake", "");
        ok(
            "http://127.0.0.1:10000/devstoreaccount1/lake/p?x=1",
            &dev,
            "lake",
            "p",
        );
        for bad in [
            "s3://bucket/x",
            "az://",
            "lake/x",
            "https://other.blob.core.windows.net/lake",
            "abfss://lake@other.dfs.core.windows.net/",
            "abfss://acct.dfs.core.windows.net/",
            "https://example.com/lake",
        ] {
            assert!(parse(bad, &real).is_err(), "{bad}");
        }
    }
}
