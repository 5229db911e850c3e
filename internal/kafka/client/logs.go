package client

import (
	"regexp"
	"strings"
	"sync"
	"time"

	"github.com/confluentinc/confluent-kafka-go/v2/kafka"
	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"
)

// Log writes a client's librdkafka log (go.logs.channel.enable) to log
// until the client closes: one stream, in the pipeline's log format, instead
// of librdkafka's own lines on stderr.
//
// A broker that cannot be reached (a rolling restart, a crash) is a warning,
// logged once per broker and outage (Outages), not an error per connection
// attempt: librdkafka reconnects by itself, and an error line is for what
// needs a person.
//
// away tracks the Outages the clients of one instance share (its consumer,
// its producer and the producers that replace it), so that a broker's
// outage is said once for all of them; nil: the client's own.
func Log(log *zap.Logger, events chan kafka.LogEvent, away *Outages) {
	var once Repeats
	if away == nil {
		away = &Outages{}
	}
	for ev := range events {
		msg := strings.TrimSpace(ev.Message)
		if broker, ok := brokerAway(msg); ok {
			if away.begins(broker, time.Now()) {
				log.Warn("a Kafka broker cannot be reached; the client reconnects by itself (said once per broker and outage)",
					zap.String("broker", broker), zap.String("kafka_client", ev.Name), zap.String("first_error", msg))
			}
			continue
		}
		level := syslogLevel(ev.Level)
		if level > zapcore.WarnLevel && strings.Contains(msg, cutByTransport) {
			// A request the connection dropped under (librdkafka's ADDOFFSETS,
			// say): the call it belongs to says what that means for the batch.
			level = zapcore.WarnLevel
		}
		ce := log.Check(level, msg)
		if ce == nil {
			continue
		}
		// Debug lines (librdkafka's debug property) are asked for, and read
		// for their figures: each is logged.
		if level == zapcore.DebugLevel {
			ce.Write(zap.String("kafka_client", ev.Name), zap.String("tag", ev.Tag))
		} else if log, suppressed := once.Say(ev.Tag + " " + msg); log {
			ce.Write(zap.String("kafka_client", ev.Name), zap.String("tag", ev.Tag), zap.Int("repeated_since_last_logged", suppressed))
		}
	}
}

// cutByTransport ends a librdkafka line about a request that failed because
// its broker connection went away.
const cutByTransport = "Local: Broker transport failure"

// awayMessage is a librdkafka line saying that a broker cannot be reached
// or dropped the connection: "HOST:PORT/ID: Connect to ... failed: ...",
// "...: Disconnected ...", "...: Receive failed ...", "...: Connection
// refused", after librdkafka's thread name ("[thrd:HOST:PORT/ID]: ") and,
// for a coordinator's connection, its role ("GroupCoordinator: HOST:PORT: ").
// The broker is never the thread name itself: "[thrd:HOST:PORT/ID]: Current
// transaction failed ...: 6 message(s) timed out" is a transaction's
// produce timeout, logged as librdkafka says, not a broker away named
// "[thrd:HOST:PORT".
var awayMessage = regexp.MustCompile(`^(?:\[thrd:[^\]]*\]: )?(?:[A-Za-z]+Coordinator: )?([^\s\[]\S*:\d+(?:/\S+?)?): (Connect to .* failed|Disconnected|Receive failed|Send failed|Failed to resolve|.*Connection (refused|reset)|.*timed out)`)

// brokerAway reports whether msg says a broker is away, and which one
// (HOST:PORT: its connections as a broker, bootstrap server and coordinator
// are one broker).
func brokerAway(msg string) (string, bool) {
	if m := awayMessage.FindStringSubmatch(msg); m != nil {
		broker, _, _ := strings.Cut(m[1], "/")
		return broker, true
	}
	return "", false
}

// outageQuiet ends an outage: a broker not said to be away for this long
// is back (librdkafka retries a connection within seconds), and its next
// failure is a new outage.
const outageQuiet = 60 * time.Second

// Outages tracks the brokers said to be away, to log each outage once.
type Outages struct {
	mu       sync.Mutex
	lastSeen map[string]time.Time
}

// begins reports whether a failure of broker at now starts an outage (its
// last failure was longer than outageQuiet ago, or there was none).
func (o *Outages) begins(broker string, now time.Time) bool {
	o.mu.Lock()
	defer o.mu.Unlock()
	if o.lastSeen == nil {
		o.lastSeen = map[string]time.Time{}
	}
	last, seen := o.lastSeen[broker]
	o.lastSeen[broker] = now
	return !seen || now.Sub(last) > outageQuiet
}

// Transient reports whether a client error event only says that brokers
// are away: librdkafka's log says so too (Log logs it once per
// outage), so the event adds nothing but a second line.
func Transient(e kafka.Error) bool {
	return !e.IsFatal() && (e.Code() == kafka.ErrTransport || e.Code() == kafka.ErrAllBrokersDown)
}

// repeatWindow: a client message seen again within it is counted, not
// logged again (a broker outage makes librdkafka repeat itself every few
// hundred milliseconds, per connection).
const repeatWindow = 30 * time.Second

// Repeats decides which of a stream of messages to log: the first of each
// kind, then the next only once repeatWindow has passed, with how many were
// left out in between. Numbers (durations, offsets, counts) do not make a
// message new.
type Repeats struct {
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
func (r *Repeats) Say(msg string) (bool, int) {
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
