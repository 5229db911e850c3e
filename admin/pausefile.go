package admin

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
)

// keepPause writes reason to path for a pause, or removes path for a resume.
// The file is written whole (a temporary file renamed over it), so that a
// crash leaves the old one or the new one.
func keepPause(path string, pause bool, reason string) error {
	if !pause {
		if err := os.Remove(path); err != nil && !errors.Is(err, fs.ErrNotExist) {
			return fmt.Errorf("observability.pause_file: removing %s: %w", path, err)
		}
		return nil
	}
	tmp, err := os.CreateTemp(filepath.Dir(path), ".pause-*")
	if err != nil {
		return fmt.Errorf("observability.pause_file: writing next to %s: %w", path, err)
	}
	defer os.Remove(tmp.Name())
	if _, err := tmp.WriteString(reason + "\n"); err != nil {
		tmp.Close()
		return fmt.Errorf("observability.pause_file: writing %s: %w", tmp.Name(), err)
	}
	if err := tmp.Close(); err != nil {
		return fmt.Errorf("observability.pause_file: writing %s: %w", tmp.Name(), err)
	}
	if err := os.Rename(tmp.Name(), path); err != nil {
		return fmt.Errorf("observability.pause_file: %w", err)
	}
	return nil
}

// ReadPauseFile says whether an instance must start paused: path exists,
// and holds the reason of the pause. A missing file is no pause.
func ReadPauseFile(path string) (reason string, paused bool, err error) {
	b, err := os.ReadFile(path)
	if errors.Is(err, fs.ErrNotExist) {
		return "", false, nil
	}
	if err != nil {
		return "", false, fmt.Errorf("observability.pause_file: %w", err)
	}
	reason = strings.TrimSpace(string(b))
	if len(reason) > maxReason {
		reason = reason[:maxReason]
	}
	if reason == "" {
		reason = "paused through the admin API"
	}
	return reason + " (kept across a restart by " + path + ")", true, nil
}
