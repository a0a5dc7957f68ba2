//! The environment variables [`StorageAccount::from_env`] reads (the conventions of the Azure
//! CLI and object_store), in the order it reads them.

use crate::account::StorageAccount;
use crate::credential::{Credential, SasToken, StaticToken};
use crate::error::{Error, Result};

/// Connection string (Azure CLI, every SDK).
pub const CONNECTION_STRING: &str = super::CONNECTION_STRING_ENV;
/// Account name: object_store's name first, then the Azure CLI's.
pub const ACCOUNT_NAME: [&str; 2] = ["AZURE_STORAGE_ACCOUNT_NAME", "AZURE_STORAGE_ACCOUNT"];
/// Account key: the Azure CLI's name first, then object_store's.
pub const ACCOUNT_KEY: [&str; 3] = [
    "AZURE_STORAGE_KEY",
    "AZURE_STORAGE_ACCOUNT_KEY",
    "AZURE_STORAGE_ACCESS_KEY",
];
/// SAS token: the Azure CLI's name first, then object_store's.
pub const SAS_TOKEN: [&str; 2] = ["AZURE_STORAGE_SAS_TOKEN", "AZURE_STORAGE_SAS_KEY"];
/// A bearer token obtained out of band (object_store).
pub const BEARER_TOKEN: &str = "AZURE_STORAGE_TOKEN";
/// `login` (Microsoft Entra ID) or `key`, as the Azure CLI's `--auth-mode`.
pub const AUTH_MODE: &str = "AZURE_STORAGE_AUTH_MODE";

type Lookup<'a> = &'a dyn Fn(&str) -> Option<String>;

fn first(get: Lookup<'_>, names: &[&str]) -> Option<(String, String)> {
    names.iter().find_map(|n| {
        get(n)
            .filter(|v| !v.trim().is_empty())
            .map(|v| (n.to_string(), v))
    })
}

fn looked_for() -> String {
    format!(
        "azstore looked for {CONNECTION_STRING}, or an account name ({}) with a key ({}), a SAS \
         ({}), a bearer token ({BEARER_TOKEN}){}",
        ACCOUNT_NAME.join(" or "),
        ACCOUNT_KEY.join(", "),
        SAS_TOKEN.join(" or "),
        if cfg!(feature = "identity") {
            ", or Microsoft Entra ID (AZURE_STORAGE_AUTH_MODE=login, or no key/SAS/token set: \
             AZURE_CLIENT_ID + AZURE_TENANT_ID + AZURE_CLIENT_SECRET, workload identity, \
             managed identity, Azure CLI)"
        } else {
            " (Microsoft Entra ID needs azstore's `identity` feature)"
        }
    )
}

/// The whole resolution, over any lookup (tests pass a map; `from_env` passes the process
/// environment).
pub(crate) fn resolve(get: Lookup<'_>) -> Result<StorageAccount> {
    let mode = get(AUTH_MODE).map(|m| m.trim().to_ascii_lowercase());
    let login = match mode.as_deref() {
        None | Some("") => false,
        Some("login") => true,
        Some("key") => false,
        Some(_) => {
            return Err(Error::invalid_input(format!(
                "{AUTH_MODE} must be `login` or `key`"
            )));
        }
    };
    let key_mode = mode.as_deref() == Some("key");

    let account = if let Some(cs) = get(CONNECTION_STRING).filter(|v| !v.trim().is_empty()) {
        let mut account = StorageAccount::from_connection_string(&cs)
            .map_err(|e| Error::invalid_input(format!("{CONNECTION_STRING}: {}", e.message())))?;
        // Without AccountName in the string, the account variable names it; it must agree with
        // the account the endpoints name, if they name one.
        if !account.name_explicit {
            if let Some((var, env_name)) = first(get, &ACCOUNT_NAME) {
                let env_name = env_name.trim();
                super::validate_account_name(env_name)
                    .map_err(|e| Error::invalid_input(format!("{var}: {}", e.message())))?;
                if !account.name.is_empty() && account.name != env_name {
                    return Err(Error::invalid_input(format!(
                        "{var} names the account {env_name}, but the endpoints of \
                         {CONNECTION_STRING} name {}: unset one, or add AccountName to the \
                         connection string",
                        account.name
                    )));
                }
                account.name = env_name.to_string();
                account.name_explicit = true;
            }
        }
        if login {
            return with_entra(account);
        }
        if !matches!(account.credential(), Credential::Anonymous) {
            return Ok(account);
        }
        // A connection string with endpoints only: take the credential from the variables.
        if let Some((var, key)) = first(get, &ACCOUNT_KEY) {
            if account.name().is_empty() {
                return Err(Error::invalid_input(format!(
                    "{var} needs the account's name, and neither {CONNECTION_STRING} (no \
                     AccountName, endpoints that do not name one) nor {} gives it",
                    ACCOUNT_NAME.join(" / ")
                )));
            }
            let key = crate::credential::SharedKeyCredential::new(account.name(), &key)
                .map_err(|e| Error::invalid_input(format!("{var}: {}", e.message())))?;
            return Ok(account.with_credential(Credential::SharedKey(key)));
        }
        if key_mode {
            return Ok(account);
        }
        account
    } else {
        let Some((_, name)) = first(get, &ACCOUNT_NAME) else {
            return Err(Error::invalid_input(format!(
                "no storage account configured: {}. Set {CONNECTION_STRING} to the account's \
                 connection string (Azure portal: Storage account > Access keys), or to \
                 `UseDevelopmentStorage=true` for Azurite on its default ports.",
                looked_for()
            )));
        };
        let name = name.trim().to_string();
        if let Some((var, key)) = first(get, &ACCOUNT_KEY).filter(|_| !login) {
            return StorageAccount::new(&name, &key)
                .map_err(|e| Error::invalid_input(format!("{var}: {}", e.message())));
        }
        if key_mode {
            return Err(Error::invalid_input(format!(
                "{AUTH_MODE}=key but no key is set ({})",
                ACCOUNT_KEY.join(", ")
            )));
        }
        super::validate_account_name(&name).map_err(|e| {
            Error::invalid_input(format!("{}: {}", ACCOUNT_NAME.join(" / "), e.message()))
        })?;
        let mut account = StorageAccount::bare(&name, Credential::Anonymous);
        account.set_default_endpoints("https", "core.windows.net")?;
        account
    };
    if login {
        return with_entra(account);
    }
    if let Some((var, sas)) = first(get, &SAS_TOKEN) {
        let sas = SasToken::new(&sas)
            .map_err(|e| Error::invalid_input(format!("{var}: {}", e.message())))?;
        return Ok(account.with_credential(Credential::Sas(sas)));
    }
    if let Some(token) = get(BEARER_TOKEN).filter(|v| !v.trim().is_empty()) {
        let token = StaticToken::new(token.trim())
            .map_err(|e| Error::invalid_input(format!("{BEARER_TOKEN}: {}", e.message())))?;
        return Ok(account.with_credential(Credential::bearer(token)));
    }
    if cfg!(feature = "identity") {
        return with_entra(account);
    }
    Err(Error::invalid_input(format!(
        "account {} has no credential: {}",
        account.name(),
        looked_for()
    )))
}

#[cfg(feature = "identity")]
fn with_entra(account: StorageAccount) -> Result<StorageAccount> {
    let transport = crate::transport::TransportOptions::from_env()?;
    let credential = crate::credential::entra::default_credential(&transport)?;
    Ok(account.with_credential(Credential::entra(credential)))
}

#[cfg(not(feature = "identity"))]
fn with_entra(_: StorageAccount) -> Result<StorageAccount> {
    Err(Error::invalid_input(format!(
        "{AUTH_MODE}=login needs azstore's `identity` cargo feature"
    )))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::Service;
    use std::collections::HashMap;

    fn resolve_map(vars: &[(&str, &str)]) -> Result<StorageAccount> {
        let m: HashMap<String, String> = vars
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect();
        resolve(&move |k| m.get(k).cloned())
    }

    #[test]
    fn nothing_set_names_every_variable() {
        let e = resolve_map(&[]).unwrap_err();
        for v in [
            "AZURE_STORAGE_CONNECTION_STRING",
            "AZURE_STORAGE_ACCOUNT_NAME",
            "AZURE_STORAGE_ACCOUNT",
            "AZURE_STORAGE_KEY",
            "AZURE_STORAGE_SAS_TOKEN",
            "AZURE_STORAGE_TOKEN",
        ] {
            assert!(e.message().contains(v), "{v} missing from: {e}");
        }
    }

    #[test]
    fn connection_string_wins() {
        let a = resolve_map(&[
            (
                "AZURE_STORAGE_CONNECTION_STRING",
                "UseDevelopmentStorage=true",
            ),
            ("AZURE_STORAGE_ACCOUNT", "other"),
            ("AZURE_STORAGE_KEY", "a2V5"),
        ])
        .unwrap();
        assert_eq!(a.name(), "devstoreaccount1");
        assert!(matches!(a.credential(), Credential::SharedKey(_)));
    }

    #[test]
    fn name_and_key_either_spelling() {
        for (n, k) in [
            ("AZURE_STORAGE_ACCOUNT_NAME", "AZURE_STORAGE_ACCOUNT_KEY"),
            ("AZURE_STORAGE_ACCOUNT", "AZURE_STORAGE_KEY"),
            ("AZURE_STORAGE_ACCOUNT", "AZURE_STORAGE_ACCESS_KEY"),
        ] {
            let a = resolve_map(&[(n, "acct1"), (k, "c2VjcmV0a2V5")]).unwrap();
            assert_eq!(a.name(), "acct1");
            assert!(matches!(a.credential(), Credential::SharedKey(_)));
            assert_eq!(
                a.endpoint(Service::Queue).unwrap().url(),
                "https://acct1.queue.core.windows.net"
            );
            assert!(!format!("{a:?}").contains("c2VjcmV0a2V5"));
        }
    }

    #[test]
    fn sas_and_token_and_bad_values_name_the_variable_not_the_value() {
        let a = resolve_map(&[
            ("AZURE_STORAGE_ACCOUNT", "acct1"),
            ("AZURE_STORAGE_SAS_TOKEN", "?sv=2025-11-05&sig=SECRETSIG"),
        ])
        .unwrap();
        assert!(matches!(a.credential(), Credential::Sas(_)));
        let a = resolve_map(&[
            ("AZURE_STORAGE_ACCOUNT_NAME", "acct1"),
            ("AZURE_STORAGE_TOKEN", "tok.en.value"),
        ])
        .unwrap();
        assert!(matches!(a.credential(), Credential::Bearer(_)));
        assert!(!format!("{a:?}").contains("tok.en.value"));

        let e = resolve_map(&[
            ("AZURE_STORAGE_ACCOUNT", "acct1"),
            ("AZURE_STORAGE_KEY", "not base64 SECRET!"),
        ])
        .unwrap_err();
        assert!(e.message().contains("AZURE_STORAGE_KEY"), "{e}");
        assert!(!e.to_string().contains("SECRET"), "{e}");
        let e = resolve_map(&[("AZURE_STORAGE_AUTH_MODE", "magic")]).unwrap_err();
        assert!(e.message().contains("AZURE_STORAGE_AUTH_MODE"), "{e}");
    }

    #[test]
    fn endpoints_from_a_connection_string_credential_from_the_variables() {
        let a = resolve_map(&[
            (
                "AZURE_STORAGE_CONNECTION_STRING",
                "AccountName=devstoreaccount1;BlobEndpoint=https://127.0.0.1:1234/devstoreaccount1",
            ),
            ("AZURE_STORAGE_TOKEN", "abc"),
        ])
        .unwrap();
        assert!(matches!(a.credential(), Credential::Bearer(_)));
        assert_eq!(
            a.endpoint(Service::Blob).unwrap().url(),
            "https://127.0.0.1:1234/devstoreaccount1"
        );
    }

    #[test]
    fn endpoints_from_a_connection_string_key_from_the_variables() {
        let a = resolve_map(&[
            (
                "AZURE_STORAGE_CONNECTION_STRING",
                "AccountName=devstoreaccount1;BlobEndpoint=http://127.0.0.1:1234/devstoreaccount1",
            ),
            ("AZURE_STORAGE_ACCOUNT_KEY", "c2VjcmV0a2V5"),
        ])
        .unwrap();
        assert!(matches!(a.credential(), Credential::SharedKey(_)));
        assert_eq!(a.name(), "devstoreaccount1");
        assert!(!format!("{a:?}").contains("c2VjcmV0a2V5"));
    }

    #[cfg(feature = "identity")]
    #[test]
    fn login_or_no_secret_means_entra_id_with_the_feature() {
        // Only builds the credential chain (no token request happens here).
        let a = resolve_map(&[
            ("AZURE_STORAGE_ACCOUNT", "acct1"),
            ("AZURE_STORAGE_KEY", "c2VjcmV0a2V5"),
            ("AZURE_STORAGE_AUTH_MODE", "login"),
        ])
        .unwrap();
        assert!(matches!(a.credential(), Credential::Bearer(_)));
        let a = resolve_map(&[("AZURE_STORAGE_ACCOUNT_NAME", "acct1")]).unwrap();
        assert!(matches!(a.credential(), Credential::Bearer(_)));
        let e = resolve_map(&[
            ("AZURE_STORAGE_ACCOUNT", "acct1"),
            ("AZURE_STORAGE_AUTH_MODE", "key"),
        ])
        .unwrap_err();
        assert!(e.message().contains("AZURE_STORAGE_KEY"), "{e}");
    }

    #[cfg(not(feature = "identity"))]
    #[test]
    fn login_without_the_feature_says_so() {
        let e = resolve_map(&[
            ("AZURE_STORAGE_ACCOUNT", "acct1"),
            ("AZURE_STORAGE_AUTH_MODE", "login"),
        ])
        .unwrap_err();
        assert!(e.message().contains("identity"), "{e}");
        let e = resolve_map(&[("AZURE_STORAGE_ACCOUNT", "acct1")]).unwrap_err();
        assert!(e.message().contains("identity"), "{e}");
    }
    #[test]
    fn endpoints_only_string_name_from_the_endpoint_or_the_account_variable() {
        // No AccountName: the endpoint names the account, the key comes from its variable.
        let a = resolve_map(&[
            (
                "AZURE_STORAGE_CONNECTION_STRING",
                "BlobEndpoint=http://127.0.0.1:1234/devstoreaccount1",
            ),
            ("AZURE_STORAGE_KEY", "c2VjcmV0a2V5"),
        ])
        .unwrap();
        assert_eq!(a.name(), "devstoreaccount1");
        assert!(matches!(a.credential(), Credential::SharedKey(_)));
        // The account variable agrees: fine; names another account: an error naming both.
        let agree = resolve_map(&[
            (
                "AZURE_STORAGE_CONNECTION_STRING",
                "BlobEndpoint=https://contoso.blob.core.windows.net",
            ),
            ("AZURE_STORAGE_ACCOUNT", "contoso"),
            ("AZURE_STORAGE_KEY", "c2VjcmV0a2V5"),
        ])
        .unwrap();
        assert_eq!(agree.name(), "contoso");
        let e = resolve_map(&[
            (
                "AZURE_STORAGE_CONNECTION_STRING",
                "BlobEndpoint=https://contoso.blob.core.windows.net",
            ),
            ("AZURE_STORAGE_ACCOUNT", "fabrikam"),
            ("AZURE_STORAGE_KEY", "c2VjcmV0a2V5"),
        ])
        .unwrap_err();
        assert!(
            e.message().contains("fabrikam") && e.message().contains("contoso"),
            "{e}"
        );
        // A custom domain: the account variable gives the name the key signs with.
        let a = resolve_map(&[
            (
                "AZURE_STORAGE_CONNECTION_STRING",
                "BlobEndpoint=https://files.example.com",
            ),
            ("AZURE_STORAGE_ACCOUNT_NAME", "contoso"),
            ("AZURE_STORAGE_ACCOUNT_KEY", "c2VjcmV0a2V5"),
        ])
        .unwrap();
        assert_eq!(a.name(), "contoso");
        assert!(matches!(a.credential(), Credential::SharedKey(_)));
        assert_eq!(
            a.endpoint(Service::Blob).unwrap().url(),
            "https://files.example.com"
        );
        // ... and without it, the error says where the name can come from.
        let e = resolve_map(&[
            (
                "AZURE_STORAGE_CONNECTION_STRING",
                "BlobEndpoint=https://files.example.com",
            ),
            ("AZURE_STORAGE_KEY", "c2VjcmV0a2V5"),
        ])
        .unwrap_err();
        assert!(e.message().contains("AZURE_STORAGE_ACCOUNT"), "{e}");
        assert!(!e.to_string().contains("c2VjcmV0a2V5"));
        // A SAS from its variable needs no name.
        let a = resolve_map(&[
            (
                "AZURE_STORAGE_CONNECTION_STRING",
                "QueueEndpoint=https://files.example.com",
            ),
            ("AZURE_STORAGE_SAS_TOKEN", "sv=2025-11-05&sig=c2ln"),
        ])
        .unwrap();
        assert!(matches!(a.credential(), Credential::Sas(_)));
        assert_eq!(a.name(), "");
    }
}
