package io.offloader.serde;

import java.util.Map;
import org.apache.kafka.common.config.ConfigException;

/** Reads a store's settings from a client's configuration map. */
final class StoreConfig {
    private final Map<String, ?> configs;

    StoreConfig(Map<String, ?> configs) {
        this.configs = configs;
    }

    String get(String name, String fallback) {
        Object v = configs.get(name);
        return v == null ? fallback : v.toString();
    }

    String required(String name, String what) {
        String v = get(name, "");
        if (v.isEmpty()) {
            throw new ConfigException(name, null, "is required: " + what);
        }
        return v;
    }

    long number(String name, long fallback) {
        String v = get(name, "");
        if (v.isEmpty()) {
            return fallback;
        }
        try {
            return Long.parseLong(v.trim());
        } catch (NumberFormatException e) {
            throw new ConfigException(name, v, "must be a whole number");
        }
    }

    boolean flag(String name) {
        String v = get(name, "false").trim();
        if (!v.equals("true") && !v.equals("false")) {
            throw new ConfigException(name, v, "must be true or false");
        }
        return v.equals("true");
    }

    /** The store's time budget for one call, retries included. */
    java.time.Duration timeout() {
        return java.time.Duration.ofMillis(number(LargeMessageConfig.STORE_TIMEOUT_MS, LargeMessageConfig.DEFAULT_STORE_TIMEOUT_MS));
    }
}
