package svc;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertSame;

import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;
import java.util.stream.Stream;

import org.json.JSONObject;
import org.junit.jupiter.api.DynamicTest;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.TestFactory;

/** SvcErrorCode is exactly spec/errors.json, and every code comes back as a typed SvcApiException. */
class ErrorCodesTest {
    private static final JSONObject ERRORS = Spec.object("spec/errors.json");

    @Test
    void theEnumHoldsExactlyTheRegistry() {
        Map<String, Integer> registry = new TreeMap<>();
        for (String code : ERRORS.keySet()) {
            registry.put(code, ERRORS.getJSONObject(code).getInt("status"));
        }
        Map<String, Integer> ours = new TreeMap<>();
        for (SvcErrorCode c : SvcErrorCode.values()) {
            ours.put(c.code(), c.status());
        }
        assertEquals(registry, ours, "SvcErrorCode differs from spec/errors.json: regenerate it");
    }

    @TestFactory
    Stream<DynamicTest> everyCodeIsATypedError() {
        List<DynamicTest> tests = new ArrayList<>();
        for (String code : new TreeMap<>(ERRORS.toMap()).keySet()) {
            tests.add(DynamicTest.dynamicTest(code, () -> {
                int status = ERRORS.getJSONObject(code).getInt("status");
                ResponseMessage r = new ResponseMessage();
                r.http_status = status;
                r.body = new JSONObject().put("error", code).put("message", "text of " + code).toString()
                        .getBytes(StandardCharsets.UTF_8);
                SvcApiException e = SvcApiException.from(r);
                assertSame(SvcErrorCode.fromCode(code), e.getErrorCode());
                assertEquals(code, e.getCode());
                assertEquals(status, e.getStatus());
                assertEquals(status + " " + code + ": text of " + code, e.getMessage());
            }));
        }
        return tests.stream();
    }

    @Test
    void anUnknownCodeOrANonJsonBodyStaysReadable() {
        ResponseMessage r = new ResponseMessage();
        r.http_status = 502;
        r.body = "<html>bad gateway</html>".getBytes(StandardCharsets.UTF_8);
        SvcApiException e = SvcApiException.from(r);
        assertEquals("http_502", e.getCode());
        assertNull(e.getErrorCode());
        r.body = "{\"error\":\"from_the_future\",\"message\":\"m\"}".getBytes(StandardCharsets.UTF_8);
        assertEquals("from_the_future", SvcApiException.from(r).getCode());
        assertNull(SvcApiException.from(r).getErrorCode());
    }
}
