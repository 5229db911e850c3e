package integration

import (
	"testing"
)

// BenchmarkPartitionIndependence runs the pipeline on the same traffic from
// a topic of 1 partition and from one of 64, with the default memory budget
// (memory.in_flight: 256MiB), in two cases: 2,000 values of 1 MiB
// (offloaded) and 1,000,000 of 1 KiB (inline). It reports each run's peak RSS
// and rate and their ratios (64 over 1). The KIP-782 goal, memory that
// follows the traffic and not the partitions, is ratios near 1 (issue 21's
// target: within 10%). Run with make bench; docs/benchmarks.md has the
// figures.
func BenchmarkPartitionIndependence(b *testing.B) {
	for _, c := range []struct {
		name    string
		n, size int
	}{{"1MiB", 2000, 1 << 20}, {"1KiB", 1_000_000, 1 << 10}} {
		b.Run(c.name, func(b *testing.B) {
			for range b.N {
				type result struct {
					mbs float64
					rss int64
				}
				runs := map[int]result{}
				for _, partitions := range []int{1, 64} {
					raw, slim := uniqueName(b, "raw"), uniqueName(b, "slim")
					createTopic(b, raw, partitions, map[string]string{"max.message.bytes": "4194304"})
					createTopic(b, slim, partitions, nil)
					b.Cleanup(func() { deleteTopics(b, []string{raw, slim}) })
					fill(b, raw, c.n, c.size, partitions)
					elapsed, rss, _ := pipelineRun(b, raw, slim, c.n)
					runs[partitions] = result{float64(c.n*c.size) / 1e6 / elapsed.Seconds(), rss}
					b.Logf("%2d partitions: %.1f MB/s, peak RSS %d MiB (budget 256 MiB)", partitions, runs[partitions].mbs, rss>>20)
				}
				b.ReportMetric(float64(runs[1].rss>>20), "rss-1p-MiB")
				b.ReportMetric(float64(runs[64].rss>>20), "rss-64p-MiB")
				b.ReportMetric(float64(runs[64].rss)/float64(runs[1].rss), "rss-64p/1p")
				b.ReportMetric(runs[64].mbs/runs[1].mbs, "MB/s-64p/1p")
			}
		})
	}
}
