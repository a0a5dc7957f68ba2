//! The crate's internal macros: the two shapes every service client repeats (the
//! constructors of a service client, the accessors of a named client), written once. Each
//! generated method carries its own documentation, so rustdoc lists it like any other. A
//! builder setter is written out in its options type, where grep finds it, except the groups
//! several blob writes share, written once in `blob/write_options.rs` (`write_builders!`,
//! `checksum_builder!`, `existing_scope_builder!`) and named beside each options type.

/// `new`, `with_options` and `pipeline` of a service client (a struct with a `pipeline` field
/// and, after `;`, any other fields with their initial values), and the client of one named
/// child resource (`container`, `share`, `table`), validated before anything is sent.
macro_rules! service_client {
    (
        $ty:ident, $service:ident $(; $($field:ident: $init:expr),*)?
        $(=> $(#[$cd:meta])* $child:ident: $child_ty:ident, $validate:path)?
    ) => {
        impl $ty {
            /// A client with default options.
            ///
            /// ```no_run
            /// # use azstore::{blob::*, file::*, queue::*, table::*};
            /// # fn demo() -> azstore::Result<()> {
            /// let account = azstore::StorageAccount::from_env()?; // AZURE_STORAGE_CONNECTION_STRING
            #[doc = concat!("let service = ", stringify!($ty), "::new(&account)?;")]
            /// # let _ = service; Ok(()) }
            /// ```
            pub fn new(account: &$crate::StorageAccount) -> $crate::Result<$ty> {
                $ty::with_options(account, $crate::http::ClientOptions::default())
            }

            /// A client with custom retry and timeout options. Fails with `InvalidInput` when
            /// the account has no endpoint for this service.
            ///
            /// ```no_run
            /// # use azstore::{blob::*, file::*, queue::*, table::*};
            /// # fn demo(account: azstore::StorageAccount) -> azstore::Result<()> {
            /// use std::time::Duration;
            /// use azstore::http::ClientOptions;
            /// let options = ClientOptions::default().total_timeout(Duration::from_secs(10));
            #[doc = concat!("let service = ", stringify!($ty), "::with_options(&account, options)?;")]
            /// # let _ = service; Ok(()) }
            /// ```
            pub fn with_options(
                account: &$crate::StorageAccount,
                options: $crate::http::ClientOptions,
            ) -> $crate::Result<$ty> {
                Ok($ty {
                    pipeline: $crate::http::Pipeline::new(
                        account,
                        $crate::Service::$service,
                        options,
                    )?,
                    $($($field: $init),*)?
                })
            }

            /// The underlying pipeline (for operations azstore does not wrap).
            ///
            /// ```no_run
            /// # use azstore::{blob::*, file::*, queue::*, table::*};
            #[doc = concat!("# async fn demo(service: ", stringify!($ty), ") -> azstore::Result<()> {")]
            /// use azstore::http::{Method, Request};
            /// // Get Service Properties, sent as azstore sends its own requests.
            /// let req = Request::new(Method::Get, "").query("restype", "service").query("comp", "properties");
            /// let resp = service.pipeline().send(req).await?;
            /// println!("{} bytes of XML", resp.body.len());
            /// # Ok(()) }
            /// ```
            pub fn pipeline(&self) -> &$crate::http::Pipeline {
                &self.pipeline
            }

            $(
                $(#[$cd])*
                pub fn $child(&self, name: &str) -> $crate::Result<$child_ty> {
                    $validate(name)?;
                    Ok($child_ty {
                        pipeline: self.pipeline.clone(),
                        name: name.into(),
                    })
                }
            )?
        }
    };
}

/// `name`, `pipeline` and `url` of a client of one named resource (a struct with `pipeline`
/// and `name: Arc<str>` fields): a container, share, queue or table.
macro_rules! named_client {
    ($ty:ident, $what:literal) => {
        impl $ty {
            #[doc = concat!("The ", $what, " name.")]
            ///
            /// ```no_run
            /// # use azstore::{blob::*, file::*, queue::*, table::*};
            #[doc = concat!("# fn demo(client: ", stringify!($ty), ") {")]
            /// println!("working on {}", client.name());
            /// # }
            /// ```
            pub fn name(&self) -> &str {
                &self.name
            }

            /// The underlying pipeline (for operations azstore does not wrap), shared with the
            /// service client this one came from.
            ///
            /// ```no_run
            /// # use azstore::{blob::*, file::*, queue::*, table::*};
            #[doc = concat!("# fn demo(client: ", stringify!($ty), ") {")]
            /// println!("{:?}", client.pipeline());
            /// # }
            /// ```
            pub fn pipeline(&self) -> &$crate::http::Pipeline {
                &self.pipeline
            }

            #[doc = concat!("The ", $what, " URL (without credentials).")]
            ///
            /// ```no_run
            /// # use azstore::{blob::*, file::*, queue::*, table::*};
            #[doc = concat!("# fn demo(client: ", stringify!($ty), ") {")]
            /// println!("{}", client.url()); // safe to log: no key, no SAS
            /// # }
            /// ```
            pub fn url(&self) -> String {
                self.pipeline.url_of(&self.name)
            }
        }
    };
}
