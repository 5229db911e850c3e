// Package integration tests offloader against a real Apache Kafka broker, a
// real Azure Blob emulator (Azurite) and an S3 emulator (moto's server).
// `make test` starts them (scripts/with-services.sh) and points the tests at
// them through TEST_KAFKA_BOOTSTRAP, TEST_AZURE_CONNECTION_STRING and
// TEST_S3_ENDPOINT. Without them the tests fail rather than skip: a green run
// must mean the real components were used.
package integration

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/confluentinc/confluent-kafka-go/v2/kafka"

	"github.com/offloader/offloader/internal/slowdown"
)

var (
	bootstrap      string
	azureConnStr   string
	s3Endpoint     string
	servicesScript string
)

func TestMain(m *testing.M) {
	if args, ok := os.LookupEnv(copyLoopEnv); ok { // a benchmark's reference loop, in its own process
		os.Exit(copyLoopProcess(args))
	}
	bootstrap = os.Getenv("TEST_KAFKA_BOOTSTRAP")
	azureConnStr = os.Getenv("TEST_AZURE_CONNECTION_STRING")
	s3Endpoint = os.Getenv("TEST_S3_ENDPOINT")
	servicesScript = os.Getenv("TEST_SERVICES_SCRIPT")
	if bootstrap == "" || azureConnStr == "" || s3Endpoint == "" {
		fmt.Fprintln(os.Stderr, "integration tests need a real Kafka broker, Azurite and the S3 emulator: run them with `make test`, "+
			"or start them with scripts/services.sh start and export what scripts/services.sh env prints")
		os.Exit(1)
	}
	// The S3 emulator takes any credentials; the AWS SDK (here and in the
	// offloader processes the tests start) wants some.
	for k, v := range map[string]string{"AWS_ACCESS_KEY_ID": "test", "AWS_SECRET_ACCESS_KEY": "test", "AWS_REGION": "us-east-1"} {
		os.Setenv(k, v)
	}
	f, from := slowdown.Factor()
	fmt.Fprintf(os.Stderr, "integration: waits last %.1f times as long as on a quiet machine (%s; set %s to choose)\n", f, from, slowdown.Env)
	os.Setenv(slowdown.Env, strconv.FormatFloat(f, 'f', 2, 64)) // the JUnit tests and pytest wait as long
	if err := waitForBroker(60 * time.Second); err != nil {
		fmt.Fprintf(os.Stderr, "Kafka at %s does not answer: %v\n", bootstrap, err)
		os.Exit(1)
	}
	code := m.Run()
	deleteTestTopics()
	if binary != "" {
		os.RemoveAll(filepath.Dir(binary)) // 30 MB per run otherwise left in the temp dir
	}
	os.Exit(code)
}

// command is exec.Command for a process a test starts: it is killed when
// the test process ends, whatever ends it (a failure, a panic, the
// package's timeout), so that nothing a test started outlives the run.
func command(name string, args ...string) *exec.Cmd {
	cmd := exec.Command(name, args...)
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	return cmd
}

// commandContext is command, killed when ctx ends too.
func commandContext(ctx context.Context, name string, args ...string) *exec.Cmd {
	cmd := exec.CommandContext(ctx, name, args...)
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	return cmd
}

// within is the deadline of a wait that takes at most d on a quiet machine:
// d made as much longer as this machine is slower (internal/slowdown), so a
// loaded machine waits longer instead of failing.
func within(d time.Duration) time.Time { return time.Now().Add(scaled(d)) }

// scaled is d made as much longer as this machine is slower.
func scaled(d time.Duration) time.Duration { return slowdown.Scale(d) }

// deleteTestTopics deletes the topics this process's tests made (named
// testPrefix...), so that a broker that outlives the run does not keep
// them; another run's, on the same broker, go on.
func deleteTestTopics() {
	admin, err := kafka.NewAdminClient(&kafka.ConfigMap{"bootstrap.servers": bootstrap})
	if err != nil {
		return
	}
	defer admin.Close()
	md, err := admin.GetMetadata(nil, true, 10000)
	if err != nil {
		return
	}
	var topics []string
	for name := range md.Topics {
		if strings.HasPrefix(name, testPrefix) {
			topics = append(topics, name)
		}
	}
	if len(topics) == 0 {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), scaled(30*time.Second))
	defer cancel()
	if _, err := admin.DeleteTopics(ctx, topics); err != nil {
		fmt.Fprintf(os.Stderr, "deleting the %d test topics: %v\n", len(topics), err)
	}
}

// waitForBroker polls cluster metadata until the broker answers.
func waitForBroker(timeout time.Duration) error {
	admin, err := kafka.NewAdminClient(&kafka.ConfigMap{"bootstrap.servers": bootstrap})
	if err != nil {
		return err
	}
	defer admin.Close()
	deadline := within(timeout)
	for {
		md, err := admin.GetMetadata(nil, true, 5000)
		if err == nil && len(md.Brokers) > 0 {
			return nil
		}
		if time.Now().After(deadline) {
			return err
		}
		time.Sleep(500 * time.Millisecond)
	}
}

var topicSeq atomic.Int64

// uniqueName returns a topic, group or container name no other test run uses.
func uniqueName(t testing.TB, kind string) string {
	name := strings.NewReplacer("/", "-", "_", "-", " ", "-").Replace(strings.ToLower(t.Name()))
	if len(name) > 40 {
		name = name[:40]
	}
	return fmt.Sprintf("%s%s-%s-%d-%d", testPrefix, kind, name, time.Now().UnixNano()%1e9, topicSeq.Add(1))
}

// testPrefix starts the names of this test process's topics: it- and the
// process's id, so that at its end it deletes its own topics only, not
// those of another run on the same broker.
var testPrefix = "it-" + strconv.FormatInt(int64(os.Getpid()), 36) + "-"

func newAdmin(t testing.TB) *kafka.AdminClient {
	t.Helper()
	return newAdminOn(t, bootstrap)
}

// newAdminOn is an admin client of the cluster at bs.
func newAdminOn(t testing.TB, bs string) *kafka.AdminClient {
	t.Helper()
	admin, err := kafka.NewAdminClient(&kafka.ConfigMap{"bootstrap.servers": bs})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(admin.Close)
	return admin
}

// createTopic creates a topic on the single broker and waits until its
// partitions have leaders.
func createTopic(t testing.TB, name string, partitions int, config map[string]string) {
	t.Helper()
	createTopicOn(t, bootstrap, name, partitions, 1, config)
}

// createTopicOn creates a topic with replicas copies of each partition on
// the cluster at bs and waits until its partitions have leaders.
func createTopicOn(t testing.TB, bs, name string, partitions, replicas int, config map[string]string) {
	t.Helper()
	admin := newAdminOn(t, bs)
	ctx, cancel := context.WithTimeout(context.Background(), scaled(30*time.Second))
	defer cancel()
	res, err := admin.CreateTopics(ctx, []kafka.TopicSpecification{{
		Topic: name, NumPartitions: partitions, ReplicationFactor: replicas, Config: config,
	}})
	if err != nil {
		t.Fatalf("CreateTopics %s: %v", name, err)
	}
	if res[0].Error.Code() != kafka.ErrNoError {
		t.Fatalf("CreateTopics %s: %v", name, res[0].Error)
	}
	for {
		md, err := admin.GetMetadata(&name, false, 5000)
		if err == nil {
			if tm, ok := md.Topics[name]; ok && tm.Error.Code() == kafka.ErrNoError && len(tm.Partitions) == partitions {
				ready := true
				for _, p := range tm.Partitions {
					ready = ready && p.Leader >= 0
				}
				if ready {
					return
				}
			}
		}
		if ctx.Err() != nil {
			t.Fatalf("topic %s has no leaders after 30s", name)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// consumeAll reads a topic from the beginning with read_committed until it has
// seen want records or timeout passes, then keeps reading for a further two
// seconds so that records beyond the expected ones (duplicates) show up too.
func consumeAll(t testing.TB, topic string, want int, timeout time.Duration) []*kafka.Message {
	t.Helper()
	return consumeIsolated(t, topic, "read_committed", want, timeout)
}

// consumeIsolated is consumeAll with a chosen isolation.level: read_uncommitted
// also returns the records of aborted transactions.
func consumeIsolated(t testing.TB, topic, isolation string, want int, timeout time.Duration) []*kafka.Message {
	t.Helper()
	return consumeFrom(t, bootstrap, topic, isolation, want, timeout)
}

// consumeFrom is consumeIsolated on the cluster at bs.
func consumeFrom(t testing.TB, bs, topic, isolation string, want int, timeout time.Duration) []*kafka.Message {
	t.Helper()
	c, err := kafka.NewConsumer(&kafka.ConfigMap{
		"bootstrap.servers":  bs,
		"group.id":           uniqueName(t, "reader"),
		"auto.offset.reset":  "earliest",
		"enable.auto.commit": false,
		"isolation.level":    isolation,
	})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if err := c.Subscribe(topic, nil); err != nil {
		t.Fatal(err)
	}
	var out []*kafka.Message
	deadline := within(timeout)
	for time.Now().Before(deadline) {
		if len(out) == want {
			deadline = time.Now().Add(2 * time.Second)
			want = -1
		}
		msg, err := c.ReadMessage(200 * time.Millisecond)
		if err != nil {
			if kerr, ok := err.(kafka.Error); ok && kerr.IsTimeout() {
				continue
			}
			t.Fatalf("consume %s: %v", topic, err)
		}
		out = append(out, msg)
	}
	return out
}

// clusterID is the id of the Kafka cluster at bs: the first segment of an
// offloaded payload's key under its prefix, and its cluster metadata.
func clusterID(t testing.TB, bs string) string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), scaled(30*time.Second))
	defer cancel()
	id, err := newAdminOn(t, bs).ClusterID(ctx)
	if err != nil || id == "" {
		t.Fatalf("the cluster id of %s: %q, %v", bs, id, err)
	}
	return id
}
