//go:build !demo

package demo

import "errors"

// startDemoBroker: this build has no in-process broker (it is linked only
// with the demo tag, by make demo), so the demo needs a real cluster.
func startDemoBroker() (string, func(), error) {
	return "", nil, errors.New("this offloader was built without the demo's in-process broker: give --brokers HOST:PORT of a cluster, or run make demo, which builds bin/offloader-demo with it")
}
