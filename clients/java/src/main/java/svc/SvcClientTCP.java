package svc;

import java.io.IOException;
import java.io.InputStream;
import java.io.OutputStream;
import java.net.InetSocketAddress;
import java.util.Objects;

import javax.net.ssl.SSLParameters;
import javax.net.ssl.SSLSocket;

/**
 * svc client over the TLS TCP API (port 6059 by default): framed msgpack {@code Request}s out,
 * {@code Response}s and event pushes in, one connection, one reader thread, demultiplexed.
 */
public class SvcClientTCP extends PersistentSvcClient {
    private final String host;
    private final int port;

    /** A client of {@code host:port} trusting the JVM's trust store. */
    public SvcClientTCP(String host, int port) {
        this(new Builder().host(host).port(port));
    }

    /** A client of {@code host:port} trusting {@code caCertPath} (or nothing, for tests, when {@code disableSSLVerification}). */
    public SvcClientTCP(String host, int port, boolean disableSSLVerification, String caCertPath) {
        this(trust(new Builder().host(host).port(port), disableSSLVerification, caCertPath));
    }

    private static Builder trust(Builder b, boolean disableSSLVerification, String caCertPath) {
        if (disableSSLVerification) {
            b.disableSSLVerify();
        }
        return b.caCert(caCertPath);
    }

    protected SvcClientTCP(Builder builder) {
        super(builder.baseURL("https://" + builder.host + ":" + builder.port));
        this.host = Objects.requireNonNull(builder.host, "host");
        this.port = builder.port;
    }

    /** Builder of {@link SvcClientTCP}. */
    public static class Builder extends SvcClient.Builder {
        String host = "127.0.0.1";
        int port = 6059;

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
        public SvcClientTCP build() {
            return new SvcClientTCP(this);
        }
    }

    @Override
    protected boolean authenticatedAtConnect() {
        return false;
    }

    @Override
    protected Connection connect(MessageDemuxer demuxer) throws IOException {
        SSLSocket socket = (SSLSocket) getSslContext().getSocketFactory().createSocket();
        try {
            socket.connect(new InetSocketAddress(host, port), Math.max(0, getConnectTimeoutMs()));
            socket.setTcpNoDelay(true);
            SSLParameters params = socket.getSSLParameters();
            params.setEndpointIdentificationAlgorithm("HTTPS");
            socket.setSSLParameters(params);
            // The handshake is bounded by the connect timeout; afterwards the reader waits without
            // a cap (an idle connection with subscriptions is normal).
            socket.setSoTimeout(Math.max(0, getConnectTimeoutMs()));
            socket.startHandshake();
            socket.setSoTimeout(0);
        } catch (IOException e) {
            socket.close();
            throw e;
        }
        TcpConnection c = new TcpConnection(socket, demuxer);
        Thread reader = new Thread(c::readLoop, "svc-tcp-reader-" + host + ":" + port);
        reader.setDaemon(true);
        reader.start();
        return c;
    }

    private static final class TcpConnection implements Connection {
        private final SSLSocket socket;
        private final MessageDemuxer demuxer;
        private final OutputStream out;

        TcpConnection(SSLSocket socket, MessageDemuxer demuxer) throws IOException {
            this.socket = socket;
            this.demuxer = demuxer;
            this.out = socket.getOutputStream();
        }

        @Override
        public void write(byte[] message) throws IOException {
            byte[] frame = FrameDecoder.encode(message, FrameDecoder.CLIENT_MAX_BODY_BYTES);
            synchronized (out) {
                out.write(frame);
                out.flush();
            }
        }

        /** The single reader: frames in, Responses to the demultiplexer; any failure ends the connection. */
        void readLoop() {
            Throwable cause;
            try {
                InputStream in = socket.getInputStream();
                FrameDecoder decoder = new FrameDecoder(FrameDecoder.CLIENT_MAX_BODY_BYTES);
                byte[] buffer = new byte[64 * 1024];
                while (true) {
                    int n = in.read(buffer);
                    if (n < 0) {
                        cause = new TransportDisconnectedException("connection closed by the server");
                        break;
                    }
                    decoder.push(buffer, 0, n, this::deliver);
                }
            } catch (IOException | RuntimeException e) {
                cause = e;
            }
            demuxer.stop(cause);
            close();
        }

        private void deliver(byte[] body) {
            try {
                demuxer.deliver(ResponseMessage.deserialize(body));
            } catch (WireFormatException e) {
                throw new IllegalStateException("undecodable message from the daemon: " + e.getMessage(), e);
            }
        }

        @Override
        public void close() {
            try {
                socket.close();
            } catch (IOException e) {
                // already closed
            }
        }
    }
}
