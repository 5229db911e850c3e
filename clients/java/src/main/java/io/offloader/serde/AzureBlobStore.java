package io.offloader.serde;

import com.azure.core.exception.HttpResponseException;
import com.azure.core.util.BinaryData;
import com.azure.core.util.Context;
import com.azure.identity.DefaultAzureCredentialBuilder;
import com.azure.storage.blob.BlobClient;
import com.azure.storage.blob.BlobContainerClient;
import com.azure.storage.blob.BlobServiceClientBuilder;
import com.azure.storage.blob.models.BlobDownloadResponse;
import com.azure.storage.blob.models.BlobRange;
import com.azure.storage.blob.models.BlobStorageException;
import com.azure.storage.blob.options.BlobParallelUploadOptions;
import java.io.OutputStream;
import java.io.UncheckedIOException;
import java.time.Duration;
import java.util.Arrays;
import java.util.Map;
import org.apache.kafka.common.config.ConfigException;

/**
 * Objects as block blobs named by their key in one container, as offloader's azblob
 * store keeps them. Settings: {@code azblob.container}, and one way to authenticate:
 * {@code azblob.connection.string}; {@code azblob.account.url} with
 * {@code azblob.sas.token}; or {@code azblob.account.url} with
 * {@code azblob.entra.id=true} (workload identity, managed identity, the Azure CLI:
 * the SDK's default credential chain).
 */
public class AzureBlobStore implements PayloadStore {
    /** The container. */
    public static final String CONTAINER = "azblob.container";
    /** A connection string (AccountName, AccountKey or SharedAccessSignature, BlobEndpoint). */
    public static final String CONNECTION_STRING = "azblob.connection.string";
    /** The account's blob endpoint, https://ACCOUNT.blob.core.windows.net. */
    public static final String ACCOUNT_URL = "azblob.account.url";
    /** A SAS token for the account URL. */
    public static final String SAS_TOKEN = "azblob.sas.token";
    /** true: authenticate with Microsoft Entra ID. */
    public static final String ENTRA_ID = "azblob.entra.id";

    private BlobContainerClient container;
    private Duration timeout;

    @Override
    public void configure(Map<String, ?> configs) {
        StoreConfig c = new StoreConfig(configs);
        timeout = c.timeout();
        BlobServiceClientBuilder b = new BlobServiceClientBuilder();
        String conn = c.get(CONNECTION_STRING, "");
        String url = c.get(ACCOUNT_URL, "");
        String sas = c.get(SAS_TOKEN, "");
        boolean entra = c.flag(ENTRA_ID);
        int ways = (conn.isEmpty() ? 0 : 1) + (sas.isEmpty() ? 0 : 1) + (entra ? 1 : 0);
        if (ways != 1) {
            throw new ConfigException(CONNECTION_STRING, null, "set one way to authenticate: " + CONNECTION_STRING + ", or " + ACCOUNT_URL + " with " + SAS_TOKEN + " or " + ENTRA_ID + "=true");
        }
        if (!conn.isEmpty()) {
            b.connectionString(conn);
        } else if (url.isEmpty()) {
            throw new ConfigException(ACCOUNT_URL, null, "is required with " + (entra ? ENTRA_ID : SAS_TOKEN));
        } else if (entra) {
            b.endpoint(url).credential(new DefaultAzureCredentialBuilder().build());
        } else {
            b.endpoint(url).sasToken(sas);
        }
        container = b.buildClient().getBlobContainerClient(c.required(CONTAINER, "the container that holds the payloads"));
    }

    @Override
    public void put(String key, byte[] data, Map<String, String> metadata) {
        Pointer.checkKey(key);
        BlobClient blob = container.getBlobClient(key);
        try {
            blob.uploadWithResponse(new BlobParallelUploadOptions(BinaryData.fromBytes(data)).setMetadata(metadata), timeout, Context.NONE);
        } catch (RuntimeException e) {
            throw failure("put", key, e);
        }
    }

    @Override
    public byte[] get(String key, long limit) {
        Pointer.checkKey(key);
        BlobClient blob = container.getBlobClient(key);
        // One GET of the range [0, limit], written as it arrives into one array of
        // the pointer's size: a larger blob costs no more than the pointer claims,
        // and the payload is copied once out of the client's buffers.
        // BlobInputStream collected each range into a growing buffer and copied it
        // twice more: a sixth of the prefetching reader's samples on Azurite
        // (docs/benchmarks.md, "The readers against Azurite"). The array is
        // the pointer's stored_size before the blob's length is known: a
        // pointer that claims more than its blob holds that much for one GET,
        // within large.message.max.bytes and the prefetch's byte bound, which
        // count the claimed size.
        Sink out = new Sink((int) Math.min(limit, Integer.MAX_VALUE - 8));
        long size;
        try {
            BlobDownloadResponse r = blob.downloadStreamWithResponse(out, new BlobRange(0, limit + 1), null, null, false, timeout, Context.NONE);
            size = blobSize(r.getDeserializedHeaders().getContentRange(), out.count);
        } catch (BlobStorageException e) {
            if (e.getStatusCode() == 416) {
                return new byte[0]; // an empty blob has no range [0, limit]
            }
            throw failure("get", key, e);
        } catch (RuntimeException e) {
            throw failure("get", key, e);
        }
        if (size > limit || out.count > limit) {
            throw new PointerException(PointerException.Reason.CHECKSUM, "azblob store: " + key + " holds " + Math.max(size, out.count) + " bytes, more than the " + limit + " expected");
        }
        if (out.count != size) {
            throw new PointerException(PointerException.Reason.CHECKSUM, "the object " + key + " does not hold the " + size + " bytes its store announced");
        }
        return out.count == out.data.length ? out.data : Arrays.copyOf(out.data, (int) out.count);
    }

    /** The blob's whole length from a Content-Range of "bytes FIRST-LAST/LENGTH"; received when the answer has none. */
    private static long blobSize(String contentRange, long received) {
        if (contentRange == null) {
            return received;
        }
        int slash = contentRange.lastIndexOf('/');
        try {
            return Long.parseLong(contentRange.substring(slash + 1).trim());
        } catch (NumberFormatException e) {
            return received;
        }
    }

    /** The body, into an array of the size expected; bytes past it are counted, not kept. */
    private static final class Sink extends OutputStream {
        private final byte[] data;
        private long count;

        Sink(int size) {
            data = new byte[size];
        }

        @Override
        public void write(int b) {
            if (count < data.length) {
                data[(int) count] = (byte) b;
            }
            count++;
        }

        @Override
        public void write(byte[] b, int off, int len) {
            int keep = (int) Math.max(0, Math.min(len, data.length - count));
            System.arraycopy(b, off, data, (int) count, keep);
            count += len;
        }
    }

    private static PayloadStoreException failure(String op, String key, RuntimeException e) {
        int status = e instanceof HttpResponseException h ? h.getResponse().getStatusCode() : 0;
        String code = e instanceof BlobStorageException b && b.getErrorCode() != null ? " " + b.getErrorCode() : "";
        if (status == 404 && op.equals("get")) {
            return new PayloadNotFoundException("azblob store: no object " + key);
        }
        boolean retriable = status == 0 || status == 408 || status == 429 || status >= 500 || e instanceof UncheckedIOException;
        return new PayloadStoreException("azblob store: " + op + " " + key + ": " + (status > 0 ? "HTTP " + status + code : e.toString()), retriable, e);
    }
}
