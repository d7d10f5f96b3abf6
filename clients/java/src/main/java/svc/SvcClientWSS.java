package svc;

import java.io.ByteArrayOutputStream;
import java.io.IOException;
import java.net.URI;
import java.net.http.WebSocket;
import java.net.http.WebSocketHandshakeException;
import java.nio.ByteBuffer;
import java.time.Duration;
import java.util.Objects;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionStage;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;

/**
 * svc client over WSS on the REST port (the JDK's {@link WebSocket}), sub-protocol {@code svc-ws}:
 * one msgpack {@code Request} per binary message out, one {@code Response} or event push per binary
 * message in, demultiplexed. The bearer is sent at the upgrade, which pins the connection's
 * principal, and again in every message; after {@link #setToken} create a new client.
 */
public class SvcClientWSS extends PersistentSvcClient {
    public static final String SUBPROTOCOL = "svc-ws";

    private final String host;
    private final int port;

    /** A client of {@code wss://host:port} trusting the JVM's trust store. */
    public SvcClientWSS(String host, int port) {
        this(new Builder().host(host).port(port));
    }

    /** A client of {@code host:port} trusting {@code caCertPath} (or nothing, for tests, when {@code disableSSLVerification}). */
    public SvcClientWSS(String host, int port, boolean disableSSLVerification, String caCertPath) {
        this(trust(new Builder().host(host).port(port), disableSSLVerification, caCertPath));
    }

    private static Builder trust(Builder b, boolean disableSSLVerification, String caCertPath) {
        if (disableSSLVerification) {
            b.disableSSLVerify();
        }
        return b.caCert(caCertPath);
    }

    protected SvcClientWSS(Builder builder) {
        super(builder.baseURL("https://" + builder.host + ":" + builder.port));
        this.host = Objects.requireNonNull(builder.host, "host");
        this.port = builder.port;
    }

    /** Builder of {@link SvcClientWSS}. */
    public static class Builder extends SvcClient.Builder {
        String host = "127.0.0.1";
        int port = 6060;

        public Builder host(String host) {
            this.host = host;
            return this;
        }

        public Builder port(int port) {
            this.port = port;
            return this;
        }

        @Override
        public Builder caCert(String caCertFilePath) {
            super.caCert(caCertFilePath);
            return this;
        }

        @Override
        public Builder disableSSLVerify() {
            super.disableSSLVerify();
            return this;
        }

        @Override
        public Builder jwtToken(String jwtToken) {
            super.jwtToken(jwtToken);
            return this;
        }

        @Override
        public Builder connectTimeoutMs(int ms) {
            super.connectTimeoutMs(ms);
            return this;
        }

        @Override
        public Builder readTimeoutMs(int ms) {
            super.readTimeoutMs(ms);
            return this;
        }

        @Override
        public SvcClientWSS build() {
            return new SvcClientWSS(this);
        }
    }

    @Override
    protected boolean authenticatedAtConnect() {
        String t = getToken();
        return t != null && !t.isEmpty();
    }

    @Override
    protected Connection connect(MessageDemuxer demuxer) throws IOException {
        WebSocket.Builder b = httpClient().newWebSocketBuilder().subprotocols(SUBPROTOCOL)
                .connectTimeout(Duration.ofMillis(Math.max(1, getConnectTimeoutMs())));
        // The upgrade carries the bearer only; X-Target-Host travels in each frame, so one session
        // can forward some requests and not others.
        String token = getToken();
        if (token != null && !token.isEmpty()) {
            b.header("Authorization", "Bearer " + token);
        }
        Reader reader = new Reader(demuxer);
        try {
            WebSocket ws = b.buildAsync(URI.create("wss://" + host + ":" + port + "/"), reader).get();
            return new WsConnection(ws, demuxer);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            throw new TransportDisconnectedException("interrupted during the WebSocket upgrade", e);
        } catch (ExecutionException e) {
            Throwable cause = e.getCause();
            String why = cause instanceof WebSocketHandshakeException
                    ? "HTTP " + ((WebSocketHandshakeException) cause).getResponse().statusCode()
                    : String.valueOf(cause.getMessage());
            throw new TransportDisconnectedException("WebSocket upgrade failed: " + why, cause);
        }
    }

    /** The single reader: whole binary messages to the demultiplexer; close, error or text stop it. */
    private static final class Reader implements WebSocket.Listener {
        private final MessageDemuxer demuxer;
        private final ByteArrayOutputStream partial = new ByteArrayOutputStream();

        Reader(MessageDemuxer demuxer) {
            this.demuxer = demuxer;
        }

        @Override
        public void onOpen(WebSocket ws) {
            ws.request(1);
        }

        @Override
        public CompletionStage<?> onBinary(WebSocket ws, ByteBuffer data, boolean last) {
            byte[] chunk = new byte[data.remaining()];
            data.get(chunk);
            if (partial.size() + (long) chunk.length > FrameDecoder.CLIENT_MAX_BODY_BYTES) {
                fail(ws, new WireFormatException("too_large", null, "WebSocket message above the 1 GiB bound"));
                return null;
            }
            partial.write(chunk, 0, chunk.length);
            if (last) {
                byte[] message = partial.toByteArray();
                partial.reset();
                try {
                    demuxer.deliver(ResponseMessage.deserialize(message));
                } catch (IOException | RuntimeException e) {
                    fail(ws, e);
                    return null;
                }
            }
            ws.request(1);
            return null;
        }

        @Override
        public CompletionStage<?> onText(WebSocket ws, CharSequence data, boolean last) {
            fail(ws, new WireFormatException("invalid_frame", null, "text WebSocket message: binary msgpack only"));
            return null;
        }

        @Override
        public CompletionStage<?> onClose(WebSocket ws, int statusCode, String reason) {
            demuxer.stop(new TransportDisconnectedException("WebSocket closed by the server (" + statusCode + ")"));
            return null;
        }

        @Override
        public void onError(WebSocket ws, Throwable error) {
            demuxer.stop(error);
        }

        private void fail(WebSocket ws, Throwable cause) {
            demuxer.stop(cause);
            ws.abort();
        }
    }

    private static final class WsConnection implements Connection {
        private final WebSocket ws;
        private final MessageDemuxer demuxer;
        private CompletableFuture<?> sending = CompletableFuture.completedFuture(null);

        WsConnection(WebSocket ws, MessageDemuxer demuxer) {
            this.ws = ws;
            this.demuxer = demuxer;
        }

        /** Queues one message; the JDK WebSocket takes one send at a time. */
        @Override
        public synchronized void write(byte[] message) throws IOException {
            if (!demuxer.isRunning() || ws.isOutputClosed()) {
                throw new TransportDisconnectedException("the WebSocket is closed");
            }
            sending = sending.thenCompose(v -> ws.sendBinary(ByteBuffer.wrap(message), true));
            sending.whenComplete((v, e) -> {
                if (e != null) {
                    demuxer.stop(e);
                    ws.abort();
                }
            });
        }

        @Override
        public void close() {
            if (ws.isOutputClosed()) {
                ws.abort();
                return;
            }
            ws.sendClose(WebSocket.NORMAL_CLOSURE, "client closed").orTimeout(2, TimeUnit.SECONDS)
                    .whenComplete((w, e) -> ws.abort());
        }
    }
}
