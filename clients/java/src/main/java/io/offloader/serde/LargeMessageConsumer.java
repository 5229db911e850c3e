package io.offloader.serde;

import java.io.Closeable;
import java.nio.ByteBuffer;
import java.time.Duration;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.atomic.AtomicInteger;
import org.apache.kafka.clients.consumer.Consumer;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.clients.consumer.ConsumerRecords;
import org.apache.kafka.clients.consumer.OffsetAndMetadata;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.config.ConfigException;
import org.apache.kafka.common.errors.InterruptException;
import org.apache.kafka.common.errors.RecordDeserializationException;
import org.apache.kafka.common.errors.RecordDeserializationException.DeserializationExceptionOrigin;
import org.apache.kafka.common.serialization.Deserializer;

/**
 * A {@link Consumer}'s poll whose pointer records come back resolved, their payloads
 * fetched several at once: a consumer of a slim topic reads at the store's
 * bandwidth, not at one object's latency per record.
 *
 * <p>Give it a consumer whose value deserializer is a {@code ByteArrayDeserializer}
 * (the key deserializer is yours), the {@link LargeMessageDeserializer}'s settings
 * and the deserializer of your values. {@link #poll} polls the consumer, fetches the
 * payloads of the records it got, at most 16 at once by default
 * ({@link #PREFETCH_OBJECTS}), verifies each by size and SHA-256, and returns them
 * deserialized, in each partition's order.
 *
 * <p>Kafka's contracts hold as they are, because the wrapper keeps no record
 * between polls:
 * <ul>
 * <li>{@code poll} returns only records whose values are resolved. Records of the
 * underlying poll whose payloads do not fit {@link #PREFETCH_BYTES} (64 MiB: the
 * most payload bytes one poll returns; a larger payload comes alone) are sought
 * back and come first in the next poll. After {@code poll}, each partition's
 * position is right after the last record returned, so auto-commit and
 * {@code commitSync()} commit what the application was given and nothing more.</li>
 * <li>Rebalance listeners run inside the consumer's poll as before: a revoked
 * partition has no record held anywhere.</li>
 * <li>A record that does not resolve (object gone, checksum, store failure) or that
 * the value deserializer refuses fails alone: the records before it are returned,
 * and the poll in which it comes first throws a
 * {@link RecordDeserializationException} naming its partition and offset, its
 * partition positioned on it, as KafkaConsumer does; {@code seek(partition,
 * offset + 1)} skips it. With {@code large.message.skip.not.found.error=true} a
 * record whose object is gone comes back with a null value instead.</li>
 * </ul>
 * Commit, seek, subscribe and the rest are the consumer's own: call them on
 * {@link #consumer()}. Use one thread, as with the consumer.
 *
 * @param <K> the key type
 * @param <V> the value type
 */
public final class LargeMessageConsumer<K, V> implements Closeable {
    /** Payloads fetched at once. Default 16. */
    public static final String PREFETCH_OBJECTS = "large.message.prefetch.objects";
    /** The most payload bytes one poll holds and returns (a larger payload comes alone). Default 67108864. */
    public static final String PREFETCH_BYTES = "large.message.prefetch.bytes";
    static final int DEFAULT_PREFETCH_OBJECTS = 16;
    static final long DEFAULT_PREFETCH_BYTES = 64L << 20;

    private final Consumer<K, byte[]> consumer;
    private final Deserializer<V> values;
    private final LargeMessageDeserializer payloads = new LargeMessageDeserializer();
    private final ExecutorService fetchers;
    private final long maxBytes;

    /**
     * @param consumer a consumer whose values are the records' bytes ({@code ByteArrayDeserializer})
     * @param configs the {@link LargeMessageDeserializer}'s settings (the store's, the consumer's
     *        {@code max.poll.interval.ms} if set) and {@link #PREFETCH_OBJECTS}, {@link #PREFETCH_BYTES}
     * @param values deserializes the original bytes (configured by the caller)
     */
    public LargeMessageConsumer(Consumer<K, byte[]> consumer, Map<String, ?> configs, Deserializer<V> values) {
        StoreConfig c = new StoreConfig(configs);
        long objects = c.number(PREFETCH_OBJECTS, DEFAULT_PREFETCH_OBJECTS);
        if (objects < 1 || objects > 1024) {
            throw new ConfigException(PREFETCH_OBJECTS, objects, "must be 1 to 1024 payloads fetched at once");
        }
        maxBytes = c.number(PREFETCH_BYTES, DEFAULT_PREFETCH_BYTES);
        if (maxBytes < 1) {
            throw new ConfigException(PREFETCH_BYTES, maxBytes, "must be at least 1 byte");
        }
        payloads.configure(configs, false);
        AtomicInteger n = new AtomicInteger();
        fetchers = Executors.newFixedThreadPool((int) objects, r -> {
            Thread t = new Thread(r, "offloader-prefetch-" + n.incrementAndGet());
            t.setDaemon(true);
            return t;
        });
        this.consumer = consumer;
        this.values = values;
    }

    /** @return the consumer: commit, seek, subscribe, assign and the rest go to it */
    public Consumer<K, byte[]> consumer() {
        return consumer;
    }

    /**
     * Polls the consumer and returns its records resolved and deserialized.
     *
     * @param timeout how long the consumer's poll may wait for records
     * @return the records, each partition's in order
     * @throws RecordDeserializationException when the first record of a partition in this poll fails
     * @throws InterruptException when the thread is interrupted (the poll's records come again)
     */
    public ConsumerRecords<K, V> poll(Duration timeout) {
        ConsumerRecords<K, byte[]> polled = consumer.poll(timeout);
        if (polled.isEmpty()) {
            return ConsumerRecords.empty();
        }
        Map<TopicPartition, List<ConsumerRecord<K, byte[]>>> taken = take(polled);
        Map<TopicPartition, List<Future<V>>> pending = new LinkedHashMap<>();
        taken.forEach((tp, records) -> {
            List<Future<V>> futures = new ArrayList<>(records.size());
            for (ConsumerRecord<K, byte[]> r : records) {
                futures.add(fetchers.submit(() -> values.deserialize(r.topic(), r.headers(), payloads.deserialize(r.topic(), r.headers(), r.value()))));
            }
            pending.put(tp, futures);
        });
        Map<TopicPartition, List<ConsumerRecord<K, V>>> out = new LinkedHashMap<>();
        Map<TopicPartition, OffsetAndMetadata> next = new HashMap<>();
        RecordDeserializationException first = null;
        for (var e : pending.entrySet()) {
            TopicPartition tp = e.getKey();
            List<ConsumerRecord<K, byte[]>> records = taken.get(tp);
            List<ConsumerRecord<K, V>> done = new ArrayList<>(records.size());
            for (int i = 0; i < records.size(); i++) {
                ConsumerRecord<K, byte[]> r = records.get(i);
                try {
                    done.add(withValue(r, e.getValue().get(i).get()));
                } catch (ExecutionException failed) {
                    e.getValue().forEach(f -> f.cancel(true));
                    consumer.seek(tp, new OffsetAndMetadata(r.offset(), r.leaderEpoch(), ""));
                    if (i == 0 && first == null) {
                        first = failure(r, failed.getCause());
                    }
                    break;
                } catch (InterruptedException interrupted) {
                    // Nothing of this poll is returned: every partition gives its records again.
                    pending.values().forEach(futures -> futures.forEach(f -> f.cancel(true)));
                    taken.forEach((p, rs) -> consumer.seek(p, new OffsetAndMetadata(rs.get(0).offset(), rs.get(0).leaderEpoch(), "")));
                    Thread.currentThread().interrupt();
                    throw new InterruptException(interrupted);
                }
            }
            if (!done.isEmpty()) {
                ConsumerRecord<K, V> last = done.get(done.size() - 1);
                out.put(tp, done);
                next.put(tp, new OffsetAndMetadata(last.offset() + 1, last.leaderEpoch(), ""));
            }
        }
        if (first != null) {
            // Its partition is positioned on it; the others give their records again.
            out.forEach((tp, done) -> consumer.seek(tp, new OffsetAndMetadata(done.get(0).offset(), done.get(0).leaderEpoch(), "")));
            throw first;
        }
        return new ConsumerRecords<>(out, next);
    }

    /**
     * The records whose payloads fit the byte bound, taken a record from each
     * partition in turn so that no partition starves; the partitions of those left
     * over are sought back to the first of them.
     */
    private Map<TopicPartition, List<ConsumerRecord<K, byte[]>>> take(ConsumerRecords<K, byte[]> polled) {
        Map<TopicPartition, List<ConsumerRecord<K, byte[]>>> taken = new LinkedHashMap<>();
        List<TopicPartition> partitions = new ArrayList<>(polled.partitions());
        long held = 0;
        boolean full = false;
        for (int i = 0; !full; i++) {
            boolean any = false;
            for (TopicPartition tp : partitions) {
                List<ConsumerRecord<K, byte[]>> records = polled.records(tp);
                if (i >= records.size()) {
                    continue;
                }
                any = true;
                long size = payloadSize(records.get(i));
                if (held > 0 && held + size > maxBytes) {
                    full = true;
                    break;
                }
                held += size;
                taken.computeIfAbsent(tp, k -> new ArrayList<>()).add(records.get(i));
            }
            full |= !any;
        }
        for (TopicPartition tp : partitions) {
            List<ConsumerRecord<K, byte[]>> records = polled.records(tp);
            int n = taken.getOrDefault(tp, List.of()).size();
            if (n < records.size()) {
                ConsumerRecord<K, byte[]> r = records.get(n);
                consumer.seek(tp, new OffsetAndMetadata(r.offset(), r.leaderEpoch(), ""));
            }
        }
        return taken;
    }

    /** The bytes a record holds once resolved: its pointer's sizes, or its value's length. */
    private static long payloadSize(ConsumerRecord<?, byte[]> r) {
        if (!PointerResolver.isPointer(r.headers())) {
            return r.value() == null ? 0 : r.value().length;
        }
        try {
            Pointer p = Pointer.parse(r.value());
            return p.size() + (p.codec().equals("none") ? 0 : p.storedSize());
        } catch (PointerException e) {
            return 0; // it fails when resolved, before any read
        }
    }

    private static <K, V> ConsumerRecord<K, V> withValue(ConsumerRecord<K, byte[]> r, V value) {
        return new ConsumerRecord<>(r.topic(), r.partition(), r.offset(), r.timestamp(), r.timestampType(), r.serializedKeySize(),
                r.serializedValueSize(), r.key(), value, r.headers(), r.leaderEpoch());
    }

    private static RecordDeserializationException failure(ConsumerRecord<?, byte[]> r, Throwable cause) {
        String why = cause.getMessage() == null ? cause.toString() : cause.getMessage();
        return new RecordDeserializationException(DeserializationExceptionOrigin.VALUE, new TopicPartition(r.topic(), r.partition()), r.offset(),
                r.timestamp(), r.timestampType(), null, r.value() == null ? null : ByteBuffer.wrap(r.value()), r.headers(),
                "the value of " + r.topic() + "-" + r.partition() + " at offset " + r.offset() + " did not resolve (seek to offset " + (r.offset() + 1)
                        + " to skip it): " + why,
                cause);
    }

    /** Stops the fetchers and closes the store, the value deserializer and the consumer. */
    @Override
    public void close() {
        fetchers.shutdownNow();
        try {
            payloads.close();
            values.close();
        } finally {
            consumer.close();
        }
    }
}
