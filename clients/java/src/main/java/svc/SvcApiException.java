package svc;

import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.util.Collections;
import java.util.Map;

import org.json.JSONException;
import org.json.JSONObject;

/**
 * A non-2xx answer of the daemon: HTTP status, the registry code of its {@code error} field
 * ({@link #getErrorCode()}, one constant per code of spec/errors.json) and its message.
 */
public class SvcApiException extends IOException {
    private static final long serialVersionUID = 1L;

    private final int status;
    private final String code;
    private final transient Map<String, String> headers;

    public SvcApiException(int status, String code, String message, Map<String, String> headers) {
        super(message);
        this.status = status;
        this.code = code;
        this.headers = headers == null ? Collections.emptyMap() : Collections.unmodifiableMap(headers);
    }

    /** The exception for an answer; the body is the daemon's error body (or anything else). */
    public static SvcApiException from(ResponseMessage response) {
        String code = null;
        String message = "HTTP " + response.http_status;
        try {
            JSONObject body = new JSONObject(new String(response.body, StandardCharsets.UTF_8));
            code = body.optString("error", null);
            String text = body.optString("message", null);
            if (text != null) {
                message = text;
            }
        } catch (JSONException e) {
            // not a JSON error body: the status line is the message
        }
        if (code == null || code.isEmpty()) {
            code = "http_" + response.http_status;
        }
        return new SvcApiException(response.http_status, code, message, response.headers);
    }

    public int getStatus() {
        return status;
    }

    /** The raw {@code error} string ({@code http_<status>} when the body carried none). */
    public String getCode() {
        return code;
    }

    /** The registry constant, or null when the daemon sent a code this client does not know. */
    public SvcErrorCode getErrorCode() {
        return SvcErrorCode.fromCode(code);
    }

    /** Headers of the answer (e.g. {@code WWW-Authenticate} of a 401). */
    public Map<String, String> getHeaders() {
        return headers;
    }

    @Override
    public String getMessage() {
        return status + " " + code + ": " + super.getMessage();
    }
}
