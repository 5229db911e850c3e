package daemon

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"go.uber.org/zap"
	"golang.org/x/time/rate"

	"github.com/offloader/offloader/config"
	"github.com/offloader/offloader/observability"
	"github.com/offloader/offloader/stores"
)

// openStores opens p's payload stores, each retried within
// errors.store_budget, and proves that each keeps what it is given before
// the first pointer to it is committed: a proxy that answers uploads with a
// login page, or a server that drops bodies, is found here, not by a
// consumer later. The stores it returns are throttled to limit, if set, and
// instrumented.
func openStores(ctx context.Context, p *config.Pipeline, limit *rate.Limiter, m *observability.Metrics) (map[string]stores.Store, error) {
	var open map[string]stores.Store
	err := stores.DefaultRetryPolicy(p.Errors.StoreBudget).Do(ctx, func(ctx context.Context) (err error) {
		open, err = p.OpenStores(ctx)
		return err
	})
	if err != nil {
		// Nothing has been consumed yet: exiting loses nothing, and a
		// supervisor restarts the instance once the store answers.
		return nil, fmt.Errorf("nothing was consumed: %w", err)
	}
	for _, kp := range p.KeyPrefixes() {
		if kp.Adopted {
			continue
		}
		err := stores.DefaultRetryPolicy(p.Errors.StoreBudget).Do(ctx, func(ctx context.Context) error {
			_, err := stores.Probe(ctx, open[kp.Store], kp.Prefix)
			return err
		})
		if err != nil {
			for _, s := range open {
				s.Close()
			}
			return nil, fmt.Errorf("nothing was consumed: store %q does not keep what it is given (a probe object written under %s/ and read back): %w; offloader check says more", kp.Store, kp.Prefix, err)
		}
	}
	for name, s := range open {
		if limit != nil {
			s = stores.Throttled(s, limit)
		}
		open[name] = m.InstrumentStore(name, s)
	}
	return open, nil
}

// slowStoreCall is how long a store call retries before it is logged and
// counted in offloader_store_calls_slow.
const slowStoreCall = 5 * time.Second

// storeRetry is the retry policy of store calls within budget. A call that
// retries longer than slowStoreCall counts in offloader_store_calls_slow
// until it ends, and is logged: the first of a burst (several workers, or a
// pause retrying the batch) as a warning, at most once a minute, the others
// at debug level.
func storeRetry(budget time.Duration, logger *zap.Logger, m *observability.Metrics) stores.RetryPolicy {
	r := stores.DefaultRetryPolicy(budget)
	r.SlowAfter = slowStoreCall
	var mu sync.Mutex
	var warned time.Time
	r.Slow = func(c stores.SlowCall) {
		store := "the payload store"
		if se := (*stores.Error)(nil); errors.As(c.Err, &se) {
			store = fmt.Sprintf("store %q", se.Store)
		}
		fields := []zap.Field{zap.Duration("retrying_for_seconds", c.Elapsed), zap.Int("attempts", c.Attempts), zap.Duration("store_budget_seconds", budget), zap.Error(c.Err)}
		switch {
		case !c.Done:
			m.SlowStoreCalls.Inc()
			mu.Lock()
			level := zap.DebugLevel
			if time.Since(warned) >= time.Minute {
				level, warned = zap.WarnLevel, time.Now()
			}
			mu.Unlock()
			logger.Log(level, store+" is failing: a call is still retrying and the pipeline waits for it, up to errors.store_budget (offloader_store_calls_slow counts such calls)", fields...)
		case c.Err == nil:
			m.SlowStoreCalls.Dec()
			logger.Info("a slow store call succeeded", fields[:2]...)
		default:
			m.SlowStoreCalls.Dec()
			logger.Debug(store+": a slow store call gave up", fields...)
		}
	}
	return r
}
