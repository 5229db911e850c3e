package io.offloader.connect;

import io.offloader.serde.LargeMessageConfig;
import io.offloader.serde.LargeMessageDeserializer;
import io.offloader.serde.LargeMessageSerializer;
import java.util.HashMap;
import java.util.Map;
import org.apache.kafka.common.config.ConfigDef;
import org.apache.kafka.common.config.ConfigException;
import org.apache.kafka.common.errors.SerializationException;
import org.apache.kafka.common.header.Headers;
import org.apache.kafka.connect.data.Schema;
import org.apache.kafka.connect.data.SchemaAndValue;
import org.apache.kafka.connect.errors.DataException;
import org.apache.kafka.connect.storage.Converter;

/**
 * A Kafka Connect value converter that speaks offloader's pointer format v1
 * around another converter, the delegate, as bakdata's large-message
 * converter does:
 *
 * <ul>
 *   <li>for sink connectors, {@code toConnectData} resolves a pointer record
 *       (headers {@code large-message: true}, {@code offloader-pointer: v1})
 *       to its original bytes, fetched from the store and verified by size
 *       and SHA-256 ({@link LargeMessageDeserializer}), and hands those to the
 *       delegate; any other record goes to the delegate as it is;</li>
 *   <li>for source connectors, {@code fromConnectData} has the delegate make
 *       the bytes, and a record estimated over
 *       {@code large.message.threshold.bytes} has its value stored and a
 *       pointer written instead ({@link LargeMessageSerializer}).</li>
 * </ul>
 *
 * <p>Settings, under the worker's or connector's {@code value.converter.}
 * prefix: {@code delegate.class}, the delegate converter (for example
 * {@code org.apache.kafka.connect.json.JsonConverter}); {@code delegate.*},
 * the delegate's own settings ({@code value.converter.delegate.schemas.enable=false});
 * and the serializer's and deserializer's settings ({@code large.message.*},
 * the store's). A pointer whose object is gone fails the record, or, with
 * {@code large.message.skip.not.found.error=true}, converts as a null value.
 * Keys are not offloaded: use it as the value converter.
 */
public class LargeMessageConverter implements Converter {
    /** The delegate converter's class. */
    public static final String DELEGATE_CLASS = "delegate.class";
    /** The prefix of the delegate's own settings. */
    public static final String DELEGATE_PREFIX = "delegate.";

    private Converter delegate;
    private LargeMessageSerializer serializer;
    private LargeMessageDeserializer deserializer;

    @Override
    public void configure(Map<String, ?> configs, boolean isKey) {
        if (isKey) {
            throw new ConfigException(LargeMessageConfig.STORE_CLASS, null,
                    "offloader's pointers replace values, not keys: use " + getClass().getSimpleName() + " as value.converter");
        }
        Object name = configs.get(DELEGATE_CLASS);
        if (name == null || name.toString().isBlank()) {
            throw new ConfigException(DELEGATE_CLASS, null,
                    "is required: the converter of the values' bytes, for example org.apache.kafka.connect.storage.StringConverter or org.apache.kafka.connect.json.JsonConverter");
        }
        delegate = instantiate(name.toString());
        Map<String, Object> own = new HashMap<>();
        configs.forEach((k, v) -> {
            if (k.startsWith(DELEGATE_PREFIX) && !k.equals(DELEGATE_CLASS)) {
                own.put(k.substring(DELEGATE_PREFIX.length()), v);
            }
        });
        delegate.configure(own, false);
        deserializer = new LargeMessageDeserializer();
        deserializer.configure(configs, false);
        serializer = new LargeMessageSerializer();
        serializer.configure(configs, false);
    }

    private static Converter instantiate(String name) {
        try {
            Object o = Class.forName(name, true, Thread.currentThread().getContextClassLoader()).getDeclaredConstructor().newInstance();
            if (!(o instanceof Converter c)) {
                throw new ConfigException(DELEGATE_CLASS, name, "does not implement " + Converter.class.getName());
            }
            return c;
        } catch (ReflectiveOperationException e) {
            throw new ConfigException(DELEGATE_CLASS, name, "cannot be created: " + e);
        }
    }

    /** Without the record's headers a pointer cannot be marked: a value over the threshold is refused. */
    @Override
    public byte[] fromConnectData(String topic, Schema schema, Object value) {
        return fromConnectData(topic, null, schema, value);
    }

    @Override
    public byte[] fromConnectData(String topic, Headers headers, Schema schema, Object value) {
        byte[] data = headers == null ? delegate.fromConnectData(topic, schema, value) : delegate.fromConnectData(topic, headers, schema, value);
        try {
            return serializer.serialize(topic, headers, data);
        } catch (SerializationException e) {
            throw new DataException(e.getMessage(), e);
        }
    }

    @Override
    public SchemaAndValue toConnectData(String topic, byte[] value) {
        return delegate.toConnectData(topic, value); // no headers: no pointer
    }

    @Override
    public SchemaAndValue toConnectData(String topic, Headers headers, byte[] value) {
        byte[] data;
        try {
            data = deserializer.deserialize(topic, headers, value);
        } catch (SerializationException e) {
            throw new DataException(e.getMessage(), e);
        }
        return delegate.toConnectData(topic, headers, data);
    }

    @Override
    public ConfigDef config() {
        return new ConfigDef().define(DELEGATE_CLASS, ConfigDef.Type.CLASS, ConfigDef.Importance.HIGH,
                "The converter of the values' bytes; its own settings go under delegate.");
    }

    @Override
    public void close() {
        try {
            if (serializer != null) {
                serializer.close();
            }
            if (deserializer != null) {
                deserializer.close();
            }
        } finally {
            if (delegate != null) {
                try {
                    delegate.close();
                } catch (java.io.IOException e) {
                    throw new DataException("closing the delegate converter: " + e.getMessage(), e);
                }
            }
        }
    }
}
