package config_test

import (
	"testing"
	"time"

	"github.com/offloader/offloader/config"
)

// Each enum of the pipeline file refuses a value it does not name, listing
// the values it takes.
func TestEnumsNameTheValuesTheyTake(t *testing.T) {
	for _, c := range []struct {
		err  error
		want string
	}{
		{config.Partitioning("random").Validate(), `must be "preserve" or "key_hash", got "random"`},
		{config.LimitsMode("").Validate(), `must be "enforce" or "warn", got ""`},
		{config.StoreOutage("drop").Validate(), `must be "pause" or "retry_topic", got "drop"`},
		{config.RetryMode("BLOCKING").Validate(), `must be "non_blocking" or "blocking", got "BLOCKING"`},
	} {
		if c.err == nil || c.err.Error() != c.want {
			t.Errorf("got %v, want %s", c.err, c.want)
		}
	}
	for _, err := range []error{config.PartitioningKeyHash.Validate(), config.LimitsWarn.Validate(), config.OnStoreOutagePause.Validate(), config.ModeBlocking.Validate()} {
		if err != nil {
			t.Errorf("a value the enum names: %v", err)
		}
	}
}

// start_from is earliest, latest or an RFC 3339 time, parsed in one place.
func TestStartFromIsParsedOnce(t *testing.T) {
	for s, ok := range map[config.StartFrom]bool{"": true, "earliest": true, "latest": true, "2026-12-01T09:00:00Z": true,
		"yesterday": false, "2026-12-01 09:00": false} {
		if err := s.Validate(); (err == nil) != ok {
			t.Errorf("%q: %v", s, err)
		}
	}
	at, isTime := config.StartFrom("2026-12-01T09:00:00Z").Time()
	if !isTime || at.Hour() != 9 {
		t.Errorf("the time: %v %v", at, isTime)
	}
	if (config.Source{}).Start() != config.StartEarliest {
		t.Errorf("the default is %q", (config.Source{}).Start())
	}
}

// The errors: section becomes the failure policy's rules in config.
func TestErrorsBecomeThePolicysRules(t *testing.T) {
	e := config.Errors{Mode: config.ModeNonBlocking, OnStoreOutage: config.OnStoreOutageRetryTopic, DeadLetterTopic: "dlt",
		RetryTopics: []config.RetryTopic{{Topic: "retry-1", Delay: time.Second}, {Topic: "retry-2", Delay: time.Minute}}}
	r := e.Rules()
	if r.Blocking || !r.OutageToRetryTopic || r.DeadLetterTopic != "dlt" || len(r.Tiers) != 2 || r.Tiers[1].Topic != "retry-2" || r.Tiers[1].Delay != time.Minute {
		t.Errorf("rules %+v", r)
	}
	e = config.Errors{Mode: config.ModeBlocking, RetryDelays: []time.Duration{time.Second}, OnStoreOutage: config.OnStoreOutagePause}
	if r := e.Rules(); !r.Blocking || r.OutageToRetryTopic || len(r.Delays) != 1 || len(r.Tiers) != 0 {
		t.Errorf("blocking rules %+v", r)
	}
}
