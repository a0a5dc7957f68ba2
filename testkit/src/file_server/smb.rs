//! SMB properties of files and directories (attributes, times, permission keys), share
//! properties (quota, access tier, protocols, root squash) and Create / Get Share Permission.

use std::collections::BTreeMap;

use super::{HttpRequest, Reply, Share, iso_now};

/// The security descriptor every share starts with; `inherit` resolves to it.
const DEFAULT_SDDL: &str = "O:SYG:SYD:(A;;FA;;;BA)(A;;FA;;;SY)(A;OICI;0x1200a9;;;BU)";

const ATTRIBUTES: [&str; 9] = [
    "ReadOnly",
    "Hidden",
    "System",
    "Directory",
    "Archive",
    "Temporary",
    "Offline",
    "NotContentIndexed",
    "NoScrubData",
];

/// What the service keeps beside a share's name, quota and metadata.
#[derive(Clone)]
pub(super) struct ShareExt {
    pub access_tier: String,
    pub protocols: String,
    pub root_squash: Option<String>,
    /// Security descriptors by permission key.
    pub permissions: BTreeMap<String, String>,
}

impl Default for ShareExt {
    fn default() -> Self {
        let mut permissions = BTreeMap::new();
        permissions.insert(permission_key(DEFAULT_SDDL), DEFAULT_SDDL.to_string());
        ShareExt {
            access_tier: "TransactionOptimized".into(),
            protocols: "SMB".into(),
            root_squash: None,
            permissions,
        }
    }
}

/// A stable key per descriptor, shaped like Azure's (`<digits>*<digits>`).
fn permission_key(sddl: &str) -> String {
    let mut h: u64 = 0xcbf2_9ce4_8422_2325;
    for b in sddl.bytes() {
        h = (h ^ u64::from(b)).wrapping_mul(0x0100_0000_01b3);
    }
    format!("{}*{}", h, 422_928_105_932_735_866u64)
}

/// The SMB properties of one file or directory.
#[derive(Clone, Debug)]
pub(super) struct Smb {
    pub attributes: String,
    pub creation: String,
    pub last_write: String,
    pub change: String,
    pub permission_key: String,
}

fn bad(header: &str, why: &str) -> Reply {
    Reply::error(
        400,
        "InvalidHeaderValue",
        &format!(
            "The value for one of the HTTP headers is not in the correct format. ({header}: {why})"
        ),
    )
    .h("x-ms-invalid-header-name", header.to_string())
}

/// Canonical attribute list (`Archive|ReadOnly` order as Azure prints: declaration order).
fn parse_attributes(v: &str, is_dir: bool) -> Result<String, Reply> {
    let mut set = Vec::new();
    for part in v.split('|').map(str::trim).filter(|p| !p.is_empty()) {
        if part.eq_ignore_ascii_case("none") {
            continue;
        }
        let Some(name) = ATTRIBUTES.iter().find(|n| n.eq_ignore_ascii_case(part)) else {
            return Err(bad("x-ms-file-attributes", "unknown attribute"));
        };
        if *name == "Directory" && !is_dir {
            return Err(bad("x-ms-file-attributes", "Directory on a file"));
        }
        set.push(*name);
    }
    if is_dir && !set.contains(&"Directory") {
        set.push("Directory");
    }
    let names: Vec<&str> = ATTRIBUTES
        .iter()
        .copied()
        .filter(|n| set.contains(n))
        .collect();
    Ok(if names.is_empty() {
        "None".into()
    } else {
        names.join("|")
    })
}

fn parse_time(header: &str, v: &str) -> Result<String, Reply> {
    let t = time::OffsetDateTime::parse(v, &time::format_description::well_known::Rfc3339)
        .map_err(|_| bad(header, "not an ISO 8601 time"))?;
    Ok(azstore::file::SmbTime::At(t).to_string())
}

impl Smb {
    /// Create File / Create Directory: Azure's defaults for what is not sent (attributes
    /// `None`/`Directory`, times now, permission inherited); `preserve` is refused.
    pub fn create(req: &HttpRequest, is_dir: bool, ext: &mut ShareExt) -> Result<Smb, Reply> {
        let now = iso_now7();
        let mut smb = Smb {
            attributes: if is_dir {
                "Directory".into()
            } else {
                "Archive".into()
            },
            creation: now.clone(),
            last_write: now.clone(),
            change: now,
            permission_key: permission_key(DEFAULT_SDDL),
        };
        for h in [
            "x-ms-file-attributes",
            "x-ms-file-creation-time",
            "x-ms-file-last-write-time",
            "x-ms-file-change-time",
            "x-ms-file-permission",
        ] {
            if req
                .header(h)
                .is_some_and(|v| v.eq_ignore_ascii_case("preserve"))
            {
                return Err(bad(h, "preserve is not valid on create"));
            }
        }
        smb.update(req, is_dir, ext)?;
        Ok(smb)
    }

    /// Set Properties: what is not sent (or `preserve`) is kept; the change time moves to now
    /// unless given.
    pub fn set(
        &mut self,
        req: &HttpRequest,
        is_dir: bool,
        ext: &mut ShareExt,
    ) -> Result<(), Reply> {
        let mut next = self.clone();
        next.change = iso_now7();
        next.update(req, is_dir, ext)?;
        *self = next;
        Ok(())
    }

    fn update(&mut self, req: &HttpRequest, is_dir: bool, ext: &mut ShareExt) -> Result<(), Reply> {
        let keep = |v: &str| v.eq_ignore_ascii_case("preserve");
        if let Some(v) = req.header("x-ms-file-attributes").filter(|v| !keep(v)) {
            self.attributes = parse_attributes(v, is_dir)?;
        }
        for (h, slot) in [
            ("x-ms-file-creation-time", &mut self.creation),
            ("x-ms-file-last-write-time", &mut self.last_write),
            ("x-ms-file-change-time", &mut self.change),
        ] {
            match req.header(h) {
                None => {}
                Some(v) if keep(v) => {}
                Some(v) if v.eq_ignore_ascii_case("now") => *slot = iso_now7(),
                Some(v) => *slot = parse_time(h, v)?,
            }
        }
        match (
            req.header("x-ms-file-permission"),
            req.header("x-ms-file-permission-key"),
        ) {
            (Some(_), Some(_)) => {
                return Err(bad(
                    "x-ms-file-permission",
                    "give a permission or a permission key, not both",
                ));
            }
            (Some(p), None) if keep(p) => {}
            (Some(p), None) if p.eq_ignore_ascii_case("inherit") => {
                self.permission_key = permission_key(DEFAULT_SDDL);
            }
            (Some(p), None) => {
                if p.len() > 8 * 1024 || !p.starts_with("O:") && !p.starts_with("D:") {
                    return Err(bad("x-ms-file-permission", "not an SDDL of at most 8 KiB"));
                }
                let key = permission_key(p);
                ext.permissions.insert(key.clone(), p.to_string());
                self.permission_key = key;
            }
            (None, Some(k)) => {
                if !ext.permissions.contains_key(k) {
                    return Err(bad("x-ms-file-permission-key", "no such permission key"));
                }
                self.permission_key = k.to_string();
            }
            (None, None) => {}
        }
        Ok(())
    }

    pub fn headers(&self, r: Reply) -> Reply {
        r.h("x-ms-file-attributes", self.attributes.clone())
            .h("x-ms-file-creation-time", self.creation.clone())
            .h("x-ms-file-last-write-time", self.last_write.clone())
            .h("x-ms-file-change-time", self.change.clone())
            .h("x-ms-file-permission-key", self.permission_key.clone())
            .h("x-ms-file-id", "13835128424026341376")
            .h("x-ms-file-parent-id", "0")
    }
}

/// Now with seven fractional digits, as Azure prints SMB times.
pub(super) fn iso_now7() -> String {
    parse_time("now", &iso_now()).unwrap_or_else(|_| iso_now())
}

/// Set Share Properties (quota, access tier, root squash; lease id checked).
pub(super) fn set_share_properties(share: &mut Share, req: &HttpRequest) -> Result<(), Reply> {
    if let Some(q) = req.header("x-ms-share-quota") {
        match q.parse::<u64>() {
            Ok(q) if (1..=102_400).contains(&q) => share.quota = q,
            _ => return Err(bad("x-ms-share-quota", "1-102400")),
        }
    }
    share_ext_headers(&mut share.ext, req, false)?;
    Ok(())
}

/// `x-ms-access-tier`, `x-ms-root-squash` (and `x-ms-enabled-protocols` on create).
pub(super) fn share_ext_headers(
    ext: &mut ShareExt,
    req: &HttpRequest,
    creating: bool,
) -> Result<(), Reply> {
    let pick = |h: &str, allowed: &[&str]| -> Result<Option<String>, Reply> {
        match req.header(h) {
            None => Ok(None),
            Some(v) => allowed
                .iter()
                .find(|a| a.eq_ignore_ascii_case(v))
                .map(|a| Some(a.to_string()))
                .ok_or_else(|| bad(h, "not a known value")),
        }
    };
    if let Some(t) = pick(
        "x-ms-access-tier",
        &["TransactionOptimized", "Hot", "Cool", "Premium"],
    )? {
        ext.access_tier = t;
    }
    if let Some(s) = pick(
        "x-ms-root-squash",
        &["NoRootSquash", "RootSquash", "AllSquash"],
    )? {
        ext.root_squash = Some(s);
    }
    match pick("x-ms-enabled-protocols", &["SMB", "NFS"])? {
        Some(p) if creating => ext.protocols = p,
        Some(_) => return Err(bad("x-ms-enabled-protocols", "fixed at create")),
        None => {}
    }
    Ok(())
}

/// The share-level headers of Get Share Properties.
pub(super) fn share_ext_reply(ext: &ShareExt, r: Reply) -> Reply {
    let r = r
        .h("x-ms-access-tier", ext.access_tier.clone())
        .h("x-ms-enabled-protocols", ext.protocols.clone());
    match &ext.root_squash {
        Some(s) => r.h("x-ms-root-squash", s.clone()),
        None => r,
    }
}

/// Create Share Permission (PUT, JSON body) / Get Share Permission (GET with the key).
pub(super) fn permission_op(share: &mut Share, m: &str, req: &HttpRequest) -> Reply {
    match m {
        "PUT" => {
            let permission = serde_json::from_slice::<serde_json::Value>(&req.body)
                .ok()
                .and_then(|v| v.get("permission")?.as_str().map(str::to_string));
            let Some(permission) = permission else {
                return Reply::error(
                    400,
                    "InvalidXmlDocument",
                    "The request body is not the JSON {\"permission\": \"<SDDL>\"}.",
                );
            };
            if permission.is_empty() || permission.len() > 8 * 1024 {
                return bad("permission", "1 byte to 8 KiB of SDDL");
            }
            if !permission.starts_with("O:") && !permission.starts_with("D:") {
                return Reply::error(
                    400,
                    "FileInvalidPermission",
                    "The specified permission is not valid.",
                );
            }
            let key = permission_key(&permission);
            share.ext.permissions.insert(key.clone(), permission);
            Reply::new(201).h("x-ms-file-permission-key", key)
        }
        "GET" => {
            let Some(key) = req.header("x-ms-file-permission-key") else {
                return Reply::error(
                    400,
                    "MissingRequiredHeader",
                    "x-ms-file-permission-key is required.",
                );
            };
            let Some(sddl) = share.ext.permissions.get(key) else {
                return Reply::error(
                    404,
                    "ResourceNotFound",
                    "The specified resource does not exist.",
                );
            };
            let mut r = Reply::new(200).h("content-type", "application/json; charset=utf-8");
            r.body = serde_json::json!({ "permission": sddl })
                .to_string()
                .into_bytes();
            r
        }
        _ => Reply::error(
            400,
            "UnsupportedHttpVerb",
            "Share permissions are created with PUT and read with GET.",
        ),
    }
}

impl Smb {
    /// The destination of Copy File: headers that say `source` take the source's value, the
    /// permission follows `x-ms-file-permission-copy-mode`, the rest is as on create.
    pub fn for_copy(req: &HttpRequest, src: &Smb, ext: &mut ShareExt) -> Result<Smb, Reply> {
        let mode = req
            .header("x-ms-file-permission-copy-mode")
            .map(str::to_ascii_lowercase);
        let explicit_permission = req.header("x-ms-file-permission").is_some()
            || req.header("x-ms-file-permission-key").is_some();
        match (mode.as_deref(), explicit_permission) {
            (Some("override"), false) => {
                return Err(bad(
                    "x-ms-file-permission-copy-mode",
                    "override needs x-ms-file-permission or x-ms-file-permission-key",
                ));
            }
            (Some("source") | None, true) => {
                return Err(bad(
                    "x-ms-file-permission",
                    "a permission needs x-ms-file-permission-copy-mode: override",
                ));
            }
            (Some("source" | "override") | None, _) => {}
            (Some(_), _) => {
                return Err(bad("x-ms-file-permission-copy-mode", "source or override"));
            }
        }
        let from_source = |h: &str| {
            req.header(h)
                .is_some_and(|v| v.eq_ignore_ascii_case("source"))
        };
        let rest = HttpRequest {
            method: req.method.clone(),
            raw_path: String::new(),
            query: Vec::new(),
            headers: req
                .headers
                .iter()
                .filter(|(k, v)| {
                    !v.eq_ignore_ascii_case("source") && k != "x-ms-file-permission-copy-mode"
                })
                .cloned()
                .collect(),
            body: Vec::new(),
        };
        let mut smb = Smb::create(&rest, false, ext)?;
        if from_source("x-ms-file-attributes") {
            smb.attributes = src.attributes.clone();
        }
        if from_source("x-ms-file-creation-time") {
            smb.creation = src.creation.clone();
        }
        if from_source("x-ms-file-last-write-time") {
            smb.last_write = src.last_write.clone();
        }
        if from_source("x-ms-file-change-time") {
            smb.change = src.change.clone();
        }
        if mode.as_deref() == Some("source") {
            smb.permission_key = src.permission_key.clone();
        }
        if req
            .header("x-ms-file-copy-set-archive")
            .is_some_and(|v| v.eq_ignore_ascii_case("true"))
            && !smb.attributes.contains("Archive")
        {
            let with = format!("{}|Archive", smb.attributes.replace("None", ""));
            smb.attributes = parse_attributes(&with, false)?;
        }
        Ok(smb)
    }

    /// Whether the ReadOnly attribute is set.
    pub fn read_only(&self) -> bool {
        self.attributes.split('|').any(|a| a == "ReadOnly")
    }
}
