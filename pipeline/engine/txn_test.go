package engine

import (
	"errors"
	"fmt"
	"testing"
)

// A transactional call's error decides the transaction's outcome, and with
// it the rewind (recover): an abort rewinds to the batch's start, an unsure
// one to the group's committed offsets, anything else stops the instance.
func TestATransactionsOutcomeFollowsItsError(t *testing.T) {
	cause := errors.New("coordinator away")
	for _, c := range []struct {
		name string
		err  error
		want outcome
	}{
		{"no error", nil, committed},
		{"an abort", &AbortError{Err: cause}, aborted},
		{"an abort, wrapped", fmt.Errorf("CommitTransaction: %w", &AbortError{Err: cause}), aborted},
		{"a call stuck in committing", &AbortError{Err: cause, Unsure: true}, unsure},
		{"a fatal error", fmt.Errorf("%w: fenced", ErrFatal), failed},
	} {
		t.Run(c.name, func(t *testing.T) {
			if got := ended(c.err); got != c.want {
				t.Errorf("ended(%v) = %d, want %d", c.err, got, c.want)
			}
		})
	}
}

// Only a commit ends a run of aborts: the policy stops after too many aborts
// of the same batch in a row.
func TestACommitEndsTheAbortsInARow(t *testing.T) {
	var tx txn
	tx.abortedAgain()
	if n := tx.abortedAgain(); n != 2 {
		t.Fatalf("second abort in a row counted %d, want 2", n)
	}
	tx.outcome(&AbortError{Err: errors.New("x")})
	if n := tx.abortedAgain(); n != 3 {
		t.Fatalf("an aborted commit ended the run of aborts: %d, want 3", n)
	}
	tx.outcome(nil)
	if n := tx.abortedAgain(); n != 1 {
		t.Errorf("after a commit the next abort counted %d, want 1", n)
	}
}
