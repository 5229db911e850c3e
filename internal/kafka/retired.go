package kafka

import (
	"sync/atomic"

	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"
)

// retiredLog is a producer's logger that, once the producer is replaced
// (retire), says so in every line and keeps its errors and warnings at
// INFO. A replaced producer may go on logging while it closes: its
// replacement, with the same transactional.id, fences it ("fenced by a
// newer instance"), which at ERROR reads as a second instance of the same
// identity. It is not: the instance replaced its own producer, and
// offloader_producers_replaced_total and the replacement's own line say why.
type retiredLog struct {
	*zap.Logger
	retired *atomic.Bool
}

func newRetiredLog(log *zap.Logger) retiredLog {
	retired := new(atomic.Bool)
	return retiredLog{
		Logger:  log.WithOptions(zap.WrapCore(func(c zapcore.Core) zapcore.Core { return retiredCore{c, retired} })),
		retired: retired,
	}
}

// retire marks the producer replaced.
func (l retiredLog) retire() { l.retired.Store(true) }

type retiredCore struct {
	zapcore.Core
	retired *atomic.Bool
}

func (c retiredCore) With(fields []zapcore.Field) zapcore.Core {
	return retiredCore{c.Core.With(fields), c.retired}
}

func (c retiredCore) Check(e zapcore.Entry, ce *zapcore.CheckedEntry) *zapcore.CheckedEntry {
	if c.retired.Load() {
		e.Message = "a transactional producer replaced by this instance, closing: " + e.Message
		e.Level = min(e.Level, zapcore.InfoLevel)
	}
	if !c.Enabled(e.Level) {
		return ce
	}
	return ce.AddCore(e, c)
}
