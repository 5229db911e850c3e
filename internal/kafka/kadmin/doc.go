// Package kadmin is what offloader asks of and changes on a Kafka cluster
// through the admin API, outside the record path: the survey of a
// pipeline's topics and limits at start-up (Survey, Inspect: partition
// counts, max.message.bytes, retention, the broker's and clients' size
// gates, as limits.Figures), the creation of missing slim, retry and
// dead-letter topics (CreateMissing) and of the demo's topics, consumer
// groups' offsets and members for migrate (Groups: watermarks, committed
// offsets, commits, offsets at a time), and the removal of a static member
// (RemoveStaticMember, offloader leave).
//
// A topic that does not exist is ErrNoTopic, never a topic of 0
// partitions; a topic that cannot be described is an error that names it
// and the grant that is missing.
//
//	figures, err := kadmin.Survey(ctx, p, log)
//	groups, err := kadmin.OpenGroups(c, log)
package kadmin
