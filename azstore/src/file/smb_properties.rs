//! SMB properties of files and directories: attributes, creation / last-write / change times
//! and the security descriptor (permission), sent on create and set, read back from every
//! property read.
//!
//! ```no_run
//! # async fn f(dir: azstore::file::DirectoryClient, file: azstore::file::FileClient) -> azstore::Result<()> {
//! use azstore::file::{FileAttributes, FilePermission, SmbProperties, SmbTime};
//! let smb = SmbProperties::default()
//!     .attributes(FileAttributes::READ_ONLY | FileAttributes::ARCHIVE)
//!     .last_write_time(SmbTime::Now)
//!     .permission(FilePermission::Inherit);
//! file.set_smb_properties(&smb, None).await?;
//! let read = file.get_properties().await?.smb;
//! assert!(read.attributes.unwrap().contains(FileAttributes::READ_ONLY));
//! # let _ = dir; Ok(()) }
//! ```

use std::fmt;

use time::OffsetDateTime;
use time::format_description::well_known::Rfc3339;

use crate::error::{Error, Result};
use crate::http::{Headers, Request};

/// The largest security descriptor sent inline in `x-ms-file-permission` (8 KiB); larger
/// ones go through [`ShareClient::create_permission`](crate::file::ShareClient::create_permission)
/// and are referenced by key.
pub const MAX_INLINE_PERMISSION: usize = 8 * 1024;

/// SMB attributes of a file or directory (`x-ms-file-attributes`: names joined by `|`).
///
/// ```
/// use azstore::file::FileAttributes;
/// let a = FileAttributes::HIDDEN | FileAttributes::SYSTEM;
/// assert_eq!(a.to_string(), "Hidden|System");
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Hash)]
pub struct FileAttributes(u32);

const NAMES: [(FileAttributes, &str); 9] = [
    (FileAttributes::READ_ONLY, "ReadOnly"),
    (FileAttributes::HIDDEN, "Hidden"),
    (FileAttributes::SYSTEM, "System"),
    (FileAttributes::DIRECTORY, "Directory"),
    (FileAttributes::ARCHIVE, "Archive"),
    (FileAttributes::TEMPORARY, "Temporary"),
    (FileAttributes::OFFLINE, "Offline"),
    (FileAttributes::NOT_CONTENT_INDEXED, "NotContentIndexed"),
    (FileAttributes::NO_SCRUB_DATA, "NoScrubData"),
];

impl FileAttributes {
    /// No attribute (`None` on the wire; a file's default).
    pub const NONE: FileAttributes = FileAttributes(0);
    /// `ReadOnly`.
    pub const READ_ONLY: FileAttributes = FileAttributes(1);
    /// `Hidden`.
    pub const HIDDEN: FileAttributes = FileAttributes(2);
    /// `System`.
    pub const SYSTEM: FileAttributes = FileAttributes(4);
    /// `Directory` (directories only).
    pub const DIRECTORY: FileAttributes = FileAttributes(16);
    /// `Archive`.
    pub const ARCHIVE: FileAttributes = FileAttributes(32);
    /// `Temporary`.
    pub const TEMPORARY: FileAttributes = FileAttributes(256);
    /// `Offline`.
    pub const OFFLINE: FileAttributes = FileAttributes(4096);
    /// `NotContentIndexed`.
    pub const NOT_CONTENT_INDEXED: FileAttributes = FileAttributes(8192);
    /// `NoScrubData`.
    pub const NO_SCRUB_DATA: FileAttributes = FileAttributes(131_072);

    /// Whether every attribute of `other` is set here.
    ///
    /// ```
    /// use azstore::file::FileAttributes;
    /// let a = FileAttributes::READ_ONLY | FileAttributes::HIDDEN;
    /// assert!(a.contains(FileAttributes::HIDDEN));
    /// assert!(!a.contains(FileAttributes::ARCHIVE));
    /// ```
    pub fn contains(self, other: FileAttributes) -> bool {
        self.0 & other.0 == other.0
    }

    /// Parses the wire form (`ReadOnly|Archive`, `None`; names case-insensitive, spaces
    /// around `|` allowed). An unknown name is an error.
    ///
    /// ```
    /// use azstore::file::FileAttributes;
    /// assert_eq!(FileAttributes::parse("ReadOnly | Archive")?, FileAttributes::READ_ONLY | FileAttributes::ARCHIVE);
    /// assert!(FileAttributes::parse("Sticky").is_err());
    /// # Ok::<(), azstore::Error>(())
    /// ```
    pub fn parse(s: &str) -> Result<FileAttributes> {
        let mut out = FileAttributes::NONE;
        for part in s.split('|').map(str::trim).filter(|p| !p.is_empty()) {
            if part.eq_ignore_ascii_case("None") {
                continue;
            }
            let Some((a, _)) = NAMES.iter().find(|(_, n)| n.eq_ignore_ascii_case(part)) else {
                return Err(Error::invalid_input(format!(
                    "unknown SMB file attribute {part:?}"
                )));
            };
            out = out | *a;
        }
        Ok(out)
    }
}

impl std::ops::BitOr for FileAttributes {
    type Output = FileAttributes;
    fn bitor(self, rhs: FileAttributes) -> FileAttributes {
        FileAttributes(self.0 | rhs.0)
    }
}

impl fmt::Display for FileAttributes {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let names: Vec<&str> = NAMES
            .iter()
            .filter(|(a, _)| self.contains(*a))
            .map(|(_, n)| *n)
            .collect();
        if names.is_empty() {
            f.write_str("None")
        } else {
            f.write_str(&names.join("|"))
        }
    }
}

/// One SMB timestamp to set: a time, the time of the request, or unchanged.
///
/// ```
/// use azstore::file::{SmbProperties, SmbTime};
/// let keep_created_touch_written = SmbProperties::default()
///     .creation_time(SmbTime::Preserve)
///     .last_write_time(SmbTime::Now);
/// # let _ = keep_created_touch_written;
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SmbTime {
    /// The time the request is processed (`now`; the default on create).
    Now,
    /// Keep the current value (`preserve`; the default on set; not valid on create).
    Preserve,
    /// This time (sent as ISO 8601 with 100 ns precision, like `2019-07-11T21:40:12.9953010Z`).
    At(OffsetDateTime),
}

impl SmbTime {
    fn wire(self) -> String {
        match self {
            SmbTime::Now => "now".into(),
            SmbTime::Preserve => "preserve".into(),
            SmbTime::At(t) => format_smb_time(t),
        }
    }
}

/// `2019-07-11T21:40:12.9953010Z`: UTC, seven fractional digits (the form of `Edm.DateTime`).
pub(crate) fn format_smb_time(t: OffsetDateTime) -> String {
    crate::time_fmt::iso8601_7(t)
}

impl fmt::Display for SmbTime {
    /// The wire form: `now`, `preserve` or the time with seven fractional digits.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.wire())
    }
}

/// The security descriptor of a file or directory.
///
/// ```no_run
/// # async fn demo(file: azstore::file::FileClient) -> azstore::Result<()> {
/// use azstore::file::{FilePermission, SmbProperties};
/// // Reuse the descriptor of one file on another, by key.
/// let key = file.get_properties().await?.smb.permission;
/// if let Some(FilePermission::Key(k)) = key {
///     file.set_smb_properties(&SmbProperties::default().permission(FilePermission::Key(k)), None).await?;
/// }
/// # Ok(()) }
/// ```
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum FilePermission {
    /// Inherit from the parent directory (`inherit`; the default on create).
    Inherit,
    /// Keep the current one (`preserve`; the default on set; not valid on create).
    Preserve,
    /// This descriptor in SDDL form, sent inline (`x-ms-file-permission`, at most 8 KiB).
    Sddl(String),
    /// The descriptor stored under this key by Create Share Permission
    /// (`x-ms-file-permission-key`); reads return the key of the current descriptor.
    Key(String),
}

/// The SMB properties of a file or directory: what to set on create / set (a field left
/// `None` is not sent: Azure's default applies — on create attributes `None` (`Directory`
/// for a directory), times `now`, permission `inherit`; on set everything is preserved), and
/// what property reads return (times as [`SmbTime::At`], the permission as
/// [`FilePermission::Key`], plus the ids).
///
/// ```no_run
/// # async fn demo(file: azstore::file::FileClient) -> azstore::Result<()> {
/// use azstore::file::{FileAttributes, SmbProperties, SmbTime};
/// let smb = SmbProperties::default()
///     .attributes(FileAttributes::READ_ONLY)
///     .last_write_time(SmbTime::At(time::macros::datetime!(2026-01-01 00:00 UTC)));
/// file.set_smb_properties(&smb, None).await?;
/// # Ok(()) }
/// ```
#[derive(Debug, Clone, Default, PartialEq, Eq)]
#[non_exhaustive]
#[must_use]
pub struct SmbProperties {
    /// `x-ms-file-attributes`; `None` here is "not sent" (see [`FileAttributes::NONE`] for
    /// no attribute).
    pub attributes: Option<FileAttributes>,
    /// Keep the attributes on set (`x-ms-file-attributes: preserve`), overriding `attributes`.
    pub preserve_attributes: bool,
    /// `x-ms-file-creation-time`.
    pub creation_time: Option<SmbTime>,
    /// `x-ms-file-last-write-time`.
    pub last_write_time: Option<SmbTime>,
    /// `x-ms-file-change-time`.
    pub change_time: Option<SmbTime>,
    /// `x-ms-file-permission` or `x-ms-file-permission-key`.
    pub permission: Option<FilePermission>,
    /// `x-ms-file-id` (read only).
    pub file_id: Option<String>,
    /// `x-ms-file-parent-id` (read only).
    pub parent_id: Option<String>,
}

impl SmbProperties {
    /// The SMB attributes (`x-ms-file-attributes`). Default: not sent, so none on create
    /// (`Directory` for a directory) and the current ones kept on set.
    ///
    /// ```
    /// use azstore::file::{FileAttributes, SmbProperties};
    /// let smb = SmbProperties::default().attributes(FileAttributes::READ_ONLY);
    /// # let _ = smb;
    /// ```
    pub fn attributes(mut self, v: FileAttributes) -> Self {
        self.attributes = Some(v);
        self
    }

    /// Keeps the current attributes on set (`preserve`).
    pub fn preserve_attributes(mut self) -> Self {
        self.preserve_attributes = true;
        self
    }

    /// The creation time (`x-ms-file-creation-time`). Default: not sent, so `now` on
    /// create and the current value kept on set.
    ///
    /// ```
    /// use azstore::file::{SmbProperties, SmbTime};
    /// let when = time::macros::datetime!(2026-01-15 08:00:00 UTC);
    /// let smb = SmbProperties::default().creation_time(SmbTime::At(when));
    /// # let _ = smb;
    /// ```
    pub fn creation_time(mut self, v: SmbTime) -> Self {
        self.creation_time = Some(v);
        self
    }

    /// The last-write time (`x-ms-file-last-write-time`). Default: not sent, so `now` on
    /// create and the current value kept on set.
    ///
    /// ```
    /// use azstore::file::{SmbProperties, SmbTime};
    /// let smb = SmbProperties::default().last_write_time(SmbTime::Now);
    /// # let _ = smb;
    /// ```
    pub fn last_write_time(mut self, v: SmbTime) -> Self {
        self.last_write_time = Some(v);
        self
    }

    /// The change time (`x-ms-file-change-time`). Default: not sent, so `now` on create
    /// and the current value kept on set.
    ///
    /// ```
    /// use azstore::file::{SmbProperties, SmbTime};
    /// let smb = SmbProperties::default().change_time(SmbTime::Preserve);
    /// # let _ = smb;
    /// ```
    pub fn change_time(mut self, v: SmbTime) -> Self {
        self.change_time = Some(v);
        self
    }

    /// The security descriptor: inline SDDL, the key of one stored with the share, or
    /// inherit / preserve. Default: not sent, so inherited from the parent directory on
    /// create and kept on set.
    ///
    /// ```
    /// use azstore::file::{FilePermission, SmbProperties};
    /// let smb = SmbProperties::default()
    ///     .permission(FilePermission::Sddl("O:BAG:SYD:(A;;FA;;;BA)".into()));
    /// # let _ = smb;
    /// ```
    pub fn permission(mut self, v: FilePermission) -> Self {
        self.permission = Some(v);
        self
    }

    /// Checks what cannot be sent (before any request): `preserve` on create, an empty or
    /// over-long SDDL or key.
    pub(crate) fn check(&self, creating: bool) -> Result<()> {
        let times = [self.creation_time, self.last_write_time, self.change_time];
        if creating
            && (self.preserve_attributes
                || times.contains(&Some(SmbTime::Preserve))
                || self.permission == Some(FilePermission::Preserve))
        {
            return Err(Error::invalid_input(
                "`preserve` is for Set Properties: a new file or directory has nothing to preserve",
            ));
        }
        match &self.permission {
            Some(FilePermission::Sddl(s)) if s.is_empty() || s.len() > MAX_INLINE_PERMISSION => {
                Err(Error::invalid_input(format!(
                    "an inline permission is 1 byte to 8 KiB of SDDL (got {} bytes); store a larger one with ShareClient::create_permission and pass its key",
                    s.len()
                )))
            }
            Some(FilePermission::Key(k)) if k.is_empty() || k.chars().any(char::is_control) => Err(
                Error::invalid_input("a permission key must be non-empty text"),
            ),
            _ => Ok(()),
        }
    }

    /// Adds the headers of the fields that are set.
    pub(crate) fn apply(&self, req: Request) -> Request {
        let attributes = if self.preserve_attributes {
            Some("preserve".to_string())
        } else {
            self.attributes.map(|a| a.to_string())
        };
        let req = req
            .header_opt("x-ms-file-attributes", attributes)
            .header_opt(
                "x-ms-file-creation-time",
                self.creation_time.map(SmbTime::wire),
            )
            .header_opt(
                "x-ms-file-last-write-time",
                self.last_write_time.map(SmbTime::wire),
            )
            .header_opt("x-ms-file-change-time", self.change_time.map(SmbTime::wire));
        match &self.permission {
            None => req,
            Some(FilePermission::Inherit) => req.header("x-ms-file-permission", "inherit"),
            Some(FilePermission::Preserve) => req.header("x-ms-file-permission", "preserve"),
            Some(FilePermission::Sddl(s)) => req.header("x-ms-file-permission", s.clone()),
            Some(FilePermission::Key(k)) => req.header("x-ms-file-permission-key", k.clone()),
        }
    }

    /// The SMB properties in a response (absent headers stay `None`; a malformed value is a
    /// decode error).
    pub(crate) fn from_headers(h: &Headers) -> Result<SmbProperties> {
        let time = |name: &str| -> Result<Option<SmbTime>> {
            h.get(name)
                .map(|v| {
                    OffsetDateTime::parse(v.trim(), &Rfc3339)
                        .map(SmbTime::At)
                        .map_err(|_| Error::decode(format!("{name} is not a timestamp: {v:?}")))
                })
                .transpose()
        };
        Ok(SmbProperties {
            attributes: h
                .get("x-ms-file-attributes")
                .map(|v| {
                    FileAttributes::parse(v).map_err(|_| {
                        Error::decode(format!("x-ms-file-attributes is malformed: {v:?}"))
                    })
                })
                .transpose()?,
            preserve_attributes: false,
            creation_time: time("x-ms-file-creation-time")?,
            last_write_time: time("x-ms-file-last-write-time")?,
            change_time: time("x-ms-file-change-time")?,
            permission: h
                .get("x-ms-file-permission-key")
                .map(|k| FilePermission::Key(k.to_string())),
            file_id: h.get("x-ms-file-id").map(str::to_string),
            parent_id: h.get("x-ms-file-parent-id").map(str::to_string),
        })
    }

    /// The time of an [`SmbTime::At`] field, e.g.
    /// `SmbProperties::time_of(props.smb.last_write_time)`.
    ///
    /// ```
    /// use azstore::file::{SmbProperties, SmbTime};
    /// let t = time::macros::datetime!(2026-11-25 07:00 UTC);
    /// assert_eq!(SmbProperties::time_of(Some(SmbTime::At(t))), Some(t));
    /// assert_eq!(SmbProperties::time_of(Some(SmbTime::Now)), None);
    /// ```
    pub fn time_of(t: Option<SmbTime>) -> Option<OffsetDateTime> {
        match t {
            Some(SmbTime::At(t)) => Some(t),
            _ => None,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn attributes_round_trip() {
        let a = FileAttributes::parse("ReadOnly | archive").unwrap();
        assert_eq!(a, FileAttributes::READ_ONLY | FileAttributes::ARCHIVE);
        assert_eq!(a.to_string(), "ReadOnly|Archive");
        assert_eq!(FileAttributes::parse("None").unwrap().to_string(), "None");
        assert!(FileAttributes::parse("Sparse").is_err());
        assert!(
            FileAttributes::parse("NoScrubData")
                .unwrap()
                .contains(FileAttributes::NO_SCRUB_DATA)
        );
    }

    #[test]
    fn times_have_seven_digits() {
        let t = OffsetDateTime::parse("2019-07-11T21:40:12.9953010Z", &Rfc3339).unwrap();
        assert_eq!(format_smb_time(t), "2019-07-11T21:40:12.9953010Z");
        let whole = OffsetDateTime::parse("2019-07-11T21:40:12Z", &Rfc3339).unwrap();
        assert_eq!(format_smb_time(whole), "2019-07-11T21:40:12.0000000Z");
    }

    #[test]
    fn malformed_smb_headers_are_decode_errors() {
        let h = |k: &str, v: &str| Headers::from_pairs(vec![(k.into(), v.into())]);
        for (k, v) in [
            ("x-ms-file-creation-time", "yesterday"),
            ("x-ms-file-attributes", "Archive|Sparkly"),
        ] {
            let err = SmbProperties::from_headers(&h(k, v)).unwrap_err();
            assert_eq!(err.kind(), crate::ErrorKind::Service, "{k}");
        }
        let ok = SmbProperties::from_headers(&h("x-ms-file-permission-key", "1*2")).unwrap();
        assert_eq!(ok.permission, Some(FilePermission::Key("1*2".into())));
    }

    #[test]
    fn preserve_is_refused_on_create() {
        let p = SmbProperties::default().creation_time(SmbTime::Preserve);
        assert!(p.check(true).is_err() && p.check(false).is_ok());
        let big = SmbProperties::default().permission(FilePermission::Sddl("O".repeat(9000)));
        assert!(big.check(false).is_err());
    }
}
