package svc;

import java.io.IOException;

/**
 * A TCP/WSS message or frame that cannot be decoded (spec/wire-vectors.json categories:
 * {@code invalid_msgpack}, {@code not_a_map}, {@code missing_field}, {@code wrong_type},
 * {@code limit_exceeded}, {@code bad_magic}, {@code too_large}).
 */
public class WireFormatException extends IOException {
    private static final long serialVersionUID = 1L;

    private final String category;
    private final String field;

    public WireFormatException(String category, String field, String message) {
        super(message);
        this.category = category;
        this.field = field;
    }

    public WireFormatException(String category, String field, String message, Throwable cause) {
        super(message, cause);
        this.category = category;
        this.field = field;
    }

    /** One of the categories of spec/wire-vectors.json. */
    public String getCategory() {
        return category;
    }

    /** The key the error concerns ({@code headers.<name>} for an entry), or null. */
    public String getField() {
        return field;
    }
}
