//! Table service: recorded requests -> `TableServiceClient` / `TableClient`.

use azstore::table::{Batch, DateTime, EdmValue, Entity, Filter, Guid, Query};
use azstore::{MatchCondition, table::TableClient};
use base64::Engine;
use serde_json::{Map, Value};
use testkit::replay::{Interaction, RecordedResponse};

use crate::compare::{check_error, eq_header, outcome, part_if_match, recorded_error_code};
use crate::cx::{Cx, Plan, one};
use crate::req::Req;

fn table(cx: &Cx, name: &str) -> Result<TableClient, String> {
    cx.table.table(name).map_err(|e| e.to_string())
}

/// A recorded JSON entity with its `@odata.type` annotations as an azstore [`Entity`].
pub fn entity_from_json(obj: &Map<String, Value>) -> Result<Entity, String> {
    let pk = obj
        .get("PartitionKey")
        .and_then(Value::as_str)
        .unwrap_or_default();
    let rk = obj
        .get("RowKey")
        .and_then(Value::as_str)
        .unwrap_or_default();
    let mut e = Entity::new(pk, rk);
    for (k, v) in obj {
        if k == "PartitionKey" || k == "RowKey" || k.contains('@') || k.starts_with("odata.") {
            continue;
        }
        let ty = obj.get(&format!("{k}@odata.type")).and_then(Value::as_str);
        if k == "Timestamp" {
            let t = v.as_str().and_then(DateTime::parse);
            e.timestamp = Some(t.ok_or_else(|| format!("Timestamp {v}"))?);
            continue;
        }
        if v.is_null() {
            // A null property is no property (the service stores none).
            continue;
        }
        let value = edm_value(k, v, ty)?;
        e.set(k.clone(), value);
    }
    Ok(e)
}

fn edm_value(k: &str, v: &Value, ty: Option<&str>) -> Result<EdmValue, String> {
    let bad = || format!("property {k}: {v} as {ty:?}");
    Ok(match (ty, v) {
        (Some("Edm.Int64"), Value::String(s)) => EdmValue::Int64(s.parse().map_err(|_| bad())?),
        (Some("Edm.DateTime"), Value::String(s)) => {
            EdmValue::DateTime(DateTime::parse(s).ok_or_else(bad)?)
        }
        (Some("Edm.Guid"), Value::String(s)) => {
            EdmValue::Guid(Guid(uuid::Uuid::parse_str(s).map_err(|_| bad())?))
        }
        (Some("Edm.Binary"), Value::String(s)) => EdmValue::Binary(
            base64::engine::general_purpose::STANDARD
                .decode(s)
                .map_err(|_| bad())?,
        ),
        (Some("Edm.Double"), Value::Number(n)) => EdmValue::Double(n.as_f64().ok_or_else(bad)?),
        (Some("Edm.Double"), Value::String(s)) => EdmValue::Double(match s.as_str() {
            "NaN" => f64::NAN,
            "Infinity" => f64::INFINITY,
            "-Infinity" => f64::NEG_INFINITY,
            s => s.parse().map_err(|_| bad())?,
        }),
        (Some("Edm.String") | None, Value::String(s)) => EdmValue::String(s.clone()),
        (Some("Edm.Int32") | None, Value::Number(n)) if n.is_i64() => {
            EdmValue::Int32(i32::try_from(n.as_i64().unwrap()).map_err(|_| bad())?)
        }
        (None, Value::Number(n)) => EdmValue::Double(n.as_f64().ok_or_else(bad)?),
        (Some("Edm.Boolean") | None, Value::Bool(b)) => EdmValue::Boolean(*b),
        _ => return Err(bad()),
    })
}

fn json_object(body: &[u8]) -> Result<Map<String, Value>, String> {
    match serde_json::from_slice::<Value>(body) {
        Ok(Value::Object(m)) => Ok(m),
        _ => Err("body is not a JSON object".into()),
    }
}

/// `name(PartitionKey='a',RowKey='b')` -> (name, pk, rk).
fn entity_address(seg: &str) -> Option<(String, String, String)> {
    let (name, rest) = seg.split_once('(')?;
    let rest = rest.strip_suffix(')')?;
    let (pk, rk) = rest.split_once(",RowKey=")?;
    let pk = pk.strip_prefix("PartitionKey=")?;
    let unq = |s: &str| -> Option<String> {
        Some(s.strip_prefix('\'')?.strip_suffix('\'')?.replace("''", "'"))
    };
    Some((name.to_string(), unq(pk)?, unq(rk)?))
}

/// Compares a typed entity with the recorded JSON entity (values and EDM types).
fn check_entity(got: &Entity, want: &Map<String, Value>) -> Result<(), String> {
    let want = entity_from_json(want)?;
    let same = |a: &EdmValue, b: &EdmValue| match (a, b) {
        (EdmValue::Double(x), EdmValue::Double(y)) => x == y || (x.is_nan() && y.is_nan()),
        _ => a == b,
    };
    if got.partition_key != want.partition_key || got.row_key != want.row_key {
        return Err(format!(
            "keys ({}, {}) != recorded ({}, {})",
            got.partition_key, got.row_key, want.partition_key, want.row_key
        ));
    }
    if got.timestamp != want.timestamp {
        return Err(format!(
            "Timestamp {:?} != recorded {:?}",
            got.timestamp, want.timestamp
        ));
    }
    let gk: Vec<&String> = got.properties.keys().collect();
    let wk: Vec<&String> = want.properties.keys().collect();
    if gk != wk {
        return Err(format!("properties {gk:?} != recorded {wk:?}"));
    }
    for (k, v) in &got.properties {
        let w = &want.properties[k];
        if !same(v, w) || v.edm_type() != w.edm_type() {
            return Err(format!("property {k}: {v:?} != recorded {w:?}"));
        }
    }
    Ok(())
}

fn check_etag_body_or_header(got: &azstore::ETag, resp: &RecordedResponse) -> Result<(), String> {
    let want = match resp.header("etag") {
        Some(e) => Some(e.to_string()),
        None => json_object(&resp.body).ok().and_then(|m| {
            m.get("odata.etag")
                .and_then(Value::as_str)
                .map(str::to_string)
        }),
    };
    if want.as_deref() == Some(got.as_str()) {
        Ok(())
    } else {
        Err(format!("ETag {got:?} != recorded {want:?}"))
    }
}

fn query_of(req: &Req) -> Result<Query, String> {
    let mut q = Query::all();
    for (k, v) in &req.q {
        match k.as_str() {
            "$filter" => q = q.with_filter(Filter::raw(v.clone())),
            "$select" if v.is_empty() => {}
            "$select" => q = q.select(v.split(',').map(str::to_string)),
            "$top" => q = q.top(v.parse().map_err(|_| "$top")?),
            "NextPartitionKey" | "NextRowKey" | "NextTableName" => {}
            other => return Err(format!("query parameter {other}")),
        }
    }
    Ok(q)
}

/// Checks that the continuation azstore read equals the recorded headers, by sending it
/// back: the next recorded request carries exactly those values (compared there).
fn check_continuation(has: bool, resp: &RecordedResponse, headers: &[&str]) -> Result<(), String> {
    let want = headers.iter().any(|h| resp.header(h).is_some());
    if has == want {
        Ok(())
    } else {
        Err(format!("continuation present = {has}, recorded {want}"))
    }
}

pub fn plan(its: &[Interaction], i: usize) -> Result<Plan, String> {
    let it = &its[i];
    let req = Req::new(it);
    req.only(&["prefer"])?;
    if req.segs.len() != 1 {
        return Err(format!("table path {:?}", req.segs));
    }
    let seg = req.segs[0].clone();
    // The metadata level only changes how entity properties are typed in a response; the
    // table operations (create, delete, list) read table names only.
    let accept_ok = req.h("accept").is_none_or(|a| {
        a.contains("minimalmetadata") || a.contains("fullmetadata") || a == "application/json"
    }) || seg == "Tables"
        || seg.starts_with("Tables(");
    if !accept_ok {
        return Err(format!(
            "reads entities with Accept {:?}: without type annotations; azstore always asks for \
             minimal metadata so that Edm types survive",
            req.h("accept")
        ));
    }
    let prefer_no_content = req.h("prefer") == Some("return-no-content");
    match (req.method, seg.as_str()) {
        ("POST", "Tables") => {
            let body = json_object(&req.body())?;
            let name = body
                .get("TableName")
                .and_then(Value::as_str)
                .ok_or("create table without TableName")?
                .to_string();
            Ok(one(move |cx, it| async move {
                let got = table(&cx, &name)?.create().await;
                outcome(got, &it.response)?;
                Ok(())
            }))
        }
        ("GET", "Tables") => {
            let q = query_of(&req)?;
            let first = req.query("NextTableName").is_none();
            Ok(one(move |cx, it| async move {
                let cont = if first {
                    None
                } else {
                    cx.table_continuation.lock().unwrap().clone()
                };
                let got = cx.table.list_tables_page(&q, cont.as_ref()).await;
                let resp = &it.response;
                if let Some(page) = outcome(got, resp)? {
                    let names: Vec<String> = page.items.iter().map(|t| t.name.clone()).collect();
                    let want: Vec<String> = json_object(&resp.body)?
                        .get("value")
                        .and_then(Value::as_array)
                        .map(|a| {
                            a.iter()
                                .filter_map(|t| t.get("TableName").and_then(Value::as_str))
                                .map(str::to_string)
                                .collect()
                        })
                        .unwrap_or_default();
                    if names != want {
                        return Err(format!("tables {names:?} != recorded {want:?}"));
                    }
                    check_continuation(
                        page.next_marker.is_some(),
                        resp,
                        &["x-ms-continuation-NextTableName"],
                    )?;
                    *cx.table_continuation.lock().unwrap() = page.next_marker;
                }
                Ok(())
            }))
        }
        ("DELETE", s) if s.starts_with("Tables('") => {
            let name = s
                .strip_prefix("Tables('")
                .and_then(|r| r.strip_suffix("')"))
                .ok_or("table address")?
                .to_string();
            Ok(one(move |cx, it| async move {
                outcome(table(&cx, &name)?.delete().await, &it.response)?;
                Ok(())
            }))
        }
        ("POST", "$batch") => plan_batch(&req),
        ("POST", name) => {
            if !prefer_no_content {
                return Err(
                    "Insert Entity returning content (azstore sends return-no-content)".into(),
                );
            }
            let name = name.to_string();
            let entity = entity_from_json(&json_object(&req.body())?)?;
            Ok(one(move |cx, it| async move {
                let got = table(&cx, &name)?.insert(&entity).await;
                let resp = &it.response;
                if let Some(etag) = outcome(got, resp)? {
                    eq_header("ETag", Some(etag.as_str().to_string()), resp, "etag")?;
                }
                Ok(())
            }))
        }
        ("PUT" | "MERGE", s) => {
            let (name, _, _) = entity_address(s).ok_or("entity address")?;
            let entity = entity_from_json(&json_object(&req.body())?)?;
            let if_match = req.h("if-match").map(|v| {
                if v == "*" {
                    MatchCondition::Any
                } else {
                    MatchCondition::ETag(azstore::ETag::new(v))
                }
            });
            let merge = req.method == "MERGE";
            Ok(one(move |cx, it| async move {
                let t = table(&cx, &name)?;
                let got = match (merge, if_match) {
                    (false, Some(m)) => t.replace(&entity, m).await,
                    (false, None) => t.insert_or_replace(&entity).await,
                    (true, Some(m)) => t.merge(&entity, m).await,
                    (true, None) => t.insert_or_merge(&entity).await,
                };
                let resp = &it.response;
                if let Some(etag) = outcome(got, resp)? {
                    eq_header("ETag", Some(etag.as_str().to_string()), resp, "etag")?;
                }
                Ok(())
            }))
        }
        ("DELETE", s) => {
            let (name, pk, rk) = entity_address(s).ok_or("entity address")?;
            let if_match = match req.h("if-match") {
                Some("*") => MatchCondition::Any,
                Some(v) => MatchCondition::ETag(azstore::ETag::new(v)),
                None => return Err("Delete Entity without If-Match".into()),
            };
            Ok(one(move |cx, it| async move {
                let got = table(&cx, &name)?.delete_entity(&pk, &rk, if_match).await;
                outcome(got, &it.response)?;
                Ok(())
            }))
        }
        ("GET", s) if s.ends_with("()") => {
            let name = s.trim_end_matches("()").to_string();
            let q = query_of(&req)?;
            let first =
                req.query("NextPartitionKey").is_none() && req.query("NextRowKey").is_none();
            Ok(one(move |cx, it| async move {
                let cont = if first {
                    None
                } else {
                    cx.table_continuation.lock().unwrap().clone()
                };
                let got = table(&cx, &name)?
                    .query_page::<Entity>(&q, cont.as_ref())
                    .await;
                let resp = &it.response;
                if let Some(page) = outcome(got, resp)? {
                    let values = json_object(&resp.body)?
                        .get("value")
                        .and_then(Value::as_array)
                        .cloned()
                        .unwrap_or_default();
                    if values.len() != page.items.len() {
                        return Err(format!(
                            "{} entities != recorded {}",
                            page.items.len(),
                            values.len()
                        ));
                    }
                    for (s, v) in page.items.iter().zip(&values) {
                        let m = v.as_object().ok_or("entity is not an object")?;
                        check_entity(&s.entity, m)?;
                        let etag = m.get("odata.etag").and_then(Value::as_str);
                        if etag != Some(s.etag.as_str()) {
                            return Err(format!("ETag {:?} != recorded {etag:?}", s.etag));
                        }
                    }
                    check_continuation(
                        page.next_marker.is_some(),
                        resp,
                        &[
                            "x-ms-continuation-NextPartitionKey",
                            "x-ms-continuation-NextRowKey",
                        ],
                    )?;
                    *cx.table_continuation.lock().unwrap() = page.next_marker;
                }
                Ok(())
            }))
        }
        ("GET", s) => {
            if let Some(name) = s
                .strip_prefix("Tables('")
                .and_then(|r| r.strip_suffix("')"))
            {
                let name = name.to_string();
                return Ok(one(move |cx, it| async move {
                    let got = table(&cx, &name)?.exists().await;
                    let resp = &it.response;
                    match (got, resp.status) {
                        (Ok(true), 200) | (Ok(false), 404) => Ok(()),
                        (Err(e), _) if resp.status >= 300 && resp.status != 404 => {
                            check_error(&e, resp)
                        }
                        (got, status) => {
                            Err(format!("exists() = {got:?}, service answered {status}"))
                        }
                    }
                }));
            }
            let (name, pk, rk) = entity_address(s).ok_or("entity address")?;
            if !req.q.is_empty() {
                return Err(format!(
                    "Query Entity by keys with {:?} (azstore reads whole entities)",
                    req.q.keys()
                ));
            }
            Ok(one(move |cx, it| async move {
                let got = table(&cx, &name)?.get::<Entity>(&pk, &rk).await;
                let resp = &it.response;
                if let Some(s) = outcome(got, resp)? {
                    check_entity(&s.entity, &json_object(&resp.body)?)?;
                    check_etag_body_or_header(&s.etag, resp)?;
                }
                Ok(())
            }))
        }
        (m, s) => Err(format!("table operation {m} {s}")),
    }
}

/// One operation of a recorded batch request.
struct BatchOp {
    method: String,
    table: String,
    address: Option<(String, String)>,
    if_match: Option<String>,
    body: Option<Map<String, Value>>,
}

fn batch_ops(body: &str) -> Result<Vec<BatchOp>, String> {
    let body = body.replace("\r\n", "\n");
    let lines: Vec<&str> = body.lines().collect();
    let mut out = Vec::new();
    let mut i = 0;
    while i < lines.len() {
        let l = lines[i];
        let parts: Vec<&str> = l.split(' ').collect();
        if parts.len() == 3 && parts[2] == "HTTP/1.1" {
            let url = parts[1];
            let path = url
                .split_once("://")
                .and_then(|(_, r)| r.find('/').map(|j| &r[j..]))
                .unwrap_or(url)
                .trim_start_matches('/');
            let path = percent_encoding::percent_decode_str(path)
                .decode_utf8_lossy()
                .into_owned();
            let (table, address) = match entity_address(&path) {
                Some((t, pk, rk)) => (t, Some((pk, rk))),
                None => (path.clone(), None),
            };
            i += 1;
            let if_match = part_if_match(&lines, &mut i);
            let mut json = None;
            if i < lines.len() && lines[i].trim_start().starts_with('{') {
                json = Some(json_object(lines[i].trim().as_bytes())?);
                i += 1;
            }
            out.push(BatchOp {
                method: parts[0].to_string(),
                table,
                address,
                if_match,
                body: json,
            });
        } else {
            i += 1;
        }
    }
    Ok(out)
}

/// The (status, ETag, error code, Content-ID) of one operation in a batch response.
type BatchResult = (u16, Option<String>, Option<String>, Option<usize>);

/// The results of each operation in a batch response.
fn batch_results(body: &[u8]) -> Vec<BatchResult> {
    let text = String::from_utf8_lossy(body).replace("\r\n", "\n");
    let mut out = Vec::new();
    let mut cur: Option<BatchResult> = None;
    for line in text.lines() {
        if let Some(rest) = line.strip_prefix("HTTP/1.1 ") {
            out.extend(cur.take());
            let status = rest
                .split(' ')
                .next()
                .and_then(|s| s.parse().ok())
                .unwrap_or(0);
            cur = Some((status, None, None, None));
        } else if let Some(c) = cur.as_mut() {
            if let Some((k, v)) = line.split_once(':') {
                if k.eq_ignore_ascii_case("etag") {
                    c.1 = Some(v.trim().to_string());
                } else if k.eq_ignore_ascii_case("content-id") {
                    c.3 = v.trim().parse().ok();
                }
            }
            if line.starts_with('{') {
                if let Ok(v) = serde_json::from_str::<Value>(line) {
                    c.2 = v
                        .get("odata.error")
                        .and_then(|e| e.get("code"))
                        .and_then(Value::as_str)
                        .map(str::to_string);
                }
            }
        }
    }
    out.extend(cur);
    out
}

fn plan_batch(req: &Req) -> Result<Plan, String> {
    let ops = batch_ops(&String::from_utf8_lossy(&req.body()))?;
    let table_name = ops
        .first()
        .ok_or("an empty batch: azstore refuses it before sending (nothing to do is a caller mistake), Azure answers 202 and does nothing")?
        .table
        .clone();
    let mut batch = Batch::new();
    for op in &ops {
        if op.table != table_name {
            return Err("batch over two tables".into());
        }
        let if_match = op.if_match.as_deref().map(|v| {
            if v == "*" {
                MatchCondition::Any
            } else {
                MatchCondition::ETag(azstore::ETag::new(v))
            }
        });
        batch = match (op.method.as_str(), &op.body, if_match) {
            ("POST", Some(b), None) => batch.insert(&entity_from_json(b)?),
            ("PUT", Some(b), Some(m)) => batch.replace(&entity_from_json(b)?, m),
            ("PUT", Some(b), None) => batch.insert_or_replace(&entity_from_json(b)?),
            ("MERGE", Some(b), Some(m)) => batch.merge(&entity_from_json(b)?, m),
            ("MERGE", Some(b), None) => batch.insert_or_merge(&entity_from_json(b)?),
            ("DELETE", _, Some(m)) => {
                let (pk, rk) = op.address.clone().ok_or("delete without keys")?;
                batch.delete(&pk, &rk, m)
            }
            (m, _, _) => return Err(format!("batch operation {m}")),
        };
    }
    Ok(one(move |cx, it| async move {
        let got = table(&cx, &table_name)?.submit(&batch).await;
        let resp = &it.response;
        if resp.status != 202 {
            outcome(got, resp)?;
            return Ok(());
        }
        let results = batch_results(&resp.body);
        let failed = results.iter().find(|r| r.0 >= 300).cloned();
        match (got, failed) {
            (Ok(rs), None) => {
                if rs.len() != results.len() {
                    return Err(format!(
                        "{} results != recorded {}",
                        rs.len(),
                        results.len()
                    ));
                }
                for (k, (r, w)) in rs.iter().zip(&results).enumerate() {
                    if r.status != w.0 {
                        return Err(format!("op {k}: status {} != recorded {}", r.status, w.0));
                    }
                    let etag = r.etag.as_ref().map(|e| e.as_str().to_string());
                    if etag != w.1 {
                        return Err(format!("op {k}: ETag {etag:?} != recorded {:?}", w.1));
                    }
                }
                Ok(())
            }
            (Err(e), Some((status, _, code, content_id))) => {
                let inner = RecordedResponse {
                    status,
                    headers: Vec::new(),
                    body: serde_json::json!({"odata.error": {"code": code}})
                        .to_string()
                        .into_bytes(),
                };
                check_error(&e, &inner)?;
                let idx = azstore::table::failed_operation_index(&e);
                let want = content_id.map(|c| c.saturating_sub(1));
                if want.is_some() && idx != want {
                    return Err(format!("failed operation {idx:?} != recorded {want:?}"));
                }
                let _ = recorded_error_code;
                Ok(())
            }
            (Ok(rs), Some(f)) => Err(format!(
                "batch succeeded ({rs:?}) but operation failed: {f:?}"
            )),
            (Err(e), None) => Err(format!(
                "batch failed ({e}) but every recorded operation succeeded"
            )),
        }
    }))
}
