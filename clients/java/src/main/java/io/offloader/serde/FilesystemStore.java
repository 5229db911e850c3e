package io.offloader.serde;

import java.io.IOException;
import java.io.InputStream;
import java.nio.channels.Channels;
import java.nio.channels.FileChannel;
import java.nio.charset.StandardCharsets;
import java.nio.file.AtomicMoveNotSupportedException;
import java.nio.file.Files;
import java.nio.file.LinkOption;
import java.nio.file.NoSuchFileException;
import java.nio.file.InvalidPathException;
import java.nio.file.Path;
import java.nio.file.StandardCopyOption;
import java.nio.file.StandardOpenOption;
import java.nio.file.attribute.BasicFileAttributes;
import java.util.Map;
import java.util.TreeMap;

/**
 * Objects as files under a root directory, laid out as offloader's filesystem store
 * lays them out: {@code <root>/<key>}, metadata in {@code <root>/.offloader-meta/<key>.json}.
 * No symlink under the root is followed. Setting: {@code filesystem.root}.
 */
public class FilesystemStore implements PayloadStore {
    /** The root directory. */
    public static final String ROOT = "filesystem.root";

    private Path root;

    @Override
    public void configure(Map<String, ?> configs) {
        root = Path.of(new StoreConfig(configs).required(ROOT, "the directory that holds the payloads")).toAbsolutePath().normalize();
    }

    @Override
    public void put(String key, byte[] data, Map<String, String> metadata) {
        Pointer.checkKey(key);
        try {
            if (!metadata.isEmpty()) {
                write(META_DIR + "/" + key + ".json", json(metadata));
            }
            write(key, data);
        } catch (IOException e) {
            throw new PayloadStoreException("filesystem store: put " + key + ": " + e, true, e);
        }
    }

    private void write(String name, byte[] data) throws IOException {
        Path target = root.resolve(name);
        Files.createDirectories(target.getParent());
        Path tmp = Files.createTempFile(target.getParent(), ".put-", "");
        try {
            try (FileChannel ch = FileChannel.open(tmp, StandardOpenOption.WRITE)) {
                ch.write(java.nio.ByteBuffer.wrap(data));
                ch.force(true);
            }
            try {
                Files.move(tmp, target, StandardCopyOption.ATOMIC_MOVE, StandardCopyOption.REPLACE_EXISTING);
            } catch (AtomicMoveNotSupportedException e) {
                Files.move(tmp, target, StandardCopyOption.REPLACE_EXISTING);
            }
        } finally {
            Files.deleteIfExists(tmp);
        }
    }

    /** The directory under the root that holds the objects' metadata: no key reaches into it. */
    static final String META_DIR = ".offloader-meta";

    @Override
    public byte[] get(String key, long limit) {
        Pointer.checkKey(key);
        if (key.equals(META_DIR) || key.startsWith(META_DIR + "/")) {
            throw new PointerException(PointerException.Reason.MALFORMED, "malformed pointer: key " + PointerJson.quote(Pointer.cut(key)) + " is inside the filesystem store's metadata directory " + META_DIR);
        }
        Path path;
        try {
            path = root.resolve(key);
        } catch (InvalidPathException e) {
            throw new PointerException(PointerException.Reason.MALFORMED, "malformed pointer: key " + PointerJson.quote(Pointer.cut(key)) + " is no path here: " + e.getReason());
        }
        try {
            // No component below the root may be a symlink.
            for (Path p = path; !p.equals(root); p = p.getParent()) {
                if (Files.isSymbolicLink(p)) {
                    throw new PayloadNotFoundException("filesystem store: no object " + key);
                }
            }
            BasicFileAttributes attrs = Files.readAttributes(path, BasicFileAttributes.class, LinkOption.NOFOLLOW_LINKS);
            if (!attrs.isRegularFile()) {
                throw new PayloadNotFoundException("filesystem store: no object " + key);
            }
            if (attrs.size() > limit) {
                throw new PointerException(PointerException.Reason.CHECKSUM, "filesystem store: " + key + " holds " + attrs.size() + " bytes, more than the " + limit + " expected");
            }
            try (FileChannel ch = FileChannel.open(path, StandardOpenOption.READ, LinkOption.NOFOLLOW_LINKS);
                 InputStream in = Channels.newInputStream(ch)) {
                return in.readNBytes((int) Math.min(limit + 1, Integer.MAX_VALUE - 8));
            }
        } catch (NoSuchFileException e) {
            throw new PayloadNotFoundException("filesystem store: no object " + key);
        } catch (IOException e) {
            throw new PayloadStoreException("filesystem store: get " + key + ": " + e, true, e);
        }
    }

    private static byte[] json(Map<String, String> metadata) {
        StringBuilder b = new StringBuilder("{");
        for (Map.Entry<String, String> e : new TreeMap<>(metadata).entrySet()) {
            if (b.length() > 1) {
                b.append(',');
            }
            b.append(PointerJson.quote(e.getKey())).append(':').append(PointerJson.quote(e.getValue()));
        }
        return b.append('}').toString().getBytes(StandardCharsets.UTF_8);
    }
}
