//! Regression tests built from histories the campaigns kept.
//!
//! The campaigns found that `update()` applied a write twice and reported success when the
//! write's response was lost and more than `WRITE_ID_HISTORY - 1` (15) other writes landed
//! before its re-read: the re-read no longer listed the write id (the stored history keeps 16),
//! and `update()` took the write as not applied and ran the closure again on a value that
//! already held its change. Found by the blob-register campaign (seed 20261126: increment
//! 5242880017 is entries 103 and 133 of the final value; its writer was SIGSTOPped 1.5 s after
//! a lost response while 30 increments landed) and the table-register campaign (seed
//! 20261135, no pause: the write's response headers stalled past the 1.5 s per-attempt
//! timeout while 70 increments landed). Both histories are in `kept/`. Fixed: `update()` now
//! stops with `RequestSent::Maybe` when the stored history cannot tell.

// The live reproduction of this bug (15 and 20 writes on top of a lost response) is
// azstore's `tests/it/update_buried.rs`; here the kept histories are re-checked.

/// The kept histories (recorded before the fix) still show the anomaly to the checker (and
/// only that): the blob one (writer paused 1.5 s after the lost response), and a table one where no pause was needed
/// (the write applied, its response headers stalled past the client's 1.5 s per-attempt
/// timeout while 70 increments landed: entries 31 and 102 of the final value).
#[test]
fn the_kept_histories_of_the_double_apply_are_still_anomalies() {
    for (model, file, uid) in [
        (
            "blob-register",
            "blob-register-correct-seed20261126.jsonl",
            5242880017u64,
        ),
        (
            "table-register",
            "table-register-correct-seed20261135.jsonl",
            5242880016,
        ),
    ] {
        let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("kept")
            .join(file);
        let model = histories::model::Model::parse(model).unwrap();
        let v = histories::check::check_file(model, &path).unwrap();
        assert!(v.operations >= 200, "{}", v.operations);
        assert_eq!(
            v.anomalies,
            vec![format!("increment {uid} applied twice")],
            "{file}: {:?}",
            v.anomalies
        );
    }
}
