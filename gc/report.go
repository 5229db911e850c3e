package gc

import "time"

// Report is what a gc run proved, kept and deleted.
type Report struct {
	Grace  time.Duration `json:"-"`
	Cutoff time.Time     `json:"cutoff"`
	DryRun bool          `json:"dry_run"`
	// Skews are the stores' clocks against gc's (not measured in a dry run).
	Skews []StoreSkew `json:"clock_skews"`
	// Topics are the topics read, in the order read.
	Topics []TopicRead `json:"topics"`
	// Pointers is how many pointer records were read; Inside how many
	// pointers were found inside whole-record objects.
	Pointers int `json:"pointers"`
	Inside   int `json:"pointers_inside_whole_records"`
	// NotPointers are records marked as pointers that cannot be a pointer
	// of any version: they reference nothing (a few listed).
	NotPointers        int      `json:"not_pointers"`
	NotPointerExamples []string `json:"not_pointer_examples"`
	// Sweeps are the prefixes listed.
	Sweeps []Sweep `json:"prefixes"`
	// ReadSeconds and SweepSeconds are how long reading the topics, and
	// listing and deleting, took.
	ReadSeconds  float64 `json:"read_seconds"`
	SweepSeconds float64 `json:"sweep_seconds"`
}

func (r *Report) notPointer(at string, why error) {
	r.NotPointers++
	if len(r.NotPointerExamples) < 5 {
		r.NotPointerExamples = append(r.NotPointerExamples, at+": "+why.Error())
	}
}

// StoreSkew is a store's clock against gc's (positive: the store is ahead).
type StoreSkew struct {
	Store string        `json:"store"`
	Skew  time.Duration `json:"skew_ns"`
}

// TopicRead is what was read of one topic.
type TopicRead struct {
	Topic string `json:"topic"`
	Role  Role   `json:"role"`
	// Missing: the topic does not exist, and so references nothing.
	Missing    bool            `json:"missing"`
	Records    int             `json:"records"`
	Partitions []PartitionRead `json:"partitions"`
}

// PartitionRead is what was read of one partition: read_committed from
// From to To without a gap, then uncommitted from To to End.
type PartitionRead struct {
	Partition int32 `json:"partition"`
	From      int64 `json:"from"`
	To        int64 `json:"to"`
	// StartBefore and StartAfter are the log start offsets before and after
	// the read: where they differ, retention or DeleteRecords removed the
	// records in between while gc read, and they reference nothing.
	StartBefore int64 `json:"log_start_before"`
	StartAfter  int64 `json:"log_start_after"`
	// Stable and End are the last stable offset and the high watermark
	// after the read.
	Stable int64 `json:"last_stable_offset"`
	End    int64 `json:"high_watermark"`
	// UncommittedPointers were read past To, uncommitted: all kept.
	UncommittedPointers int `json:"uncommitted_pointers"`
}

// Open reports whether a transaction was open on the partition after the
// read: its last stable offset is below its high watermark.
func (p PartitionRead) Open() bool { return p.Stable < p.End }

// Deleted is how many objects were deleted (or would be, in a dry run).
func (r *Report) Deleted() (objects, bytes int64) {
	for _, s := range r.Sweeps {
		objects += s.Deleted.Objects
		bytes += s.Deleted.Bytes
	}
	return objects, bytes
}
