package io.offloader.serde;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertInstanceOf;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.junit.jupiter.api.Assertions.fail;

import com.azure.core.util.BinaryData;
import com.azure.storage.blob.BlobContainerClient;
import com.azure.storage.blob.BlobServiceClientBuilder;
import java.time.Duration;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Random;
import java.util.Set;
import java.util.TreeMap;
import java.util.UUID;
import java.util.concurrent.TimeUnit;
import org.apache.kafka.clients.admin.Admin;
import org.apache.kafka.clients.admin.NewTopic;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.clients.consumer.ConsumerRecords;
import org.apache.kafka.clients.consumer.KafkaConsumer;
import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.errors.RecordDeserializationException;
import org.apache.kafka.common.header.internals.RecordHeaders;
import org.apache.kafka.common.serialization.ByteArrayDeserializer;
import org.apache.kafka.common.serialization.ByteArraySerializer;
import org.apache.kafka.common.serialization.StringDeserializer;
import org.apache.kafka.common.serialization.StringSerializer;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;

/**
 * LargeMessageConsumer on the broker and Azurite that make test starts
 * (TEST_KAFKA_BOOTSTRAP, TEST_AZURE_CONNECTION_STRING).
 */
class LargeMessageConsumerTest {
    private String bootstrap;
    private String connectionString;
    private String container;
    private BlobContainerClient blobs;
    private Admin admin;
    private final List<String> topics = new ArrayList<>();

    @BeforeEach
    void services() {
        bootstrap = System.getenv("TEST_KAFKA_BOOTSTRAP");
        connectionString = System.getenv("TEST_AZURE_CONNECTION_STRING");
        assertNotNull(bootstrap, "Kafka is not running: run these tests with make test, or scripts/with-services.sh mvn test");
        assertNotNull(connectionString, "Azurite is not running: run these tests with make test, or scripts/with-services.sh mvn test");
        container = "java-consumer-" + UUID.randomUUID();
        blobs = new BlobServiceClientBuilder().connectionString(connectionString).buildClient().getBlobContainerClient(container);
        blobs.create();
        admin = Admin.create(Map.of("bootstrap.servers", bootstrap));
    }

    @AfterEach
    void cleanUp() throws Exception {
        admin.deleteTopics(topics).all().get(30, TimeUnit.SECONDS);
        admin.close();
        blobs.delete();
    }

    /** seconds from now on System.nanoTime's clock, TEST_SLOWDOWN times longer on a loaded machine (make test sets it). */
    private static long deadline(long seconds) {
        String f = System.getenv("TEST_SLOWDOWN");
        double factor = f == null || f.isEmpty() ? 1 : Math.max(1, Double.parseDouble(f));
        return System.nanoTime() + (long) (TimeUnit.SECONDS.toNanos(seconds) * factor);
    }

    private String topic(int partitions) throws Exception {
        String name = "java-consumer-" + UUID.randomUUID();
        admin.createTopics(List.of(new NewTopic(name, partitions, (short) 1))).all().get(30, TimeUnit.SECONDS);
        topics.add(name);
        return name;
    }

    private Map<String, Object> config(Object... more) {
        return AzuriteTest.azblobConfig(connectionString, container, 16 << 10, more);
    }

    /** Produces each value through the serializer (over 16 KiB: to Azurite) to partition i % partitions, keyed by i; returns the pointers (null: inline). */
    private List<Pointer> produce(String topic, int partitions, List<byte[]> values) throws Exception {
        LargeMessageSerializer s = new LargeMessageSerializer();
        s.configure(config(), false);
        List<Pointer> pointers = new ArrayList<>();
        try (KafkaProducer<String, byte[]> p = new KafkaProducer<>(Map.of("bootstrap.servers", bootstrap, "enable.idempotence", true),
                new StringSerializer(), new ByteArraySerializer())) {
            for (int i = 0; i < values.size(); i++) {
                RecordHeaders h = new RecordHeaders();
                byte[] v = s.serialize(topic, h, values.get(i));
                pointers.add(PointerResolver.isPointer(h) ? Pointer.parse(v) : null);
                p.send(new ProducerRecord<>(topic, i % partitions, String.valueOf(i), v, h)).get(30, TimeUnit.SECONDS);
            }
        }
        s.close();
        return pointers;
    }

    private LargeMessageConsumer<String, byte[]> consumer(String topic, String group, Map<String, Object> settings) {
        KafkaConsumer<String, byte[]> kc = new KafkaConsumer<>(Map.of("bootstrap.servers", bootstrap, "group.id", group, "auto.offset.reset", "earliest",
                "enable.auto.commit", false), new StringDeserializer(), new ByteArrayDeserializer());
        kc.subscribe(List.of(topic));
        return new LargeMessageConsumer<>(kc, settings, new ByteArrayDeserializer());
    }

    private static List<byte[]> randomValues(int n, long seed, java.util.function.IntUnaryOperator size) {
        Random r = new Random(seed);
        List<byte[]> values = new ArrayList<>();
        for (int i = 0; i < n; i++) {
            byte[] v = new byte[size.applyAsInt(i)];
            r.nextBytes(v);
            values.add(v);
        }
        return values;
    }

    @Test
    void recordsComeInPartitionOrderWithinTheByteBound() throws Exception {
        String topic = topic(2);
        // Interleaved sizes: every third value 1 MiB and offloaded, the others 1 KiB and inline.
        List<byte[]> values = randomValues(60, 5, i -> i % 3 == 0 ? (1 << 20) + i : 1024);
        produce(topic, 2, values);
        long bound = 3L << 20;
        Map<Integer, List<Long>> offsets = new TreeMap<>();
        int read = 0;
        try (var c = consumer(topic, "g-" + UUID.randomUUID(), config(LargeMessageConsumer.PREFETCH_BYTES, bound))) {
            long deadline = deadline(120);
            while (read < values.size()) {
                assertTrue(System.nanoTime() < deadline, "read " + read + " of " + values.size() + " records");
                ConsumerRecords<String, byte[]> polled = c.poll(Duration.ofMillis(500));
                long held = 0;
                for (ConsumerRecord<String, byte[]> r : polled) {
                    assertArrayEquals(values.get(Integer.parseInt(r.key())), r.value(), "record " + r.key());
                    offsets.computeIfAbsent(r.partition(), p -> new ArrayList<>()).add(r.offset());
                    held += r.value().length;
                    read++;
                }
                assertTrue(held <= bound, "one poll returned " + held + " bytes of values, over the bound of " + bound);
                c.consumer().commitSync();
            }
            var committed = c.consumer().committed(Set.of(new TopicPartition(topic, 0), new TopicPartition(topic, 1)));
            assertEquals(30, committed.get(new TopicPartition(topic, 0)).offset());
            assertEquals(30, committed.get(new TopicPartition(topic, 1)).offset());
        }
        assertEquals(60, read);
        for (List<Long> o : offsets.values()) {
            for (int i = 0; i < o.size(); i++) {
                assertEquals(i, o.get(i), "partition offsets out of order or repeated: " + o);
            }
        }
    }

    @Test
    void aMissingOrCorruptObjectFailsItsRecordAlone() throws Exception {
        String topic = topic(1);
        List<byte[]> values = randomValues(10, 7, i -> 100 << 10);
        List<Pointer> pointers = produce(topic, 1, values);
        blobs.getBlobClient(pointers.get(3).key()).delete();
        byte[] wrong = values.get(6).clone();
        wrong[0] ^= 1;
        blobs.getBlobClient(pointers.get(6).key()).upload(BinaryData.fromBytes(wrong), true);

        // The error policy: each failure is thrown on its own record, which a seek skips.
        List<Integer> read = new ArrayList<>();
        try (var c = consumer(topic, "g-" + UUID.randomUUID(), config())) {
            List<Long> failed = new ArrayList<>();
            long deadline = deadline(120);
            while (read.size() + failed.size() < values.size()) {
                assertTrue(System.nanoTime() < deadline, "read " + read + ", failed at " + failed);
                try {
                    for (ConsumerRecord<String, byte[]> r : c.poll(Duration.ofMillis(500))) {
                        assertArrayEquals(values.get(Integer.parseInt(r.key())), r.value(), "record " + r.key());
                        read.add(Integer.parseInt(r.key()));
                    }
                } catch (RecordDeserializationException e) {
                    failed.add(e.offset());
                    TopicPartition tp = new TopicPartition(topic, 0);
                    assertEquals(e.offset(), c.consumer().position(tp), "the partition is positioned on the failed record");
                    Throwable cause = e.getCause().getCause();
                    if (e.offset() == 3) {
                        assertInstanceOf(PayloadNotFoundException.class, cause);
                    } else {
                        assertEquals(PointerException.Reason.CHECKSUM, assertInstanceOf(PointerException.class, cause).reason());
                    }
                    assertTrue(e.getMessage().contains("at offset " + e.offset()), e.getMessage());
                    c.consumer().seek(tp, e.offset() + 1);
                }
            }
            assertEquals(List.of(3L, 6L), failed);
        }
        assertEquals(List.of(0, 1, 2, 4, 5, 7, 8, 9), read);

        // The skip policy: the gone object's record reads as null; the corrupt one still fails.
        try (var c = consumer(topic, "g-" + UUID.randomUUID(), config(LargeMessageConfig.SKIP_NOT_FOUND, "true"))) {
            Map<Integer, byte[]> got = new TreeMap<>();
            long deadline = deadline(120);
            while (got.size() < 6) {
                assertTrue(System.nanoTime() < deadline, "read " + got.keySet());
                c.poll(Duration.ofMillis(500)).forEach(r -> got.put(Integer.parseInt(r.key()), r.value()));
            }
            assertEquals(Set.of(0, 1, 2, 3, 4, 5), got.keySet());
            assertNull(got.get(3));
            RecordDeserializationException e = null;
            while (e == null) {
                assertTrue(System.nanoTime() < deadline, "record 6 did not fail");
                try {
                    assertEquals(0, c.poll(Duration.ofMillis(500)).count(), "a record after the corrupt one came before it");
                } catch (RecordDeserializationException failed) {
                    e = failed;
                }
            }
            assertEquals(6, e.offset());
        }
    }

    @Test
    void aRebalanceNeitherLosesNorDuplicatesForACommittingConsumer() throws Exception {
        String topic = topic(4);
        List<byte[]> values = randomValues(200, 9, i -> 20 << 10);
        produce(topic, 4, values);
        String group = "g-" + UUID.randomUUID();
        Map<String, Integer> seen = new HashMap<>();
        var small = config(LargeMessageConsumer.PREFETCH_BYTES, 200 << 10); // 10 records a poll: the rebalance lands mid-way
        try (var a = consumer(topic, group, small)) {
            long deadline = deadline(120);
            while (seen.size() < 40) {
                assertTrue(System.nanoTime() < deadline, "consumer a read " + seen.size());
                drain(a, values, seen);
            }
            // a stops taking records, so that b joins while records are left for both.
            a.consumer().pause(a.consumer().assignment());
            try (var b = consumer(topic, group, small)) {
                int byB = 0;
                while (b.consumer().assignment().isEmpty()) {
                    assertTrue(System.nanoTime() < deadline, "consumer b got no partition");
                    drain(a, values, seen); // it takes part in the rebalance
                    byB += drain(b, values, seen);
                }
                a.consumer().resume(a.consumer().paused());
                while (seen.size() < values.size()) {
                    assertTrue(System.nanoTime() < deadline, "read " + seen.size() + " of " + values.size());
                    drain(a, values, seen);
                    byB += drain(b, values, seen);
                }
                assertTrue(byB > 0, "consumer b read nothing after the rebalance");
            }
        }
        seen.forEach((k, n) -> {
            if (n != 1) {
                fail("record " + k + " read " + n + " times");
            }
        });
        assertEquals(values.size(), seen.size());
    }

    /** Polls c once, checks and counts what it returned, commits; returns how many records it read. */
    private static int drain(LargeMessageConsumer<String, byte[]> c, List<byte[]> values, Map<String, Integer> seen) {
        ConsumerRecords<String, byte[]> polled = c.poll(Duration.ofMillis(200));
        for (ConsumerRecord<String, byte[]> r : polled) {
            assertArrayEquals(values.get(Integer.parseInt(r.key())), r.value(), "record " + r.key());
            seen.merge(r.key(), 1, Integer::sum);
        }
        c.consumer().commitSync();
        return polled.count();
    }

    @Test
    void sixtyFourPayloadsOf16MiBInOnePollStayWithinTheBound() throws Exception {
        String topic = topic(1);
        byte[] value = randomValues(1, 13, i -> 16 << 20).get(0);
        LargeMessageSerializer s = new LargeMessageSerializer();
        s.configure(config(), false);
        RecordHeaders h = new RecordHeaders();
        byte[] pointer = s.serialize(topic, h, value);
        s.close();
        // 64 pointers to one 16 MiB object: 1 GiB of payloads, which one poll of the consumer gets at once.
        try (KafkaProducer<String, byte[]> p = new KafkaProducer<>(Map.of("bootstrap.servers", bootstrap), new StringSerializer(), new ByteArraySerializer())) {
            for (int i = 0; i < 64; i++) {
                p.send(new ProducerRecord<>(topic, 0, String.valueOf(i), pointer, h));
            }
            p.flush();
        }
        String sha = Pointer.sha256Of(value);
        int read = 0;
        try (var c = consumer(topic, "g-" + UUID.randomUUID(), config())) {
            long deadline = deadline(180);
            while (read < 64) {
                assertTrue(System.nanoTime() < deadline, "read " + read + " of 64");
                ConsumerRecords<String, byte[]> polled = c.poll(Duration.ofMillis(500));
                assertTrue(polled.count() <= 4, "one poll returned " + polled.count() + " payloads of 16 MiB, over the 64 MiB bound");
                for (ConsumerRecord<String, byte[]> r : polled) {
                    assertEquals(String.valueOf(read), r.key());
                    assertEquals(sha, Pointer.sha256Of(r.value()));
                    read++;
                }
            }
        }
    }
}
