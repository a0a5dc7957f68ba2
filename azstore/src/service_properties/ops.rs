//! Get/Set Service Properties and Get Service Stats as requests, and the macros that give each
//! service client (invoked in the backends) its `get_service_properties`,
//! `set_service_properties` and `get_service_stats`.

use crate::error::{Error, Result};
use crate::http::{Method, Pipeline, Request};
use crate::service_properties::{ServiceProperties, ServiceStats};

pub(crate) async fn stats(pipeline: &Pipeline) -> Result<ServiceStats> {
    let req = Request::new(Method::Get, "")
        .query("restype", "service")
        .query("comp", "stats");
    let resp = pipeline.send(req).await?;
    ServiceStats::from_xml(&resp.body)
}

macro_rules! service_stats {
    ($client:ty, $host:literal, $path:literal) => {
        impl $client {
            /// Get Service Stats: the geo-replication status and last sync time of the
            /// account's secondary location, what an RA-GRS reader checks before trusting
            /// the secondary. The service answers only on the **secondary** endpoint
            #[doc = concat!("(`https://ACCOUNT-secondary.", $host, ".core.windows.net`):")]
            /// build the client from [`StorageAccount::secondary`](crate::StorageAccount::secondary).
            ///
            /// ```no_run
            /// # async fn f(account: azstore::StorageAccount) -> azstore::Result<()> {
            #[doc = concat!("let stats = ", $path, "::new(&account.secondary()?)?.get_service_stats().await?;")]
            /// println!("{:?}, synced up to {:?}", stats.status, stats.last_sync_time);
            /// # Ok(()) }
            /// ```
            pub async fn get_service_stats(
                &self,
            ) -> $crate::Result<$crate::service_properties::ServiceStats> {
                $crate::service_properties::ops::stats(self.pipeline()).await
            }
        }
    };
}
pub(crate) use service_stats;

/// Which sections a service has.
#[derive(Clone, Copy)]
pub(crate) struct Sections {
    pub(crate) service: &'static str,
    pub(crate) logging: bool,
    pub(crate) blob_only: bool,
}

pub(crate) async fn get(pipeline: &Pipeline) -> Result<ServiceProperties> {
    let req = Request::new(Method::Get, "")
        .query("restype", "service")
        .query("comp", "properties");
    let resp = pipeline.send(req).await?;
    ServiceProperties::from_xml(&resp.body)
}

pub(crate) async fn set(pipeline: &Pipeline, props: &ServiceProperties, s: Sections) -> Result<()> {
    props.validate()?;
    if !s.logging && props.logging.is_some() {
        return Err(Error::invalid_input(format!(
            "the {} service has no logging settings",
            s.service
        )));
    }
    if !s.blob_only
        && (props.default_service_version.is_some()
            || props.delete_retention_policy.is_some()
            || props.static_website.is_some())
    {
        return Err(Error::invalid_input(format!(
            "default service version, soft delete and static website are Blob service settings, \
             not {} ones",
            s.service
        )));
    }
    if s.service != "File" && props.protocol.is_some() {
        return Err(Error::invalid_input(format!(
            "protocol settings are File service settings, not {} ones",
            s.service
        )));
    }
    let req = Request::new(Method::Put, "")
        .query("restype", "service")
        .query("comp", "properties")
        .body(props.to_xml(), "application/xml");
    pipeline.send(req).await?;
    Ok(())
}

macro_rules! service_properties {
    ($client:ty, $sections:expr) => {
        impl $client {
            /// Get Service Properties: analytics logging, metrics and CORS rules (see
            /// [`ServiceProperties`](crate::service_properties::ServiceProperties)).
            ///
            /// ```no_run
            /// # use azstore::{blob::*, file::*, queue::*, table::*};
            #[doc = concat!("# async fn demo(service: ", stringify!($client), ") -> azstore::Result<()> {")]
            /// let props = service.get_service_properties().await?;
            /// println!("CORS rules: {:?}", props.cors);
            /// # Ok(()) }
            /// ```
            pub async fn get_service_properties(
                &self,
            ) -> $crate::Result<$crate::service_properties::ServiceProperties> {
                $crate::service_properties::ops::get(self.pipeline()).await
            }

            /// Set Service Properties: replaces the sections that are `Some`; the others are
            /// left unchanged. Invalid settings (retention outside 1–365 days, more than 5
            /// CORS rules, a section this service does not have) are refused before sending.
            /// The service may take up to 30 s to apply them.
            ///
            /// ```no_run
            /// # use azstore::{blob::*, file::*, queue::*, table::*};
            #[doc = concat!("# async fn demo(service: ", stringify!($client), ") -> azstore::Result<()> {")]
            /// use azstore::service_properties::ServiceProperties;
            /// // Remove every CORS rule, leave the other sections as they are.
            /// let mut props = ServiceProperties::default();
            /// props.cors = Some(vec![]);
            /// service.set_service_properties(&props).await?;
            /// # Ok(()) }
            /// ```
            pub async fn set_service_properties(
                &self,
                props: &$crate::service_properties::ServiceProperties,
            ) -> $crate::Result<()> {
                $crate::service_properties::ops::set(self.pipeline(), props, $sections).await
            }
        }
    };
}
pub(crate) use service_properties;
