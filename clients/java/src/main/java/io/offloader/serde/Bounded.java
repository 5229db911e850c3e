package io.offloader.serde;

import java.io.IOException;
import java.io.InputStream;

/** Reads a body whose length the store announced, into one array of that length. */
final class Bounded {
    private Bounded() {
    }

    /**
     * @param in the object's bytes
     * @param size the length the store announced (at most the pointer's stored_size)
     * @param key the object's key, for errors
     * @return exactly size bytes
     * @throws PointerException CHECKSUM when the body is shorter or longer than size
     */
    static byte[] readExactly(InputStream in, long size, String key) throws IOException {
        byte[] data = new byte[(int) size];
        int n = in.readNBytes(data, 0, data.length);
        if (n != size || in.read() != -1) {
            throw new PointerException(PointerException.Reason.CHECKSUM, "the object " + key + " does not hold the " + size + " bytes its store announced");
        }
        return data;
    }
}
