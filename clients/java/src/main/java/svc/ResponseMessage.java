package svc;

import java.nio.charset.StandardCharsets;
import java.util.LinkedHashMap;
import java.util.Map;

/**
 * A {@code Response} (CONTRACT §4): the answer of every transport. TCP and WSS decode it from
 * msgpack; the REST transport builds one from the HTTP answer, so every call reads the same shape.
 */
public class ResponseMessage {
    public String uuid = "";
    public String request_uri = "";
    public int http_status = 0;
    public String body_msg_type = "";
    public Map<String, String> headers = new LinkedHashMap<>();
    public byte[] body = new byte[0];

    public byte[] serialize() {
        return WireCodec.encodeResponse(this);
    }

    /** Decodes one msgpack {@code Response}; a malformed one throws {@link WireFormatException}. */
    public static ResponseMessage deserialize(byte[] bytes) throws WireFormatException {
        return WireCodec.decodeResponse(bytes);
    }

    /** A header by name, ignoring case; null when absent. */
    public String header(String name) {
        for (Map.Entry<String, String> e : headers.entrySet()) {
            if (e.getKey().equalsIgnoreCase(name)) {
                return e.getValue();
            }
        }
        return null;
    }

    /** The body as UTF-8 text. */
    public String text() {
        return new String(body, StandardCharsets.UTF_8);
    }

    public boolean isSuccess() {
        return http_status >= 200 && http_status < 300;
    }
}
