package svc;

/**
 * Worker loop: the daemon answered 412, the process key belongs to a superseded process. The loop
 * stops at once and is never retried.
 */
public class ProcessSupersededException extends RuntimeException {
    private static final long serialVersionUID = 1L;

    public ProcessSupersededException(String message, Throwable cause) {
        super(message, cause);
    }
}
