//! The Queue service client: queue clients and List Queues.

use std::collections::BTreeMap;

use crate::error::{Error, Result};
use crate::http::{Method, Pipeline, Request};
use crate::paging::{Page, ResultStream, every_page};
use crate::queue::client::QueueClient;
use crate::queue::message::MessageEncoding;
use crate::queue::xml;

/// The Queue service of one account. Cheap to clone.
///
/// ```no_run
/// # async fn demo(account: azstore::StorageAccount) -> azstore::Result<()> {
/// use azstore::queue::QueueServiceClient;
/// let queues = QueueServiceClient::new(&account)?;
/// let orders = queues.queue("orders")?;
/// let audit = queues.queue("audit")?; // shares the connection pool with `orders`
/// # let _ = (orders, audit); Ok(()) }
/// ```
#[derive(Debug, Clone)]
pub struct QueueServiceClient {
    pipeline: Pipeline,
    encoding: MessageEncoding,
}

service_client!(QueueServiceClient, Queue; encoding: MessageEncoding::default());

impl QueueServiceClient {
    /// The message encoding given to the queue clients made from this one
    /// (default [`MessageEncoding::Raw`], like the official v12 SDKs).
    ///
    /// ```
    /// # fn main() -> azstore::Result<()> {
    /// use azstore::queue::{MessageEncoding, QueueServiceClient};
    /// let queues = QueueServiceClient::new(&azstore::StorageAccount::development())?
    ///     .with_encoding(MessageEncoding::Base64);
    /// assert_eq!(queues.queue("functions-trigger")?.encoding(), MessageEncoding::Base64);
    /// # Ok(()) }
    /// ```
    pub fn with_encoding(mut self, v: MessageEncoding) -> Self {
        self.encoding = v;
        self
    }

    /// A client for the queue `name` (validated, no request sent).
    ///
    /// ```
    /// # fn main() -> azstore::Result<()> {
    /// # let service = azstore::queue::QueueServiceClient::new(&azstore::StorageAccount::development())?;
    /// let jobs = service.queue("jobs")?;
    /// assert!(service.queue("Jobs").is_err()); // queue names are lower case
    /// # let _ = jobs;
    /// # Ok(()) }
    /// ```
    pub fn queue(&self, name: &str) -> Result<QueueClient> {
        QueueClient::on(&self.pipeline, name, self.encoding)
    }

    /// One page of List Queues. `marker` is the previous page's
    /// [`next_marker`](Page::next_marker); `max_results` is 1–5000 (the service default is
    /// 5000). Metadata is included.
    ///
    /// ```no_run
    /// # async fn demo(queues: azstore::queue::QueueServiceClient) -> azstore::Result<()> {
    /// let page = queues.list_queues_page(Some("orders-"), None, Some(100)).await?;
    /// for q in &page.items {
    ///     println!("{} {:?}", q.name, q.metadata);
    /// }
    /// # Ok(()) }
    /// ```
    pub async fn list_queues_page(
        &self,
        prefix: Option<&str>,
        marker: Option<&str>,
        max_results: Option<u32>,
    ) -> Result<Page<QueueItem>> {
        let mut req = Request::new(Method::Get, "")
            .query("comp", "list")
            .query("include", "metadata");
        if let Some(p) = prefix {
            req = req.query("prefix", p);
        }
        if let Some(m) = marker {
            req = req.query("marker", m);
        }
        if let Some(n) = max_results {
            if !(1..=5000).contains(&n) {
                return Err(Error::invalid_input(format!(
                    "List Queues returns 1-5000 queues per page, asked for {n}"
                )));
            }
            req = req.query("maxresults", n.to_string());
        }
        let resp = self.pipeline.send(req).await?;
        parse_list(&resp.body)
    }

    /// All queues whose name starts with `prefix`, following continuation markers lazily,
    /// `page_size` at a time (`None`: the service default).
    ///
    /// ```no_run
    /// # async fn f(svc: azstore::queue::QueueServiceClient) -> azstore::Result<()> {
    /// use azstore::paging::TryStreamExt;
    /// let names: Vec<String> = svc
    ///     .list_queues(Some("orders-"), None)
    ///     .map_ok(|q| q.name)
    ///     .try_collect()
    ///     .await?;
    /// # Ok(()) }
    /// ```
    pub fn list_queues(
        &self,
        prefix: Option<&str>,
        page_size: Option<u32>,
    ) -> ResultStream<QueueItem> {
        let prefix = prefix.map(str::to_string);
        every_page(
            self,
            prefix,
            move |this, prefix, marker: Option<String>| async move {
                this.list_queues_page(prefix.as_deref(), marker.as_deref(), page_size)
                    .await
            },
        )
    }
}

/// A queue in a listing.
///
/// ```no_run
/// # async fn demo(queues: azstore::queue::QueueServiceClient) -> azstore::Result<()> {
/// use futures_util::TryStreamExt;
/// let mut all = queues.list_queues(None, None);
/// while let Some(q) = all.try_next().await? {
///     println!("{} (team {:?})", q.name, q.metadata.get("team"));
/// }
/// # Ok(()) }
/// ```
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct QueueItem {
    /// Queue name.
    pub name: String,
    /// Queue metadata.
    pub metadata: BTreeMap<String, String>,
}

fn parse_list(body: &[u8]) -> Result<Page<QueueItem>> {
    let root = xml::parse_document(body, "EnumerationResults", "List Queues")?;
    let queues = match root.child("Queues") {
        None => Vec::new(),
        Some(qs) => qs
            .children_named("Queue")
            .map(|q| {
                Ok(QueueItem {
                    name: q.require_text("Name")?.to_string(),
                    metadata: q
                        .child("Metadata")
                        .map(|m| {
                            m.children
                                .iter()
                                .map(|kv| (kv.name.clone(), kv.text.clone()))
                                .collect()
                        })
                        .unwrap_or_default(),
                })
            })
            .collect::<Result<Vec<_>>>()?,
    };
    let next_marker = root
        .child_text("NextMarker")
        .map(str::trim)
        .filter(|m| !m.is_empty())
        .map(str::to_string);
    Ok(Page::new(queues, next_marker))
}

crate::service_properties::service_properties!(
    QueueServiceClient,
    crate::service_properties::Sections {
        service: "Queue",
        logging: true,
        blob_only: false
    }
);
crate::service_properties::service_stats!(
    QueueServiceClient,
    "queue",
    "azstore::queue::QueueServiceClient"
);

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn list_page_parsing() {
        let body = br#"<?xml version="1.0" encoding="utf-8"?><EnumerationResults ServiceEndpoint="x"><Prefix>q</Prefix><MaxResults>2</MaxResults><Queues><Queue><Name>q1</Name><Metadata><a>1</a><b>two</b></Metadata></Queue><Queue><Name>q2</Name></Queue></Queues><NextMarker>/acc/q3</NextMarker></EnumerationResults>"#;
        let page = parse_list(body).unwrap();
        assert_eq!(page.items.len(), 2);
        assert_eq!(
            page.items[0].metadata.get("b").map(String::as_str),
            Some("two")
        );
        assert_eq!(page.next_marker.as_deref(), Some("/acc/q3"));
        let last =
            parse_list(b"<EnumerationResults><Queues/><NextMarker/></EnumerationResults>").unwrap();
        assert!(last.items.is_empty() && last.next_marker.is_none());
        assert!(
            parse_list(
                b"<EnumerationResults><Queues><Queue></Queue></Queues></EnumerationResults>"
            )
            .is_err()
        );
    }
}
