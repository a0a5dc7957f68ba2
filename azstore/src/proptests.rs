//! Property tests: every parser of caller or server input is fed arbitrary data and must
//! return (an error or a value) without panicking.

use proptest::prelude::*;

use crate::http::response::Headers;
use crate::storage::refusal::{error_from_parts, parse_error_body};

fn arbitrary_text() -> impl Strategy<Value = String> {
    prop_oneof![
        any::<String>(),
        // strings built from the characters that matter to the parsers
        proptest::collection::vec(
            prop_oneof![
                Just("<"),
                Just(">"),
                Just("/"),
                Just("Error"),
                Just("Code"),
                Just("Message"),
                Just("{"),
                Just("}"),
                Just("\""),
                Just(":"),
                Just("odata.error"),
                Just("="),
                Just(";"),
                Just("&"),
                Just("sig"),
                Just("AccountKey"),
                Just("http://"),
                Just("?"),
                Just("#"),
                Just("%"),
                Just("\u{feff}"),
                Just(" "),
                Just("value"),
            ],
            0..40
        )
        .prop_map(|v| v.concat()),
    ]
}

proptest! {
    #[test]
    fn error_bodies_never_panic(body in proptest::collection::vec(any::<u8>(), 0..512), status in 100u16..600) {
        let _ = parse_error_body(&body);
        let e = error_from_parts(status, &Headers::default(), &body);
        prop_assert_eq!(e.status(), Some(status));
    }

    #[test]
    fn structured_error_bodies_never_panic(text in arbitrary_text()) {
        let _ = parse_error_body(text.as_bytes());
    }

    #[test]
    fn connection_strings_never_panic(text in arbitrary_text()) {
        let _ = crate::StorageAccount::from_connection_string(&text);
    }

    #[test]
    fn endpoints_sas_and_keys_never_panic(text in arbitrary_text()) {
        let _ = crate::Endpoint::parse(&text);
        let _ = crate::credential::SasToken::new(&text).map(|t| t.pairs());
        let _ = crate::credential::SharedKeyCredential::new("acct", &text);
        let _ = crate::redact::redact(&text);
        let _ = crate::LeaseId::new(text.clone());
    }

    #[test]
    fn response_headers_never_panic(pairs in proptest::collection::vec((arbitrary_text(), arbitrary_text()), 0..12)) {
        let named = ["etag", "last-modified", "content-length", "content-range", "x-ms-lease-state",
            "x-ms-blob-committed-block-count", "x-ms-meta-a", "x-ms-tag-count", "retry-after"];
        let h = Headers::from_pairs(
            pairs.into_iter().enumerate().map(|(i, (_, v))| (named[i % named.len()].to_string(), v)).collect(),
        );
        let _ = crate::blob::BlobProperties::from_headers(&h);
        let _ = h.last_modified();
    }
}
