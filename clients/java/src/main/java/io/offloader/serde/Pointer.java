package io.offloader.serde;

import java.nio.ByteBuffer;
import java.nio.charset.CharacterCodingException;
import java.nio.charset.CodingErrorAction;
import java.nio.charset.StandardCharsets;
import java.security.MessageDigest;
import java.security.NoSuchAlgorithmException;
import java.util.HexFormat;
import java.util.regex.Pattern;

/**
 * A pointer v1: where a value is stored and how to check it (docs/pointer-format.md).
 *
 * @param store the name of the payload store, as the reader configures it
 * @param key the object key inside that store
 * @param size the original value's length in bytes
 * @param sha256 the original value's SHA-256, 64 lowercase hex characters
 * @param codec how the stored bytes are encoded: none, zstd, gzip, lz4 or snappy
 * @param storedSize the stored object's length in bytes
 */
public record Pointer(String store, String key, long size, String sha256, String codec, long storedSize) {
    /** The header that marks a pointer record; its value must be exactly {@link #VERSION_1}. */
    public static final String HEADER_POINTER = "offloader-pointer";
    /** The only version this library reads and writes. */
    public static final String VERSION_1 = "v1";
    /** KIP-1159's marker, carried by pointer records too. */
    public static final String HEADER_LARGE_MESSAGE = "large-message";
    /** An inline-compressed value's codec. */
    public static final String HEADER_INLINE_CODEC = "offloader-codec";
    /** An inline-compressed value's original length, decimal ASCII. */
    public static final String HEADER_INLINE_SIZE = "offloader-size";
    /** No pointer value is longer. */
    public static final int MAX_ENCODED_SIZE = 4096;
    /** No object key is longer, in UTF-8 bytes. */
    public static final int MAX_KEY_LENGTH = 1024;

    private static final Pattern SHA256 = Pattern.compile("[0-9a-f]{64}");

    /**
     * Parses a pointer value strictly: exactly the seven members, each once, spelled
     * as documented, of their types, none null; v 1; a lowercase hex SHA-256; no
     * negative size; codec none only when both sizes agree.
     *
     * @param value the record's value
     * @return the pointer
     * @throws PointerException MALFORMED for anything else
     */
    public static Pointer parse(byte[] value) {
        if (value == null) {
            throw malformed("a null value");
        }
        if (value.length > MAX_ENCODED_SIZE) {
            throw malformed(value.length + " bytes, more than " + MAX_ENCODED_SIZE);
        }
        String text;
        try {
            // UTF-8 only: never UTF-16 or 32, and no byte replaced by U+FFFD.
            text = StandardCharsets.UTF_8.newDecoder().onMalformedInput(CodingErrorAction.REPORT)
                    .onUnmappableCharacter(CodingErrorAction.REPORT).decode(ByteBuffer.wrap(value)).toString();
        } catch (CharacterCodingException e) {
            throw malformed("not UTF-8");
        }
        PointerJson.Members m = PointerJson.parse(text);
        long v = m.number("v");
        Pointer p = new Pointer(m.string("store"), m.string("key"), m.number("size"), m.string("sha256"), m.string("codec"), m.number("stored_size"));
        m.requireExactly("v", "store", "key", "size", "sha256", "codec", "stored_size");
        if (v != 1) {
            throw malformed("version " + v + ", this reader knows version 1");
        }
        if (p.store.isEmpty() || p.key.isEmpty() || p.codec.isEmpty()) {
            throw malformed("an empty store, key or codec");
        }
        if (!wellFormedText(p.store) || !wellFormedText(p.key)) {
            throw malformed("the store or key holds U+FFFD or a lone surrogate");
        }
        if (p.size < 0 || p.storedSize < 0) {
            throw malformed("a negative size");
        }
        if (!SHA256.matcher(p.sha256).matches()) {
            throw malformed("sha256 must be 64 lowercase hex characters");
        }
        if (p.codec.equals(Codecs.NONE) && p.size != p.storedSize) {
            throw malformed("codec none but stored_size " + p.storedSize + " differs from size " + p.size);
        }
        return p;
    }

    /** @return the pointer value, members in the documented order */
    public byte[] encode() {
        return ("{\"v\":1,\"store\":" + PointerJson.quote(store) + ",\"key\":" + PointerJson.quote(key) + ",\"size\":" + size
                + ",\"sha256\":" + PointerJson.quote(sha256) + ",\"codec\":" + PointerJson.quote(codec) + ",\"stored_size\":" + storedSize + "}")
                .getBytes(StandardCharsets.UTF_8);
    }

    /**
     * Refuses keys that could leave a store: empty, over 1,024 bytes, absolute, with a
     * backslash or control character, or with an empty, "." or ".." segment.
     *
     * @param key an object key, maybe forged
     * @throws PointerException MALFORMED
     */
    /**
     * @return whether s holds no lone surrogate (an escaped one decodes to it)
     *         and no U+FFFD (which other readers make of one)
     */
    static boolean wellFormedText(String s) {
        for (int i = 0; i < s.length(); i++) {
            char c = s.charAt(i);
            if (c == '\uFFFD') {
                return false;
            }
            if (Character.isHighSurrogate(c)) {
                if (i + 1 == s.length() || !Character.isLowSurrogate(s.charAt(i + 1))) {
                    return false;
                }
                i++;
            } else if (Character.isLowSurrogate(c)) {
                return false;
            }
        }
        return true;
    }

    public static void checkKey(String key) {
        boolean bad = key.isEmpty() || !wellFormedText(key) || key.getBytes(StandardCharsets.UTF_8).length > MAX_KEY_LENGTH || key.startsWith("/");
        for (int i = 0; i < key.length() && !bad; i++) {
            char c = key.charAt(i);
            bad = c < 0x20 || c == 0x7f || c == '\\';
        }
        for (String segment : key.split("/", -1)) {
            bad = bad || segment.isEmpty() || segment.equals(".") || segment.equals("..");
        }
        if (bad) {
            throw new PointerException(PointerException.Reason.MALFORMED, "malformed pointer: a forged key " + PointerJson.quote(cut(key)) + ": it could leave the store");
        }
    }

    /**
     * @param data bytes
     * @return their SHA-256 as a pointer's {@code sha256} holds it: 64 lowercase hex characters
     */
    public static String sha256Of(byte[] data) {
        try {
            return HexFormat.of().formatHex(MessageDigest.getInstance("SHA-256").digest(data));
        } catch (NoSuchAlgorithmException e) {
            throw new IllegalStateException("the JDK has no SHA-256", e);
        }
    }

    static PointerException malformed(String why) {
        return new PointerException(PointerException.Reason.MALFORMED, "malformed pointer: " + why);
    }

    static String cut(String s) {
        return s.length() > 80 ? s.substring(0, 80) + "..." : s;
    }
}
