package io.offloader.serde;

import java.io.IOException;
import java.net.URI;
import java.time.Duration;
import java.util.Map;
import software.amazon.awssdk.core.ResponseInputStream;
import software.amazon.awssdk.core.exception.SdkClientException;
import software.amazon.awssdk.core.exception.SdkException;
import software.amazon.awssdk.core.sync.RequestBody;
import software.amazon.awssdk.regions.Region;
import software.amazon.awssdk.services.s3.S3Client;
import software.amazon.awssdk.services.s3.S3ClientBuilder;
import software.amazon.awssdk.services.s3.model.GetObjectRequest;
import software.amazon.awssdk.services.s3.model.GetObjectResponse;
import software.amazon.awssdk.services.s3.model.NoSuchKeyException;
import software.amazon.awssdk.services.s3.model.PutObjectRequest;
import software.amazon.awssdk.services.s3.model.S3Exception;

/**
 * Objects in an S3 bucket under their key, as offloader's s3 store keeps them.
 * Settings: {@code s3.bucket}, {@code s3.region}, {@code s3.endpoint} (an
 * S3-compatible store) and {@code s3.path.style}; credentials come from the AWS
 * SDK's default chain (environment, profile, IRSA, EKS Pod Identity).
 */
public class S3Store implements PayloadStore {
    /** The bucket. */
    public static final String BUCKET = "s3.bucket";
    /** The bucket's region (default: the SDK's). */
    public static final String REGION = "s3.region";
    /** Another endpoint: MinIO, Ceph, an emulator. */
    public static final String ENDPOINT = "s3.endpoint";
    /** true: the bucket in the path (endpoint/bucket/key). */
    public static final String PATH_STYLE = "s3.path.style";

    private S3Client client;
    private String bucket;

    @Override
    public void configure(Map<String, ?> configs) {
        StoreConfig c = new StoreConfig(configs);
        bucket = c.required(BUCKET, "the bucket that holds the payloads");
        Duration timeout = c.timeout();
        S3ClientBuilder b = S3Client.builder().forcePathStyle(c.flag(PATH_STYLE))
                .overrideConfiguration(o -> o.apiCallTimeout(timeout));
        String region = c.get(REGION, "");
        if (!region.isEmpty()) {
            b.region(Region.of(region));
        }
        String endpoint = c.get(ENDPOINT, "");
        if (!endpoint.isEmpty()) {
            b.endpointOverride(URI.create(endpoint));
        }
        client = b.build();
    }

    @Override
    public void put(String key, byte[] data, Map<String, String> metadata) {
        Pointer.checkKey(key);
        try {
            client.putObject(PutObjectRequest.builder().bucket(bucket).key(key).metadata(metadata).build(), RequestBody.fromBytes(data));
        } catch (SdkException e) {
            throw failure("put", key, e);
        }
    }

    @Override
    public byte[] get(String key, long limit) {
        Pointer.checkKey(key);
        // One request: the object's length comes with the answer's headers,
        // and a larger object is refused before its body is read.
        try (ResponseInputStream<GetObjectResponse> in = client.getObject(GetObjectRequest.builder().bucket(bucket).key(key).build())) {
            long size = in.response().contentLength();
            if (size > limit) {
                in.abort();
                throw new PointerException(PointerException.Reason.CHECKSUM, "s3 store: " + key + " holds " + size + " bytes, more than the " + limit + " expected");
            }
            return Bounded.readExactly(in, size, key);
        } catch (SdkException e) {
            throw failure("get", key, e);
        } catch (IOException e) {
            throw new PayloadStoreException("s3 store: get " + key + ": " + e, true, e);
        }
    }

    private static PayloadStoreException failure(String op, String key, SdkException e) {
        int status = e instanceof S3Exception s ? s.statusCode() : 0;
        if (op.equals("get") && (e instanceof NoSuchKeyException || status == 404)) {
            return new PayloadNotFoundException("s3 store: no object " + key);
        }
        boolean retriable = e instanceof SdkClientException || status == 408 || status == 429 || status >= 500 || e.retryable();
        return new PayloadStoreException("s3 store: " + op + " " + key + ": " + (status > 0 ? "HTTP " + status + " " : "") + e.getMessage(), retriable, e);
    }

    @Override
    public void close() {
        if (client != null) {
            client.close();
        }
    }
}
