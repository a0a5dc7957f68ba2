//! Set Share Metadata: replaces all of a share's metadata.

use super::*;

pub(super) fn apply(st: &mut State, name: &str, req: &HttpRequest) -> Result<Reply, Reply> {
    let (share, etag, now) = st.write_in(name)?;
    share.meta = req.meta();
    Ok(share.written(200, etag, now))
}
