package integration

import (
	"bytes"
	"context"
	"os"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/confluentinc/confluent-kafka-go/v2/kafka"

	"github.com/offloader/offloader/serializer"
	sconfluent "github.com/offloader/offloader/serializer/confluent"
	"github.com/offloader/offloader/stores/filesystem"
	"github.com/offloader/offloader/stores/s3"
)

// BenchmarkSerializer produces 300 values of 1 MiB with confluent-kafka-go
// twice: as they are, to a topic that takes them, and through the Go
// serializer, which stores each in the filesystem store (synced to disk)
// and produces its pointer. It reports both rates of value bytes and their
// ratio. Run with make bench.
func BenchmarkSerializer(b *testing.B) {
	const n, size = 300, 1 << 20
	values := make([][]byte, 16)
	for i := range values {
		values[i] = bytes.Repeat([]byte{byte('a' + i)}, size)
	}
	for range b.N {
		raw, slim := uniqueName(b, "raw"), uniqueName(b, "slim")
		createTopic(b, raw, 3, map[string]string{"max.message.bytes": "2097152"})
		createTopic(b, slim, 3, nil)
		b.Cleanup(func() { deleteTopics(b, []string{raw, slim}) })
		store, err := filesystem.Open("payloads", filesystem.Config{Root: b.TempDir(), DirMode: 0o750, FileMode: 0o640})
		if err != nil {
			b.Fatal(err)
		}
		s, err := serializer.New(serializer.Config{Store: store, StoreName: "payloads", Threshold: 256 << 10, Prefix: "bench"})
		if err != nil {
			b.Fatal(err)
		}
		produce := func(topic string, through *serializer.Serializer) time.Duration {
			p, err := kafka.NewProducer(&kafka.ConfigMap{"bootstrap.servers": bootstrap, "enable.idempotence": true,
				"message.max.bytes": 2 << 20, "linger.ms": 5})
			if err != nil {
				b.Fatal(err)
			}
			defer p.Close()
			done := make(chan kafka.Event, n)
			start := time.Now()
			for i := range n {
				v := append([]byte(nil), values[i%len(values)]...)
				v[1], v[2] = byte(i), byte(i>>8) // no two alike: content-hash keys
				m := &kafka.Message{TopicPartition: kafka.TopicPartition{Topic: &topic, Partition: kafka.PartitionAny}, Key: []byte(strconv.Itoa(i)), Value: v}
				if through != nil {
					if m, err = sconfluent.Message(context.Background(), through, m); err != nil {
						b.Fatal(err)
					}
				}
				if err := p.Produce(m, done); err != nil {
					b.Fatal(err)
				}
			}
			for range n {
				if m := (<-done).(*kafka.Message); m.TopicPartition.Error != nil {
					b.Fatal(m.TopicPartition.Error)
				}
			}
			return time.Since(start)
		}
		produce(raw, nil) // warm the broker and the page cache
		rawTook := produce(raw, nil)
		serTook := produce(slim, s)
		mb := float64(n*size) / 1e6
		b.ReportMetric(mb/rawTook.Seconds(), "raw-MB/s")
		b.ReportMetric(mb/serTook.Seconds(), "serializer-MB/s")
		b.ReportMetric(rawTook.Seconds()/serTook.Seconds(), "serializer/raw")
	}
}

var javaBench = regexp.MustCompile(`(offloader|bakdata): ([0-9.]+) records/s, ([0-9.]+) MB/s`)

// BenchmarkJavaDeserializer reads 200 records of 1 MiB, stored in the S3
// emulator, once through the Java LargeMessageDeserializer (pointer v1) and
// once through bakdata's large-message-serde deserializer (its own records,
// written by its serializer), best of three each (clients/java's bench
// profile, DeserializerBench). It reports both rates and their ratio, and the
// Python package's read rate of the same pointers (the Java serializer's) from
// the same store, best of three, beside the Java deserializer's.
func BenchmarkJavaDeserializer(b *testing.B) {
	for range b.N {
		bucketA, bucketB := uniqueName(b, "bk"), uniqueName(b, "bk")
		for _, bucket := range []string{bucketA, bucketB} {
			createBucket(b, bucket)
		}
		topicA, topicB := uniqueName(b, "bakdata"), uniqueName(b, "offloader")
		createTopic(b, topicA, 1, nil)
		createTopic(b, topicB, 1, nil)
		b.Cleanup(func() { deleteTopics(b, []string{topicA, topicB}) })
		out, err := command("java", "-Xmx2g", "-cp", javaBenchClasspath(b), "io.offloader.serde.bench.DeserializerBench",
			bootstrap, s3Endpoint, topicA, bucketA, topicB, bucketB, "200").CombinedOutput()
		if err != nil {
			b.Fatalf("DeserializerBench: %v\n%s", err, out)
		}
		b.Logf("DeserializerBench:\n%s", out)
		rates := map[string]float64{}
		for _, m := range javaBench.FindAllStringSubmatch(string(out), -1) {
			rates[m[1]], _ = strconv.ParseFloat(m[3], 64)
		}
		if rates["offloader"] == 0 || rates["bakdata"] == 0 {
			b.Fatalf("DeserializerBench printed no rates:\n%s", out)
		}
		b.ReportMetric(rates["offloader"], "offloader-MB/s")
		b.ReportMetric(rates["bakdata"], "bakdata-MB/s")
		b.ReportMetric(rates["offloader"]/rates["bakdata"], "offloader/bakdata")

		// The Python package reads the same records (the Java serializer's
		// pointers, on the same S3 store), best of three.
		cmd := command(pythonEnv(b), "-c", pythonReadBench, bootstrap, topicB, bucketB, "200")
		cmd.Env = append(os.Environ(), "AWS_ENDPOINT_URL="+s3Endpoint)
		pyOut, err := cmd.CombinedOutput()
		if err != nil {
			b.Fatalf("the Python read benchmark: %v\n%s", err, pyOut)
		}
		m := javaBench.FindStringSubmatch(string(pyOut))
		if m == nil || m[1] != "offloader" {
			b.Fatalf("the Python read benchmark printed no rate:\n%s", pyOut)
		}
		python, _ := strconv.ParseFloat(m[3], 64)
		b.Logf("Python package: %.1f MB/s", python)
		b.ReportMetric(python, "python-MB/s")
		b.ReportMetric(python/rates["offloader"], "python/java")
	}
}

// pythonReadBench reads n records of 1 MiB from a topic's one partition
// through the Python package's Deserializer, their pointers resolved from an
// S3 bucket (named payloads in them), best of three reads, and prints its rate
// as DeserializerBench does.
const pythonReadBench = `
import os, sys, time
import boto3
from confluent_kafka import DeserializingConsumer, TopicPartition
from offloader_client import Deserializer, Resolver, S3Store

bootstrap, topic, bucket, n = sys.argv[1], sys.argv[2], sys.argv[3], int(sys.argv[4])
store = S3Store(bucket, client=boto3.client("s3", endpoint_url=os.environ["AWS_ENDPOINT_URL"], region_name="us-east-1",
                                            aws_access_key_id="test", aws_secret_access_key="test"))
best = 0.0
for _ in range(3):
    c = DeserializingConsumer({"bootstrap.servers": bootstrap, "group.id": "python-bench", "enable.auto.commit": False,
                               "max.partition.fetch.bytes": 1048576, "value.deserializer": Deserializer(Resolver({"payloads": store}))})
    c.assign([TopicPartition(topic, 0, -2)])
    start, got, size = time.monotonic(), 0, 0
    while got < n:
        msg = c.poll(0.2)
        if msg is None:
            continue
        got, size = got + 1, size + len(msg.value())
    best = max(best, n / (time.monotonic() - start))
    c.close()
    assert size == n << 20, size
print("offloader: %.1f records/s, %.1f MB/s" % (best, best * (1 << 20) / 1e6))
`

// createBucket creates bucket in the S3 emulator.
func createBucket(b testing.TB, bucket string) {
	b.Helper()
	cfg := s3.DefaultConfig()
	cfg.Bucket, cfg.Endpoint, cfg.PathStyle, cfg.CreateBucket, cfg.Region = bucket, s3Endpoint, true, true, "us-east-1"
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	s, err := s3.Open(ctx, "s3", cfg)
	if err != nil {
		b.Fatal(err)
	}
	s.Close()
}

// javaBenchClasspath builds clients/java with its bench profile (bakdata's
// large-message-serde, Kafka Streams) and returns the classpath of its
// benchmarks.
func javaBenchClasspath(b testing.TB) string {
	b.Helper()
	build := command("mvn", "-B", "-q", "-Dstyle.color=never", "-Pbench", "-f", "../clients/java/pom.xml", "test-compile", "dependency:build-classpath",
		"-Dmdep.outputFile=target/bench-classpath.txt", "-Dmdep.includeScope=test")
	if out, err := build.CombinedOutput(); err != nil {
		b.Fatalf("mvn -Pbench: %v\n%s", err, out)
	}
	return "../clients/java/target/classes:../clients/java/target/test-classes:" + readTrimmed(b, "../clients/java/target/bench-classpath.txt")
}

func readTrimmed(b testing.TB, path string) string {
	b.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		b.Fatal(err)
	}
	return strings.TrimSpace(string(data))
}
