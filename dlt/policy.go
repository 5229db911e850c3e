package dlt

import (
	"time"

	"github.com/offloader/offloader/pipeline"
)

// Tier is one non-blocking retry tier: a topic and how long its records wait.
type Tier struct {
	Topic string
	Delay time.Duration
}

// Rules are the errors: section of a pipeline, as the policy reads it.
type Rules struct {
	// Blocking retries a failed record in place after each of Delays, so the
	// records after it wait (mode: blocking); otherwise it goes through Tiers.
	Blocking bool
	Delays   []time.Duration
	Tiers    []Tier
	// DeadLetterTopic takes the records whose retries are spent; empty: a
	// record that would go there stops the instance instead.
	DeadLetterTopic string
	// OutageToRetryTopic sends a record whose store stayed unavailable to the
	// retry tiers (on_store_outage: retry_topic) instead of pausing.
	OutageToRetryTopic bool
}

// Action is what the run loop does with a failure.
type Action int

// The actions, in the order the policy considers them.
const (
	// Reread: the call was given up (a shutdown, a broken batch); the batch is
	// rewound and read again at once.
	Reread Action = iota + 1
	// RetryInPlace: the batch is rewound and read again after Delay.
	RetryInPlace
	// RetryTier: the record goes to retry tier Tier (Topic), due at Due.
	RetryTier
	// DeadLetter: the record goes to the dead-letter topic (Topic).
	DeadLetter
	// Pause: the store is unavailable; the batch is rewound and read again
	// after Delay, and the pipeline counts as paused until a batch commits.
	Pause
	// Stop: nothing can take the record; the instance stops rather than drop it.
	Stop
)

// Decision is the policy's verdict on one failure.
type Decision struct {
	Action Action
	Class  Class
	// Attempts counts this failure: the record's attempts so far plus one.
	Attempts int
	Tier     int    // RetryTier: the tier's index
	Topic    string // RetryTier and DeadLetter: where the record goes
	Due      time.Time
	Delay    time.Duration // RetryInPlace and Pause: how long the loop waits
	// Fix says what to change when the action is Stop.
	Fix string
}

// Routes reports whether the record leaves the batch for another topic: its
// failure stays with it and the rest of the batch goes on.
func (d Decision) Routes() bool { return d.Action == RetryTier || d.Action == DeadLetter }

// Policy decides what becomes of failures, from the errors: rules and a
// clock. It holds no state: what it is told (attempts, outages) comes from
// the run loop, which executes its decisions. Its model is Kafka Connect's
// RetryWithToleranceOperator, which takes its Time the same way.
type Policy struct {
	rules Rules
	now   func() time.Time
}

// NewPolicy returns the policy of rules; now is its clock (time.Now outside tests).
func NewPolicy(rules Rules, now func() time.Time) *Policy {
	return &Policy{rules: rules, now: now}
}

// Rules returns the rules the policy applies.
func (p *Policy) Rules() Rules { return p.rules }

// MaxConsecutiveAborts bounds how often one batch may abort for a Kafka error
// before the instance gives up loudly instead of looping.
const MaxConsecutiveAborts = 5

// maxPauseBackoff caps the wait between attempts while a store is away.
const maxPauseBackoff = 30 * time.Second

// Decide says what becomes of rec after it failed with err. inPlace is how
// often it was already retried in place (mode: blocking), outages how many
// batches in a row paused on an unavailable store before this one.
func (p *Policy) Decide(rec *pipeline.Record, err error, inPlace, outages int) Decision {
	class := Classify(err)
	d := Decision{Class: class, Attempts: Attempts(rec) + 1}
	if p.rules.Blocking {
		d.Attempts = inPlace + 1
	}
	routes := class.DeadLetters() || (class == TransientStore && p.rules.OutageToRetryTopic && !p.rules.Blocking)
	switch {
	case class == Canceled:
		d.Action = Reread
	case p.rules.Blocking && class.DeadLetters() && class.Retries() && inPlace < len(p.rules.Delays):
		d.Action, d.Delay = RetryInPlace, p.rules.Delays[inPlace]
	case routes && !p.rules.Blocking && d.Attempts-1 < len(p.rules.Tiers) && class.Retries():
		tier := p.rules.Tiers[d.Attempts-1]
		d.Action, d.Tier, d.Topic, d.Due = RetryTier, d.Attempts-1, tier.Topic, p.now().Add(tier.Delay)
	case routes && p.rules.DeadLetterTopic != "":
		d.Action, d.Topic = DeadLetter, p.rules.DeadLetterTopic
	case class == TransientStore:
		d.Action, d.Delay = Pause, pauseBackoff(outages)
	default:
		d.Action = Stop
		if class.DeadLetters() {
			d.Fix = "set errors.dead_letter_topic to keep such records instead of stopping"
		}
	}
	return d
}

// DecideBatch says what becomes of a batch that failed with err on no
// record in particular (a store the dead-letter path could not reach):
// read again at once after a cancellation, paused after a store outage,
// else stop.
func (p *Policy) DecideBatch(err error, outages int) Decision {
	d := Decision{Class: Classify(err)}
	switch d.Class {
	case Canceled:
		d.Action = Reread
	case TransientStore:
		d.Action, d.Delay = Pause, pauseBackoff(outages)
	default:
		d.Action = Stop
	}
	return d
}

func pauseBackoff(outages int) time.Duration {
	return min(maxPauseBackoff, time.Duration(1<<min(outages, 5))*time.Second)
}

// AfterAbort says how long to wait after the n-th abort in a row of one
// batch (1s, 2s, 4s, 8s: time for a cause that outlives one attempt, a
// broker restarting, to clear), or that the instance stops: the
// MaxConsecutiveAborts-th abort is fatal.
func (p *Policy) AfterAbort(n int) (wait time.Duration, stop bool) {
	if n >= MaxConsecutiveAborts {
		return 0, true
	}
	return time.Duration(1<<(max(n, 1)-1)) * time.Second, false
}

// HoldUntil says until when a record of retry tier topic that names due in
// its headers waits: never past now plus the tier's delay (a forged due time,
// or one written before the delay was shortened, must not hold the
// partition longer). hold is false when the record is due now.
func (p *Policy) HoldUntil(topic string, due time.Time) (until time.Time, hold bool) {
	now := p.now()
	if !now.Before(due) {
		return time.Time{}, false
	}
	for _, t := range p.rules.Tiers {
		if t.Topic == topic && due.After(now.Add(t.Delay)) {
			due = now.Add(t.Delay)
		}
	}
	return due, true
}

// Fit is how a retry or dead-letter record is made to fit its topic.
type Fit int

// The ways to fit.
const (
	// AsIs: the record fits.
	AsIs Fit = iota + 1
	// OffloadValue: storing its value brings it under the limit.
	OffloadValue
	// StoreWhole: its key or headers alone are too large (or its value
	// cannot be offloaded); the whole original record is stored as one
	// object and the dead-letter topic gets a pointer to it.
	StoreWhole
	// CannotFit: no store is configured; the instance stops rather than drop it.
	CannotFit
)

// FitFor says how a failure record of size bytes fits a topic that takes
// limit bytes. valueOffloadFits says whether offloading its value would bring
// it under; canStore whether the pipeline has a payload store. Nothing is
// offloaded that cannot help: a value too small to matter is never stored.
func FitFor(size, limit int, valueOffloadFits, canStore bool) Fit {
	switch {
	case size <= limit:
		return AsIs
	case !canStore:
		return CannotFit
	case valueOffloadFits:
		return OffloadValue
	}
	return StoreWhole
}
