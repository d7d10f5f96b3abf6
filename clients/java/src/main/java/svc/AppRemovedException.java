package svc;

import java.io.IOException;

/** {@code waitForAsyncRun}: the run's application was removed (REMOVED event) before its exit was observed. */
public class AppRemovedException extends IOException {
    private static final long serialVersionUID = 1L;

    public AppRemovedException(String message) {
        super(message);
    }
}
