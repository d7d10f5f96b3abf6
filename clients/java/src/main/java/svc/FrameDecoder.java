package svc;

import java.io.ByteArrayOutputStream;
import java.util.ArrayList;
import java.util.List;
import java.util.function.Consumer;

/**
 * Incremental decoder of the TCP framing (spec "TCP wire framing"): 8-byte header, 4-byte magic
 * {@code 0x07C707F8} then 4-byte body length, both big-endian; the length excludes the header. A
 * header announcing more than the bound fails at once, without waiting for the body. Chunking does
 * not matter: any split of the same stream gives the same bodies.
 */
public final class FrameDecoder {
    public static final int HEADER_LENGTH = 8;
    public static final int MAGIC = 0x07C707F8;
    /** The client-side receive bound: 1 GiB. */
    public static final long CLIENT_MAX_BODY_BYTES = 1024L * 1024 * 1024;

    private final long maxBodyBytes;
    private final ByteArrayOutputStream header = new ByteArrayOutputStream(HEADER_LENGTH);
    private byte[] body;
    private int bodyFilled;
    private boolean failed;

    public FrameDecoder(long maxBodyBytes) {
        this.maxBodyBytes = maxBodyBytes;
    }

    /** Encodes one frame: header plus body. Throws when the body is above {@code maxBodyBytes}. */
    public static byte[] encode(byte[] body, long maxBodyBytes) throws WireFormatException {
        if (body.length > maxBodyBytes) {
            throw new WireFormatException("too_large", null,
                    "message of " + body.length + " bytes is above the frame bound of " + maxBodyBytes);
        }
        byte[] out = new byte[HEADER_LENGTH + body.length];
        putInt(out, 0, MAGIC);
        putInt(out, 4, body.length);
        System.arraycopy(body, 0, out, HEADER_LENGTH, body.length);
        return out;
    }

    private static void putInt(byte[] b, int at, int v) {
        b[at] = (byte) (v >>> 24);
        b[at + 1] = (byte) (v >>> 16);
        b[at + 2] = (byte) (v >>> 8);
        b[at + 3] = (byte) v;
    }

    /** Feeds bytes; returns every body completed by them, in order (see the sink variant for errors). */
    public List<byte[]> push(byte[] chunk, int offset, int length) throws WireFormatException {
        List<byte[]> bodies = new ArrayList<>();
        push(chunk, offset, length, bodies::add);
        return bodies;
    }

    /**
     * Feeds bytes; hands every body they complete to {@code sink} as soon as it is complete, so the
     * bodies before a bad header are delivered before the decoder fails.
     */
    public void push(byte[] chunk, int offset, int length, Consumer<byte[]> sink) throws WireFormatException {
        if (failed) {
            throw new WireFormatException("invalid_frame", null, "the decoder already failed");
        }
        int i = offset;
        int end = offset + length;
        while (i < end) {
            if (body == null) {
                int take = Math.min(HEADER_LENGTH - header.size(), end - i);
                header.write(chunk, i, take);
                i += take;
                if (header.size() == HEADER_LENGTH) {
                    startBody(sink);
                }
            } else {
                int take = Math.min(body.length - bodyFilled, end - i);
                System.arraycopy(chunk, i, body, bodyFilled, take);
                bodyFilled += take;
                i += take;
                if (bodyFilled == body.length) {
                    byte[] done = body;
                    body = null;
                    sink.accept(done);
                }
            }
        }
    }

    public List<byte[]> push(byte[] chunk) throws WireFormatException {
        return push(chunk, 0, chunk.length);
    }

    private void startBody(Consumer<byte[]> sink) throws WireFormatException {
        byte[] h = header.toByteArray();
        header.reset();
        int magic = ((h[0] & 0xff) << 24) | ((h[1] & 0xff) << 16) | ((h[2] & 0xff) << 8) | (h[3] & 0xff);
        long size = ((long) (h[4] & 0xff) << 24) | ((h[5] & 0xff) << 16) | ((h[6] & 0xff) << 8) | (h[7] & 0xff);
        if (magic != MAGIC) {
            failed = true;
            throw new WireFormatException("bad_magic", null, String.format("bad frame magic 0x%08x", magic));
        }
        if (size > maxBodyBytes) {
            failed = true;
            throw new WireFormatException("too_large", null,
                    "frame announces " + size + " bytes, above the bound of " + maxBodyBytes);
        }
        if (size == 0) {
            sink.accept(new byte[0]);
        } else {
            body = new byte[(int) size];
            bodyFilled = 0;
        }
    }

    /** Bytes of an incomplete frame still held (a stream that ends here was truncated). */
    public long bufferedBytes() {
        return header.size() + (body == null ? 0L : bodyFilled);
    }

    /** True while a frame is incomplete (header or body started). */
    public boolean hasPartialFrame() {
        return header.size() > 0 || body != null;
    }
}
