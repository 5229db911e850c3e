package io.offloader.serde;

import com.github.luben.zstd.Zstd;
import com.github.luben.zstd.ZstdInputStream;
import java.io.ByteArrayInputStream;
import java.io.ByteArrayOutputStream;
import java.io.IOException;
import java.io.InputStream;
import java.io.OutputStream;
import java.util.List;
import java.util.zip.GZIPInputStream;
import java.util.zip.GZIPOutputStream;
import net.jpountz.lz4.LZ4FrameInputStream;
import net.jpountz.lz4.LZ4FrameOutputStream;
import org.xerial.snappy.Snappy;

/**
 * The codecs of pointer v1, each a standard self-contained format: a Zstandard
 * frame, a gzip member, an LZ4 frame, a Snappy raw block. Decoding is bounded by
 * the size the pointer claims and allocates by the bytes actually produced.
 */
public final class Codecs {
    /** Stored as is. */
    public static final String NONE = "none";
    /** The codecs besides none. */
    public static final List<String> NAMES = List.of("zstd", "gzip", "lz4", "snappy");

    private Codecs() {
    }

    /**
     * @param name a codec name
     * @return whether it is none or one of {@link #NAMES}
     */
    public static boolean known(String name) {
        return NONE.equals(name) || NAMES.contains(name);
    }

    /**
     * Compresses data.
     *
     * @param name a codec of {@link #NAMES}
     * @param data the bytes
     * @return the compressed bytes
     */
    public static byte[] encode(String name, byte[] data) {
        try {
            switch (name) {
                case "zstd":
                    return Zstd.compress(data, 3);
                case "snappy":
                    return Snappy.compress(data);
                case "gzip": {
                    ByteArrayOutputStream out = new ByteArrayOutputStream(data.length / 2 + 64);
                    try (OutputStream w = new GZIPOutputStream(out)) {
                        w.write(data);
                    }
                    return out.toByteArray();
                }
                case "lz4": {
                    ByteArrayOutputStream out = new ByteArrayOutputStream(data.length / 2 + 64);
                    try (OutputStream w = new LZ4FrameOutputStream(out)) {
                        w.write(data);
                    }
                    return out.toByteArray();
                }
                default:
                    throw new IllegalArgumentException("unknown codec \"" + name + "\" (known: none, zstd, gzip, lz4, snappy)");
            }
        } catch (IOException e) {
            throw new IllegalStateException("compressing with " + name + ": " + e.getMessage(), e);
        }
    }

    /**
     * Decompresses data, which must decode to exactly size bytes.
     *
     * @param name the codec
     * @param data the stored bytes
     * @param size the original length
     * @return the original bytes
     * @throws PointerException MALFORMED for an unknown codec or bytes that do not decode to size bytes
     */
    public static byte[] decode(String name, byte[] data, long size) {
        if (NONE.equals(name)) {
            return data;
        }
        try {
            switch (name) {
                case "snappy": {
                    int n = Snappy.uncompressedLength(data);
                    if (n != size) {
                        throw corrupt(name, "the block holds " + n + " bytes, the pointer says " + size);
                    }
                    return Snappy.uncompress(data);
                }
                case "zstd":
                    return bounded(name, new ZstdInputStream(new ByteArrayInputStream(data)), size);
                case "gzip":
                    return bounded(name, new GZIPInputStream(new ByteArrayInputStream(data)), size);
                case "lz4":
                    return bounded(name, new LZ4FrameInputStream(new ByteArrayInputStream(data)), size);
                default:
                    throw new PointerException(PointerException.Reason.MALFORMED, "unknown codec " + PointerJson.quote(Pointer.cut(name)));
            }
        } catch (IOException | RuntimeException e) {
            if (e instanceof PointerException pe) {
                throw pe;
            }
            throw corrupt(name, e.getMessage());
        }
    }

    private static byte[] bounded(String name, InputStream in, long size) throws IOException {
        try (in) {
            ByteArrayOutputStream out = new ByteArrayOutputStream((int) Math.min(size, 1 << 20));
            byte[] buf = new byte[64 << 10];
            long total = 0;
            for (int n; (n = in.read(buf)) > 0; ) {
                total += n;
                if (total > size) {
                    throw corrupt(name, "more than the " + size + " bytes the pointer says");
                }
                out.write(buf, 0, n);
            }
            if (total != size) {
                throw corrupt(name, total + " bytes, the pointer says " + size);
            }
            return out.toByteArray();
        }
    }

    private static PointerException corrupt(String name, String why) {
        return new PointerException(PointerException.Reason.CHECKSUM, "codec " + name + ": " + why);
    }
}
