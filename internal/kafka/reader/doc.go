// Package reader reads a topic and never skips: a Reader reads partitions
// from a Start (the beginning, the end, an offset, the last records, a
// time) to each partition's end or on, joins no group and commits nothing;
// an offset that left the log while it was read is a ResetError naming the
// partition, never a jump. TopicLog is topiclog.Log (and migration.Cluster)
// over it and a kadmin.Groups: gc, migrate verify and translate-offsets read
// through it; cat and analyze stream a Reader.
//
//	r, err := reader.OpenReader(reader.ReaderOptions{Bootstrap: b, Topic: t, From: reader.Start{Offset: reader.Beginning}})
//	for { rec, err := r.Next(ctx, time.Second); if errors.Is(err, reader.ErrEnd) { break } ... }
package reader
