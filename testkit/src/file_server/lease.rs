//! Lease File and Lease Share: one state machine (files: infinite only, no renew).

use super::*;

/// Lease File / Lease Share (same state machine; files are infinite-only without renew).
pub(super) fn lease_op(lease: &mut Lease, req: &HttpRequest, is_file: bool) -> Reply {
    lease.tick();
    let action = req
        .header("x-ms-lease-action")
        .unwrap_or("")
        .to_ascii_lowercase();
    let sent = req.header("x-ms-lease-id").map(str::to_ascii_lowercase);
    let proposed = req
        .header("x-ms-proposed-lease-id")
        .map(str::to_ascii_lowercase);
    let what = if is_file { "file" } else { "share" };
    let valid_guid = |s: &Option<String>| {
        s.as_deref()
            .is_none_or(|s| uuid::Uuid::parse_str(s).is_ok())
    };
    if !valid_guid(&sent) || !valid_guid(&proposed) {
        return Reply::error(
            400,
            "InvalidHeaderValue",
            "The value for one of the HTTP headers is not in the correct format.",
        );
    }
    let mismatch = || {
        Reply::error(
            409,
            "LeaseIdMismatchWithLeaseOperation",
            &format!("The lease ID specified did not match the lease ID for the {what}."),
        )
    };
    let not_present = || {
        Reply::error(
            409,
            "LeaseNotPresentWithLeaseOperation",
            &format!("There is currently no lease on the {what}."),
        )
    };
    match action.as_str() {
        "acquire" => {
            let duration = req.header("x-ms-lease-duration").unwrap_or("");
            let span = match duration.parse::<i64>() {
                Ok(-1) => None,
                Ok(s) if !is_file && (15..=60).contains(&s) => Some(Duration::from_secs(s as u64)),
                _ => {
                    return Reply::error(
                        400,
                        "InvalidHeaderValue",
                        if is_file {
                            "The value for x-ms-lease-duration must be -1 (infinite) for a file lease."
                        } else {
                            "The value for x-ms-lease-duration must be -1 or 15-60."
                        },
                    );
                }
            };
            let id = proposed.unwrap_or_else(|| uuid::Uuid::new_v4().to_string());
            match lease.clone() {
                Lease::Leased { id: cur, .. } if cur != id => {
                    return Reply::error(
                        409,
                        "LeaseAlreadyPresent",
                        "There is already a lease present.",
                    );
                }
                Lease::Breaking { .. } => {
                    return Reply::error(
                        409,
                        "LeaseIsBreakingAndCannotBeAcquired",
                        "There is already a breaking lease present.",
                    );
                }
                _ => {}
            }
            *lease = Lease::Leased {
                id: id.clone(),
                span,
                expires: span.map(|d| Instant::now() + d),
            };
            Reply::new(201).h("x-ms-lease-id", id)
        }
        "renew" if !is_file => {
            let Some(s) = sent else {
                return Reply::error(400, "MissingRequiredHeader", "x-ms-lease-id is required.");
            };
            match lease.clone() {
                Lease::Leased { id, span, .. } if id == s => {
                    *lease = Lease::Leased {
                        id: id.clone(),
                        span,
                        expires: span.map(|d| Instant::now() + d),
                    };
                    Reply::new(200).h("x-ms-lease-id", id)
                }
                // Azure lets the last holder renew an expired lease if nobody acquired it
                // since; the test server forgets the id at expiry and refuses.
                Lease::Expired => not_present(),
                Lease::Breaking { .. } | Lease::Broken => Reply::error(
                    409,
                    "LeaseIsBrokenAndCannotBeRenewed",
                    "The lease ID matched, but the lease has been broken explicitly and cannot be renewed.",
                ),
                Lease::Leased { .. } => mismatch(),
                Lease::Available => not_present(),
            }
        }
        "change" => {
            let (Some(s), Some(p)) = (sent, proposed) else {
                return Reply::error(
                    400,
                    "MissingRequiredHeader",
                    "x-ms-lease-id and x-ms-proposed-lease-id are required.",
                );
            };
            match lease.clone() {
                Lease::Leased { id, span, expires } if id == s || id == p => {
                    *lease = Lease::Leased {
                        id: p.clone(),
                        span,
                        expires,
                    };
                    Reply::new(200).h("x-ms-lease-id", p)
                }
                Lease::Leased { .. } => mismatch(),
                Lease::Breaking { .. } => Reply::error(
                    409,
                    "LeaseIsBreakingAndCannotBeChanged",
                    "The lease ID matched, but the lease is currently in breaking state and cannot be changed.",
                ),
                _ => not_present(),
            }
        }
        "release" => {
            let Some(s) = sent else {
                return Reply::error(400, "MissingRequiredHeader", "x-ms-lease-id is required.");
            };
            match lease.clone() {
                Lease::Leased { id, .. } | Lease::Breaking { id, .. } if id == s => {
                    *lease = Lease::Available;
                    Reply::new(200)
                }
                Lease::Leased { .. } | Lease::Breaking { .. } => mismatch(),
                _ => not_present(),
            }
        }
        "break" => {
            let period = if is_file {
                0
            } else {
                match req.header("x-ms-lease-break-period") {
                    None => u64::MAX,
                    Some(p) => match p.parse::<u64>() {
                        Ok(p) if p <= 60 => p,
                        _ => {
                            return Reply::error(
                                400,
                                "InvalidHeaderValue",
                                "x-ms-lease-break-period must be 0-60.",
                            );
                        }
                    },
                }
            };
            match lease.clone() {
                Lease::Leased { id, expires, .. } => {
                    // Infinite leases break at once unless a period is given; fixed ones
                    // after min(period, remaining).
                    let remaining = expires
                        .map(|t| t.saturating_duration_since(Instant::now()).as_secs())
                        .unwrap_or(0);
                    let secs = match (expires, period) {
                        (None, u64::MAX) => 0,
                        (None, p) => p,
                        (Some(_), u64::MAX) => remaining,
                        (Some(_), p) => p.min(remaining),
                    };
                    if secs == 0 {
                        *lease = Lease::Broken;
                    } else {
                        *lease = Lease::Breaking {
                            id,
                            until: Instant::now() + Duration::from_secs(secs),
                        };
                    }
                    Reply::new(202).h("x-ms-lease-time", secs.to_string())
                }
                Lease::Breaking { until, .. } => Reply::new(202).h(
                    "x-ms-lease-time",
                    until
                        .saturating_duration_since(Instant::now())
                        .as_secs()
                        .to_string(),
                ),
                Lease::Broken => Reply::new(202).h("x-ms-lease-time", "0"),
                _ => not_present(),
            }
        }
        _ => Reply::error(
            400,
            "InvalidHeaderValue",
            "x-ms-lease-action is missing or not supported here.",
        ),
    }
}
