//! TCP/WSS wire messages (CONTRACT §4) and the TCP framing (spec "TCP wire framing").
//!
//! `Request` and `Response` are msgpack maps. Encoding is canonical: keys in contract order,
//! smallest header forms, `body` as bin, so encoding a decoded canonical vector gives its bytes
//! back. Decoding is strict about types and limits (spec/README.md "Wire vectors") and lenient
//! about absent or nil optional keys, unknown keys, key order and str bodies.

use std::collections::BTreeMap;
use std::fmt;

use rmpv::Value;

/// The 4-byte frame magic, big-endian on the wire. Never changes.
pub const FRAME_MAGIC: u32 = 0x07C7_07F8;
/// Size of the frame header: magic then body length, both big-endian u32.
pub const FRAME_HEADER_LEN: usize = 8;
/// Largest body a client accepts (spec: 1 GiB client-side receive bound).
pub const CLIENT_MAX_BODY_BYTES: usize = 1024 * 1024 * 1024;
/// Largest frame the daemon takes from an authenticated connection (256 MiB).
pub const DAEMON_MAX_BODY_BYTES: usize = 256 * 1024 * 1024;

const MAX_UUID_CHARS: usize = 128;
const MAX_URI_BYTES: usize = 8 * 1024;
const MAX_ENTRIES: usize = 256;
const MAX_ENTRY_BYTES: usize = 64 * 1024;

/// Ordered string map used for headers and query (encoding keeps insertion order).
pub type StringMap = Vec<(String, String)>;

/// A request message as carried on TCP and WSS.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct RequestMessage {
    pub uuid: String,
    pub request_uri: String,
    pub http_method: String,
    pub client_addr: String,
    pub headers: StringMap,
    pub query: StringMap,
    pub body: Vec<u8>,
}

/// A response message (an answer, or a server push when `request_uri` is `/svc/event`).
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct ResponseMessage {
    pub uuid: String,
    pub request_uri: String,
    pub http_status: u16,
    pub body_msg_type: String,
    pub headers: StringMap,
    pub body: Vec<u8>,
}

impl ResponseMessage {
    /// A header value by case-insensitive name.
    pub fn header(&self, name: &str) -> Option<&str> {
        self.headers
            .iter()
            .find(|(k, _)| k.eq_ignore_ascii_case(name))
            .map(|(_, v)| v.as_str())
    }
}

/// Why a message could not be decoded (categories of spec/README.md).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DecodeError {
    /// `invalid_msgpack`, `not_a_map`, `missing_field`, `wrong_type` or `limit_exceeded`.
    pub category: &'static str,
    /// The key concerned (`headers.<name>` for a map entry), when there is one.
    pub field: Option<String>,
}

impl fmt::Display for DecodeError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match &self.field {
            Some(field) => write!(f, "{} ({})", self.category, field),
            None => write!(f, "{}", self.category),
        }
    }
}

impl std::error::Error for DecodeError {}

fn fail(category: &'static str, field: Option<&str>) -> DecodeError {
    DecodeError {
        category,
        field: field.map(str::to_string),
    }
}

fn write_str(out: &mut Vec<u8>, s: &str) {
    // Writing into a Vec cannot fail.
    let _ = rmp::encode::write_str(out, s);
}

fn write_map(out: &mut Vec<u8>, entries: &StringMap) {
    let _ = rmp::encode::write_map_len(out, entries.len() as u32);
    for (k, v) in entries {
        write_str(out, k);
        write_str(out, v);
    }
}

fn write_bin(out: &mut Vec<u8>, bytes: &[u8]) {
    let _ = rmp::encode::write_bin(out, bytes);
}

impl RequestMessage {
    /// Canonical msgpack encoding (keys in CONTRACT §4 order).
    pub fn encode(&self) -> Vec<u8> {
        let mut out = Vec::with_capacity(64 + self.body.len());
        let _ = rmp::encode::write_map_len(&mut out, 7);
        write_str(&mut out, "uuid");
        write_str(&mut out, &self.uuid);
        write_str(&mut out, "request_uri");
        write_str(&mut out, &self.request_uri);
        write_str(&mut out, "http_method");
        write_str(&mut out, &self.http_method);
        write_str(&mut out, "client_addr");
        write_str(&mut out, &self.client_addr);
        write_str(&mut out, "headers");
        write_map(&mut out, &self.headers);
        write_str(&mut out, "query");
        write_map(&mut out, &self.query);
        write_str(&mut out, "body");
        write_bin(&mut out, &self.body);
        out
    }

    /// Strict decoding of one msgpack value.
    pub fn decode(bytes: &[u8]) -> Result<Self, DecodeError> {
        let map = decode_map(bytes)?;
        Ok(Self {
            uuid: uuid_field(&map)?,
            request_uri: uri_field(&map)?,
            http_method: required_str(&map, "http_method")?,
            client_addr: optional_str(&map, "client_addr")?,
            headers: string_map(&map, "headers")?,
            query: string_map(&map, "query")?,
            body: body_field(&map)?,
        })
    }
}

impl ResponseMessage {
    /// Canonical msgpack encoding (keys in CONTRACT §4 order).
    pub fn encode(&self) -> Vec<u8> {
        let mut out = Vec::with_capacity(64 + self.body.len());
        let _ = rmp::encode::write_map_len(&mut out, 6);
        write_str(&mut out, "uuid");
        write_str(&mut out, &self.uuid);
        write_str(&mut out, "request_uri");
        write_str(&mut out, &self.request_uri);
        write_str(&mut out, "http_status");
        let _ = rmp::encode::write_uint(&mut out, u64::from(self.http_status));
        write_str(&mut out, "body_msg_type");
        write_str(&mut out, &self.body_msg_type);
        write_str(&mut out, "headers");
        write_map(&mut out, &self.headers);
        write_str(&mut out, "body");
        write_bin(&mut out, &self.body);
        out
    }

    /// Strict decoding of one msgpack value.
    pub fn decode(bytes: &[u8]) -> Result<Self, DecodeError> {
        let map = decode_map(bytes)?;
        let http_status = match present(&map, "http_status") {
            None => return Err(fail("missing_field", Some("http_status"))),
            Some(Value::Integer(i)) => match i.as_u64() {
                Some(n @ 100..=599) => n as u16,
                _ => return Err(fail("wrong_type", Some("http_status"))),
            },
            Some(_) => return Err(fail("wrong_type", Some("http_status"))),
        };
        Ok(Self {
            uuid: uuid_field(&map)?,
            request_uri: uri_field(&map)?,
            http_status,
            body_msg_type: optional_str(&map, "body_msg_type")?,
            headers: string_map(&map, "headers")?,
            body: body_field(&map)?,
        })
    }
}

/// String-keyed entries of the top-level map (non-string keys are unknown keys: ignored).
type TopMap = BTreeMap<String, Value>;

/// Skips one msgpack value, failing on truncation and on the reserved byte 0xc1 (which rmpv
/// would read as nil).
fn skip_value(bytes: &mut &[u8], depth: usize) -> Option<()> {
    use rmp::Marker;
    fn take(bytes: &mut &[u8], n: usize) -> Option<()> {
        if bytes.len() < n {
            return None;
        }
        *bytes = &bytes[n..];
        Some(())
    }
    fn len(bytes: &mut &[u8], width: usize) -> Option<usize> {
        let head = bytes.get(..width)?;
        let n = head.iter().fold(0usize, |acc, b| (acc << 8) | usize::from(*b));
        *bytes = &bytes[width..];
        Some(n)
    }
    if depth > 512 {
        return None;
    }
    let (&first, rest) = bytes.split_first()?;
    *bytes = rest;
    let (items, bytes_after) = match Marker::from_u8(first) {
        Marker::Reserved => return None,
        Marker::FixPos(_) | Marker::FixNeg(_) | Marker::Null | Marker::True | Marker::False => (0, 0),
        Marker::U8 | Marker::I8 => (0, 1),
        Marker::U16 | Marker::I16 => (0, 2),
        Marker::U32 | Marker::I32 | Marker::F32 => (0, 4),
        Marker::U64 | Marker::I64 | Marker::F64 => (0, 8),
        Marker::FixStr(n) => (0, usize::from(n)),
        Marker::Str8 | Marker::Bin8 => (0, len(bytes, 1)?),
        Marker::Str16 | Marker::Bin16 => (0, len(bytes, 2)?),
        Marker::Str32 | Marker::Bin32 => (0, len(bytes, 4)?),
        Marker::FixArray(n) => (usize::from(n), 0),
        Marker::Array16 => (len(bytes, 2)?, 0),
        Marker::Array32 => (len(bytes, 4)?, 0),
        Marker::FixMap(n) => (2 * usize::from(n), 0),
        Marker::Map16 => (2 * len(bytes, 2)?, 0),
        Marker::Map32 => (2 * len(bytes, 4)?, 0),
        Marker::FixExt1 => (0, 2),
        Marker::FixExt2 => (0, 3),
        Marker::FixExt4 => (0, 5),
        Marker::FixExt8 => (0, 9),
        Marker::FixExt16 => (0, 17),
        Marker::Ext8 => (0, len(bytes, 1)? + 1),
        Marker::Ext16 => (0, len(bytes, 2)? + 1),
        Marker::Ext32 => (0, len(bytes, 4)? + 1),
    };
    take(bytes, bytes_after)?;
    for _ in 0..items {
        skip_value(bytes, depth + 1)?;
    }
    Some(())
}

fn decode_map(bytes: &[u8]) -> Result<TopMap, DecodeError> {
    let mut check = bytes;
    if skip_value(&mut check, 0).is_none() || !check.is_empty() {
        return Err(fail("invalid_msgpack", None));
    }
    let mut cursor = bytes;
    let value = rmpv::decode::read_value(&mut cursor).map_err(|_| fail("invalid_msgpack", None))?;
    if !cursor.is_empty() {
        return Err(fail("invalid_msgpack", None));
    }
    let Value::Map(entries) = value else {
        return Err(fail("not_a_map", None));
    };
    let mut map = TopMap::new();
    for (k, v) in entries {
        if let Value::String(s) = k {
            if let Some(s) = s.into_str() {
                map.insert(s, v);
            }
        }
    }
    Ok(map)
}

/// A key's value unless absent or nil.
fn present<'a>(map: &'a TopMap, key: &str) -> Option<&'a Value> {
    map.get(key).filter(|v| !v.is_nil())
}

fn str_value<'a>(value: &'a Value, field: &str) -> Result<&'a str, DecodeError> {
    match value {
        Value::String(s) => s.as_str().ok_or_else(|| fail("wrong_type", Some(field))),
        _ => Err(fail("wrong_type", Some(field))),
    }
}

fn required_str(map: &TopMap, key: &str) -> Result<String, DecodeError> {
    match present(map, key) {
        None => Err(fail("missing_field", Some(key))),
        Some(v) => Ok(str_value(v, key)?.to_string()),
    }
}

fn optional_str(map: &TopMap, key: &str) -> Result<String, DecodeError> {
    match present(map, key) {
        None => Ok(String::new()),
        Some(v) => Ok(str_value(v, key)?.to_string()),
    }
}

fn uuid_field(map: &TopMap) -> Result<String, DecodeError> {
    let uuid = required_str(map, "uuid")?;
    if uuid.chars().count() > MAX_UUID_CHARS {
        return Err(fail("limit_exceeded", Some("uuid")));
    }
    Ok(uuid)
}

fn uri_field(map: &TopMap) -> Result<String, DecodeError> {
    let uri = required_str(map, "request_uri")?;
    if uri.len() > MAX_URI_BYTES {
        return Err(fail("limit_exceeded", Some("request_uri")));
    }
    Ok(uri)
}

fn string_map(map: &TopMap, key: &str) -> Result<StringMap, DecodeError> {
    let Some(value) = present(map, key) else {
        return Ok(Vec::new());
    };
    let Value::Map(entries) = value else {
        return Err(fail("wrong_type", Some(key)));
    };
    if entries.len() > MAX_ENTRIES {
        return Err(fail("limit_exceeded", Some(key)));
    }
    let mut out = Vec::with_capacity(entries.len());
    for (k, v) in entries {
        let name = str_value(k, key)?;
        let field = format!("{key}.{name}");
        let text = str_value(v, &field)?;
        if name.len() > MAX_ENTRY_BYTES || text.len() > MAX_ENTRY_BYTES {
            return Err(fail("limit_exceeded", Some(&field)));
        }
        out.push((name.to_string(), text.to_string()));
    }
    Ok(out)
}

fn body_field(map: &TopMap) -> Result<Vec<u8>, DecodeError> {
    match present(map, "body") {
        None => Ok(Vec::new()),
        Some(Value::Binary(b)) => Ok(b.clone()),
        Some(Value::String(s)) => Ok(s.as_bytes().to_vec()),
        Some(_) => Err(fail("wrong_type", Some("body"))),
    }
}

/// Why a byte stream could not be framed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum FrameError {
    /// The header's first 4 bytes are not the magic.
    BadMagic(u32),
    /// The header announces a body above the decoder's bound.
    TooLarge(u64),
}

impl fmt::Display for FrameError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::BadMagic(m) => write!(f, "bad frame magic 0x{m:08x}"),
            Self::TooLarge(n) => write!(f, "frame body of {n} bytes exceeds the bound"),
        }
    }
}

impl std::error::Error for FrameError {}

/// Prefixes a body with its frame header.
pub fn encode_frame(body: &[u8]) -> Vec<u8> {
    let mut out = Vec::with_capacity(FRAME_HEADER_LEN + body.len());
    out.extend_from_slice(&FRAME_MAGIC.to_be_bytes());
    out.extend_from_slice(&(body.len() as u32).to_be_bytes());
    out.extend_from_slice(body);
    out
}

/// Incremental frame decoder: feed it chunks as read, get whole bodies. It rejects a bad magic or
/// an oversized length from the header alone, without waiting for the body.
#[derive(Debug)]
pub struct FrameDecoder {
    max_body_bytes: usize,
    buffer: Vec<u8>,
    failed: Option<FrameError>,
}

impl FrameDecoder {
    pub fn new(max_body_bytes: usize) -> Self {
        Self {
            max_body_bytes,
            buffer: Vec::new(),
            failed: None,
        }
    }

    /// Appends a chunk; returns the bodies it completes, in order, or the stream's error (after
    /// which the decoder stays failed). [`FrameDecoder::push_collect`] also keeps the bodies a
    /// failing chunk completed before its error.
    pub fn push(&mut self, chunk: &[u8]) -> Result<Vec<Vec<u8>>, FrameError> {
        let mut bodies = Vec::new();
        match self.push_collect(chunk, &mut bodies) {
            Ok(()) => Ok(bodies),
            Err(e) => Err(e),
        }
    }

    /// Appends a chunk, pushing completed bodies into `bodies` even when the stream then fails.
    pub fn push_collect(&mut self, chunk: &[u8], bodies: &mut Vec<Vec<u8>>) -> Result<(), FrameError> {
        if let Some(e) = &self.failed {
            return Err(e.clone());
        }
        self.buffer.extend_from_slice(chunk);
        let mut start = 0;
        let result = loop {
            let rest = &self.buffer[start..];
            if rest.len() < 4 {
                if !rest.is_empty() && !FRAME_MAGIC.to_be_bytes().starts_with(rest) {
                    let mut padded = [0u8; 4];
                    padded[..rest.len()].copy_from_slice(rest);
                    break Err(FrameError::BadMagic(u32::from_be_bytes(padded)));
                }
                break Ok(());
            }
            let magic = u32::from_be_bytes([rest[0], rest[1], rest[2], rest[3]]);
            if magic != FRAME_MAGIC {
                break Err(FrameError::BadMagic(magic));
            }
            if rest.len() < FRAME_HEADER_LEN {
                break Ok(());
            }
            let len = u32::from_be_bytes([rest[4], rest[5], rest[6], rest[7]]) as u64;
            if len > self.max_body_bytes as u64 {
                break Err(FrameError::TooLarge(len));
            }
            let end = FRAME_HEADER_LEN + len as usize;
            if rest.len() < end {
                break Ok(());
            }
            bodies.push(rest[FRAME_HEADER_LEN..end].to_vec());
            start += end;
        };
        self.buffer.drain(..start);
        if let Err(e) = &result {
            self.failed = Some(e.clone());
            self.buffer.clear();
        }
        result
    }

    /// Bytes of an incomplete frame still buffered.
    pub fn buffered(&self) -> usize {
        self.buffer.len()
    }
}
