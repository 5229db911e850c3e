// Package kafka is the engine's two ports on librdkafka (confluent-kafka-go,
// cgo): Group, the pipeline's Source, and Session, its transactional producer
// bound to the group (KIP-447). Connect makes both; the engine
// (pipeline/engine) runs against them and never sees librdkafka.
//
// The contract it keeps:
//
//   - Group is a read_committed, static member of the pipeline's group with
//     manual offsets. It assigns with the group's protocol (eager or
//     cooperative-sticky); a new assignment starts where the group
//     committed, or as source.start_from says, and waits out offsets it
//     cannot read yet (a coordinator loading, a previous owner's open
//     transaction) rather than guess.
//
//   - Session runs one transaction at a time: Begin, Produce, Commit (the
//     records and the consumer offsets together) or Abort. Each call has a
//     deadline; an abort that cannot reach the coordinator, a producer
//     fenced by the broker's abort, or a call stuck past its deadline
//     (librdkafka issues 5456 and 5511) replaces the producer with a new
//     one of the same transactional.id, whose start aborts what was open.
//     A commit that may have happened is reported Unsure: the group's
//     committed offsets then say where to resume.
//
//     group, session, err := kafka.Connect(ctx, p, plan, log, metrics)
//     eng, err := engine.New(opts, group, session)
//
// Its neighbours: client makes and logs the librdkafka clients; kadmin
// reads and changes the cluster through the admin API (the survey of
// topics and limits, topic creation, group offsets); reader reads a topic
// from one offset to another and never skips.
package kafka
