package svc;

import java.util.LinkedHashMap;
import java.util.Map;

/** A {@code Request} as carried on TCP and WSS (CONTRACT §4), msgpack-encoded. */
public class RequestMessage {
    public String uuid = "";
    public String request_uri = "";
    public String http_method = "";
    public String client_addr = "";
    public Map<String, String> headers = new LinkedHashMap<>();
    public Map<String, String> query = new LinkedHashMap<>();
    public byte[] body = new byte[0];

    /** Canonical msgpack bytes (keys in contract order, smallest headers, body as bin). */
    public byte[] serialize() {
        return WireCodec.encodeRequest(this);
    }

    /** Decodes one msgpack {@code Request}; a malformed one throws {@link WireFormatException}. */
    public static RequestMessage deserialize(byte[] bytes) throws WireFormatException {
        return WireCodec.decodeRequest(bytes);
    }
}
