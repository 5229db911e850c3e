package io.offloader.serde;

import java.util.Map;
import org.apache.kafka.common.serialization.Deserializer;
import org.apache.kafka.common.serialization.Serde;
import org.apache.kafka.common.serialization.Serializer;

/** {@link LargeMessageSerializer} and {@link LargeMessageDeserializer} as one Serde (Kafka Streams). */
public class LargeMessageSerde implements Serde<byte[]> {
    private final LargeMessageSerializer serializer = new LargeMessageSerializer();
    private final LargeMessageDeserializer deserializer = new LargeMessageDeserializer();

    @Override
    public void configure(Map<String, ?> configs, boolean isKey) {
        serializer.configure(configs, isKey);
        deserializer.configure(configs, isKey);
    }

    @Override
    public Serializer<byte[]> serializer() {
        return serializer;
    }

    @Override
    public Deserializer<byte[]> deserializer() {
        return deserializer;
    }

    @Override
    public void close() {
        serializer.close();
        deserializer.close();
    }
}
