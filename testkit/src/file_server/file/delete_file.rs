//! Delete File.

use super::*;

pub(super) fn apply(share: &mut Share, path: &str, req: &HttpRequest) -> Reply {
    if let Err(r) = writable_file(&mut share.files, path, req) {
        return r;
    }
    share.files.remove(path);
    Reply::new(202)
}
