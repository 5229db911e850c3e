package main

import (
	"fmt"
	"io"
	"text/tabwriter"

	"github.com/offloader/offloader/daemon"
	"github.com/offloader/offloader/limits"
)

// checkReport is what check found, as --output json prints it (its shape:
// docs/schemas/check.json).
type checkReport struct {
	// OK: every limit fits, Kafka answered, every store works, and no
	// sampled record is bound for the dead-letter topic.
	OK     bool         `json:"ok"`
	Kafka  checkKafka   `json:"kafka"`
	Sample *checkSample `json:"sample,omitempty"`
	Stores checkStores  `json:"stores"`
}

// checkKafka is what check read from the cluster.
type checkKafka struct {
	Bootstrap string `json:"bootstrap_servers"`
	// Reached: the cluster answered; else Error says how it failed, and Fix
	// what to change when no broker answered.
	Reached  bool             `json:"reached"`
	Error    string           `json:"error,omitempty"`
	Fix      string           `json:"fix,omitempty"`
	Created  []string         `json:"created_topics"`
	Limits   []checkRow       `json:"limits"`
	Problems []limits.Problem `json:"problems"`
}

// checkRow is a line of the limit table.
type checkRow struct {
	Topic   string `json:"topic"`
	Role    string `json:"role"`
	Gate    string `json:"gate"`
	Limit   int    `json:"limit"`
	Largest int    `json:"largest_record"`
	OK      bool   `json:"ok"`
}

// checkSample is the offload step's if: tried on the last records of each
// source partition (only when the step has an if:).
type checkSample struct {
	PerPartition int              `json:"per_partition"`
	Records      int64            `json:"records"`
	Problems     []limits.Problem `json:"problems"`
	Error        string           `json:"error,omitempty"`
}

// checkStores is each store's checks and problems.
type checkStores struct {
	Checks   []daemon.StoreCheck `json:"checks"`
	Problems []limits.Problem    `json:"problems"`
}

// print prints the report as tables: results to out, and why Kafka could
// not be read to errOut.
func (r *checkReport) print(out, errOut io.Writer) {
	k := r.Kafka
	for _, t := range k.Created {
		fmt.Fprintf(out, "created topic %s\n", t)
	}
	if !k.Reached {
		fmt.Fprintf(errOut, "offloader check: %s\n", k.Error)
		if k.Fix != "" {
			fmt.Fprintf(errOut, "  fix: %s\n", k.Fix)
		}
	} else {
		tw := tabwriter.NewWriter(out, 0, 0, 2, ' ', 0)
		fmt.Fprintln(tw, "TOPIC\tROLE\tGATE\tLIMIT\tLARGEST RECORD\tVERDICT")
		for _, row := range k.Limits {
			verdict := "ok"
			if !row.OK {
				verdict = "FAILS"
			}
			fmt.Fprintf(tw, "%s\t%s\t%s\t%d\t%d\t%s\n", row.Topic, row.Role, row.Gate, row.Limit, row.Largest, verdict)
		}
		tw.Flush()
		printProblems(out, k.Problems, "all limits are aligned", "problem")
	}
	if s := r.Sample; s != nil {
		if s.Error != "" {
			fmt.Fprintf(errOut, "offloader check: %s\n", s.Error)
		} else {
			fmt.Fprintf(out, "\nthe offload step's if: tried on %d records (the last %d of each source partition)\n", s.Records, s.PerPartition)
			printProblems(out, s.Problems, "no sampled record is bound for the dead-letter topic", "problem")
		}
	}
	if len(r.Stores.Checks) == 0 {
		return
	}
	fmt.Fprintln(out)
	tw := tabwriter.NewWriter(out, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "STORE\tTYPE\tCHECK\tVERDICT")
	for _, c := range r.Stores.Checks {
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\n", c.Store, c.Type, c.Check, c.Verdict)
	}
	tw.Flush()
	printProblems(out, r.Stores.Problems, "every store works", "store problem")
}

// printProblems lists problems, each with its fix, or says allGood.
func printProblems(w io.Writer, problems []limits.Problem, allGood, noun string) {
	if len(problems) == 0 {
		fmt.Fprintln(w, "\n"+allGood)
		return
	}
	fmt.Fprintf(w, "\n%d %s%s:\n", len(problems), noun, plural(len(problems)))
	for _, p := range problems {
		fmt.Fprintf(w, "- %s\n  fix: %s\n", p.What, p.Fix)
	}
}
