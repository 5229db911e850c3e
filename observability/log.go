// Package observability builds offloader's logger and serves its Prometheus
// metrics and health endpoints.
package observability

import (
	"fmt"
	"os"

	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"

	"github.com/offloader/offloader/redact"
)

// NewLogger returns a zap logger writing to stderr: JSON lines (format "json")
// or human-readable lines ("console"), at level debug, info, warn or error.
func NewLogger(format, level string) (*zap.Logger, error) {
	var lvl zapcore.Level
	if err := lvl.UnmarshalText([]byte(level)); err != nil {
		return nil, fmt.Errorf("log level %q: must be debug, info, warn or error", level)
	}
	var cfg zap.Config
	switch format {
	case "json":
		cfg = zap.NewProductionConfig()
		cfg.EncoderConfig.TimeKey = "time"
		cfg.EncoderConfig.EncodeTime = zapcore.ISO8601TimeEncoder
	case "console":
		cfg = zap.NewDevelopmentConfig()
	default:
		return nil, fmt.Errorf("log format %q: must be json or console", format)
	}
	cfg.Level = zap.NewAtomicLevelAt(lvl)
	// Errors here are operational (a broker away, a store refusing), not
	// bugs: their message says what happened, a stack trace would not.
	cfg.DisableStacktrace = true
	cfg.Sampling = nil
	// Every line goes through package redact: an SDK's error may quote a
	// signed URL, librdkafka's a property.
	sink := zapcore.Lock(zapcore.AddSync(redact.NewWriter(os.Stderr)))
	var enc zapcore.Encoder
	if format == "json" {
		enc = zapcore.NewJSONEncoder(cfg.EncoderConfig)
	} else {
		enc = zapcore.NewConsoleEncoder(cfg.EncoderConfig)
	}
	return zap.New(zapcore.NewCore(enc, sink, cfg.Level), zap.AddCaller(), zap.ErrorOutput(sink)), nil
}
