package svc;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.junit.jupiter.api.Assertions.fail;

import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.stream.Stream;

import org.json.JSONArray;
import org.json.JSONObject;
import org.junit.jupiter.api.DynamicTest;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.TestFactory;

/** Every case of spec/wire-vectors.json: decode, canonical encode, framing in every chunking. */
class WireVectorsTest {
    private static final JSONArray VECTORS = Spec.array("spec/wire-vectors.json");

    @Test
    void theVectorsCoverEveryKind() {
        int requests = 0;
        int responses = 0;
        int frames = 0;
        for (int i = 0; i < VECTORS.length(); i++) {
            String kind = VECTORS.getJSONObject(i).getString("kind");
            requests += "request".equals(kind) ? 1 : 0;
            responses += "response".equals(kind) ? 1 : 0;
            frames += "frame".equals(kind) ? 1 : 0;
        }
        assertTrue(requests > 5 && responses > 5 && frames > 5, "vectors of every kind");
    }

    @TestFactory
    Stream<DynamicTest> vectors() {
        List<DynamicTest> tests = new ArrayList<>();
        for (int i = 0; i < VECTORS.length(); i++) {
            JSONObject c = VECTORS.getJSONObject(i);
            tests.add(DynamicTest.dynamicTest(c.getString("kind") + " " + c.getString("name"), () -> check(c)));
        }
        return tests.stream();
    }

    private static void check(JSONObject c) throws Exception {
        byte[] input = Spec.hex(c.getString("hex"));
        switch (c.getString("kind")) {
            case "request":
            case "response":
                message(c, input);
                break;
            case "frame":
                frame(c, input);
                break;
            default:
                fail("unknown kind " + c.getString("kind"));
        }
    }

    private static void message(JSONObject c, byte[] input) throws Exception {
        boolean request = "request".equals(c.getString("kind"));
        if (c.has("error")) {
            JSONObject error = c.getJSONObject("error");
            WireFormatException e = assertThrows(WireFormatException.class, () -> decode(request, input));
            assertEquals(error.getString("category"), e.getCategory(), e.getMessage());
            if (error.has("field")) {
                assertEquals(error.getString("field"), e.getField(), e.getMessage());
            }
            return;
        }
        JSONObject decoded = c.getJSONObject("decoded");
        assertEquals(decoded.toMap(), decode(request, input));
        if (c.optBoolean("canonical", false)) {
            // The decoded message keeps the hex's map order (the vector's key order); encoding it
            // must give the input byte for byte.
            byte[] again = request ? RequestMessage.deserialize(input).serialize()
                    : ResponseMessage.deserialize(input).serialize();
            assertEquals(c.getString("hex"), Spec.hex(again), "canonical encoding");
        }
        byte[] encoded = request ? toRequest(decoded).serialize() : toResponse(decoded).serialize();
        assertEquals(decoded.toMap(), decode(request, encoded), "own encoding decodes back");
    }

    /** Decodes to the vector's JSON shape: every key present, body as {"$hex": ...}. */
    private static Map<String, Object> decode(boolean request, byte[] input) throws WireFormatException {
        Map<String, Object> m = new LinkedHashMap<>();
        if (request) {
            RequestMessage r = RequestMessage.deserialize(input);
            m.put("uuid", r.uuid);
            m.put("request_uri", r.request_uri);
            m.put("http_method", r.http_method);
            m.put("client_addr", r.client_addr);
            m.put("headers", new LinkedHashMap<>(r.headers));
            m.put("query", new LinkedHashMap<>(r.query));
            m.put("body", Map.of("$hex", Spec.hex(r.body)));
        } else {
            ResponseMessage r = ResponseMessage.deserialize(input);
            m.put("uuid", r.uuid);
            m.put("request_uri", r.request_uri);
            m.put("http_status", r.http_status);
            m.put("body_msg_type", r.body_msg_type);
            m.put("headers", new LinkedHashMap<>(r.headers));
            m.put("body", Map.of("$hex", Spec.hex(r.body)));
        }
        return new JSONObject(m).toMap();
    }

    private static Map<String, String> strings(JSONObject o) {
        Map<String, String> out = new LinkedHashMap<>();
        for (String k : o.keySet()) {
            out.put(k, o.getString(k));
        }
        return out;
    }

    private static RequestMessage toRequest(JSONObject d) {
        RequestMessage r = new RequestMessage();
        r.uuid = d.getString("uuid");
        r.request_uri = d.getString("request_uri");
        r.http_method = d.getString("http_method");
        r.client_addr = d.getString("client_addr");
        r.headers = strings(d.getJSONObject("headers"));
        r.query = strings(d.getJSONObject("query"));
        r.body = Spec.hex(d.getJSONObject("body").getString("$hex"));
        return r;
    }

    private static ResponseMessage toResponse(JSONObject d) {
        ResponseMessage r = new ResponseMessage();
        r.uuid = d.getString("uuid");
        r.request_uri = d.getString("request_uri");
        r.http_status = d.getInt("http_status");
        r.body_msg_type = d.getString("body_msg_type");
        r.headers = strings(d.getJSONObject("headers"));
        r.body = Spec.hex(d.getJSONObject("body").getString("$hex"));
        return r;
    }

    private static void frame(JSONObject c, byte[] input) throws Exception {
        long max = c.getLong("max_body_bytes");
        List<String> expected = new ArrayList<>();
        JSONArray bodies = c.getJSONObject("decoded").getJSONArray("bodies");
        for (int i = 0; i < bodies.length(); i++) {
            expected.add(bodies.getJSONObject(i).getString("$hex"));
        }
        String category = c.has("error") ? c.getJSONObject("error").getString("category") : null;
        List<List<Integer>> chunkings = new ArrayList<>();
        chunkings.add(List.of(input.length));
        List<Integer> bytewise = new ArrayList<>();
        for (int i = 0; i < input.length; i++) {
            bytewise.add(1);
        }
        chunkings.add(bytewise);
        for (int split = 1; split < input.length; split++) {
            chunkings.add(List.of(split, input.length - split));
        }
        for (List<Integer> chunks : chunkings) {
            FrameDecoder decoder = new FrameDecoder(max);
            List<String> got = new ArrayList<>();
            WireFormatException error = null;
            int at = 0;
            try {
                for (int n : chunks) {
                    decoder.push(input, at, n, b -> got.add(Spec.hex(b)));
                    at += n;
                }
            } catch (WireFormatException e) {
                error = e;
            }
            String where = "chunks " + (chunks.size() > 3 ? "bytewise" : chunks.toString());
            assertEquals(expected, got, where);
            if (category == null) {
                assertEquals(null, error, where);
                assertFalse(decoder.hasPartialFrame(), where + ": nothing left buffered");
            } else if ("truncated".equals(category)) {
                assertEquals(null, error, where);
                assertTrue(decoder.hasPartialFrame(), where + ": an incomplete frame stays buffered");
            } else {
                assertTrue(error != null, where + ": fails with " + category);
                assertEquals(category, error.getCategory(), where);
            }
        }
    }

    @Test
    void encodeRefusesABodyAboveTheBound() {
        WireFormatException e = assertThrows(WireFormatException.class, () -> FrameDecoder.encode(new byte[17], 16));
        assertEquals("too_large", e.getCategory());
        assertArrayEquals(new byte[] { 0x07, (byte) 0xc7, 0x07, (byte) 0xf8, 0, 0, 0, 1, 42 },
                assertDoesNotThrowEncode(new byte[] { 42 }));
    }

    private static byte[] assertDoesNotThrowEncode(byte[] body) {
        try {
            return FrameDecoder.encode(body, 16);
        } catch (WireFormatException e) {
            throw new AssertionError(e);
        }
    }
}
