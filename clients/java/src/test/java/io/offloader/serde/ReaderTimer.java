package io.offloader.serde;

import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.UUID;
import java.util.function.Function;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.clients.consumer.ConsumerRecords;
import org.apache.kafka.clients.consumer.KafkaConsumer;
import org.apache.kafka.common.TopicPartition;
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
 * LargeMessageConsumer; each record's value must come back. Both read the
 * topic's partitions assigned from their beginning (no group join), twice:
 * once for the JIT to warm up, as in a consumer that has run a while, then
 * timed. It prints {"seconds": S, "peak_rss_mib": M}: S from the first poll of
 * the second pass to its last record resolved, M the process's VmHWM.
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
        double seconds;
        if (prefetch) {
            KafkaConsumer<byte[], byte[]> kc = new KafkaConsumer<>(c, new ByteArrayDeserializer(), new ByteArrayDeserializer());
            List<TopicPartition> all = assignAll(kc, topic);
            try (var lc = new LargeMessageConsumer<>(kc, settings, new ByteArrayDeserializer())) {
                read(lc::poll, n); // the JIT warms up, as in a consumer that has run a while
                kc.seekToBeginning(all);
                seconds = read(lc::poll, n);
            }
        } else {
            LargeMessageDeserializer d = new LargeMessageDeserializer();
            d.configure(c, false);
            try (KafkaConsumer<byte[], byte[]> kc = new KafkaConsumer<>(c, new ByteArrayDeserializer(), d)) {
                List<TopicPartition> all = assignAll(kc, topic);
                read(kc::poll, n);
                kc.seekToBeginning(all);
                seconds = read(kc::poll, n);
            }
        }
        System.out.printf("{\"seconds\": %.3f, \"peak_rss_mib\": %.1f}%n", seconds, peakRssMiB());
    }

    private static List<TopicPartition> assignAll(KafkaConsumer<byte[], byte[]> kc, String topic) {
        List<TopicPartition> all = kc.partitionsFor(topic).stream().map(p -> new TopicPartition(topic, p.partition())).toList();
        kc.assign(all);
        kc.seekToBeginning(all);
        return all;
    }

    /** VmHWM of /proc/self/status: the peak RSS of this process since its exec. */
    private static double peakRssMiB() {
        try {
            for (String line : Files.readAllLines(Path.of("/proc/self/status"))) {
                if (line.startsWith("VmHWM:")) {
                    return Long.parseLong(line.replaceAll("[^0-9]", "")) / 1024.0;
                }
            }
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        }
        throw new IllegalStateException("no VmHWM in /proc/self/status");
    }

    /** Reads n records through poll, each with its value; returns the seconds from the first poll to the last record. */
    private static double read(Function<Duration, ConsumerRecords<byte[], byte[]>> poll, int n) {
        long start = System.nanoTime();
        long deadline = start + Duration.ofMinutes(10).toNanos();
        for (int got = 0; got < n;) {
            if (System.nanoTime() > deadline) {
                throw new IllegalStateException("read " + got + " of " + n + " records in 10 minutes");
            }
            for (ConsumerRecord<byte[], byte[]> r : poll.apply(Duration.ofMillis(500))) {
                got++;
                require(r);
            }
        }
        return (System.nanoTime() - start) / 1e9;
    }

    private static void require(ConsumerRecord<byte[], byte[]> r) {
        if (r.value() == null || r.value().length == 0) {
            throw new IllegalStateException("record at " + r.partition() + "/" + r.offset() + " came back without its value");
        }
    }
}
