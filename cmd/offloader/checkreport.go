package main

import (
	"fmt"
	"io"
	"text/tabwriter"

	"github.com/offloader/offloader/daemon"
	"github.com/offloader/offloader/limits"
)

// print prints the report as tables: results to out, and why Kafka could
// not be read to errOut.
func printCheck(out, errOut io.Writer, r *daemon.CheckReport) {
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
		fmt.Fprintf(out, "Kafka cluster id %s: this pipeline's payloads are stored under <prefix>/%s/\n\n", k.ClusterID, k.ClusterID)
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
