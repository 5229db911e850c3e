package reader

import (
	"context"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
	"go.uber.org/zap"

	"github.com/offloader/offloader/gc"
	"github.com/offloader/offloader/internal/kafka/client"
	"github.com/offloader/offloader/internal/kafka/kadmin"
	"github.com/offloader/offloader/internal/kafka/kfaketest"
	"github.com/offloader/offloader/stores"
	"github.com/offloader/offloader/stores/filesystem"
)

// A dead-letter topic gc may not describe (the broker answers
// TOPIC_AUTHORIZATION_FAILED, as under an ACL) is an error that names it,
// never a topic of 0 partitions read as empty: gc stops before it deletes
// anything.
func TestGCStopsOnATopicItMayNotDescribe(t *testing.T) {
	broker, bootstrap := kfaketest.StartCluster(t, "raw", "slim", "dlt")
	host, port, _ := net.SplitHostPort(broker.ListenAddrs()[0])
	portNum, _ := strconv.Atoi(port)
	broker.ControlKey(int16(kmsg.Metadata), func(req kmsg.Request) (kmsg.Response, error, bool) {
		broker.KeepControl()
		r := req.(*kmsg.MetadataRequest)
		if len(r.Topics) != 1 || r.Topics[0].Topic == nil || *r.Topics[0].Topic != "dlt" {
			return nil, nil, false
		}
		resp := r.ResponseKind().(*kmsg.MetadataResponse)
		resp.Brokers = []kmsg.MetadataResponseBroker{{NodeID: 0, Host: host, Port: int32(portNum)}}
		resp.ControllerID = 0
		topic := kmsg.NewMetadataResponseTopic()
		topic.Topic = r.Topics[0].Topic
		topic.ErrorCode = kerr.TopicAuthorizationFailed.Code
		resp.Topics = append(resp.Topics, topic)
		return resp, nil, true
	})
	groups, err := kadmin.OpenGroups(client.Client{Bootstrap: bootstrap, Consumer: map[string]string{"enable.metrics.push": "false"}}, zap.NewNop())
	if err != nil {
		t.Fatal(err)
	}
	defer groups.Close()
	if n, err := groups.Partitions("dlt"); err == nil || !strings.Contains(err.Error(), "Topic authorization failed") || !strings.Contains(err.Error(), "Describe and Read") {
		t.Fatalf("Partitions(dlt) = %d, %v; want an authorization error naming what to grant", n, err)
	}
	if n, err := groups.Partitions("no-such-topic"); n != 0 || err != nil {
		t.Errorf("Partitions of a topic that does not exist = %d, %v; want 0, nil", n, err)
	}

	root := t.TempDir()
	store, err := filesystem.Open("payloads", filesystem.Config{Root: root, DirMode: 0o750, FileMode: 0o640})
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	if err := store.Put(ctx, "p/raw/0/1", []byte("only the dead-letter topic references this"), stores.Metadata{stores.MetaWriter: "p@slim"}); err != nil {
		t.Fatal(err)
	}
	old := time.Now().Add(-time.Hour)
	if err := os.Chtimes(filepath.Join(root, "p/raw/0/1"), old, old); err != nil {
		t.Fatal(err)
	}
	plan := gc.Plan{Writer: "p@slim", Group: "g", SourceTopics: []string{"raw"}, SlimTopic: "slim", DeadLetterTopic: "dlt",
		Prefixes: []gc.Prefix{{Store: "payloads", Prefix: "p"}}, Grace: time.Minute, Floor: time.Second}
	rep, err := gc.Collect(ctx, plan, NewTopicLog(groups, bootstrap, map[string]string{"enable.metrics.push": "false"}), map[string]stores.Store{"payloads": store})
	if err == nil || !strings.Contains(err.Error(), "nothing was deleted: dead-letter topic dlt") {
		t.Fatalf("gc = %v, want it stopped on the dead-letter topic", err)
	}
	if _, err := store.Stat(ctx, "p/raw/0/1"); err != nil || len(rep.Sweeps) != 0 {
		t.Errorf("the object: %v; sweeps %v; want it kept and nothing swept", err, rep.Sweeps)
	}
	if len(rep.Topics) != 2 || len(rep.Topics[0].Partitions) == 0 || rep.Topics[1].Missing {
		t.Errorf("topics read: %+v, want slim read and the dead-letter topic not counted as missing", rep.Topics)
	}
}
