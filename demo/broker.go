//go:build demo

package demo

import (
	"strings"

	"github.com/twmb/franz-go/pkg/kfake"
)

// startDemoBroker starts the demo's in-process Kafka-protocol broker (kfake,
// memory only). Only a build with the demo tag (make demo) links it: the
// daemon's binary holds one Kafka client, librdkafka.
func startDemoBroker() (bootstrap string, stop func(), err error) {
	cluster, err := kfake.NewCluster(kfake.NumBrokers(1))
	if err != nil {
		return "", nil, err
	}
	return strings.Join(cluster.ListenAddrs(), ","), cluster.Close, nil
}
