//go:build !demo

package demo

import (
	"strings"
	"testing"
)

// Without a broker of the user's, a build without the demo tag says how to
// get one.
func TestTheDemoNeedsABroker(t *testing.T) {
	_, _, err := startDemoBroker()
	if err == nil || !strings.Contains(err.Error(), "give --brokers HOST:PORT") {
		t.Errorf("%v", err)
	}
}
