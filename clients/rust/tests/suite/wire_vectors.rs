//! Every case of spec/wire-vectors.json: messages decode (or fail with the stated category),
//! canonical ones encode byte for byte, frames decode alike for every chunking.

use serde_json::{json, Map, Value};
use svc::wire::{encode_frame, FrameDecoder, FrameError, RequestMessage, ResponseMessage};

use crate::daemon::repo_root;

fn vectors() -> Vec<Value> {
    let text = std::fs::read_to_string(repo_root().join("spec/wire-vectors.json")).expect("wire-vectors.json");
    serde_json::from_str::<Value>(&text)
        .expect("JSON")
        .as_array()
        .expect("an array")
        .clone()
}

fn hex_of(case: &Value) -> Vec<u8> {
    hex::decode(case["hex"].as_str().expect("hex")).expect("valid hex")
}

fn pairs(map: &[(String, String)]) -> Value {
    Value::Object(map.iter().map(|(k, v)| (k.clone(), json!(v))).collect::<Map<_, _>>())
}

fn request_json(m: &RequestMessage) -> Value {
    json!({
        "uuid": m.uuid, "request_uri": m.request_uri, "http_method": m.http_method,
        "client_addr": m.client_addr, "headers": pairs(&m.headers), "query": pairs(&m.query),
        "body": { "$hex": hex::encode(&m.body) },
    })
}

fn response_json(m: &ResponseMessage) -> Value {
    json!({
        "uuid": m.uuid, "request_uri": m.request_uri, "http_status": m.http_status,
        "body_msg_type": m.body_msg_type, "headers": pairs(&m.headers),
        "body": { "$hex": hex::encode(&m.body) },
    })
}

fn string_pairs(value: &Value) -> Vec<(String, String)> {
    value
        .as_object()
        .map(|o| {
            o.iter()
                .map(|(k, v)| (k.clone(), v.as_str().unwrap().to_string()))
                .collect()
        })
        .unwrap_or_default()
}

fn body_of(value: &Value) -> Vec<u8> {
    hex::decode(value["body"]["$hex"].as_str().unwrap_or("")).unwrap()
}

fn request_from(d: &Value) -> RequestMessage {
    RequestMessage {
        uuid: d["uuid"].as_str().unwrap().into(),
        request_uri: d["request_uri"].as_str().unwrap().into(),
        http_method: d["http_method"].as_str().unwrap().into(),
        client_addr: d["client_addr"].as_str().unwrap_or("").into(),
        headers: string_pairs(&d["headers"]),
        query: string_pairs(&d["query"]),
        body: body_of(d),
    }
}

fn response_from(d: &Value) -> ResponseMessage {
    ResponseMessage {
        uuid: d["uuid"].as_str().unwrap().into(),
        request_uri: d["request_uri"].as_str().unwrap().into(),
        http_status: d["http_status"].as_u64().unwrap() as u16,
        body_msg_type: d["body_msg_type"].as_str().unwrap_or("").into(),
        headers: string_pairs(&d["headers"]),
        body: body_of(d),
    }
}

/// Compares JSON objects ignoring key order of the header/query maps (serde_json maps are sorted).
fn check_message(case: &Value) -> Result<(), String> {
    let name = case["name"].as_str().unwrap();
    let bytes = hex_of(case);
    let kind = case["kind"].as_str().unwrap();
    let decoded = match kind {
        "request" => RequestMessage::decode(&bytes).map(|m| (request_json(&m), m.encode())),
        _ => ResponseMessage::decode(&bytes).map(|m| (response_json(&m), m.encode())),
    };
    if let Some(error) = case.get("error") {
        let e = match decoded {
            Ok(_) => return Err(format!("{name}: decoded but should fail with {error}")),
            Err(e) => e,
        };
        if e.category != error["category"].as_str().unwrap() {
            return Err(format!(
                "{name}: category {} instead of {}",
                e.category, error["category"]
            ));
        }
        if let Some(field) = error.get("field").and_then(Value::as_str) {
            if e.field.as_deref() != Some(field) {
                return Err(format!("{name}: field {:?} instead of {field}", e.field));
            }
        }
        return Ok(());
    }
    let (json, _) = decoded.map_err(|e| format!("{name}: does not decode: {e}"))?;
    if json != case["decoded"] {
        return Err(format!("{name}: decoded {json} instead of {}", case["decoded"]));
    }
    // Encoding the stated decoded value: exactly the bytes when canonical, else a round trip.
    let encoded = match kind {
        "request" => request_from(&case["decoded"]).encode(),
        _ => response_from(&case["decoded"]).encode(),
    };
    if case["canonical"] == json!(true) {
        // Header order of `decoded` is JSON object order; the vector lists it in wire order.
        if encoded != bytes {
            return Err(format!(
                "{name}: encodes to {} instead of {}",
                hex::encode(&encoded),
                case["hex"]
            ));
        }
    } else {
        let again = match kind {
            "request" => RequestMessage::decode(&encoded).map(|m| request_json(&m)),
            _ => ResponseMessage::decode(&encoded).map(|m| response_json(&m)),
        }
        .map_err(|e| format!("{name}: own encoding does not decode: {e}"))?;
        if again != case["decoded"] {
            return Err(format!("{name}: round trip gives {again}"));
        }
    }
    Ok(())
}

fn run_frames(bytes: &[u8], max: usize, chunks: &[usize]) -> (Vec<Vec<u8>>, Option<FrameError>, usize) {
    let mut decoder = FrameDecoder::new(max);
    let mut bodies = Vec::new();
    let mut start = 0;
    for &end in chunks.iter().chain(std::iter::once(&bytes.len())) {
        if let Err(e) = decoder.push_collect(&bytes[start..end], &mut bodies) {
            return (bodies, Some(e), decoder.buffered());
        }
        start = end;
    }
    (bodies, None, decoder.buffered())
}

fn check_frame(case: &Value) -> Result<(), String> {
    let name = case["name"].as_str().unwrap();
    let bytes = hex_of(case);
    let max = case["max_body_bytes"].as_u64().unwrap() as usize;
    let expected: Vec<Vec<u8>> = case["decoded"]["bodies"]
        .as_array()
        .map(|b| {
            b.iter()
                .map(|x| hex::decode(x["$hex"].as_str().unwrap()).unwrap())
                .collect()
        })
        .unwrap_or_default();
    let category = case.get("error").and_then(|e| e["category"].as_str());
    let mut chunkings: Vec<Vec<usize>> = vec![vec![], (1..bytes.len()).collect()];
    chunkings.extend((1..bytes.len()).map(|i| vec![i]));
    for chunks in chunkings {
        let (bodies, error, buffered) = run_frames(&bytes, max, &chunks);
        if bodies != expected {
            return Err(format!(
                "{name} (split {chunks:?}): {} bodies instead of {}",
                bodies.len(),
                expected.len()
            ));
        }
        let ok = match (category, &error) {
            (None, None) => buffered == 0,
            (Some("bad_magic"), Some(FrameError::BadMagic(_))) => true,
            (Some("too_large"), Some(FrameError::TooLarge(_))) => true,
            (Some("truncated"), None) => buffered > 0,
            _ => false,
        };
        if !ok {
            return Err(format!(
                "{name} (split {chunks:?}): {error:?}, {buffered} buffered; expected {category:?}"
            ));
        }
    }
    Ok(())
}

#[test]
fn every_wire_vector() {
    let cases = vectors();
    assert!(cases.len() > 40, "wire-vectors.json has {} cases", cases.len());
    let failures: Vec<String> = cases
        .iter()
        .filter_map(|case| {
            match case["kind"].as_str().unwrap() {
                "frame" => check_frame(case),
                _ => check_message(case),
            }
            .err()
        })
        .collect();
    assert!(
        failures.is_empty(),
        "{} of {} vectors fail:\n{}",
        failures.len(),
        cases.len(),
        failures.join("\n")
    );
}

#[test]
fn encode_frame_prefixes_magic_and_length() {
    let frame = encode_frame(b"abc");
    assert_eq!(hex::encode(&frame), "07c707f800000003616263");
    let mut decoder = FrameDecoder::new(16);
    assert_eq!(decoder.push(&frame).unwrap(), vec![b"abc".to_vec()]);
}
