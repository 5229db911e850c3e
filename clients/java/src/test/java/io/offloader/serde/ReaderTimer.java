package io.offloader.serde;

import java.time.Duration;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.UUID;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.clients.consumer.KafkaConsumer;
import org.apache.kafka.common.serialization.ByteArrayDeserializer;

/**
 * Times the Java readers of a slim topic for the readers' benchmark
 * (integration/bench_readers_test.go), run by it with the test classpath:
 *
 * <pre>
 * ReaderTimer BOOTSTRAP TOPIC N sequential|prefetch [SETTING=VALUE ...]
 * </pre>
 *
 * sequential reads N records through a KafkaConsumer with the
 * LargeMessageDeserializer (one payload at a time), prefetch through the
 * LargeMessageConsumer; each record's value must come back. It prints
 * {"seconds": S}: from the first record received to the last resolved.
 */
public final class ReaderTimer {
    private ReaderTimer() {
    }

    public static void main(String[] args) {
        String bootstrap = args[0];
        String topic = args[1];
        int n = Integer.parseInt(args[2]);
        boolean prefetch = args[3].equals("prefetch");
        Map<String, Object> settings = new HashMap<>();
        for (int i = 4; i < args.length; i++) {
            String[] kv = args[i].split("=", 2);
            settings.put(kv[0], kv[1]);
        }
        Map<String, Object> c = new HashMap<>(settings);
        c.putAll(Map.of("bootstrap.servers", bootstrap, "group.id", "reader-timer-" + UUID.randomUUID(), "auto.offset.reset", "earliest",
                "isolation.level", "read_committed", "enable.auto.commit", "false"));
        long start = 0;
        int got = 0;
        long deadline = System.nanoTime() + Duration.ofMinutes(10).toNanos();
        if (prefetch) {
            KafkaConsumer<byte[], byte[]> kc = new KafkaConsumer<>(c, new ByteArrayDeserializer(), new ByteArrayDeserializer());
            kc.subscribe(List.of(topic));
            try (var lc = new LargeMessageConsumer<>(kc, settings, new ByteArrayDeserializer())) {
                while (got < n) {
                    check(deadline, got, n);
                    for (ConsumerRecord<byte[], byte[]> r : lc.poll(Duration.ofMillis(500))) {
                        start = got++ == 0 ? System.nanoTime() : start;
                        require(r);
                    }
                }
            }
        } else {
            LargeMessageDeserializer d = new LargeMessageDeserializer();
            d.configure(c, false);
            try (KafkaConsumer<byte[], byte[]> kc = new KafkaConsumer<>(c, new ByteArrayDeserializer(), d)) {
                kc.subscribe(List.of(topic));
                while (got < n) {
                    check(deadline, got, n);
                    for (ConsumerRecord<byte[], byte[]> r : kc.poll(Duration.ofMillis(500))) {
                        start = got++ == 0 ? System.nanoTime() : start;
                        require(r);
                    }
                }
            }
        }
        System.out.printf("{\"seconds\": %.3f}%n", (System.nanoTime() - start) / 1e9);
    }

    private static void check(long deadline, int got, int n) {
        if (System.nanoTime() > deadline) {
            throw new IllegalStateException("read " + got + " of " + n + " records in 10 minutes");
        }
    }

    private static void require(ConsumerRecord<byte[], byte[]> r) {
        if (r.value() == null || r.value().length == 0) {
            throw new IllegalStateException("record at " + r.partition() + "/" + r.offset() + " came back without its value");
        }
    }
}
