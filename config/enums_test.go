package config_test

import (
	"testing"

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
