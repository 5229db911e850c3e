package main

import (
	"fmt"
	"io"
	"text/tabwriter"

	"github.com/offloader/offloader/daemon"
	"github.com/offloader/offloader/limits"
)

func printStores(w io.Writer, rows []daemon.StoreCheck, problems []limits.Problem) {
	if len(rows) == 0 {
		return
	}
	fmt.Fprintln(w)
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "STORE\tTYPE\tCHECK\tVERDICT")
	for _, r := range rows {
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\n", r.Store, r.Type, r.Check, r.Verdict)
	}
	tw.Flush()
	printProblems(w, problems, "every store works", "store problem")
}
