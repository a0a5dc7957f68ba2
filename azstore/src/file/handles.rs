//! SMB handles: List Handles and Force Close Handles on files and directories — the way out
//! of a `SharingViolation` or `FileLockConflict` that does not clear because an SMB client
//! (a crashed VM, a forgotten mount) keeps a handle open.
//!
//! ```no_run
//! # async fn f(file: azstore::file::FileClient) -> azstore::Result<()> {
//! use azstore::file::HandleSelector;
//! for h in file.list_handles(None).await?.handles {
//!     println!("{} open by {} since {:?}", h.id, h.client_ip, h.open_time);
//! }
//! let closed = file.force_close_handles(&HandleSelector::All).await?;
//! println!("closed {} handle(s)", closed.closed);
//! # Ok(()) }
//! ```

use serde::Deserialize;
use time::OffsetDateTime;

use crate::error::{Error, Result};
use crate::file::{DirectoryClient, FileClient};
use crate::http::{Method, Request};

/// An open SMB handle.
///
/// ```no_run
/// # async fn demo(file: azstore::file::FileClient) -> azstore::Result<()> {
/// for h in file.list_handles(None).await?.handles {
///     println!("{} held by session {} from {}", h.id, h.session_id, h.client_ip);
/// }
/// # Ok(()) }
/// ```
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct Handle {
    /// The handle id (pass to [`HandleSelector::Id`]).
    pub id: String,
    /// The path it is open on, relative to the share.
    pub path: String,
    /// The SMB session.
    pub session_id: String,
    /// The client's `ip:port`.
    pub client_ip: String,
    /// The client's name, when the service reports it.
    pub client_name: Option<String>,
    /// When the handle was opened.
    pub open_time: Option<OffsetDateTime>,
    /// Access rights granted (`Read`, `Write`, `Delete`).
    pub access_rights: Vec<String>,
}

/// One page of List Handles.
///
/// ```no_run
/// # async fn demo(file: azstore::file::FileClient) -> azstore::Result<()> {
/// let mut marker: Option<String> = None;
/// loop {
///     let page = file.list_handles(marker.as_deref()).await?;
///     println!("{} handles", page.handles.len());
///     marker = page.next_marker;
///     if marker.is_none() {
///         break;
///     }
/// }
/// # Ok(()) }
/// ```
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct HandlePage {
    /// The handles.
    pub handles: Vec<Handle>,
    /// Continue with this marker; `None` when complete.
    pub next_marker: Option<String>,
}

/// Which handles Force Close Handles closes (`x-ms-handle-id`).
///
/// ```no_run
/// # async fn demo(file: azstore::file::FileClient) -> azstore::Result<()> {
/// use azstore::file::HandleSelector;
/// for h in file.list_handles(None).await?.handles {
///     if h.path.ends_with(".lock") {
///         file.force_close_handles(&HandleSelector::Id(h.id)).await?;
///     }
/// }
/// # Ok(()) }
/// ```
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum HandleSelector {
    /// Every handle (`*`).
    All,
    /// One handle, by id.
    Id(String),
}

/// What Force Close Handles did (summed over all the calls it needed).
///
/// ```no_run
/// # async fn demo(dir: azstore::file::DirectoryClient) -> azstore::Result<()> {
/// use azstore::file::HandleSelector;
/// let closed = dir.force_close_handles(&HandleSelector::All, true).await?;
/// if closed.failed > 0 {
///     eprintln!("{} handles could not be closed", closed.failed);
/// }
/// # Ok(()) }
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
#[non_exhaustive]
pub struct ClosedHandles {
    /// Handles closed (`x-ms-number-of-handles-closed`).
    pub closed: u64,
    /// Handles that could not be closed (`x-ms-number-of-handles-failed`).
    pub failed: u64,
}

#[derive(Debug, Deserialize, Default)]
#[serde(rename_all = "PascalCase")]
struct RawHandles {
    #[serde(default)]
    handle_list: RawHandleList,
    #[serde(default)]
    next_marker: Option<String>,
}

#[derive(Debug, Deserialize, Default)]
struct RawHandleList {
    #[serde(rename = "Handle", default)]
    items: Vec<RawHandle>,
}

#[derive(Debug, Deserialize)]
#[serde(rename_all = "PascalCase")]
struct RawHandle {
    handle_id: String,
    #[serde(default)]
    path: String,
    #[serde(default)]
    session_id: String,
    #[serde(default)]
    client_ip: String,
    #[serde(default)]
    client_name: Option<String>,
    #[serde(default)]
    open_time: Option<String>,
    #[serde(default)]
    access_right_list: Option<RawAccessRights>,
}

#[derive(Debug, Deserialize, Default)]
struct RawAccessRights {
    #[serde(rename = "AccessRight", default)]
    items: Vec<String>,
}

fn parse_handles(body: &[u8]) -> Result<HandlePage> {
    let raw: RawHandles = crate::http::checks::from_xml(body, "List Handles")?;
    Ok(HandlePage {
        handles: raw
            .handle_list
            .items
            .into_iter()
            .map(|h| Handle {
                id: h.handle_id,
                path: h.path,
                session_id: h.session_id,
                client_ip: h.client_ip,
                client_name: h.client_name.filter(|n| !n.is_empty()),
                open_time: h
                    .open_time
                    .as_deref()
                    .and_then(crate::time_fmt::parse_http_date),
                access_rights: h.access_right_list.map(|a| a.items).unwrap_or_default(),
            })
            .collect(),
        next_marker: raw.next_marker.filter(|m| !m.is_empty()),
    })
}

async fn list(
    pipeline: &crate::http::Pipeline,
    req: Request,
    marker: Option<&str>,
) -> Result<HandlePage> {
    let mut req = req.query("comp", "listhandles");
    if let Some(m) = marker {
        req = req.query("marker", m);
    }
    let resp = pipeline.send(req).await?;
    parse_handles(&resp.body)
}

/// Sends Force Close Handles until the service reports no marker (it closes in batches).
async fn force_close(
    pipeline: &crate::http::Pipeline,
    make: impl Fn() -> Request,
    which: &HandleSelector,
) -> Result<ClosedHandles> {
    let id = match which {
        HandleSelector::All => "*".to_string(),
        HandleSelector::Id(id) => {
            if id.is_empty() || id == "*" || id.contains(|c: char| c.is_control()) {
                return Err(Error::invalid_input(
                    "a handle id must be the id from List Handles (use HandleSelector::All for all)",
                ));
            }
            id.clone()
        }
    };
    let mut total = ClosedHandles::default();
    let mut marker: Option<String> = None;
    for _ in 0..10_000 {
        let mut req = make()
            .query("comp", "forceclosehandles")
            .header("x-ms-handle-id", id.clone());
        if let Some(m) = &marker {
            req = req.query("marker", m.clone());
        }
        let resp = pipeline.send(req).await?;
        total.closed += resp
            .headers
            .parse::<u64>("x-ms-number-of-handles-closed")?
            .ok_or_else(|| {
                Error::decode("Force Close Handles response lacks x-ms-number-of-handles-closed")
            })?;
        total.failed += resp
            .headers
            .parse::<u64>("x-ms-number-of-handles-failed")?
            .unwrap_or(0);
        marker = resp
            .headers
            .get("x-ms-marker")
            .filter(|m| !m.is_empty())
            .map(str::to_string);
        if marker.is_none() {
            return Ok(total);
        }
    }
    Err(Error::decode(
        "Force Close Handles kept answering with a marker",
    ))
}

impl FileClient {
    /// List Handles: the SMB handles open on this file, one page from `marker`.
    ///
    /// ```no_run
    /// # async fn demo(file: azstore::file::FileClient) -> azstore::Result<()> {
    /// let page = file.list_handles(None).await?;
    /// for h in &page.handles {
    ///     println!("{} open on {}", h.id, h.path);
    /// }
    /// # Ok(()) }
    /// ```
    pub async fn list_handles(&self, marker: Option<&str>) -> Result<HandlePage> {
        list(&self.pipeline, self.request(Method::Get), marker).await
    }

    /// Force Close Handles: closes the selected SMB handles on this file (the SMB client
    /// loses them; unsaved data in it may be lost). Follows the service's marker until done.
    ///
    /// ```no_run
    /// # async fn demo(file: azstore::file::FileClient) -> azstore::Result<()> {
    /// use azstore::file::HandleSelector;
    /// let closed = file.force_close_handles(&HandleSelector::All).await?;
    /// println!("{} closed, {} failed", closed.closed, closed.failed);
    /// # Ok(()) }
    /// ```
    pub async fn force_close_handles(&self, which: &HandleSelector) -> Result<ClosedHandles> {
        force_close(&self.pipeline, || self.request(Method::Put), which).await
    }
}

impl DirectoryClient {
    /// List Handles on this directory (with `recursive`, also on everything below it).
    ///
    /// ```no_run
    /// # async fn demo(dir: azstore::file::DirectoryClient) -> azstore::Result<()> {
    /// let page = dir.list_handles(true, None).await?;
    /// println!("{} handles open below {}", page.handles.len(), dir.path());
    /// # Ok(()) }
    /// ```
    pub async fn list_handles(&self, recursive: bool, marker: Option<&str>) -> Result<HandlePage> {
        list(
            &self.pipeline,
            self.handles_request(Method::Get, recursive),
            marker,
        )
        .await
    }

    /// `<share>/<dir>?comp=...` with no `restype` (as the REST reference defines both handle
    /// calls), `x-ms-recursive: true` only when asked (false is the service's default).
    fn handles_request(&self, method: Method, recursive: bool) -> Request {
        let req = self.path_request(method);
        if recursive {
            req.header("x-ms-recursive", "true")
        } else {
            req
        }
    }

    /// Force Close Handles on this directory (with `recursive`, also below it).
    ///
    /// ```no_run
    /// # async fn demo(dir: azstore::file::DirectoryClient) -> azstore::Result<()> {
    /// use azstore::file::HandleSelector;
    /// // Before a maintenance window: disconnect every SMB client below this directory.
    /// let closed = dir.force_close_handles(&HandleSelector::All, true).await?;
    /// println!("{} closed", closed.closed);
    /// # Ok(()) }
    /// ```
    pub async fn force_close_handles(
        &self,
        which: &HandleSelector,
        recursive: bool,
    ) -> Result<ClosedHandles> {
        force_close(
            &self.pipeline,
            || self.handles_request(Method::Put, recursive),
            which,
        )
        .await
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn handle_list_as_azure_sends_it() {
        let body = "\u{feff}<?xml version=\"1.0\" encoding=\"utf-8\"?><EnumerationResults><HandleList><Handle><HandleId>83886193280</HandleId><Path>dir/a.txt</Path><FileId>11529285414812647424</FileId><ParentId>0</ParentId><SessionId>9223371991856271229</SessionId><ClientIp>10.0.0.4:49730</ClientIp><ClientName>VM1</ClientName><OpenTime>Mon, 23 Nov 2026 10:00:00 GMT</OpenTime><LastReconnectTime /><AccessRightList><AccessRight>Read</AccessRight><AccessRight>Write</AccessRight></AccessRightList></Handle></HandleList><NextMarker /></EnumerationResults>";
        let p = parse_handles(body.as_bytes()).unwrap();
        assert_eq!(p.handles.len(), 1);
        let h = &p.handles[0];
        assert_eq!(h.id, "83886193280");
        assert_eq!(h.path, "dir/a.txt");
        assert_eq!(h.client_name.as_deref(), Some("VM1"));
        assert_eq!(h.access_rights, ["Read", "Write"]);
        assert!(h.open_time.is_some());
        assert_eq!(p.next_marker, None);
        assert!(parse_handles(b"<EnumerationResults><HandleList><Handle>").is_err());
    }
}
