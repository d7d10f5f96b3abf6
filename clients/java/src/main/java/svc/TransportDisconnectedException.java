package svc;

import java.io.IOException;

/**
 * The persistent transport (TCP or WSS) disconnected or was closed: a connection error, never a
 * timeout. Pending requests and run-waits fail with it; later requests on the same client fail with
 * it at once.
 */
public class TransportDisconnectedException extends IOException {
    private static final long serialVersionUID = 1L;

    public TransportDisconnectedException(String message) {
        super(message);
    }

    public TransportDisconnectedException(String message, Throwable cause) {
        super(message, cause);
    }
}
