package io.offloader.serde.bench;

import com.bakdata.kafka.LargeMessageSerde;
import java.util.Map;
import java.util.Properties;
import java.util.concurrent.CountDownLatch;
import org.apache.kafka.common.serialization.Serde;
import org.apache.kafka.common.serialization.Serdes;
import org.apache.kafka.streams.KafkaStreams;
import org.apache.kafka.streams.StreamsBuilder;
import org.apache.kafka.streams.StreamsConfig;
import org.apache.kafka.streams.kstream.Consumed;
import org.apache.kafka.streams.kstream.Produced;

/**
 * The stack a team would assemble instead of offloader, for the side-by-side
 * benchmark (integration/bench_peer_test.go, make bench): Kafka Streams with
 * exactly_once_v2 copies a raw topic to a slim topic, its values through
 * bakdata's large-message-serde, which stores those over the threshold in
 * Azure Blob Storage and produces a reference. It prints "RUNNING" once the
 * application runs, and runs until it is stopped (SIGTERM closes it).
 *
 * <pre>
 * PeerPipeline BOOTSTRAP APPLICATION_ID RAW SLIM CONTAINER AZURE_CONNECTION_STRING THRESHOLD_BYTES THREADS
 * </pre>
 */
public final class PeerPipeline {
    private PeerPipeline() {
    }

    public static void main(String[] args) throws InterruptedException {
        String bootstrap = args[0], appId = args[1], raw = args[2], slim = args[3];
        Properties p = new Properties();
        p.put(StreamsConfig.BOOTSTRAP_SERVERS_CONFIG, bootstrap);
        p.put(StreamsConfig.APPLICATION_ID_CONFIG, appId);
        p.put(StreamsConfig.PROCESSING_GUARANTEE_CONFIG, StreamsConfig.EXACTLY_ONCE_V2);
        p.put(StreamsConfig.NUM_STREAM_THREADS_CONFIG, Integer.parseInt(args[7]));
        p.put(StreamsConfig.STATE_DIR_CONFIG, System.getProperty("java.io.tmpdir") + "/peer-" + appId);
        p.put(StreamsConfig.consumerPrefix("auto.offset.reset"), "earliest");
        // The raw topic's records are up to 2 MiB: the consumer and the
        // producer of a raw record that stays inline take them.
        p.put(StreamsConfig.producerPrefix("max.request.size"), "4194304");
        Serde<byte[]> values = new LargeMessageSerde<>();
        values.configure(Map.of("large.message.base.path", "abs://" + args[4] + "/peer/",
                "large.message.abs.connection.string", args[5],
                "large.message.max.byte.size", Integer.parseInt(args[6]),
                "large.message.value.serde", Serdes.ByteArraySerde.class.getName()), false);
        StreamsBuilder builder = new StreamsBuilder();
        builder.stream(raw, Consumed.with(Serdes.ByteArray(), Serdes.ByteArray()))
                .to(slim, Produced.with(Serdes.ByteArray(), values));
        KafkaStreams streams = new KafkaStreams(builder.build(), p);
        CountDownLatch stopped = new CountDownLatch(1);
        streams.setStateListener((now, before) -> {
            if (now == KafkaStreams.State.RUNNING) {
                System.out.println("RUNNING");
                System.out.flush();
            }
            if (now == KafkaStreams.State.ERROR) {
                System.out.println("ERROR");
                System.out.flush();
            }
        });
        Runtime.getRuntime().addShutdownHook(new Thread(() -> {
            streams.close();
            stopped.countDown();
        }));
        streams.start();
        stopped.await();
    }
}
