package gc

import "time"

// Cutoff is the latest write time an object may have to be deleted: when
// the reading of the topics began, less the grace period.
type Cutoff struct{ time.Time }

// NewCutoff is the cutoff for a reading begun at began, with grace.
func NewCutoff(began time.Time, grace time.Duration) Cutoff { return Cutoff{began.Add(-grace)} }
