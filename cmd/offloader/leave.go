package main

import (
	"context"
	"fmt"
	"time"

	"github.com/spf13/pflag"

	"github.com/offloader/offloader/internal/statefulset"
)

func leaveCommand() *command {
	return &command{
		name:    "leave",
		summary: "make a running instance leave its group for good when it stops (scale-in)",
		usage:   "[--url URL | -F FILE [--pipeline NAME]] [--token T] [--if-scaled-in]",
		help: `
POST /leave on a running instance: when it next stops (SIGTERM), after it has
committed the batch in hand and closed its consumer, it also removes its static
membership from the group (KIP-345's RemoveMembersFromConsumerGroup), so that
its partitions move to the other instances at once.

Without it, a stopped instance keeps its static membership (its
group.instance.id) for session.timeout.ms: a restart gets its partitions back
at once, without a rebalance, but an instance stopped for good leaves its
partitions standing still until that timeout (45 s by default). So call leave
before stopping an instance that is not coming back (a scale-in), and not
before a restart or an upgrade.

--if-scaled-in, for a Kubernetes preStop hook, asks first whether the pod is
going away for good: it reads its StatefulSet through the Kubernetes API
(with the pod's ServiceAccount; it needs get on statefulsets) and calls leave
only when the pod's ordinal is at or past the replicas wanted, or the
StatefulSet is deleted. $POD_NAME names the pod. It exits 0 when the pod
comes back (nothing to do).
` + adminHelp,
		example: `offloader leave --url http://10.0.0.5:9464 --token "$ADMIN_TOKEN"
offloader leave --if-scaled-in    # a StatefulSet pod's preStop hook`,
		setup: func(c *cli, fs *pflag.FlagSet) func() int {
			target := c.adminFlags(fs)
			scaledIn := fs.Bool("if-scaled-in", false, "only when the pod's StatefulSet was scaled in past it (a Kubernetes preStop hook)")
			return func() int {
				if *scaledIn {
					name := c.getenv("POD_NAME")
					if name == "" {
						return c.usageError(fs, "--if-scaled-in needs $POD_NAME, the pod's name (from the downward API: fieldRef metadata.name)")
					}
					pod, err := statefulset.InCluster(name)
					if err != nil {
						fmt.Fprintf(c.stderr, "offloader leave: %v\n", err)
						return exitFailure
					}
					ctx, cancel := context.WithTimeout(context.Background(), 15*time.Second)
					in, why, err := pod.ScaledIn(ctx)
					cancel()
					if err != nil {
						fmt.Fprintf(c.stderr, "offloader leave: %v\n", err)
						return exitFailure
					}
					fmt.Fprintln(c.stdout, why)
					if !in {
						return exitOK
					}
				}
				client, code, ok := c.adminClient(fs.Name(), target)
				if !ok {
					return code
				}
				ctx, cancel := context.WithTimeout(context.Background(), *target.timeout)
				defer cancel()
				st, err := client.Leave(ctx)
				if err != nil {
					fmt.Fprintf(c.stderr, "offloader leave: %v\n", err)
					return exitFailure
				}
				fmt.Fprintf(c.stdout, "instance %s leaves group for good when it stops: its partitions then move at once\n", st.Instance)
				return exitOK
			}
		},
	}
}
