package io.offloader.serde.bench;

import com.bakdata.kafka.LargeMessageSerde;
import io.offloader.serde.LargeMessageDeserializer;
import io.offloader.serde.LargeMessageSerializer;
import java.time.Duration;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Properties;
import java.util.Random;
import org.apache.kafka.clients.consumer.KafkaConsumer;
import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.serialization.ByteArrayDeserializer;
import org.apache.kafka.common.serialization.ByteArraySerializer;
import org.apache.kafka.common.serialization.Deserializer;
import org.apache.kafka.common.serialization.Serde;
import org.apache.kafka.common.serialization.Serdes;
import org.apache.kafka.common.serialization.Serializer;

/**
 * Reads N records of 1 MiB stored in S3 through offloader's deserializer and
 * through bakdata's large-message-serde, each its own records (written by its own
 * serializer, to its own bucket of the same S3 store), best of three reads each
 * (integration/bench_clients_test.go runs it: make bench).
 *
 * <pre>
 * DeserializerBench BOOTSTRAP S3_ENDPOINT BAKDATA_TOPIC BAKDATA_BUCKET OFFLOADER_TOPIC OFFLOADER_BUCKET N
 * </pre>
 */
public final class DeserializerBench {
    private DeserializerBench() {
    }

    public static void main(String[] args) throws Exception {
        String bootstrap = args[0], endpoint = args[1];
        int n = Integer.parseInt(args[6]);
        Map<String, Object> bakdata = new HashMap<>(Map.of("large.message.base.path", "s3://" + args[3] + "/",
                "large.message.max.byte.size", 65536, "large.message.s3.endpoint", endpoint, "large.message.s3.region", "us-east-1",
                "large.message.s3.access.key", "test", "large.message.s3.secret.key", "test", "large.message.s3.path.style.access", "true",
                "large.message.value.serde", Serdes.ByteArraySerde.class.getName()));
        Map<String, Object> offloader = new HashMap<>(Map.of("large.message.payload.store.class", "s3", "s3.bucket", args[5],
                "s3.endpoint", endpoint, "s3.region", "us-east-1", "s3.path.style", "true", "large.message.threshold.bytes", 65536));
        Serde<byte[]> bakdataSerde = new LargeMessageSerde<>();
        bakdataSerde.configure(bakdata, false);
        LargeMessageSerializer ours = new LargeMessageSerializer();
        ours.configure(offloader, false);
        write(bootstrap, args[2], n, bakdataSerde.serializer());
        write(bootstrap, args[4], n, ours);
        double bestBakdata = 0, bestOffloader = 0;
        for (int round = 0; round < 3; round++) {
            LargeMessageDeserializer d = new LargeMessageDeserializer();
            d.configure(offloader, false);
            bestOffloader = Math.max(bestOffloader, read(bootstrap, args[4], n, d));
            Serde<byte[]> s = new LargeMessageSerde<>();
            s.configure(bakdata, false);
            bestBakdata = Math.max(bestBakdata, read(bootstrap, args[2], n, s.deserializer()));
        }
        report("offloader", bestOffloader);
        report("bakdata", bestBakdata);
    }

    private static void report(String who, double recordsPerSecond) {
        System.out.printf("%s: %.1f records/s, %.1f MB/s%n", who, recordsPerSecond, recordsPerSecond * (1 << 20) / 1e6);
    }

    private static void write(String bootstrap, String topic, int n, Serializer<byte[]> values) throws Exception {
        Properties p = new Properties();
        p.put("bootstrap.servers", bootstrap);
        p.put("max.request.size", "2097152");
        Random random = new Random(1);
        try (KafkaProducer<byte[], byte[]> producer = new KafkaProducer<>(p, new ByteArraySerializer(), values)) {
            for (int i = 0; i < n; i++) {
                byte[] v = new byte[1 << 20];
                random.nextBytes(v);
                producer.send(new ProducerRecord<>(topic, v)).get();
            }
        }
    }

    /** Reads n records of topic from its beginning; returns records per second. */
    private static double read(String bootstrap, String topic, int n, Deserializer<byte[]> values) {
        Properties p = new Properties();
        p.put("bootstrap.servers", bootstrap);
        p.put("enable.auto.commit", "false");
        p.put("max.partition.fetch.bytes", "1048576");
        TopicPartition tp = new TopicPartition(topic, 0);
        try (KafkaConsumer<byte[], byte[]> c = new KafkaConsumer<>(p, new ByteArrayDeserializer(), values)) {
            c.assign(List.of(tp));
            c.seekToBeginning(List.of(tp));
            long start = System.nanoTime();
            int got = 0;
            long bytes = 0;
            while (got < n) {
                for (var r : c.poll(Duration.ofMillis(200))) {
                    got++;
                    bytes += r.value().length;
                }
            }
            double seconds = (System.nanoTime() - start) / 1e9;
            if (bytes != (long) n << 20) {
                throw new IllegalStateException(topic + ": read " + bytes + " bytes, want " + ((long) n << 20));
            }
            return n / seconds;
        }
    }
}
