package kafka

import (
	"regexp"
	"strings"
	"sync"
	"time"

	"github.com/confluentinc/confluent-kafka-go/v2/kafka"
	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"
)

// logClient writes a client's librdkafka log (go.logs.channel.enable) to log
// until the client closes: one stream, in the pipeline's log format, instead
// of librdkafka's own lines on stderr.
func logClient(log *zap.Logger, events chan kafka.LogEvent) {
	var once repeats
	for ev := range events {
		msg := strings.TrimSpace(ev.Message)
		ce := log.Check(syslogLevel(ev.Level), msg)
		if ce == nil {
			continue
		}
		if log, suppressed := once.log(ev.Tag + " " + msg); log {
			ce.Write(zap.String("kafka_client", ev.Name), zap.String("tag", ev.Tag), zap.Int("repeated_since_last_logged", suppressed))
		}
	}
}

// repeatWindow: a client message seen again within it is counted, not
// logged again (a broker outage makes librdkafka repeat itself every few
// hundred milliseconds, per connection).
const repeatWindow = 30 * time.Second

// repeats decides which of a stream of messages to log: the first of each
// kind, then the next only once repeatWindow has passed, with how many were
// left out in between. Numbers (durations, offsets, counts) do not make a
// message new.
type repeats struct {
	mu   sync.Mutex
	seen map[string]*repeat
}

type repeat struct {
	logged     time.Time
	suppressed int
}

var digits = regexp.MustCompile(`[0-9]+`)

// log reports whether msg is to be logged now, and how many of its kind were
// left out since it last was.
func (r *repeats) log(msg string) (bool, int) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.seen == nil || len(r.seen) > 256 {
		r.seen = map[string]*repeat{}
	}
	key := digits.ReplaceAllString(msg, "#")
	now := time.Now()
	s, ok := r.seen[key]
	if !ok {
		r.seen[key] = &repeat{logged: now}
		return true, 0
	}
	if now.Sub(s.logged) < repeatWindow {
		s.suppressed++
		return false, 0
	}
	n := s.suppressed
	s.logged, s.suppressed = now, 0
	return true, n
}

// syslogLevel maps librdkafka's syslog levels onto zap's.
func syslogLevel(level int) zapcore.Level {
	switch {
	case level <= 3:
		return zapcore.ErrorLevel
	case level == 4:
		return zapcore.WarnLevel
	case level <= 6:
		return zapcore.InfoLevel
	}
	return zapcore.DebugLevel
}
