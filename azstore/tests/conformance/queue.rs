//! Queue service: recorded requests -> `QueueServiceClient` / `QueueClient`.

use std::time::Duration;

use azstore::queue::QueueClient;
use azstore::queue::{MessageEncoding, MessageId, PopReceipt, PutMessageOptions, TimeToLive};
use testkit::replay::{Interaction, RecordedResponse};

use crate::compare::{
    check_listed_metadata, check_next_marker, eq_date, eq_header, outcome, xml_texts,
};
use crate::cx::{Cx, Plan, one};
use crate::req::Req;

fn queue(cx: &Cx, name: &str, encoding: MessageEncoding) -> Result<QueueClient, String> {
    Ok(cx
        .queue
        .queue(name)
        .map_err(|e| e.to_string())?
        .with_encoding(encoding))
}

fn secs(v: &str) -> Result<Duration, String> {
    v.parse::<u64>()
        .map(Duration::from_secs)
        .map_err(|_| format!("seconds {v:?}"))
}

/// The `<MessageText>` of a Put/Update Message body, and the encoding that produces it
/// from bytes azstore is given.
fn message_text(body: &[u8]) -> Result<String, String> {
    xml_texts(body, &["QueueMessage", "MessageText"])
        .into_iter()
        .next()
        .ok_or_else(|| "message body without <MessageText>".to_string())
}

fn check_messages(
    got: Vec<(String, Option<String>, u32, String)>,
    resp: &RecordedResponse,
) -> Result<(), String> {
    let ids = xml_texts(&resp.body, &["QueueMessage", "MessageId"]);
    let receipts = xml_texts(&resp.body, &["QueueMessage", "PopReceipt"]);
    let counts = xml_texts(&resp.body, &["QueueMessage", "DequeueCount"]);
    let texts = xml_texts(&resp.body, &["QueueMessage", "MessageText"]);
    if got.len() != ids.len() {
        return Err(format!("{} messages != recorded {}", got.len(), ids.len()));
    }
    for (k, (id, receipt, count, text)) in got.into_iter().enumerate() {
        if id != ids[k] {
            return Err(format!("message id {id} != recorded {}", ids[k]));
        }
        if let Some(r) = receipt {
            if receipts.get(k) != Some(&r) {
                return Err(format!("pop receipt {r} != recorded {:?}", receipts.get(k)));
            }
        }
        if counts.get(k).map(|c| c.parse::<u32>().ok()) != Some(Some(count)) {
            return Err(format!(
                "dequeue count {count} != recorded {:?}",
                counts.get(k)
            ));
        }
        if texts.get(k) != Some(&text) {
            return Err(format!("text {text:?} != recorded {:?}", texts.get(k)));
        }
    }
    Ok(())
}

pub fn plan(its: &[Interaction], i: usize) -> Result<Plan, String> {
    let it = &its[i];
    let req = Req::new(it);
    req.only(&[])?;
    let segs = req.segs.clone();
    match (req.method, segs.len(), req.comp()) {
        ("GET", 0, "list") => {
            for k in req.q.keys() {
                if !["comp", "prefix", "marker", "maxresults", "include"].contains(&k.as_str()) {
                    return Err(format!("List Queues parameter {k}"));
                }
            }
            let prefix = req.query("prefix").map(str::to_string);
            let marker = req.query("marker").map(str::to_string);
            let max: Option<u32> = match req.query("maxresults") {
                Some(v) => Some(v.parse().map_err(|_| "maxresults")?),
                None => None,
            };
            Ok(one(move |cx, it| async move {
                let got = cx
                    .queue
                    .list_queues_page(prefix.as_deref(), marker.as_deref(), max)
                    .await;
                let resp = &it.response;
                if let Some(page) = outcome(got, resp)? {
                    let names: Vec<String> = page.items.iter().map(|q| q.name.clone()).collect();
                    let want = xml_texts(&resp.body, &["Queues", "Queue", "Name"]);
                    if names != want {
                        return Err(format!("names {names:?} != recorded {want:?}"));
                    }
                    check_listed_metadata(page.items.iter().map(|q| &q.metadata), resp, "Queue")?;
                    check_next_marker(page.next_marker.as_deref(), resp)?;
                }
                Ok(())
            }))
        }
        ("PUT", 1, "") => {
            let (name, meta) = (segs[0].clone(), req.metadata());
            Ok(one(move |cx, it| async move {
                let got = queue(&cx, &name, MessageEncoding::Raw)?.create(&meta).await;
                let resp = &it.response;
                if let Some(created) = outcome(got, resp)? {
                    if created != (resp.status == 201) {
                        return Err(format!("created = {created}, recorded {}", resp.status));
                    }
                }
                Ok(())
            }))
        }
        ("DELETE", 1, "") => {
            let name = segs[0].clone();
            Ok(one(move |cx, it| async move {
                outcome(
                    queue(&cx, &name, MessageEncoding::Raw)?.delete().await,
                    &it.response,
                )?;
                Ok(())
            }))
        }
        ("GET" | "HEAD", 1, "metadata") => {
            let name = segs[0].clone();
            Ok(one(move |cx, it| async move {
                let got = queue(&cx, &name, MessageEncoding::Raw)?
                    .get_properties()
                    .await;
                let resp = &it.response;
                if let Some(p) = outcome(got, resp)? {
                    crate::blob::check_metadata(&p.metadata, resp)?;
                    eq_header(
                        "approximate count",
                        Some(p.approximate_message_count.to_string()),
                        resp,
                        "x-ms-approximate-messages-count",
                    )?;
                }
                Ok(())
            }))
        }
        ("PUT", 1, "metadata") => {
            let (name, meta) = (segs[0].clone(), req.metadata());
            Ok(one(move |cx, it| async move {
                let got = queue(&cx, &name, MessageEncoding::Raw)?
                    .set_metadata(&meta)
                    .await;
                outcome(got, &it.response)?;
                Ok(())
            }))
        }
        ("GET", 1, "acl") => {
            let name = segs[0].clone();
            Ok(one(move |cx, it| async move {
                let got = queue(&cx, &name, MessageEncoding::Raw)?
                    .get_access_policy()
                    .await;
                let resp = &it.response;
                if let Some(ids) = outcome(got, resp)? {
                    let got: Vec<String> = ids.iter().map(|s| s.id.clone()).collect();
                    let want = xml_texts(&resp.body, &["SignedIdentifier", "Id"]);
                    if got != want {
                        return Err(format!("identifiers {got:?} != recorded {want:?}"));
                    }
                }
                Ok(())
            }))
        }
        ("PUT", 1, "acl") => {
            let name = segs[0].clone();
            let ids = crate::acl::identifiers(&req.body())?;
            Ok(one(move |cx, it| async move {
                let got = queue(&cx, &name, MessageEncoding::Raw)?
                    .set_access_policy(&ids)
                    .await;
                outcome(got, &it.response)?;
                Ok(())
            }))
        }
        ("POST", 2, "") if segs[1] == "messages" => {
            let name = segs[0].clone();
            let text = message_text(&req.body())?;
            let mut options = PutMessageOptions::default();
            for (k, v) in &req.q {
                match k.as_str() {
                    "messagettl" if v == "-1" => options.time_to_live = Some(TimeToLive::Never),
                    "messagettl" => options.time_to_live = Some(TimeToLive::After(secs(v)?)),
                    "visibilitytimeout" => options.visibility_delay = Some(secs(v)?),
                    other => return Err(format!("Put Message parameter {other}")),
                }
            }
            Ok(one(move |cx, it| async move {
                // The recorded text is sent as is (raw encoding).
                let got = queue(&cx, &name, MessageEncoding::Raw)?
                    .put_message_with(text.as_bytes(), &options)
                    .await;
                let resp = &it.response;
                if let Some(m) = outcome(got, resp)? {
                    let ids = xml_texts(&resp.body, &["QueueMessage", "MessageId"]);
                    let receipts = xml_texts(&resp.body, &["QueueMessage", "PopReceipt"]);
                    if ids.first() != Some(&m.id.as_str().to_string())
                        || receipts.first() != Some(&m.pop_receipt.as_str().to_string())
                    {
                        return Err(format!(
                            "sent message {m:?} != recorded {ids:?} {receipts:?}"
                        ));
                    }
                }
                Ok(())
            }))
        }
        ("GET", 2, "") if segs[1] == "messages" => {
            let name = segs[0].clone();
            let count: u8 = match req.query("numofmessages") {
                Some(v) => v.parse().map_err(|_| "numofmessages")?,
                None => 1,
            };
            for k in req.q.keys() {
                if !["numofmessages", "visibilitytimeout", "peekonly"].contains(&k.as_str()) {
                    return Err(format!("Get Messages parameter {k}"));
                }
            }
            if req.query("peekonly") == Some("true") {
                return Ok(one(move |cx, it| async move {
                    let got = queue(&cx, &name, MessageEncoding::Raw)?
                        .peek_messages(count)
                        .await;
                    if let Some(ms) = outcome(got, &it.response)? {
                        check_messages(
                            ms.into_iter()
                                .map(|m| (m.id.as_str().to_string(), None, m.dequeue_count, m.text))
                                .collect(),
                            &it.response,
                        )?;
                    }
                    Ok(())
                }));
            }
            let vis = secs(req.query("visibilitytimeout").unwrap_or("30"))?;
            Ok(one(move |cx, it| async move {
                let got = queue(&cx, &name, MessageEncoding::Raw)?
                    .receive_messages(count, vis)
                    .await;
                if let Some(ms) = outcome(got, &it.response)? {
                    check_messages(
                        ms.into_iter()
                            .map(|m| {
                                (
                                    m.id.as_str().to_string(),
                                    Some(m.pop_receipt().as_str().to_string()),
                                    m.dequeue_count,
                                    m.text.clone(),
                                )
                            })
                            .collect(),
                        &it.response,
                    )?;
                }
                Ok(())
            }))
        }
        ("DELETE", 2, "") if segs[1] == "messages" => {
            let name = segs[0].clone();
            Ok(one(move |cx, it| async move {
                outcome(
                    queue(&cx, &name, MessageEncoding::Raw)?
                        .clear_messages()
                        .await,
                    &it.response,
                )?;
                Ok(())
            }))
        }
        ("PUT", 3, "") if segs[1] == "messages" => {
            let (name, id) = (segs[0].clone(), MessageId::new(segs[2].clone()));
            let receipt = PopReceipt::new(req.query("popreceipt").ok_or("no popreceipt")?);
            let vis = secs(
                req.query("visibilitytimeout")
                    .ok_or("no visibilitytimeout")?,
            )?;
            let body = req.body();
            let text = if body.is_empty() {
                None
            } else {
                Some(message_text(&body)?)
            };
            Ok(one(move |cx, it| async move {
                let got = queue(&cx, &name, MessageEncoding::Raw)?
                    .update_message_with_receipt(
                        &id,
                        &receipt,
                        vis,
                        text.as_deref().map(str::as_bytes),
                    )
                    .await;
                let resp = &it.response;
                if let Some(r) = outcome(got, resp)? {
                    eq_header(
                        "pop receipt",
                        Some(r.pop_receipt.as_str().to_string()),
                        resp,
                        "x-ms-popreceipt",
                    )?;
                    eq_date(
                        "next visible",
                        r.next_visible_on,
                        resp,
                        "x-ms-time-next-visible",
                    )?;
                }
                Ok(())
            }))
        }
        ("DELETE", 3, "") if segs[1] == "messages" => {
            let (name, id) = (segs[0].clone(), MessageId::new(segs[2].clone()));
            let receipt = PopReceipt::new(req.query("popreceipt").ok_or("no popreceipt")?);
            Ok(one(move |cx, it| async move {
                let got = queue(&cx, &name, MessageEncoding::Raw)?
                    .delete_message_with_receipt(&id, &receipt)
                    .await;
                outcome(got, &it.response)?;
                Ok(())
            }))
        }
        (m, n, c) => Err(format!("queue operation {m} depth {n} comp={c}")),
    }
}
