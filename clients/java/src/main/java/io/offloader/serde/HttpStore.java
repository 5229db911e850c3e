package io.offloader.serde;

import java.io.IOException;
import java.io.InputStream;
import java.net.URI;
import java.net.URLEncoder;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.Map;
import java.util.StringJoiner;

/**
 * Objects on an HTTP server that follows offloader's HTTP store contract
 * (docs/http-store.md): {@code PUT}, {@code HEAD} and {@code GET} of
 * {@code <url>/<key>}. Settings: {@code http.url}, {@code http.auth.token},
 * {@code http.auth.header} (default Authorization) and {@code http.auth.scheme}
 * (default Bearer; empty for the token alone).
 */
public class HttpStore implements PayloadStore {
    /** The base URL. */
    public static final String URL = "http.url";
    /** The token sent on every request. */
    public static final String AUTH_TOKEN = "http.auth.token";
    /** The header that carries it. */
    public static final String AUTH_HEADER = "http.auth.header";
    /** The scheme before it. */
    public static final String AUTH_SCHEME = "http.auth.scheme";

    private static final String SHA256 = "X-Offloader-Sha256";
    private String base;
    private String authHeader;
    private String authValue;
    private Duration timeout;
    private HttpClient client;

    @Override
    public void configure(Map<String, ?> configs) {
        StoreConfig c = new StoreConfig(configs);
        base = c.required(URL, "the server's base URL").replaceAll("/+$", "");
        timeout = c.timeout();
        String token = c.get(AUTH_TOKEN, "");
        authHeader = c.get(AUTH_HEADER, "Authorization");
        String scheme = c.get(AUTH_SCHEME, "Bearer");
        authValue = token.isEmpty() ? null : scheme.isEmpty() ? token : scheme + " " + token;
        client = HttpClient.newBuilder().connectTimeout(timeout).build();
    }

    private HttpRequest.Builder request(String key) {
        StringJoiner path = new StringJoiner("/");
        for (String segment : key.split("/")) {
            path.add(URLEncoder.encode(segment, StandardCharsets.UTF_8).replace("+", "%20"));
        }
        HttpRequest.Builder b = HttpRequest.newBuilder(URI.create(base + "/" + path)).timeout(timeout);
        if (authValue != null) {
            b.header(authHeader, authValue);
        }
        return b;
    }

    @Override
    public void put(String key, byte[] data, Map<String, String> metadata) {
        Pointer.checkKey(key);
        String sum = Pointer.sha256Of(data);
        HttpRequest.Builder b = request(key).PUT(HttpRequest.BodyPublishers.ofByteArray(data))
                .header("Content-Type", "application/octet-stream").header(SHA256, sum);
        metadata.forEach((k, v) -> b.header("X-Offloader-Meta-" + k, v));
        HttpResponse<Void> resp = send("put", key, b.build(), HttpResponse.BodyHandlers.discarding());
        if (resp.statusCode() / 100 != 2) {
            throw failure("put", key, resp.statusCode());
        }
    }

    @Override
    public byte[] get(String key, long limit) {
        Pointer.checkKey(key);
        HttpResponse<InputStream> resp = send("get", key, request(key).GET().build(), HttpResponse.BodyHandlers.ofInputStream());
        try (InputStream body = resp.body()) {
            if (resp.statusCode() != 200) {
                throw failure("get", key, resp.statusCode());
            }
            long length = resp.headers().firstValueAsLong("Content-Length").orElse(-1);
            if (length > limit) {
                throw new PointerException(PointerException.Reason.CHECKSUM, "http store: " + key + " holds " + length + " bytes, more than the " + limit + " expected");
            }
            byte[] data = body.readNBytes((int) Math.min(limit + 1, Integer.MAX_VALUE - 8));
            if (length >= 0 && data.length != length) {
                throw new PayloadStoreException("http store: get " + key + ": the body has " + data.length + " bytes, Content-Length said " + length, true, null);
            }
            String want = resp.headers().firstValue(SHA256).orElse(null);
            if (want != null && !want.equals(Pointer.sha256Of(data))) {
                throw new PayloadStoreException("http store: get " + key + ": the body does not match the server's " + SHA256, true, null);
            }
            return data;
        } catch (IOException e) {
            throw new PayloadStoreException("http store: get " + key + ": " + e, true, e);
        }
    }

    private <T> HttpResponse<T> send(String op, String key, HttpRequest req, HttpResponse.BodyHandler<T> handler) {
        try {
            return client.send(req, handler);
        } catch (IOException e) {
            throw new PayloadStoreException("http store: " + op + " " + key + ": " + e, true, e);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            throw new PayloadStoreException("http store: " + op + " " + key + ": interrupted", false, e);
        }
    }

    private static PayloadStoreException failure(String op, String key, int status) {
        if (status == 404 && op.equals("get")) {
            return new PayloadNotFoundException("http store: no object " + key);
        }
        boolean retriable = status == 408 || status == 429 || (status >= 500 && status != 501);
        return new PayloadStoreException("http store: " + op + " " + key + ": HTTP " + status, retriable, null);
    }

}
