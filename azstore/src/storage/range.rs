//! The ranged read of the Storage services: a download's first request (`x-ms-range`, and
//! the whole object when it is empty).

use crate::error::Result;
use crate::http::{Pipeline, Request, StreamingResponse, range_header};
use crate::transfer::download::{FirstProps, Version};

/// The first request of a download: `get()` with `x-ms-range: 0..len`, or `get()` alone when
/// the object is empty (a range of it is answered with 416). The properties, the ETag and the
/// size are read from the response's headers.
pub(crate) async fn open_first<P: FirstProps>(
    pipeline: &Pipeline,
    get: impl Fn() -> Request,
    len: u64,
) -> Result<(P, Version, StreamingResponse)> {
    let ranged = get().header("x-ms-range", range_header(&(0..len)));
    let resp = match pipeline.send_streaming(ranged).await {
        // 416 (`InvalidRange`): the object is empty, so no byte range exists; read it whole.
        Err(e) if e.status() == Some(416) => pipeline.send_streaming(get()).await,
        r => r,
    }?;
    let props = P::parse(&resp.headers)?;
    let version = props.version();
    Ok((props, version, resp))
}
