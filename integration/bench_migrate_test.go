package integration

import (
	"regexp"
	"strconv"
	"testing"
	"time"
)

// BenchmarkMigration measures offloader migrate on 1 GiB of mixed history
// (1 MiB values, offloaded, and 1 KiB ones, inline) beside the plain copy
// loop on the same topic, the time offloader analyze takes per GiB, and how
// close a rate-limited migration comes to the time its limit sets (within
// 10%, or the benchmark fails). Run with make bench.
func BenchmarkMigration(b *testing.B) {
	for range b.N {
		raw := uniqueName(b, "raw")
		createTopic(b, raw, 3, map[string]string{"max.message.bytes": "4194304"})
		topics := []string{raw}
		b.Cleanup(func() { deleteTopics(b, topics) })
		const big, small = 900, 100_000 // 900 MiB + 100 MiB
		fill(b, raw, big, 1<<20, 3)
		fill(b, raw, small, 1<<10, 3)
		records, bytes := big+small, float64(big<<20+small<<10)

		started := time.Now()
		out, err := command(offloaderBinary(b), "analyze", "-b", bootstrap, "-t", raw, "--output", "json").CombinedOutput()
		if err != nil {
			b.Fatalf("analyze: %v\n%s", err, out)
		}
		analyze := time.Since(started)

		copied := uniqueName(b, "copy")
		createTopic(b, copied, 3, map[string]string{"max.message.bytes": "4194304"})
		topics = append(topics, copied)
		plain, _ := copyProcess(b, loopPlain, raw, copied, records)

		cfg, slim := migrationBenchPipeline(b, raw)
		topics = append(topics, slim)
		started = time.Now()
		out, err = command(offloaderBinary(b), "migrate", "-F", cfg, "--no-verify").CombinedOutput()
		if err != nil {
			b.Fatalf("migrate: %v\n%s", err, out)
		}
		migrate := time.Since(started)
		started = time.Now()
		if out, err := command(offloaderBinary(b), "migrate", "verify", "-F", cfg).CombinedOutput(); err != nil {
			b.Fatalf("verify: %v\n%s", err, out)
		}
		verify := time.Since(started)

		// Rate-limited: 600 MiB of values to offload at 60 MB/s, about 10 s.
		limited := uniqueName(b, "raw")
		createTopic(b, limited, 3, map[string]string{"max.message.bytes": "4194304"})
		topics = append(topics, limited)
		fill(b, limited, 600, 1<<20, 3)
		cfg2, slim2 := migrationBenchPipeline(b, limited)
		topics = append(topics, slim2)
		const mbps = 60.0
		out, err = command(offloaderBinary(b), "migrate", "-F", cfg2, "--no-verify", "--max-mb-per-s", strconv.Itoa(int(mbps))).CombinedOutput()
		if err != nil {
			b.Fatalf("rate-limited migrate: %v\n%s", err, out)
		}
		took := migrateSeconds(b, out)
		expected := float64(600<<20) / (mbps * 1e6)
		b.Logf("analyze %s, plain copy %s, migrate %s, verify %s; rate-limited: %.2fs, expected %.2fs",
			analyze.Round(time.Millisecond), plain.Round(time.Millisecond), migrate.Round(time.Millisecond), verify.Round(time.Millisecond), took, expected)
		b.ReportMetric(bytes/(1<<30), "GiB")
		b.ReportMetric(analyze.Seconds()/(bytes/(1<<30)), "analyze-s/GiB")
		b.ReportMetric(float64(records)/migrate.Seconds(), "migrate-records/s")
		b.ReportMetric(bytes/1e6/migrate.Seconds(), "migrate-MB/s")
		b.ReportMetric(bytes/1e6/plain.Seconds(), "plain-MB/s")
		b.ReportMetric(plain.Seconds()/migrate.Seconds(), "migrate/plain")
		b.ReportMetric(verify.Seconds(), "verify-s")
		b.ReportMetric(took/expected, "rate-limited/expected")
		if took < 0.9*expected || took > 1.1*expected {
			b.Errorf("the migration limited to %.0f MB/s took %.2fs, more than 10%% from the %.2fs its limit sets", mbps, took, expected)
		}
	}
}

// migrationBenchPipeline is a pipeline from raw to a new slim topic of 3
// partitions, offloading at auto to a filesystem store.
func migrationBenchPipeline(b *testing.B, raw string) (cfg, slim string) {
	slim = uniqueName(b, "slim")
	createTopic(b, slim, 3, nil)
	cfg = newPipeline(b, "bench", raw, slim, uniqueName(b, "g")).with(b, `
stores:
  payloads: {type: filesystem, root: %q}
transforms:
  - {type: offload, store: payloads, threshold: auto}
commit: {interval: 100ms}
observability: {log_format: json}`, b.TempDir()).file(b)
	return cfg, slim
}

var ranFor = regexp.MustCompile(`"msg":"run summary".*?"ran_for_seconds":([0-9.]+)`)

// migrateSeconds is how long migrate's engine ran, from its run summary.
func migrateSeconds(b *testing.B, log []byte) float64 {
	m := ranFor.FindSubmatch(log)
	if m == nil {
		b.Fatalf("no run summary in migrate's log:\n%s", log)
	}
	s, _ := strconv.ParseFloat(string(m[1]), 64)
	return s
}
