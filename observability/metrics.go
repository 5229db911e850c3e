package observability

import (
	"context"
	"errors"
	"net"
	"net/http"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"

	"github.com/offloader/offloader/stores"
)

// Metrics are the pipeline's Prometheus metrics, labelled by pipeline name.
type Metrics struct {
	Registry  *prometheus.Registry
	RecordsIn prometheus.Counter
	// RecordsReread counts records consumed again after a rewind or a
	// rebalance dropped their batch (RecordsIn counts each record once).
	RecordsReread     prometheus.Counter
	RecordsOut        prometheus.Counter
	RecordsDropped    prometheus.Counter
	Offloaded         prometheus.Counter
	OffloadedBytes    prometheus.Counter
	Passthrough       prometheus.Counter
	Retried           prometheus.Counter
	StoreLatency      *prometheus.HistogramVec
	TxnCommits        prometheus.Counter
	TxnAborts         prometheus.Counter
	ReplacedProducers prometheus.Counter
	DeadLettered      *prometheus.CounterVec // by failure class
	// ReservedHeaders counts retry headers (__offloader.retry.*) found on
	// source records and removed: only retry topics may carry them.
	ReservedHeaders prometheus.Counter
	TxnLatency      prometheus.Histogram
	ConsumerLag     *prometheus.GaugeVec
	// PartitionStalled is, per partition held, how long it has had lag
	// without its position or committed offset moving.
	PartitionStalled *prometheus.GaugeVec
	// SourcePartitions is the source topics' partition counts: what the
	// group's instances hold between them, one series of
	// PartitionStalled each, when no partition is left unowned.
	SourcePartitions *prometheus.GaugeVec
	Paused           prometheus.Gauge
	// SlowStoreCalls counts the store calls retrying for longer than a few
	// seconds right now (an outage within the store budget).
	SlowStoreCalls prometheus.Gauge
	// TxnCallSeconds is how long the transactional call in progress has run
	// (0 between calls).
	TxnCallSeconds prometheus.Gauge
	// UploadsInFlight and UploadsWaiting are the records uploading now
	// and those waiting for an upload slot.
	UploadsInFlight, UploadsWaiting prometheus.Gauge
	// PrefetchPauses counts the pauses of the source while the Kafka
	// clients held more than their share of memory.in_flight.
	PrefetchPauses prometheus.Counter
	// Turns counts the turns a partition had: the others paused until a
	// record of it was read (engine.Metrics.Turned).
	Turns             *prometheus.CounterVec
	ready, healthy    atomic.Bool
	lastProgressNanos atomic.Int64
	pipeline          string
	// pausedFor is why the pipeline is paused for an unavailable store, and
	// heldFor why an operator paused it (nil: it is not); /readyz answers
	// 503 with the reason for as long as the pause lasts.
	pausedFor, heldFor atomic.Pointer[string]
	stores             storeHealth
}

// StoreLatencyBuckets are the bounds of offloader_store_call_seconds, in
// seconds: a few per decade, and 50, 100, 150, 250 and 500 ms apart, where
// the percentiles of a 1 MiB upload lie, so that p50, p90 and p99 do not
// fall in one bucket.
var StoreLatencyBuckets = []float64{0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.075, 0.1, 0.15, 0.2, 0.25, 0.35, 0.5, 0.75, 1, 1.5, 2.5, 5, 10, 30}

// NewMetrics registers the metrics of one pipeline.
func NewMetrics(pipeline string) *Metrics {
	reg := prometheus.NewRegistry()
	reg.MustRegister(collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	f := func(name, help string) prometheus.Counter {
		c := prometheus.NewCounter(prometheus.CounterOpts{Namespace: "offloader", Name: name, Help: help, ConstLabels: prometheus.Labels{"pipeline": pipeline}})
		reg.MustRegister(c)
		return c
	}
	m := &Metrics{
		pipeline:          pipeline,
		Registry:          reg,
		RecordsIn:         f("records_in_total", "Records consumed from the source and retry topics, each once: a record read again after a rewind counts in records_reread_total instead."),
		RecordsReread:     f("records_reread_total", "Records consumed again after a rewind (an aborted transaction, a pause, a blocking retry) or a rebalance dropped their batch."),
		RecordsOut:        f("records_out_total", "Records produced in committed transactions (to the slim topic, or a retry or dead-letter topic)."),
		RecordsDropped:    f("records_dropped_total", "Records the chain filtered out (their offsets are committed)."),
		Offloaded:         f("offloaded_records_total", "Records whose value went to a payload store."),
		OffloadedBytes:    f("offloaded_bytes_total", "Value bytes moved to a payload store."),
		Passthrough:       f("passthrough_records_total", "Records produced with their value inline."),
		Retried:           f("retried_records_total", "Records sent to a retry topic (in the transaction that commits their offsets)."),
		TxnCommits:        f("transactions_committed_total", "Kafka transactions committed."),
		TxnAborts:         f("transactions_aborted_total", "Kafka transactions aborted (their batches are reprocessed)."),
		ReplacedProducers: f("producers_replaced_total", "Transactional producers replaced because a Kafka client call stayed stuck past its timeout or AbortTransaction failed fatally without a fencing (its open transaction aborted, its batch was reprocessed)."),
		ReservedHeaders:   f("reserved_headers_stripped_total", "Retry headers (__offloader.retry.*) on source records, ignored and removed: only the pipeline's retry topics may carry them."),
		PrefetchPauses:    f("prefetch_pauses_total", "Pauses of the source while the Kafka clients held more than their share of memory.in_flight (offloader_kafka_client_heap_bytes over its limit): records large by their headers or keys, or compressed input. It reads on from its position after each."),
		StoreLatency: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Namespace: "offloader", Name: "store_call_seconds", Help: "Latency of one payload store call (one attempt of offloader's retry policy; the store client's own retries included).",
			ConstLabels: prometheus.Labels{"pipeline": pipeline}, Buckets: StoreLatencyBuckets,
		}, []string{"store", "op"}),
		TxnLatency: prometheus.NewHistogram(prometheus.HistogramOpts{
			Namespace: "offloader", Name: "transaction_commit_seconds", Help: "Time to commit a transaction (offsets and records).",
			ConstLabels: prometheus.Labels{"pipeline": pipeline}, Buckets: prometheus.ExponentialBuckets(0.001, 2, 14),
		}),
		DeadLettered: prometheus.NewCounterVec(prometheus.CounterOpts{
			Namespace: "offloader", Name: "dead_lettered_records_total", Help: "Records sent to the dead-letter topic (in the transaction that commits their offsets), by failure class.",
			ConstLabels: prometheus.Labels{"pipeline": pipeline},
		}, []string{"class"}),
		ConsumerLag: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Namespace: "offloader", Name: "consumer_lag_records", Help: "Records between the consumer's position and the end (high watermark) of each partition it holds, refreshed every 5 s.",
			ConstLabels: prometheus.Labels{"pipeline": pipeline},
		}, []string{"topic", "partition"}),
		PartitionStalled: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Namespace: "offloader", Name: "partition_stalled_seconds", Help: "Seconds a partition this instance holds has had lag without its position or committed offset moving (0 while it moves, has no lag, or the pipeline is paused), refreshed every 5 s; a series for every partition held.",
			ConstLabels: prometheus.Labels{"pipeline": pipeline},
		}, []string{"topic", "partition"}),
		Turns: prometheus.NewCounterVec(prometheus.CounterOpts{
			Namespace: "offloader", Name: "partition_turns_total", Help: "Turns a partition this instance holds had: with lag and no record read for 10 s while others were read (the consumer's fetch responses filled by other partitions of its broker), the others paused until a record of it was read.",
			ConstLabels: prometheus.Labels{"pipeline": pipeline},
		}, []string{"topic", "partition"}),
		SourcePartitions: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Namespace: "offloader", Name: "source_partitions", Help: "Partitions of each source topic (raw and retry topics) at start: the group's instances hold as many between them (count of offloader_partition_stalled_seconds) unless some are unowned.",
			ConstLabels: prometheus.Labels{"pipeline": pipeline},
		}, []string{"topic"}),
		Paused: prometheus.NewGauge(prometheus.GaugeOpts{
			Namespace: "offloader", Name: "paused", Help: "1 while the pipeline is paused (payload store unavailable, or paused through the admin API's POST /pause), else 0.",
			ConstLabels: prometheus.Labels{"pipeline": pipeline},
		}),
		SlowStoreCalls: prometheus.NewGauge(prometheus.GaugeOpts{
			Namespace: "offloader", Name: "store_calls_slow", Help: "Store calls retrying for more than 5 s right now (the store is failing, within errors.store_budget).",
			ConstLabels: prometheus.Labels{"pipeline": pipeline},
		}),
	}
	m.TxnCallSeconds = prometheus.NewGauge(prometheus.GaugeOpts{
		Namespace: "offloader", Name: "transaction_call_seconds", Help: "How long the transactional call in progress (BeginTransaction, SendOffsetsToTransaction, CommitTransaction, AbortTransaction) has run, updated every second; 0 between calls. Past 5 s it is logged once; past its deadline (transaction.timeout.ms, at least 30 s) plus 15 s the producer is replaced.",
		ConstLabels: prometheus.Labels{"pipeline": pipeline},
	})
	m.UploadsInFlight = prometheus.NewGauge(prometheus.GaugeOpts{
		Namespace: "offloader", Name: "uploads_in_flight", Help: "Records uploading to a payload store now; at most memory.max_uploads, so the offload rate is at most that many per store latency.",
		ConstLabels: prometheus.Labels{"pipeline": pipeline},
	})
	m.UploadsWaiting = prometheus.NewGauge(prometheus.GaugeOpts{
		Namespace: "offloader", Name: "uploads_waiting", Help: "Records waiting for an upload slot (memory.max_uploads) or for room in the uploads' share of memory.in_flight: above 0 for long, the store's latency bounds the pipeline.",
		ConstLabels: prometheus.Labels{"pipeline": pipeline},
	})
	reg.MustRegister(m.StoreLatency, m.TxnLatency, m.ConsumerLag, m.PartitionStalled, m.Turns, m.SourcePartitions, m.Paused, m.SlowStoreCalls, m.TxnCallSeconds, m.UploadsInFlight, m.UploadsWaiting, m.DeadLettered)
	m.healthy.Store(true)
	m.Progress(time.Now())
	return m
}

// SetBuildInfo publishes offloader_build_info{version,commit,librdkafka} 1.
func (m *Metrics) SetBuildInfo(version, commit, librdkafka string) {
	g := prometheus.NewGaugeVec(prometheus.GaugeOpts{
		Namespace: "offloader", Name: "build_info", Help: "Always 1; its labels name the build: offloader's version and commit, and the bundled librdkafka's version.",
		ConstLabels: prometheus.Labels{"pipeline": m.pipeline},
	}, []string{"version", "commit", "librdkafka"})
	g.WithLabelValues(version, commit, librdkafka).Set(1)
	m.Registry.MustRegister(g)
}

// WatchClientHeap serves offloader_kafka_client_heap_bytes, read from
// inUse at each scrape, beside its limit.
func (m *Metrics) WatchClientHeap(inUse func() int64, limit int64) {
	labels := prometheus.Labels{"pipeline": m.pipeline}
	m.Registry.MustRegister(prometheus.NewGaugeFunc(prometheus.GaugeOpts{
		Namespace: "offloader", Name: "kafka_client_heap_bytes", Help: "Memory the Kafka clients (librdkafka) hold in the C heap: prefetched records and their fetch responses, the produce queue, buffers. The source pauses while it is over offloader_kafka_client_heap_limit_bytes.",
		ConstLabels: labels,
	}, func() float64 { return float64(inUse()) }))
	l := prometheus.NewGauge(prometheus.GaugeOpts{
		Namespace: "offloader", Name: "kafka_client_heap_limit_bytes", Help: "The Kafka clients' share of memory.in_flight: the prefetch queue, a fetch response per broker, the produce queue and librdkafka's own buffers.",
		ConstLabels: labels,
	})
	l.Set(float64(limit))
	m.Registry.MustRegister(l)
}

// SetReady marks the pipeline ready (it holds partitions) or not. A pause
// keeps /readyz at 503 whatever this says.
func (m *Metrics) SetReady(ready bool) { m.ready.Store(ready) }

// Pause marks the pipeline paused for reason until Resume: offloader_paused is
// 1 and /readyz answers 503 with the reason.
func (m *Metrics) Pause(reason string) {
	m.pausedFor.Store(&reason)
	m.Paused.Set(1)
}

// Resume ends a pause.
func (m *Metrics) Resume() {
	m.pausedFor.Store(nil)
	m.setPaused()
}

// PauseByOperator marks the pipeline paused by an operator for reason
// until ResumeByOperator, as Pause does.
func (m *Metrics) PauseByOperator(reason string) {
	m.heldFor.Store(&reason)
	m.Paused.Set(1)
}

// ResumeByOperator ends an operator's pause.
func (m *Metrics) ResumeByOperator() {
	m.heldFor.Store(nil)
	m.setPaused()
}

func (m *Metrics) setPaused() {
	if m.pausedFor.Load() == nil && m.heldFor.Load() == nil {
		m.Paused.Set(0)
	}
}

// Readiness is what /readyz answers: ready, or why not.
func (m *Metrics) Readiness() (ready bool, why string) {
	if reason := m.heldFor.Load(); reason != nil {
		return false, "paused by an operator: " + *reason
	}
	if reason := m.pausedFor.Load(); reason != nil {
		return false, "paused: " + *reason
	}
	if !m.ready.Load() {
		return false, "not ready: no partitions assigned"
	}
	return true, ""
}

// SetHealthy marks the process unhealthy after a fatal error.
func (m *Metrics) SetHealthy(healthy bool) { m.healthy.Store(healthy) }

// Progress records that the run loop went round at now; /healthz fails when it stalls.
func (m *Metrics) Progress(now time.Time) { m.lastProgressNanos.Store(now.UnixNano()) }

// Serve answers /metrics, /healthz and /readyz on addr until ctx ends, and
// every other path with more (the admin API; nil: 404). It returns once the
// listener is bound, or with the bind error.
func (m *Metrics) Serve(ctx context.Context, addr string, stallAfter time.Duration, more http.Handler) (net.Addr, error) {
	mux := http.NewServeMux()
	if more != nil {
		mux.Handle("/", more)
	}
	mux.Handle("/metrics", promhttp.HandlerFor(m.Registry, promhttp.HandlerOpts{}))
	mux.HandleFunc("/healthz", func(w http.ResponseWriter, _ *http.Request) {
		stalled := time.Since(time.Unix(0, m.lastProgressNanos.Load())) > stallAfter
		if !m.healthy.Load() || stalled {
			http.Error(w, "unhealthy: the run loop failed or stalled", http.StatusServiceUnavailable)
			return
		}
		w.Write([]byte("ok\n"))
	})
	mux.HandleFunc("/readyz", func(w http.ResponseWriter, _ *http.Request) {
		if ready, why := m.Readiness(); !ready {
			http.Error(w, why, http.StatusServiceUnavailable)
			return
		}
		w.Write([]byte("ok\n"))
	})
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, err
	}
	srv := &http.Server{Handler: mux, ReadHeaderTimeout: 5 * time.Second}
	go func() {
		<-ctx.Done()
		shutdown, cancel := context.WithTimeout(context.Background(), 2*time.Second)
		defer cancel()
		srv.Shutdown(shutdown)
	}()
	go func() {
		if err := srv.Serve(ln); err != nil && !errors.Is(err, http.ErrServerClosed) {
			m.SetHealthy(false)
		}
	}()
	return ln.Addr(), nil
}

// InstrumentStore wraps a payload store so that every call's latency lands in
// StoreLatency; the stores themselves stay free of metrics code.
func (m *Metrics) InstrumentStore(name string, s stores.Store) stores.Store {
	m.stores.add(name)
	return &instrumentedStore{Store: s, name: name, latency: m.StoreLatency, health: &m.stores}
}

type instrumentedStore struct {
	stores.Store
	name    string
	latency *prometheus.HistogramVec
	health  *storeHealth
}

func (s *instrumentedStore) observe(op string, start time.Time, err error) {
	now := time.Now()
	s.latency.WithLabelValues(s.name, op).Observe(now.Sub(start).Seconds())
	s.health.observe(s.name, now, err)
}

func (s *instrumentedStore) Put(ctx context.Context, key string, value []byte, meta stores.Metadata) error {
	start := time.Now()
	err := s.Store.Put(ctx, key, value, meta)
	s.observe("put", start, err)
	return err
}

func (s *instrumentedStore) Get(ctx context.Context, key string, limit int64) ([]byte, error) {
	start := time.Now()
	b, err := s.Store.Get(ctx, key, limit)
	s.observe("get", start, err)
	return b, err
}
