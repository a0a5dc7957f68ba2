//! The arithmetic of balancing a shard group: where a worker starts looking, and the fair
//! share of each member.

use std::collections::BTreeMap;
#[cfg(test)]
use std::collections::BTreeSet;

/// Where `me` starts looking among `n` candidates: a stable spread of the identity, so that
/// workers joining together try different shards (and slots) first.
pub(super) fn spread(me: &str, n: usize) -> usize {
    if n == 0 {
        return 0;
    }
    // FNV-1a: stable across processes and builds.
    let h = me.bytes().fold(0xcbf2_9ce4_8422_2325u64, |h, b| {
        (h ^ u64::from(b)).wrapping_mul(0x100_0000_01b3)
    });
    (h % n as u64) as usize
}

/// The fair shares of `n` shards over the members in `load` (member -> shards held): ⌈n/m⌉
/// for the n mod m members holding most (ties by identity), ⌊n/m⌋ for the others.
pub(super) fn shares<'a>(n: usize, load: &BTreeMap<&'a str, usize>) -> BTreeMap<&'a str, usize> {
    let m = load.len().max(1);
    let mut order: Vec<(&str, usize)> = load.iter().map(|(w, c)| (*w, *c)).collect();
    order.sort_by(|a, b| b.1.cmp(&a.1).then(a.0.cmp(b.0)));
    let (lo, extra) = (n / m, n % m);
    order
        .iter()
        .enumerate()
        .map(|(rank, (w, _))| (*w, lo + usize::from(rank < extra)))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn load<'a>(l: &[(&'a str, usize)]) -> BTreeMap<&'a str, usize> {
        l.iter().copied().collect()
    }

    /// `me`'s share and how many others hold less than theirs.
    fn shares(n: usize, l: &BTreeMap<&str, usize>, me: &str) -> (usize, usize) {
        let t = super::shares(n, l);
        let below = t.iter().filter(|(w, s)| **w != me && l[*w] < **s).count();
        (t[me], below)
    }

    #[test]
    fn spread_is_stable_and_in_range() {
        assert_eq!(spread("w1", 0), 0);
        assert_eq!(spread("w1", 1024), spread("w1", 1024));
        let starts: BTreeSet<usize> = (0..64).map(|i| spread(&format!("w{i}"), 1024)).collect();
        assert!(starts.iter().all(|s| *s < 1024));
        assert!(
            starts.len() > 48,
            "joiners start at different shards: {starts:?}"
        );
    }

    #[test]
    fn a_lone_owner_gives_way_to_seven_joiners() {
        let mut l = load(&[("a", 32)]);
        for w in ["b", "c", "d", "e", "f", "g", "h"] {
            l.insert(w, 0);
        }
        assert_eq!(shares(32, &l, "a"), (4, 7));
        assert_eq!(shares(32, &l, "b"), (4, 6));
    }

    #[test]
    fn the_extra_shards_stay_with_those_who_hold_them() {
        // 32 over 3: 11, 11, 10 is balanced and stays still.
        let l = load(&[("a", 10), ("b", 11), ("c", 11)]);
        assert_eq!(shares(32, &l, "a"), (10, 0));
        assert_eq!(shares(32, &l, "b"), (11, 0));
        assert_eq!(shares(32, &l, "c"), (11, 0));
    }

    #[test]
    fn three_at_the_ceiling_and_one_below_the_floor_is_not_stable() {
        // 10 over 4 must be 3, 3, 2, 2: the third 3 gives one to the 1.
        let l = load(&[("a", 3), ("b", 3), ("c", 3), ("d", 1)]);
        assert_eq!(shares(10, &l, "a"), (3, 1));
        assert_eq!(shares(10, &l, "c"), (2, 1));
        assert_eq!(shares(10, &l, "d"), (2, 0));
    }

    #[test]
    fn fewer_shards_than_workers() {
        let l = load(&[("a", 1), ("b", 1), ("c", 0)]);
        assert_eq!(shares(2, &l, "a"), (1, 0));
        assert_eq!(shares(2, &l, "c"), (0, 0));
    }
}
