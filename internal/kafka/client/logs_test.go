package client

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/confluentinc/confluent-kafka-go/v2/kafka"
	"go.uber.org/zap"
	"go.uber.org/zap/zaptest/observer"
)

// A client repeating itself (a broker away) is logged once per kind and
// window, numbers aside; a new kind is logged at once.
func TestRepeatedClientMessagesAreLoggedOnce(t *testing.T) {
	var r Repeats
	down := "127.0.0.1:19092/1: Connect to ipv4#127.0.0.1:19092 failed: Connection refused (after %dms in state CONNECT)"
	logged := 0
	for i := range 100 {
		if ok, _ := r.Say(fmtDown(down, i)); ok {
			logged++
		}
	}
	if logged != 1 {
		t.Errorf("%d of 100 Repeats logged, want 1", logged)
	}
	if ok, _ := r.Say("1/1 brokers are down"); !ok {
		t.Error("a new kind of message was not logged")
	}
	s := r.seen[digitsKey(fmtDown(down, 0))]
	if s == nil || s.suppressed != 99 {
		t.Fatalf("suppressed count %+v, want 99", s)
	}
	s.logged = s.logged.Add(-repeatWindow) // the window has passed
	if ok, n := r.Say(fmtDown(down, 7)); !ok || n != 99 {
		t.Errorf("after the window: logged %v with %d left out, want true and 99", ok, n)
	}
}

func fmtDown(format string, ms int) string { return fmt.Sprintf(format, ms) }

func digitsKey(msg string) string { return digits.ReplaceAllString(msg, "#") }

// A broker that cannot be reached is one warning per broker and outage (its
// connections as a broker and as a coordinator alike), not an error line per
// connection attempt, and once for all the clients that share the Outages
// (an instance's consumer and producer); another client error stays an
// error; a broker away again after a quiet spell is a new outage.
// brokerAway names the broker of a line about its connection, intact, and
// nothing for a line whose only broker is librdkafka's thread name: a
// transaction's produce timeout is not a broker away (it was logged as one,
// for a broker named "[thrd:127.0.0.1:39392").
func TestBrokerAwayNamesTheBrokerIntact(t *testing.T) {
	for msg, want := range map[string]string{
		"[thrd:127.0.0.1:19193/2]: 127.0.0.1:19193/2: Disconnected (after 1200ms in state UP)":                                                              "127.0.0.1:19193",
		"127.0.0.1:19194/2: Receive failed: Connection reset by peer":                                                                                       "127.0.0.1:19194",
		"[thrd:TxnCoordinator]: TxnCoordinator: 127.0.0.1:19092: Connect to ipv4#127.0.0.1:19092 failed: Connection refused":                                "127.0.0.1:19092",
		"[thrd:127.0.0.1:19192/1]: Current transaction failed in state InTransaction: 6 message(s) timed out on slim [2] (_TIMED_OUT, requires epoch bump)": "",
	} {
		if got, _ := brokerAway(msg); got != want {
			t.Errorf("brokerAway(%q) = %q, want %q", msg, got, want)
		}
	}
}

func TestABrokerAwayIsOneWarningPerOutage(t *testing.T) {
	core, logs := observer.New(zap.DebugLevel)
	events, consumer := make(chan kafka.LogEvent, 16), make(chan kafka.LogEvent, 1)
	done := make(chan struct{})
	away := &Outages{}
	go func() { Log(zap.New(core), consumer, away); close(done) }()
	consumer <- kafka.LogEvent{Name: "rdkafka#consumer-2", Tag: "FAIL", Level: 3,
		Message: "127.0.0.1:19092/1: Connect to ipv4#127.0.0.1:19092 failed: Connection refused (after 1ms in state CONNECT)"}
	close(consumer)
	<-done
	done = make(chan struct{})
	go func() { Log(zap.New(core), events, away); close(done) }()
	for i := range 5 {
		events <- kafka.LogEvent{Name: "rdkafka#producer-1", Tag: "FAIL", Level: 3,
			Message: fmt.Sprintf("127.0.0.1:19092/1: Connect to ipv4#127.0.0.1:19092 failed: Connection refused (after %dms in state CONNECT)", i)}
		events <- kafka.LogEvent{Name: "rdkafka#producer-1", Tag: "FAIL", Level: 3,
			Message: "[thrd:127.0.0.1:19093/2]: 127.0.0.1:19093/2: Disconnected (after 1200ms in state UP)"}
	}
	events <- kafka.LogEvent{Name: "rdkafka#producer-1", Tag: "FAIL", Level: 3,
		Message: "[thrd:TxnCoordinator]: TxnCoordinator: 127.0.0.1:19092: Connect to ipv4#127.0.0.1:19092 failed: Connection refused (after 0ms in state CONNECT)"}
	events <- kafka.LogEvent{Name: "rdkafka#producer-1", Tag: "SSL", Level: 3, Message: "ssl.ca.location failed: No such file"}
	// A request the connection dropped under: a warning (its call says what
	// it means for the batch).
	events <- kafka.LogEvent{Name: "rdkafka#producer-1", Tag: "ADDOFFSETS", Level: 3,
		Message: "[thrd:main]: TxnCoordinator/1: Failed to add offsets to transaction on broker TxnCoordinator/1: Local: Broker transport failure"}
	close(events)
	<-done
	var warned, cut []string
	for _, e := range logs.All() {
		switch e.Level {
		case zap.WarnLevel:
			if e.Message != "a Kafka broker cannot be reached; the client reconnects by itself (said once per broker and outage)" {
				cut = append(cut, e.Message)
				continue
			}
			warned = append(warned, e.ContextMap()["broker"].(string))
		case zap.ErrorLevel:
			if e.Message != "ssl.ca.location failed: No such file" {
				t.Errorf("an error line for a broker away: %s", e.Message)
			}
		}
	}
	if fmt.Sprint(warned) != "[127.0.0.1:19092 127.0.0.1:19093]" || logs.FilterLevelExact(zap.ErrorLevel).Len() != 1 {
		t.Fatalf("warned about %v, %d error lines; want one warning per broker and the SSL error", warned, logs.FilterLevelExact(zap.ErrorLevel).Len())
	}
	if len(cut) != 1 || !strings.HasSuffix(cut[0], "Local: Broker transport failure") {
		t.Errorf("other warnings %q, want the request cut by its connection", cut)
	}
	var o Outages
	now := time.Now()
	if !o.begins("b/1", now) || o.begins("b/1", now.Add(outageQuiet/2)) || !o.begins("b/1", now.Add(outageQuiet/2+outageQuiet+time.Second)) {
		t.Error("an outage does not begin, go on and end as outageQuiet says")
	}
}

// librdkafka's debug lines (the kafka.consumer or kafka.producer debug
// property) are each logged: they are asked for, and lines alike but for
// their figures (a partition's fetch decisions, offsets and queue lengths)
// are what they are read for.
func TestDebugLinesAreEachLogged(t *testing.T) {
	core, logs := observer.New(zap.DebugLevel)
	events := make(chan kafka.LogEvent, 8)
	for i := range 5 {
		events <- kafka.LogEvent{Name: "rdkafka#consumer-1", Tag: "FETCH", Level: 7,
			Message: fmt.Sprintf("127.0.0.1:19092/1: Topic raw [5] in state active at offset %d (%d/8192 msgs queued) is not fetchable: queued.min.messages exceeded", 5491, 8000+i)}
	}
	close(events)
	Log(zap.New(core), events, nil)
	if n := logs.FilterMessageSnippet("is not fetchable").Len(); n != 5 {
		t.Fatalf("%d of 5 debug lines logged, want each", n)
	}
}
