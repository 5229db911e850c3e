package daemon

import (
	"go.uber.org/zap"

	"github.com/offloader/offloader/config"
	"github.com/offloader/offloader/internal/kafka/kadmin"
	"github.com/offloader/offloader/internal/kafka/reader"
)

// Cluster opens what migrate's procedures read and move on p's cluster:
// its topics, read_committed, and its consumer groups. close releases it.
func Cluster(p *config.Pipeline, log *zap.Logger) (cluster *reader.TopicLog, close func(), err error) {
	groups, err := kadmin.OpenGroups(KafkaClient(p), orNop(log))
	if err != nil {
		return nil, nil, err
	}
	return reader.NewTopicLog(groups, p.Kafka.BootstrapServers, p.Kafka.Consumer), groups.Close, nil
}

func orNop(log *zap.Logger) *zap.Logger {
	if log == nil {
		return zap.NewNop()
	}
	return log
}
