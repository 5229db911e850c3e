package daemon

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"

	"github.com/offloader/offloader/config"
	"github.com/offloader/offloader/limits"
	"github.com/offloader/offloader/stores"
)

// StoreCheck is one line of check's store table: a check of a store and
// its verdict (ok, FAILS, or WARN: and why).
type StoreCheck struct {
	Store   string `json:"store"`
	Type    string `json:"type"`
	Check   string `json:"check"`
	Verdict string `json:"verdict"`
}

// CheckStores opens each of the pipeline's stores as run does at start-up
// (creating a missing container when the store allows it) and probes it as
// the pipeline uses it: a store an offload step writes to gets a probe
// object written, read back and deleted under the step's key prefix; a
// store that is only read (rehydrate) gets a read of a key that is not there.
// Each store has errors.store_budget for all of it. cluster is the Kafka
// cluster's id ("" when it did not answer): objects of another cluster
// under a prefix are warned about.
func CheckStores(ctx context.Context, p *config.Pipeline, cluster string) ([]StoreCheck, []limits.Problem) {
	prefixes := map[string][]string{}
	for _, kp := range p.KeyPrefixes() {
		if !kp.Adopted {
			prefixes[kp.Store] = append(prefixes[kp.Store], kp.Prefix)
		}
	}
	var rows []StoreCheck
	var problems []limits.Problem
	for _, name := range slices.Sorted(maps.Keys(p.Stores)) {
		spec := p.Stores[name]
		sctx, cancel := context.WithTimeout(ctx, p.Errors.StoreBudget)
		s, err := stores.Open(sctx, name, spec.Type, spec.Config)
		if err != nil {
			cancel()
			rows = append(rows, StoreCheck{name, spec.Type, "open", "FAILS"})
			problems = append(problems, limits.Problem{What: err.Error(), Fix: openFix(err)})
			continue
		}
		rows = append(rows, StoreCheck{name, spec.Type, "open", "ok"})
		if len(prefixes[name]) == 0 {
			_, err := s.Stat(sctx, name+"/offloader-probe-absent")
			switch {
			case err == nil || errors.Is(err, stores.ErrNotFound):
				rows = append(rows, StoreCheck{name, spec.Type, "read (rehydrate only)", "ok"})
			default:
				rows = append(rows, StoreCheck{name, spec.Type, "read (rehydrate only)", "FAILS"})
				problems = append(problems, limits.Problem{What: err.Error(), Fix: accessFix("read", name)})
			}
		}
		if len(prefixes[name]) > 0 && spec.ObjectLifetime == 0 && !spec.GC {
			rows = append(rows, StoreCheck{name, spec.Type, "payload lifetime", "WARN: kept forever (set object_lifetime to the store's lifecycle rule, or gc: true and run offloader gc)"})
		}
		for _, prefix := range prefixes[name] {
			check := "write, read back, delete under " + prefix + "/"
			left, err := stores.Probe(sctx, s, prefix)
			var pe *stores.ProbeError
			switch {
			case errors.As(err, &pe):
				rows = append(rows, StoreCheck{name, spec.Type, check, "FAILS"})
				problems = append(problems, limits.Problem{What: fmt.Sprintf("store %q: %v", name, err), Fix: probeFix(pe, name, prefix)})
			case err != nil:
				rows = append(rows, StoreCheck{name, spec.Type, check, "FAILS"})
				problems = append(problems, limits.Problem{What: err.Error(), Fix: accessFix("write", name)})
			case left != "":
				rows = append(rows, StoreCheck{name, spec.Type, check, "ok (could not delete " + left + ": run does not need to)"})
			default:
				rows = append(rows, StoreCheck{name, spec.Type, check, "ok"})
			}
			rows, problems = checkListing(sctx, p, cluster, name, spec.Type, s, prefix, rows, problems)
		}
		s.Close()
		cancel()
	}
	return rows, problems
}

// otherWritersSampled is how many objects under a prefix check reads the
// writer of.
const otherWritersSampled = 20

// checkListing probes that the store's listing keeps to its prefix (gc
// lists to find what to delete), and warns when the first objects under
// the prefix name another pipeline as their writer, or another Kafka
// cluster.
func checkListing(ctx context.Context, p *config.Pipeline, cluster, name, typ string, s stores.Store, prefix string, rows []StoreCheck, problems []limits.Problem) ([]StoreCheck, []limits.Problem) {
	check := "list keeps to " + prefix + "/"
	if err := stores.ProbeList(ctx, s, prefix); err != nil {
		rows = append(rows, StoreCheck{name, typ, check, "FAILS"})
		fix := fmt.Sprintf("store %q's listing must return only keys under the prefix asked for; offloader gc keeps keys outside it, but cannot trust what it lists: fix the server", name)
		if !errors.Is(err, stores.ErrListIgnoresPrefix) {
			fix = accessFix("list", name)
		}
		return rows, append(problems, limits.Problem{What: fmt.Sprintf("store %q: %v", name, err), Fix: fix})
	}
	rows = append(rows, StoreCheck{name, typ, check, "ok"})
	var sampled []string
	errEnough := errors.New("enough")
	err := s.List(ctx, prefix+"/", func(o stores.Object) error {
		sampled = append(sampled, o.Key)
		if len(sampled) == otherWritersSampled {
			return errEnough
		}
		return nil
	})
	if err != nil && !errors.Is(err, errEnough) {
		return rows, problems // the probe above listed; a failure here is the store's mood, not a finding
	}
	writerSaid, clusterSaid := false, false
	for _, key := range sampled {
		info, err := s.Stat(ctx, key)
		if err != nil {
			continue
		}
		if w := info.Metadata[stores.MetaWriter]; w != "" && w != p.Writer() && !writerSaid {
			writerSaid = true
			rows = append(rows, StoreCheck{name, typ, "writers under " + prefix + "/",
				fmt.Sprintf("WARN: %s was written by %s, not this pipeline (%s): two pipelines share the prefix; gc of each keeps the other's objects, but give this one a prefix of its own (prefix: on the offload step)", key, w, p.Writer())})
		}
		if c := info.Metadata[stores.MetaCluster]; c != "" && cluster != "" && c != cluster && !clusterSaid {
			clusterSaid = true
			rows = append(rows, StoreCheck{name, typ, "Kafka clusters under " + prefix + "/",
				fmt.Sprintf("WARN: %s was written for Kafka cluster %s, not this pipeline's (%s): two clusters share the prefix; each writes under its own cluster id and gc of each keeps the other's objects, but give each its own prefix (or store) to keep them apart on sight", key, c, cluster)})
		}
	}
	return rows, problems
}

func openFix(err error) string {
	if stores.IsRetryable(err) {
		return "make the store reachable from here (address, DNS, firewall, the service itself) and run check again"
	}
	return "correct the store's settings as the error says; a missing container: create it, or set create_container: true so that run creates it"
}

func probeFix(pe *stores.ProbeError, name, prefix string) string {
	switch {
	case stores.IsRetryable(pe.Err):
		return "make the store reachable from here and run check again"
	case pe.Step == "compare":
		return fmt.Sprintf("store %q returned other bytes than were written: look for a proxy or a second writer in between", name)
	case pe.Step == "get":
		return accessFix("read", name)
	}
	return accessFix("write", name) + " under " + prefix + "/"
}

func accessFix(what, name string) string {
	role := map[string]string{
		"write": "Azure: the role Storage Blob Data Contributor, or a SAS with the permissions r, c and w; filesystem: write permission on its root",
		"read":  "Azure: the role Storage Blob Data Reader, or a SAS with the permission r; filesystem: read permission on its root",
		"list":  "Azure: the role Storage Blob Data Contributor, or a SAS with the permissions l and d as well; S3: s3:ListBucket; filesystem: read permission on its root",
	}[what]
	return fmt.Sprintf("give store %q's credentials %s access (%s)", name, what, role)
}
