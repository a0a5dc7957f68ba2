//! Where the File clients used to live; they are split by resource now (service.rs, share.rs,
//! directory.rs, file_client.rs). Kept as a path for the modules that import the
//! clients from here (lease.rs, http_headers.rs).

pub(crate) use crate::file::file_client::FileClient;
pub(crate) use crate::file::share::ShareClient;
