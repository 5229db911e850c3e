package daemon

import (
	"context"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"time"

	"go.uber.org/zap"

	"github.com/offloader/offloader/admin"
	"github.com/offloader/offloader/config"
	"github.com/offloader/offloader/internal/kafka/client"
	"github.com/offloader/offloader/internal/kafka/kadmin"
	"github.com/offloader/offloader/observability"
	"github.com/offloader/offloader/pipeline/engine"
)

// adminWait is how long POST /pause and /resume wait for the engine to obey
// before answering 202: a pause commits the batch in hand first.
const adminWait = 30 * time.Second

// stallAfter is how long the run loop may not come round before /healthz fails.
const stallAfter = 2 * time.Minute

// serveAdmin starts the listener of /metrics, /healthz, /readyz and the
// admin API, if observability.listen names one, and returns its address.
func serveAdmin(ctx context.Context, o config.Observability, m *observability.Metrics, api *admin.Server, logger *zap.Logger) (net.Addr, error) {
	if o.Listen == "" {
		return nil, nil
	}
	if o.PauseFile != "" {
		if fi, err := os.Stat(filepath.Dir(o.PauseFile)); err != nil || !fi.IsDir() {
			return nil, fmt.Errorf("observability.pause_file %s: its directory must exist and be writable (a volume that outlives the container)", o.PauseFile)
		}
	}
	addr, err := m.Serve(ctx, o.Listen, stallAfter, api)
	if err != nil {
		return nil, fmt.Errorf("observability.listen %s: %w", o.Listen, err)
	}
	logger.Info("serving /metrics, /healthz, /readyz and the admin API (GET /status, "+admin.Steering+")",
		zap.String("address", addr.String()), zap.Bool("token", o.AdminToken != ""))
	if tcp, ok := addr.(*net.TCPAddr); ok && !tcp.IP.IsLoopback() && o.AdminToken == "" {
		logger.Warn("the admin API answers anyone who reaches this address: "+admin.Steering+" steer the pipeline (a leave moves the instance's partitions away when it stops); set observability.admin_token (or keep the port private)",
			zap.String("address", addr.String()))
	}
	return addr, nil
}

// startPaused pauses eng before it consumes anything if the pause file
// says an operator paused it before a restart.
func startPaused(eng *engine.Engine, path string, logger *zap.Logger) error {
	if path == "" {
		return nil
	}
	reason, paused, err := admin.ReadPauseFile(path)
	if err != nil || !paused {
		return err
	}
	eng.Pause(reason)
	logger.Warn("starting paused: an operator paused this pipeline before the restart (POST /resume, or offloader resume, resumes it)",
		zap.String("reason", reason), zap.String("pause_file", path))
	return nil
}

// leaveTimeout bounds removing the static membership at a stop. It covers a
// group coordinator's failover (a crash: the broker's session timeout, 9 s
// by default, then the election; 13-15 s on the suite's 3-node cluster),
// which the request rides out; with the stop's own commit (at most 30 s)
// it stays within the StatefulSet's 90 s termination grace period.
const leaveTimeout = 30 * time.Second

// leaveGroup removes the stopped instance's static membership (POST /leave
// asked for it): its partitions move to the other instances now, not after
// session.timeout.ms. Failing, it says so; the member then times out.
func leaveGroup(k client.Pipeline, logger *zap.Logger) {
	ctx, cancel := context.WithTimeout(context.Background(), leaveTimeout)
	defer cancel()
	id := k.GroupInstanceID()
	if err := kadmin.RemoveStaticMember(ctx, k); err != nil {
		logger.Warn("could not remove the static member: its partitions move once session.timeout.ms passes", zap.String("group_instance_id", id), zap.Error(err))
		return
	}
	logger.Info("left the group for good: static member removed, its partitions move now", zap.String("group", k.Group), zap.String("group_instance_id", id))
}
