package io.offloader.serde;

import java.nio.ByteBuffer;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Properties;
import org.apache.avro.Schema;
import org.apache.avro.generic.GenericDatumReader;
import org.apache.avro.generic.GenericRecord;
import org.apache.avro.io.DecoderFactory;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.clients.consumer.KafkaConsumer;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.serialization.ByteArrayDeserializer;

/**
 * The Java end of the schema-registry chain (integration/python_test.go): reads a
 * topic's one partition through {@link LargeMessageDeserializer}, then decodes each
 * value in the Confluent wire format (magic byte 0, the 4-byte schema id, the Avro
 * body) with Apache Avro and the writer's schema, as KafkaAvroDeserializer does
 * with the schema its registry gives for the id. It prints a JSON line per record:
 * the order's id and the SHA-256 of its body, and for a pointer record whether the
 * same decoding of the pointer itself was refused.
 *
 * <pre>
 * AvroChainTool BOOTSTRAP TOPIC N SCHEMA_ID SCHEMA_JSON [SETTING=VALUE ...]
 * </pre>
 */
public final class AvroChainTool {
    private AvroChainTool() {
    }

    public static void main(String[] args) {
        String bootstrap = args[0], topic = args[1];
        int n = Integer.parseInt(args[2]), schemaId = Integer.parseInt(args[3]);
        Schema schema = new Schema.Parser().parse(args[4]);
        Map<String, Object> settings = new HashMap<>();
        for (int i = 5; i < args.length; i++) {
            String[] kv = args[i].split("=", 2);
            settings.put(kv[0], kv[1]);
        }
        LargeMessageDeserializer resolve = new LargeMessageDeserializer();
        resolve.configure(settings, false);
        Properties p = new Properties();
        p.put("bootstrap.servers", bootstrap);
        p.put("isolation.level", "read_committed");
        p.put("enable.auto.commit", "false");
        try (KafkaConsumer<byte[], byte[]> c = new KafkaConsumer<>(p, new ByteArrayDeserializer(), new ByteArrayDeserializer())) {
            TopicPartition tp = new TopicPartition(topic, 0);
            c.assign(List.of(tp));
            c.seekToBeginning(List.of(tp));
            int read = 0;
            while (read < n) {
                for (ConsumerRecord<byte[], byte[]> r : c.poll(Duration.ofMillis(500))) {
                    read++;
                    GenericRecord order = decode(resolve.deserialize(topic, r.headers(), r.value()), schemaId, schema);
                    String pointer = "";
                    if (PointerResolver.isPointer(r.headers())) {
                        boolean refused;
                        try {
                            decode(r.value(), schemaId, schema);
                            refused = false;
                        } catch (IllegalArgumentException e) {
                            refused = true;
                        }
                        pointer = ",\"pointer_refused\":" + refused;
                    }
                    String body = order.get("body").toString();
                    System.out.printf("{\"id\":%s,\"body_sha256\":\"%s\"%s}%n", order.get("id"),
                            Pointer.sha256Of(body.getBytes(StandardCharsets.UTF_8)), pointer);
                }
            }
        }
        resolve.close();
    }

    /** A Confluent wire format value: magic byte 0, the schema id, the Avro body. */
    static GenericRecord decode(byte[] value, int schemaId, Schema schema) {
        if (value == null || value.length < 5 || value[0] != 0) {
            throw new IllegalArgumentException("not the Confluent wire format: unknown magic byte");
        }
        int id = ByteBuffer.wrap(value, 1, 4).getInt();
        if (id != schemaId) {
            throw new IllegalArgumentException("schema id " + id + ", want " + schemaId);
        }
        try {
            return new GenericDatumReader<GenericRecord>(schema).read(null, DecoderFactory.get().binaryDecoder(value, 5, value.length - 5, null));
        } catch (java.io.IOException e) {
            throw new IllegalArgumentException("the Avro body does not decode: " + e, e);
        }
    }
}
