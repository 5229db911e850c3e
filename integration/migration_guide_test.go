package integration

import (
	"fmt"
	"regexp"
	"strings"
	"testing"
	"time"
)

// TestMigrationRunbookRuns runs docs/migration.md command by command against
// the real broker and Azurite: a fat topic with a consumer group part-way
// through it, analyze, check --create-missing, a rate-limited migrate with
// parity, verify --deep, run taking over the live traffic, translate-offsets
// (dry run, then executed, after the pipeline's group showed lag 0) and the
// clean-up. Only the names are made unique.
// The translation is held to the group's own position on the fat topic: on
// each partition the next record is the one after the last it read.
func TestMigrationRunbookRuns(t *testing.T) {
	name := fmt.Sprintf("%smg-%d", testPrefix, time.Now().UnixNano()%1e9)
	out := runGuide(t, "../docs/migration.md", strings.NewReplacer("orders", name, "billing", name+"-billing"))
	wantAll(t, out,
		"produced 90 records (",
		"offloading at ",
		"created topic "+name+".slim",
		"every store works",
		"90 records committed; every assigned partition reached its end offset",
		"parity OK: 3 partitions",
		"every payload downloaded and checked",
		"dry run: nothing was changed",
		"moved group "+name+"-billing on 3 partition(s)",
		// The compacted section: its slim topic is created compacted, and
		// the copy passes parity with every payload downloaded.
		"created topic "+name+".profiles.slim",
		"cleanup.policy=compact",
		"retention.ms=-1",
		"60 records committed; every assigned partition reached its end offset",
	)
	if n := strings.Count(string(out), "every payload downloaded and checked"); n != 2 {
		t.Errorf("verify --deep passed %d times, want 2 (orders and the compacted profiles)\n%s", n, out)
	}
	// Before the cut-over the pipeline's own group shows LAG 0 on every
	// partition of the fat topic (the zero-lag step).
	lag := regexp.MustCompile(`(?m)^`+regexp.QuoteMeta(name)+`-offloader\s+`+regexp.QuoteMeta(name)+`\.fat\s+\d\s+(\d+)\s+(\d+)\s+(\d+)\s`).FindAllSubmatch(out, -1)
	if len(lag) != 3 {
		t.Errorf("found %d rows of the pipeline group's lag, want 3:\n%s", len(lag), out)
	}
	for _, row := range lag {
		if string(row[3]) != "0" {
			t.Errorf("the pipeline's group before the cut-over: offset %s of %s, lag %s; want lag 0", row[1], row[2], row[3])
		}
	}
	// The billing group's position on the fat topic, from kafka-consumer-groups.sh
	// (twice: beside the pipeline's group before the cut-over, and after the
	// move), is the next record the plan names on each partition.
	fat := regexp.MustCompile(`(?m)^`+regexp.QuoteMeta(name)+`-billing\s+`+regexp.QuoteMeta(name)+`\.fat\s+(\d)\s+(\d+)\s`).FindAllSubmatch(out, -1)
	plan := regexp.MustCompile(`(?m)^`+regexp.QuoteMeta(name)+`\.slim\[(\d)\]\s+\S+\s+(\d+)\s+`+regexp.QuoteMeta(name)+`\.fat\[(\d)\]@(\d+)`).FindAllSubmatch(out, -1)
	if len(fat) != 6 || len(plan) < 3 {
		t.Fatalf("found %d fat positions and %d plan rows:\n%s", len(fat), len(plan), out)
	}
	next := map[string]string{}
	for _, row := range plan[:3] {
		if string(row[1]) != string(row[3]) {
			t.Errorf("slim partition %s is to start at a record of fat partition %s", row[1], row[3])
		}
		next[string(row[3])] = string(row[4])
	}
	for _, row := range fat {
		if next[string(row[1])] != string(row[2]) {
			t.Errorf("fat partition %s: the group stood at %s, the plan starts it at %s", row[1], row[2], next[string(row[1])])
		}
	}
}
