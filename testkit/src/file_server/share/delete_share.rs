//! Delete Share: refused while leased by another id; with a configured delete delay the
//! name stays taken (409 `ShareBeingDeleted`) for that long, as on Azure.

use super::*;

pub(super) fn apply(st: &mut State, name: &str, req: &HttpRequest) -> Result<Reply, Reply> {
    let share = existing(st, name)?;
    share.lease.tick();
    share
        .lease
        .check_write(req.header("x-ms-lease-id"), "share")?;
    st.shares.remove(name);
    if !st.delete_delay.is_zero() {
        let until = Instant::now() + st.delete_delay;
        st.deleting.insert(name.to_string(), until);
    }
    Ok(Reply::new(202))
}
