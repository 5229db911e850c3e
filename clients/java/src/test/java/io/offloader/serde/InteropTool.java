package io.offloader.serde;

import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Properties;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.clients.consumer.KafkaConsumer;
import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.errors.RecordDeserializationException;
import org.apache.kafka.common.serialization.ByteArrayDeserializer;
import org.apache.kafka.common.serialization.ByteArraySerializer;

/**
 * The Java side of the interoperability tests (integration/interop_test.go), run
 * by them with the test classpath:
 *
 * <pre>
 * InteropTool read BOOTSTRAP TOPIC [SETTING=VALUE ...]    one JSON line per record: its value's size and SHA-256, or the class of its refusal
 * InteropTool write BOOTSTRAP TOPIC N [SETTING=VALUE ...] N records keyed "0".."N-1" (every 5th 300 KiB, the others 2 KiB), one JSON line each
 * </pre>
 *
 * SETTING=VALUE pairs configure the serializer or deserializer (large.message.*, the store's).
 */
public final class InteropTool {
    private InteropTool() {
    }

    /** The value of record i, as the Go tests compute it too. */
    static byte[] value(int i) {
        byte[] v = new byte[i % 5 == 0 ? 300 << 10 : 2 << 10];
        for (int j = 0; j < v.length; j++) {
            v[j] = (byte) ('a' + (i + j / 1024) % 26);
        }
        return v;
    }

    public static void main(String[] args) throws Exception {
        Map<String, Object> settings = new HashMap<>();
        for (int i = args[0].equals("write") ? 4 : 3; i < args.length; i++) {
            String[] kv = args[i].split("=", 2);
            settings.put(kv[0], kv[1]);
        }
        if (args[0].equals("write")) {
            write(args[1], args[2], Integer.parseInt(args[3]), settings);
        } else {
            read(args[1], args[2], settings);
        }
    }

    static void write(String bootstrap, String topic, int n, Map<String, Object> settings) throws Exception {
        Properties p = new Properties();
        p.putAll(settings);
        p.put("bootstrap.servers", bootstrap);
        p.put("enable.idempotence", "true");
        p.put("max.request.size", "1048576");
        try (KafkaProducer<byte[], byte[]> producer = new KafkaProducer<>(p, new ByteArraySerializer(), configured(new LargeMessageSerializer(), p))) {
            for (int i = 0; i < n; i++) {
                byte[] v = value(i);
                producer.send(new ProducerRecord<>(topic, String.valueOf(i).getBytes(StandardCharsets.UTF_8), v)).get();
                System.out.printf("{\"key\":\"%d\",\"size\":%d,\"sha256\":\"%s\"}%n", i, v.length, Pointer.sha256Of(v));
            }
        }
    }

    static LargeMessageSerializer configured(LargeMessageSerializer s, Properties p) {
        Map<String, Object> m = new HashMap<>();
        p.forEach((k, v) -> m.put((String) k, v));
        s.configure(m, false);
        return s;
    }

    static void read(String bootstrap, String topic, Map<String, Object> settings) {
        Properties p = new Properties();
        p.putAll(settings);
        p.put("bootstrap.servers", bootstrap);
        p.put("isolation.level", "read_committed");
        p.put("enable.auto.commit", "false");
        p.put("group.id", "interop-tool");
        Map<String, Object> m = new HashMap<>();
        p.forEach((k, v) -> m.put((String) k, v));
        LargeMessageDeserializer d = new LargeMessageDeserializer();
        d.configure(m, false);
        try (KafkaConsumer<byte[], byte[]> c = new KafkaConsumer<>(p, new ByteArrayDeserializer(), d)) {
            List<TopicPartition> parts = new ArrayList<>();
            c.partitionsFor(topic).forEach(info -> parts.add(new TopicPartition(topic, info.partition())));
            c.assign(parts);
            c.seekToBeginning(parts);
            Map<TopicPartition, Long> end = c.endOffsets(parts);
            while (parts.stream().anyMatch(tp -> c.position(tp) < end.get(tp))) {
                try {
                    for (ConsumerRecord<byte[], byte[]> r : c.poll(Duration.ofMillis(500))) {
                        String key = r.key() == null ? "null" : "\"" + new String(r.key(), StandardCharsets.UTF_8) + "\"";
                        String size = r.value() == null ? "null" : String.valueOf(r.value().length);
                        String sha = r.value() == null ? "null" : "\"" + Pointer.sha256Of(r.value()) + "\"";
                        System.out.printf("{\"partition\":%d,\"offset\":%d,\"key\":%s,\"size\":%s,\"sha256\":%s}%n", r.partition(), r.offset(), key, size, sha);
                    }
                } catch (RecordDeserializationException e) {
                    Throwable cause = e;
                    while (cause != null && !(cause instanceof PointerException) && !(cause instanceof PayloadStoreException)) {
                        cause = cause.getCause();
                    }
                    String refused = cause == null ? "other: " + e : VectorsTest.classOf((RuntimeException) cause);
                    System.out.printf("{\"partition\":%d,\"offset\":%d,\"refused\":\"%s\"}%n", e.topicPartition().partition(), e.offset(), refused);
                    c.seek(e.topicPartition(), e.offset() + 1);
                }
            }
        }
    }
}
