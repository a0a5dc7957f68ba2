//! Recorded XML request bodies turned back into the azstore values that produce them.

use azstore::access_policy::SignedIdentifier;
use azstore::blob::{BlockId, BlockRef, ContainerAcl, PublicAccess};

use crate::compare::xml_items;
use crate::req::Req;

fn iso(s: &str) -> Result<Option<time::OffsetDateTime>, String> {
    if s.is_empty() {
        return Ok(None);
    }
    if let Ok(t) = time::OffsetDateTime::parse(s, &time::format_description::well_known::Rfc3339) {
        return Ok(Some(t));
    }
    // A date alone (as the Python SDK sends `2011-10-11`) is that day's midnight UTC.
    let fmt = time::macros::format_description!("[year]-[month]-[day]");
    time::Date::parse(s, &fmt)
        .map(|d| Some(d.midnight().assume_utc()))
        .map_err(|e| format!("date {s:?}: {e}"))
}

fn field(item: &str, name: &str) -> Option<String> {
    let open = format!("<{name}>");
    let start = item.find(&open)? + open.len();
    let end = item[start..].find("</>")? + start;
    Some(item[start..end].to_string())
}

/// `<SignedIdentifiers>` of a Set ACL request.
pub fn identifiers(body: &[u8]) -> Result<Vec<SignedIdentifier>, String> {
    xml_items(body, "SignedIdentifier")
        .iter()
        .map(|si| {
            let id = field(si, "Id").ok_or("SignedIdentifier without Id")?;
            let perm = field(si, "Permission");
            let mut s = SignedIdentifier::new(id, perm.clone().unwrap_or_default());
            s.start = iso(&field(si, "Start").unwrap_or_default())?;
            s.expiry = iso(&field(si, "Expiry").unwrap_or_default())?;
            s.permission = perm;
            Ok(s)
        })
        .collect()
}

pub fn public_access(v: Option<&str>) -> Result<PublicAccess, String> {
    match v {
        None => Ok(PublicAccess::None),
        Some("blob") => Ok(PublicAccess::Blob),
        Some("container") => Ok(PublicAccess::Container),
        Some(o) => Err(format!("public access {o:?}")),
    }
}

pub fn public_access_header(p: PublicAccess) -> Option<&'static str> {
    match p {
        PublicAccess::None => None,
        PublicAccess::Blob => Some("blob"),
        PublicAccess::Container => Some("container"),
        other => panic!("public access {other:?} has no header value here"),
    }
}

pub fn container_acl_from(req: &Req) -> Result<ContainerAcl, String> {
    let mut acl = ContainerAcl::new(identifiers(&req.body())?);
    acl.public_access = public_access(req.h("x-ms-blob-public-access"))?;
    Ok(acl)
}

/// The `<BlockList>` of a Put Block List request.
pub fn block_refs(body: &[u8]) -> Result<Vec<BlockRef>, String> {
    let mut out = Vec::new();
    for (kind, text) in crate::compare::xml_children(body) {
        let id = BlockId::from_base64(text).map_err(|e| e.to_string())?;
        out.push(match kind.as_str() {
            "Latest" => BlockRef::Latest(id),
            "Committed" => BlockRef::Committed(id),
            "Uncommitted" => BlockRef::Uncommitted(id),
            other => return Err(format!("block list entry {other}")),
        });
    }
    Ok(out)
}
