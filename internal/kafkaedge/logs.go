package kafkaedge

import (
	"strings"

	"github.com/confluentinc/confluent-kafka-go/v2/kafka"
	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"
)

// logClient writes a client's librdkafka log (go.logs.channel.enable) to log
// until the client closes: one stream, in the pipeline's log format, instead
// of librdkafka's own lines on stderr.
func logClient(log *zap.Logger, events chan kafka.LogEvent) {
	for ev := range events {
		if ce := log.Check(syslogLevel(ev.Level), strings.TrimSpace(ev.Message)); ce != nil {
			ce.Write(zap.String("kafka_client", ev.Name), zap.String("tag", ev.Tag))
		}
	}
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

// adminSettings are the prefixes of the client properties that concern the
// connection: the only ones the admin client gets (the consumer's fetch
// settings would make it warn that it ignores them).
var adminSettings = []string{"bootstrap.servers", "security.", "sasl.", "ssl.", "ssl_", "socket.", "broker.", "client.", "reconnect.",
	"connections.", "enable.metrics.push", "enable.ssl.", "enable.sasl.", "https.", "api.version", "debug", "resolve.canonical.", "metadata.", "topic.metadata."}

func isAdminSetting(name string) bool {
	for _, prefix := range adminSettings {
		if strings.HasPrefix(name, prefix) {
			return true
		}
	}
	return false
}
