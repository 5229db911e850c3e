package integration

import (
	"bytes"
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/confluentinc/confluent-kafka-go/v2/kafka"

	"github.com/offloader/offloader/dlt"
	"github.com/offloader/offloader/pointer"
	"github.com/offloader/offloader/stores"
)

// One pipeline file on two Kafka clusters (the suite's single broker and
// its 3-node cluster, whose cluster ids differ), sharing one store and
// differing only in bootstrap_servers (a staging and a production cluster,
// a DR pair): each cluster's payloads are stored under its own cluster id,
// so neither overwrites the other's; every pointer of each cluster reads
// its own values; and each cluster's gc deletes only its own orphan,
// keeping the other cluster's objects (unreferenced by its topics) as
// another cluster's. On the filesystem, Azurite and the S3 emulator.
func TestTwoClustersShareOneStore(t *testing.T) {
	other := onCluster(t)
	ids := map[string]string{bootstrap: clusterID(t, bootstrap), other: clusterID(t, other)}
	if ids[bootstrap] == ids[other] {
		t.Fatalf("the two clusters have one id, %s", ids[bootstrap])
	}
	for _, kind := range []string{"filesystem", "azblob", "s3"} {
		t.Run(kind, func(t *testing.T) {
			t.Parallel()
			ctx, cancel := context.WithTimeout(context.Background(), scaled(3*time.Minute))
			defer cancel()
			storeYAML, store, age := testStore(t, ctx, kind)
			raw, slim := uniqueName(t, "raw"), uniqueName(t, "slim")
			replicas := map[string]int{bootstrap: 1, other: 3}
			for bs, rf := range replicas {
				createTopicOn(t, bs, raw, 1, rf, map[string]string{"max.message.bytes": "8388608"})
				createTopicOn(t, bs, slim, 1, rf, nil)
			}
			cfg := gcPipelineFile(t, "twin", raw, slim, uniqueName(t, "g"), storeYAML, "", "    errors: {store_budget: 2s}")
			values := func(bs string) [][]byte {
				var out [][]byte
				for i := range 5 {
					out = append(out, bytes.Repeat([]byte(fmt.Sprintf("%s-%d.", ids[bs], i)), 100<<10/16))
				}
				return out
			}
			env := func(bs string) []string { return []string{"OFFLOADER_KAFKA__BOOTSTRAP_SERVERS=" + bs} }
			for _, bs := range []string{bootstrap, other} {
				var recs []sourceRecord
				for i, v := range values(bs) {
					recs = append(recs, sourceRecord{key: fmt.Appendf(nil, "%d", i), value: v})
				}
				produceRecordsOn(t, bs, raw, recs)
				cmd := command(offloaderBinary(t), "run", "-F", cfg, "--until-end")
				cmd.Env = append(cmd.Environ(), env(bs)...)
				if out, err := cmd.CombinedOutput(); err != nil {
					t.Fatalf("run on %s: %v\n%s", bs, err, out)
				}
			}
			readsItsOwn := func(when string) {
				t.Helper()
				for _, bs := range []string{bootstrap, other} {
					got := consumeFrom(t, bs, slim, "read_committed", 5, time.Minute)
					want := values(bs)
					for i, m := range got {
						p, err := pointer.Decode(m.Value)
						if err != nil || !strings.HasPrefix(p.Key, "twin/"+ids[bs]+"/"+raw+"/0/") {
							t.Fatalf("%s: cluster %s's record %d points to %+v (%v); want a key under twin/%s/", when, ids[bs], i, p, err, ids[bs])
						}
						if v := resolve(t, store, m); !bytes.Equal(v, want[i]) {
							t.Fatalf("%s: cluster %s's record %d resolves to %d other bytes", when, ids[bs], i, len(v))
						}
					}
				}
			}
			readsItsOwn("after both runs")

			// What an aborted transaction of each cluster leaves: its key, no pointer.
			for _, bs := range []string{bootstrap, other} {
				meta := stores.Metadata{stores.MetaWriter: "twin@" + slim, stores.MetaCluster: ids[bs]}
				if err := store.Put(ctx, "twin/"+ids[bs]+"/"+raw+"/0/1000", []byte("orphan"), meta); err != nil {
					t.Fatal(err)
				}
			}
			age()
			for i, bs := range []string{bootstrap, other} {
				code, rep, stderr := runGCWith(t, env(bs), cfg, "--grace", gcGrace.String())
				if code != 0 || len(rep.Sweeps) != 1 {
					t.Fatalf("gc on %s: exit %d, %d sweeps\n%s", bs, code, len(rep.Sweeps), stderr)
				}
				// The first gc keeps the other cluster's 5 payloads and its
				// orphan; the second finds the first's orphan gone.
				s, wantOther := rep.Sweeps[0], int64(6-i)
				if s.Deleted.Objects != 1 || s.Deleted.Examples[0] != "twin/"+ids[bs]+"/"+raw+"/0/1000" || s.Referenced.Objects != 5 || s.OtherCluster.Objects != wantOther {
					t.Errorf("gc on cluster %s: deleted %v, referenced %d, other cluster %d; want its orphan, 5, %d",
						ids[bs], s.Deleted.Examples, s.Referenced.Objects, s.OtherCluster.Objects, wantOther)
				}
			}
			readsItsOwn("after both gc runs")
		})
	}
}

// A store renamed with its old name kept, so that readers still resolve the
// pointers written before (docs/payload-lifetime.md): gc of the new file
// keeps every referenced payload, whichever name its pointer gives, and
// validate names the two names as one store. The same for two offload
// steps of one pipeline on two names of one directory.
func TestGCKeepsPayloadsOfAStoreUnderAnotherName(t *testing.T) {
	t.Parallel() // its own topics and stores; runs beside the other parallel tests
	t.Run("renamed", func(t *testing.T) {
		t.Parallel()
		root := t.TempDir()
		raw, slim, group := uniqueName(t, "raw"), uniqueName(t, "slim"), uniqueName(t, "g")
		createTopic(t, raw, 1, map[string]string{"max.message.bytes": "8388608"})
		createTopic(t, slim, 1, nil)
		v1 := gcPipelineFile(t, "renamed", raw, slim, group, fmt.Sprintf("      old: {type: filesystem, root: %q, gc: true}", root), "",
			"errors: {store_budget: 2s}\ntransforms: [{type: offload, store: old, threshold: 64KiB}]")
		v2 := gcPipelineFile(t, "renamed", raw, slim, group,
			fmt.Sprintf("      old: {type: filesystem, root: %q}\n      payloads: {type: filesystem, root: %q, gc: true}", root, root+"/"), "", "errors: {store_budget: 2s}")
		for i, cfg := range []string{v1, v2} {
			produceRecords(t, raw, bigRecords(5, i))
			if out, err := command(offloaderBinary(t), "run", "-F", cfg, "--until-end").CombinedOutput(); err != nil {
				t.Fatalf("run v%d: %v\n%s", i+1, err, out)
			}
		}
		out, err := command(offloaderBinary(t), "validate", "-F", v2).CombinedOutput()
		if err != nil || !strings.Contains(string(out), `note: stores "old" of pipeline renamed (`+v2+`), "payloads" of pipeline renamed (`+v2+`) are one physical store (filesystem:`+root+`)`) {
			t.Errorf("validate: %v\n%s", err, out)
		}
		gcKeepsAll(t, root, v2, slim, 10)
	})
	t.Run("two steps", func(t *testing.T) {
		t.Parallel()
		root := t.TempDir()
		raw, slim := uniqueName(t, "raw"), uniqueName(t, "slim")
		createTopic(t, raw, 1, map[string]string{"max.message.bytes": "8388608"})
		createTopic(t, slim, 1, nil)
		cfg := gcPipelineFile(t, "steps", raw, slim, uniqueName(t, "g"),
			fmt.Sprintf("      a: {type: filesystem, root: %q, gc: true}\n      payloads: {type: filesystem, root: %q, gc: true}", root, root), "",
			"errors: {store_budget: 2s}\ntransforms: [{type: offload, store: a, threshold: 64KiB, if: {type: has_header, name: tenant, value: a}}, {type: offload, store: payloads, threshold: 64KiB}]")
		recs := bigRecords(6, 0)
		for i := range 3 {
			recs[i].headers = []kafka.Header{{Key: "tenant", Value: []byte("a")}}
		}
		produceRecords(t, raw, recs)
		if out, err := command(offloaderBinary(t), "run", "-F", cfg, "--until-end").CombinedOutput(); err != nil {
			t.Fatalf("run: %v\n%s", err, out)
		}
		stores := map[string]int{}
		for _, m := range readToEnd(t, slim) {
			p, err := pointer.Decode(m.Value)
			if err != nil {
				t.Fatal(err)
			}
			stores[p.Store]++
		}
		if stores["a"] != 3 || stores["payloads"] != 3 {
			t.Fatalf("pointers by store %v, want 3 naming a and 3 naming payloads", stores)
		}
		gcKeepsAll(t, root, cfg, slim, 6)
	})
}

// bigRecords are n records of 100 KiB (offloaded at the tests' 64 KiB
// threshold), distinct for each batch.
func bigRecords(n, batch int) []sourceRecord {
	var recs []sourceRecord
	for i := range n {
		recs = append(recs, sourceRecord{key: fmt.Appendf(nil, "%d-%d", batch, i), value: bytes.Repeat([]byte{byte(batch*16 + i)}, 100<<10)})
	}
	return recs
}

// gcKeepsAll ages the filesystem store at root, runs gc for cfg and checks
// that it deleted nothing, every one of the slim topic's n pointers being
// referenced, and that each still resolves.
func gcKeepsAll(t *testing.T, root, cfg, slim string, n int) {
	t.Helper()
	backdate(t, root)
	code, rep, stderr := runGC(t, cfg, "--grace", gcGrace.String())
	if code != 0 {
		t.Fatalf("gc: exit %d\n%s", code, stderr)
	}
	var deleted, referenced int64
	for _, s := range rep.Sweeps {
		deleted += s.Deleted.Objects
		referenced += s.Referenced.Objects
	}
	if deleted != 0 || referenced != int64(n) {
		t.Errorf("gc: deleted %d, referenced %d (sweeps %+v); want 0 and %d", deleted, referenced, rep.Sweeps, n)
	}
	if got := assertAllResolve(t, openFS(t, root), slim); got != n {
		t.Errorf("%d records resolve, want %d", got, n)
	}
}

// An object of another writer at the key a record's payload would take
// (same owner: two pipelines sharing the prefix) is never replaced: the
// record goes to the dead-letter topic with the reason, the object stays
// as it was, and the other records are offloaded.
func TestAnotherWritersObjectAtTheKeyDeadLettersTheRecord(t *testing.T) {
	t.Parallel() // its own topics and stores; runs beside the other parallel tests
	root := t.TempDir()
	raw, slim, dead := uniqueName(t, "raw"), uniqueName(t, "slim"), uniqueName(t, "dlt")
	createTopic(t, raw, 1, map[string]string{"max.message.bytes": "8388608"})
	createTopic(t, slim, 1, nil)
	createTopic(t, dead, 1, map[string]string{"max.message.bytes": "8388608"})
	cfg := gcPipelineFile(t, "shared", raw, slim, uniqueName(t, "g"), fmt.Sprintf("      payloads: {type: filesystem, root: %q}", root), "",
		"    errors: {dead_letter_topic: "+dead+", store_budget: 2s}")
	store := openFS(t, root)
	key := "shared/" + clusterID(t, bootstrap) + "/" + raw + "/0/0"
	theirs := []byte("another pipeline's payload")
	if err := store.Put(context.Background(), key, theirs, stores.Metadata{stores.MetaOwner: stores.Owner(raw, 0, 0), stores.MetaWriter: "shared@elsewhere"}); err != nil {
		t.Fatal(err)
	}
	produceRecords(t, raw, bigRecords(3, 0))
	if out, err := command(offloaderBinary(t), "run", "-F", cfg, "--until-end").CombinedOutput(); err != nil {
		t.Fatalf("run: %v\n%s", err, out)
	}
	if got := readToEnd(t, slim); len(got) != 2 {
		t.Fatalf("the slim topic holds %d records, want the 2 others", len(got))
	}
	dl := readToEnd(t, dead)
	if len(dl) != 1 {
		t.Fatalf("the dead-letter topic holds %d records, want 1", len(dl))
	}
	if why, _ := headerValue(dl[0].Headers, dlt.HeaderMessage); !strings.Contains(why, "written for "+raw+"/0/0 by shared@elsewhere, not shared@"+slim) {
		t.Errorf("the dead letter says %q; want the other writer named", why)
	}
	if got, err := store.Get(context.Background(), key, 1<<20); err != nil || !bytes.Equal(got, theirs) {
		t.Errorf("the other writer's object is now %q (%v)", got, err)
	}
}
