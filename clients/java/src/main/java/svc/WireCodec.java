package svc;

import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.util.LinkedHashMap;
import java.util.Map;

import org.msgpack.core.MessageInsufficientBufferException;
import org.msgpack.core.MessagePack;
import org.msgpack.core.MessagePackException;
import org.msgpack.core.MessageUnpacker;
import org.msgpack.core.MessageBufferPacker;
import org.msgpack.value.Value;

/**
 * msgpack encoding of {@link RequestMessage} and {@link ResponseMessage} (CONTRACT §4): canonical on
 * the way out (keys in contract order, smallest headers, body as bin), strict about types and limits
 * and lenient about absent/nil optional keys, unknown keys and key order on the way in.
 */
final class WireCodec {
    static final int MAX_UUID_CHARS = 128;
    static final int MAX_REQUEST_URI_BYTES = 8 * 1024;
    static final int MAX_HEADERS = 256;
    static final int MAX_HEADER_VALUE_BYTES = 64 * 1024;

    private WireCodec() {
    }

    // ---------------------------------------------------------------- encoding

    static byte[] encodeRequest(RequestMessage m) {
        try (MessageBufferPacker p = MessagePack.newDefaultBufferPacker()) {
            p.packMapHeader(7);
            str(p, "uuid");
            str(p, nz(m.uuid));
            str(p, "request_uri");
            str(p, nz(m.request_uri));
            str(p, "http_method");
            str(p, nz(m.http_method));
            str(p, "client_addr");
            str(p, nz(m.client_addr));
            str(p, "headers");
            map(p, m.headers);
            str(p, "query");
            map(p, m.query);
            str(p, "body");
            bin(p, m.body);
            return p.toByteArray();
        } catch (IOException e) {
            throw new IllegalStateException("msgpack encoding to memory failed", e);
        }
    }

    static byte[] encodeResponse(ResponseMessage m) {
        try (MessageBufferPacker p = MessagePack.newDefaultBufferPacker()) {
            p.packMapHeader(6);
            str(p, "uuid");
            str(p, nz(m.uuid));
            str(p, "request_uri");
            str(p, nz(m.request_uri));
            str(p, "http_status");
            p.packInt(m.http_status);
            str(p, "body_msg_type");
            str(p, nz(m.body_msg_type));
            str(p, "headers");
            map(p, m.headers);
            str(p, "body");
            bin(p, m.body);
            return p.toByteArray();
        } catch (IOException e) {
            throw new IllegalStateException("msgpack encoding to memory failed", e);
        }
    }

    private static String nz(String s) {
        return s == null ? "" : s;
    }

    private static void str(MessageBufferPacker p, String s) throws IOException {
        byte[] bytes = s.getBytes(StandardCharsets.UTF_8);
        p.packRawStringHeader(bytes.length);
        p.writePayload(bytes);
    }

    private static void bin(MessageBufferPacker p, byte[] body) throws IOException {
        byte[] b = body == null ? new byte[0] : body;
        p.packBinaryHeader(b.length);
        p.writePayload(b);
    }

    private static void map(MessageBufferPacker p, Map<String, String> map) throws IOException {
        if (map == null) {
            p.packMapHeader(0);
            return;
        }
        p.packMapHeader(map.size());
        for (Map.Entry<String, String> e : map.entrySet()) {
            str(p, e.getKey());
            str(p, nz(e.getValue()));
        }
    }

    // ---------------------------------------------------------------- decoding

    static RequestMessage decodeRequest(byte[] bytes) throws WireFormatException {
        Map<String, Value> map = topLevelMap(bytes, "request");
        RequestMessage m = new RequestMessage();
        m.uuid = uuid(map);
        m.request_uri = requestUri(map);
        m.http_method = requiredString(map, "http_method");
        m.client_addr = optionalString(map, "client_addr");
        m.headers = stringMap(map, "headers");
        m.query = stringMap(map, "query");
        m.body = body(map);
        return m;
    }

    static ResponseMessage decodeResponse(byte[] bytes) throws WireFormatException {
        Map<String, Value> map = topLevelMap(bytes, "response");
        ResponseMessage m = new ResponseMessage();
        m.uuid = uuid(map);
        m.request_uri = requestUri(map);
        Value status = map.get("http_status");
        if (status == null || status.isNilValue()) {
            throw new WireFormatException("missing_field", "http_status", "response: \"http_status\" is required");
        }
        if (!status.isIntegerValue() || !status.asIntegerValue().isInIntRange()
                || status.asIntegerValue().toInt() < 100 || status.asIntegerValue().toInt() > 599) {
            throw new WireFormatException("wrong_type", "http_status",
                    "response: \"http_status\" must be an integer in [100, 599]");
        }
        m.http_status = status.asIntegerValue().toInt();
        m.body_msg_type = optionalString(map, "body_msg_type");
        m.headers = stringMap(map, "headers");
        m.body = body(map);
        return m;
    }

    private static Map<String, Value> topLevelMap(byte[] bytes, String kind) throws WireFormatException {
        Value value;
        try (MessageUnpacker u = MessagePack.newDefaultUnpacker(bytes)) {
            if (!u.hasNext()) {
                throw new WireFormatException("invalid_msgpack", null, kind + ": empty message");
            }
            value = u.unpackValue();
            if (u.hasNext()) {
                throw new WireFormatException("invalid_msgpack", null, kind + ": trailing bytes after the message");
            }
        } catch (MessageInsufficientBufferException e) {
            throw new WireFormatException("invalid_msgpack", null, kind + ": truncated msgpack", e);
        } catch (MessagePackException | IOException e) {
            if (e instanceof WireFormatException) {
                throw (WireFormatException) e;
            }
            throw new WireFormatException("invalid_msgpack", null, kind + ": not valid msgpack", e);
        }
        if (!value.isMapValue()) {
            throw new WireFormatException("not_a_map", null, kind + ": the message is not a msgpack map");
        }
        Map<String, Value> out = new LinkedHashMap<>();
        for (Map.Entry<Value, Value> e : value.asMapValue().entrySet()) {
            // Unknown keys (and non-string keys) are ignored; only the contract's keys matter.
            if (e.getKey().isStringValue()) {
                out.put(e.getKey().asStringValue().asString(), e.getValue());
            }
        }
        return out;
    }

    private static String uuid(Map<String, Value> map) throws WireFormatException {
        String uuid = requiredString(map, "uuid");
        if (uuid.length() > MAX_UUID_CHARS) {
            throw new WireFormatException("limit_exceeded", "uuid",
                    "\"uuid\" has " + uuid.length() + " characters, at most " + MAX_UUID_CHARS);
        }
        return uuid;
    }

    private static String requestUri(Map<String, Value> map) throws WireFormatException {
        String uri = requiredString(map, "request_uri");
        int bytes = uri.getBytes(StandardCharsets.UTF_8).length;
        if (bytes > MAX_REQUEST_URI_BYTES) {
            throw new WireFormatException("limit_exceeded", "request_uri",
                    "\"request_uri\" has " + bytes + " bytes, at most " + MAX_REQUEST_URI_BYTES);
        }
        return uri;
    }

    private static String requiredString(Map<String, Value> map, String key) throws WireFormatException {
        Value v = map.get(key);
        if (v == null || v.isNilValue()) {
            throw new WireFormatException("missing_field", key, "\"" + key + "\" is required");
        }
        if (!v.isStringValue()) {
            throw new WireFormatException("wrong_type", key, "\"" + key + "\" must be a string");
        }
        return v.asStringValue().asString();
    }

    private static String optionalString(Map<String, Value> map, String key) throws WireFormatException {
        Value v = map.get(key);
        if (v == null || v.isNilValue()) {
            return "";
        }
        if (!v.isStringValue()) {
            throw new WireFormatException("wrong_type", key, "\"" + key + "\" must be a string");
        }
        return v.asStringValue().asString();
    }

    private static Map<String, String> stringMap(Map<String, Value> map, String key) throws WireFormatException {
        Map<String, String> out = new LinkedHashMap<>();
        Value v = map.get(key);
        if (v == null || v.isNilValue()) {
            return out;
        }
        if (!v.isMapValue()) {
            throw new WireFormatException("wrong_type", key, "\"" + key + "\" must be a map of string to string");
        }
        Map<Value, Value> entries = v.asMapValue().map();
        if (entries.size() > MAX_HEADERS) {
            throw new WireFormatException("limit_exceeded", key,
                    "\"" + key + "\" has " + entries.size() + " entries, at most " + MAX_HEADERS);
        }
        for (Map.Entry<Value, Value> e : entries.entrySet()) {
            if (!e.getKey().isStringValue()) {
                throw new WireFormatException("wrong_type", key, "\"" + key + "\" has a key that is not a string");
            }
            String name = e.getKey().asStringValue().asString();
            if (name.getBytes(StandardCharsets.UTF_8).length > MAX_HEADER_VALUE_BYTES) {
                throw new WireFormatException("limit_exceeded", key,
                        "a \"" + key + "\" name is over " + MAX_HEADER_VALUE_BYTES + " bytes");
            }
            String field = key + "." + name;
            if (!e.getValue().isStringValue()) {
                throw new WireFormatException("wrong_type", field, "\"" + field + "\" must be a string");
            }
            String value = e.getValue().asStringValue().asString();
            if (value.getBytes(StandardCharsets.UTF_8).length > MAX_HEADER_VALUE_BYTES) {
                throw new WireFormatException("limit_exceeded", field,
                        "\"" + field + "\" is over " + MAX_HEADER_VALUE_BYTES + " bytes");
            }
            out.put(name, value);
        }
        return out;
    }

    private static byte[] body(Map<String, Value> map) throws WireFormatException {
        Value v = map.get("body");
        if (v == null || v.isNilValue()) {
            return new byte[0];
        }
        if (v.isBinaryValue()) {
            return v.asBinaryValue().asByteArray();
        }
        if (v.isStringValue()) {
            return v.asStringValue().asByteArray();
        }
        throw new WireFormatException("wrong_type", "body", "\"body\" must be bytes or a string");
    }
}
