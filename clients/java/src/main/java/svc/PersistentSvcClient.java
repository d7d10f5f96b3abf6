package svc;

import java.io.IOException;
import java.util.concurrent.CompletableFuture;

/**
 * The part {@link SvcClientTCP} and {@link SvcClientWSS} share: one persistent connection, opened
 * on first use, whose single reader feeds a {@link MessageDemuxer}. A request's uuid is registered
 * before its bytes are written and it waits with no client-side cap. Once the connection is lost,
 * pending and later requests fail with {@link TransportDisconnectedException} (create a new client
 * to reconnect).
 */
public abstract class PersistentSvcClient extends SvcClient {
    /** The daemon takes at most 1 MiB per message until the connection has authenticated. */
    static final int PRE_AUTH_MAX_MESSAGE_BYTES = 1024 * 1024;

    private final Object lock = new Object();
    private MessageDemuxer demuxer;
    private Connection connection;
    private boolean closed;
    private volatile boolean authenticated;

    /** A connection: writes whole messages; its reader delivers to the demultiplexer and stops it on loss. */
    protected interface Connection {
        void write(byte[] message) throws IOException;

        void close();
    }

    protected PersistentSvcClient(SvcClient.Builder builder) {
        super(builder);
    }

    /** Opens the connection; its reader must call {@code demuxer.deliver} and, when it ends, {@code demuxer.stop}. */
    protected abstract Connection connect(MessageDemuxer demuxer) throws IOException;

    /** Whether a connection counts as authenticated once open (WSS with a bearer at upgrade). */
    protected abstract boolean authenticatedAtConnect();

    @Override
    protected boolean demuxerCapable() {
        return true;
    }

    @Override
    protected MessageDemuxer demuxerOrNull() {
        synchronized (lock) {
            return demuxer;
        }
    }

    /** The demultiplexer of the connection, or null before it is opened (App Mesh's {@code getDemuxer}). */
    public MessageDemuxer getDemuxer() {
        return demuxerOrNull();
    }

    /**
     * Opens the connection (and so the demultiplexer) now instead of at the first request; an
     * {@link IllegalStateException} when it cannot (App Mesh's {@code enableDemuxer}).
     */
    public void enableDemuxer() {
        try {
            connection();
        } catch (IOException e) {
            throw new IllegalStateException("cannot connect: " + e.getMessage(), e);
        }
    }

    /** Opens the connection now instead of at the first request. */
    public void connect() throws IOException {
        connection();
    }

    /** True while the connection is open (false before the first request and after a loss). */
    public boolean isConnected() {
        MessageDemuxer d = demuxerOrNull();
        return d != null && d.isRunning();
    }

    /** Completes when the connection is gone (lost or closed). */
    public CompletableFuture<Void> closedFuture() throws IOException {
        connection();
        return demuxerOrNull().closedFuture();
    }

    private Connection connection() throws IOException {
        synchronized (lock) {
            if (connection != null) {
                return connection;
            }
            if (closed) {
                throw new TransportDisconnectedException("the client is closed");
            }
            MessageDemuxer d = new MessageDemuxer();
            try {
                connection = connect(d);
            } catch (TransportDisconnectedException e) {
                throw e;
            } catch (IOException e) {
                throw new TransportDisconnectedException("cannot connect: " + e.getMessage(), e);
            }
            demuxer = d;
            authenticated = authenticatedAtConnect();
            return connection;
        }
    }

    @Override
    protected CompletableFuture<ResponseMessage> send(RequestMessage req) {
        Connection c;
        MessageDemuxer d;
        byte[] bytes;
        try {
            c = connection();
            d = demuxerOrNull();
            bytes = req.serialize();
            if (bytes.length > FrameDecoder.CLIENT_MAX_BODY_BYTES) {
                throw new WireFormatException("too_large", null, "request above the 1 GiB message bound");
            }
        } catch (IOException e) {
            return CompletableFuture.failedFuture(e);
        }
        boolean withBearer = req.headers.containsKey("Authorization");
        if (!authenticated && withBearer && bytes.length > PRE_AUTH_MAX_MESSAGE_BYTES) {
            // A large first message would be refused before authentication: authenticate with a small one.
            return requestAsync("GET", "/svc/principal/self", null, null, null)
                    .thenCompose(r -> write(c, d, req, bytes, withBearer));
        }
        return write(c, d, req, bytes, withBearer);
    }

    private CompletableFuture<ResponseMessage> write(Connection c, MessageDemuxer d, RequestMessage req,
            byte[] bytes, boolean withBearer) {
        CompletableFuture<ResponseMessage> answer = d.expect(req.uuid);
        try {
            c.write(bytes);
        } catch (IOException e) {
            d.cancel(req.uuid, MessageDemuxer.disconnected(e));
            c.close();
        }
        return answer.thenApply(r -> {
            if (withBearer && r.http_status != 401) {
                authenticated = true;
            }
            return r;
        });
    }

    @Override
    public Integer waitForAsyncRun(AppRun run, OutputHandler stdoutHandler, java.time.Duration timeout)
            throws IOException {
        return AsyncRunWaiter.viaEvents(this, run, stdoutHandler, timeout);
    }

    /** Closes the connection: pending requests and waits fail with {@link TransportDisconnectedException}. */
    @Override
    public void close() {
        Connection c;
        synchronized (lock) {
            closed = true;
            c = connection;
            if (demuxer != null) {
                demuxer.stop(new TransportDisconnectedException("closed by the client"));
            }
        }
        if (c != null) {
            c.close();
        }
        super.close();
    }
}
