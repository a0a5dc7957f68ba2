//! List Shares.

use super::*;

/// List Shares (prefix, marker, maxresults, include=metadata), as Azure answers it.
pub(in super::super) fn list_shares(st: &State, req: &HttpRequest) -> Reply {
    let prefix = req.q("prefix").unwrap_or("");
    let marker = req.q("marker").unwrap_or("");
    let max: usize = req
        .q("maxresults")
        .and_then(|v| v.parse().ok())
        .filter(|n| (1..=5000).contains(n))
        .unwrap_or(5000);
    let with_meta = req.q("include").is_some_and(|i| i.contains("metadata"));
    let names: Vec<&String> = st
        .shares
        .keys()
        .filter(|n| n.starts_with(prefix) && n.as_str() >= marker)
        .collect();
    let mut body = format!(
        "\u{feff}<?xml version=\"1.0\" encoding=\"utf-8\"?><EnumerationResults ServiceEndpoint=\"http://127.0.0.1/{ACCOUNT}\"><Prefix>{}</Prefix><Shares>",
        xml_escape(prefix)
    );
    let with_snapshots = req.q("include").is_some_and(|i| i.contains("snapshots"));
    for name in names.iter().take(max) {
        let sh = &st.shares[*name];
        if with_snapshots {
            // Snapshots come before their share, oldest first, as on Azure.
            let own = st
                .snapshots
                .range(((*name).clone(), String::new())..)
                .take_while(|((s, _), _)| s == *name);
            for ((_, id), p) in own {
                body.push_str(&format!(
                    "<Share><Name>{}</Name><Snapshot>{id}</Snapshot><Properties><Last-Modified>{}</Last-Modified><Etag>{}</Etag><Quota>{}</Quota></Properties></Share>",
                    xml_escape(name),
                    p.last_modified,
                    p.etag,
                    p.quota
                ));
            }
        }
        body.push_str(&format!(
            "<Share><Name>{}</Name><Properties><Last-Modified>{}</Last-Modified><Etag>{}</Etag><Quota>{}</Quota><AccessTier>{}</AccessTier></Properties>",
            xml_escape(name),
            sh.last_modified,
            sh.etag,
            sh.quota,
            sh.ext.access_tier
        ));
        if with_meta {
            body.push_str("<Metadata>");
            for (k, v) in &sh.meta {
                body.push_str(&format!("<{k}>{}</{k}>", xml_escape(v)));
            }
            body.push_str("</Metadata>");
        }
        body.push_str("</Share>");
    }
    body.push_str("</Shares>");
    match names.get(max) {
        Some(next) => body.push_str(&format!("<NextMarker>{}</NextMarker>", xml_escape(next))),
        None => body.push_str("<NextMarker />"),
    }
    body.push_str("</EnumerationResults>");
    let mut r = Reply::new(200).h("content-type", "application/xml");
    r.body = body.into_bytes();
    r
}
