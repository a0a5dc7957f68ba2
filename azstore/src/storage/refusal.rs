//! How an Azure Storage refusal reads: the service's code (`x-ms-error-code`, else the
//! code in the body), its message from the XML `<Error>` or Table's JSON `odata.error` body,
//! and, on a 401/403, what to check for the credential that was sent.

use crate::error::Error;
use crate::http::Headers;
use crate::http::edge::refusal;

/// Builds the error for a non-success response. Never panics, whatever the body holds.
pub(crate) fn error_from_parts(status: u16, headers: &Headers, body: &[u8]) -> Error {
    let header_code = headers.get("x-ms-error-code").map(str::to_string);
    let (body_code, message) = parse_error_body(body);
    refusal(
        status,
        header_code.or(body_code),
        message,
        headers.request_id(),
    )
}

/// A 401/403 of a storage account says what to check for the credential azstore sent with
/// it: azstore signs or authorizes the request itself, so the request's form is not the
/// cause. Other answers pass unchanged.
pub(crate) fn with_auth_hint(
    e: Error,
    credential: &crate::credential::Credential,
    account: &str,
) -> Error {
    use crate::credential::Credential;
    if !matches!(e.status(), Some(401 | 403)) {
        return e;
    }
    let code = e
        .error_code()
        .map(|c| c.as_str().to_string())
        .unwrap_or_default();
    let hint = match credential {
        Credential::SharedKey(_) if code == "KeyBasedAuthenticationNotPermitted" => format!(
            "account {account} does not allow Shared Key access: use Microsoft Entra ID \
             (azstore's `identity` feature) or a user delegation SAS"
        ),
        Credential::SharedKey(_) => format!(
            "azstore signed this request with a Shared Key for account `{account}`: check the \
             account name and its key (Azure portal: Storage account > Access keys; a \
             regenerated key replaces the old one), and that the account accepts requests \
             from this network"
        ),
        Credential::Sas(_) => "the request carried a SAS: check its expiry (se) and start \
             (st), its permissions (sp), its services and resource types or resource, and \
             its allowed IP range (sip)"
            .to_string(),
        Credential::Bearer(_) => format!(
            "the request carried a Microsoft Entra ID token: check the identity's role \
             assignment on account `{account}` (a data role such as Storage Blob Data \
             Contributor; a new assignment takes a few minutes to apply)"
        ),
        Credential::Anonymous => "the request carried no credential (the resource is not \
             public): give the account a key, SAS or token"
            .to_string(),
    };
    e.hint(hint)
}

/// Extracts (code, message) from an XML `<Error>` or a Table JSON `odata.error` body.
/// Never panics, whatever the body holds.
pub(crate) fn parse_error_body(body: &[u8]) -> (Option<String>, Option<String>) {
    let text = String::from_utf8_lossy(body);
    let trimmed = text.trim_start_matches('\u{feff}').trim();
    if trimmed.starts_with('{') {
        if let Ok(v) = serde_json::from_str::<serde_json::Value>(trimmed) {
            let err = v.get("odata.error").or_else(|| v.get("error"));
            if let Some(err) = err {
                let code = err.get("code").and_then(|c| c.as_str()).map(str::to_string);
                let message = match err.get("message") {
                    Some(serde_json::Value::String(s)) => Some(s.clone()),
                    Some(m) => m.get("value").and_then(|v| v.as_str()).map(str::to_string),
                    None => None,
                };
                return (code, message);
            }
        }
        return (None, None);
    }
    if trimmed.starts_with('<') {
        return (xml_text(trimmed, "Code"), xml_text(trimmed, "Message"));
    }
    (None, None)
}

/// The text of the first element named `name` (local name), if any.
fn xml_text(xml: &str, name: &str) -> Option<String> {
    use quick_xml::events::Event;
    let mut reader = quick_xml::Reader::from_str(xml);
    let mut inside = false;
    let mut out = String::new();
    loop {
        match reader.read_event() {
            Ok(Event::Start(e)) if e.local_name().as_ref() == name => inside = true,
            Ok(Event::Text(t)) if inside => out.push_str(&t.into_inner()),
            Ok(Event::GeneralRef(r))
                if inside && !crate::http::encode::push_xml_reference(&r, &mut out) =>
            {
                return None;
            }
            Ok(Event::CData(t)) if inside => out.push_str(&t.into_inner()),
            Ok(Event::End(e)) if inside && e.local_name().as_ref() == name => {
                return Some(out.trim().to_string());
            }
            Ok(Event::Eof) | Err(_) => return None,
            _ => {}
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::error::ErrorCode;

    #[test]
    fn auth_refusals_name_what_to_check_for_each_credential() {
        use crate::credential::{Credential, SasToken, SharedKeyCredential, StaticToken};
        let refused = || {
            let h = Headers::from_map(Default::default());
            error_from_parts(403, &h, b"")
        };
        let key = Credential::SharedKey(SharedKeyCredential::new("acct1", "a2V5").unwrap());
        let sas = Credential::Sas(SasToken::new("sv=2025-11-05&sig=SECRET").unwrap());
        let bearer = Credential::bearer(StaticToken::new("tok.en").unwrap());
        let cases = [
            (key, "check the account name and its key"),
            (sas, "its expiry"),
            (bearer, "role assignment"),
            (Credential::Anonymous, "no credential"),
        ];
        for (credential, expect) in cases {
            let e = with_auth_hint(refused(), &credential, "acct1");
            assert!(e.to_string().contains(expect), "{e}");
            assert!(!e.to_string().contains("SECRET"), "{e}");
        }
        // Other answers are left alone.
        let h = Headers::from_map(Default::default());
        let e = with_auth_hint(error_from_parts(412, &h, b""), &Credential::Anonymous, "a");
        assert_eq!(e.message(), "precondition failed");
    }

    #[test]
    fn xml_and_json_errors() {
        let xml = b"\xef\xbb\xbf<?xml version=\"1.0\" encoding=\"utf-8\"?><Error><Code>ConditionNotMet</Code><Message>The condition specified using HTTP conditional header(s) is not met.\nRequestId:1</Message></Error>";
        let (c, m) = parse_error_body(xml);
        assert_eq!(c.as_deref(), Some("ConditionNotMet"));
        assert!(m.unwrap().starts_with("The condition"));
        let json = br#"{"odata.error":{"code":"UpdateConditionNotSatisfied","message":{"lang":"en-US","value":"0:The update condition specified in the request was not satisfied."}}}"#;
        let (c, m) = parse_error_body(json);
        assert_eq!(c.as_deref(), Some("UpdateConditionNotSatisfied"));
        assert!(m.unwrap().starts_with("0:"));
        let h = Headers::from_pairs(vec![("x-ms-error-code".into(), "LeaseIdMissing".into())]);
        let e = error_from_parts(412, &h, b"");
        assert_eq!(e.error_code(), Some(&ErrorCode::LeaseIdMissing));
        assert_eq!(e.message(), "precondition failed");
        assert_eq!(parse_error_body(b"<Error><Code>unterminated"), (None, None));
    }

    #[test]
    fn references_in_xml_error_text_are_resolved() {
        // The reader reports `&lt;` and `&#39;` apart from the text around them.
        let xml = b"<Error><Code>InvalidXmlNodeValue</Code><Message>value &lt;x&gt; isn&#39;t &amp; wasn&apos;t</Message></Error>";
        let (c, m) = parse_error_body(xml);
        assert_eq!(c.as_deref(), Some("InvalidXmlNodeValue"));
        assert_eq!(m.as_deref(), Some("value <x> isn't & wasn't"));
        // A reference XML does not define: no text rather than a wrong one.
        assert_eq!(
            parse_error_body(b"<Error><Code>A&nbsp;B</Code></Error>"),
            (None, None)
        );
    }
}
