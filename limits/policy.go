package limits

import (
	"fmt"
	"strconv"
	"strings"
)

// SourcePolicy is the topic policy the slim and dead-letter topics need so
// that they keep what the source topics keep, once those are gone: compacted
// when a source is (deleting by retention too only when every compacted
// source does), retention.ms and retention.bytes the longest of the sources'.
func (f *Figures) SourcePolicy() map[string]string {
	policy := map[string]string{}
	compacted, deleteAlso, seen := false, true, false
	var ms, bytes int64
	for _, s := range f.Sources {
		if !s.Exists {
			continue
		}
		if s.compacts() {
			compacted = true
			deleteAlso = deleteAlso && s.deletes()
		}
		if !seen || !longer(ms, s.keptMs()) {
			ms = s.keptMs()
		}
		if !seen || !longer(bytes, s.keptBytes()) {
			bytes = s.keptBytes()
		}
		seen = true
	}
	if compacted {
		policy["cleanup.policy"] = "compact"
		if deleteAlso {
			policy["cleanup.policy"] = "compact,delete"
		}
	}
	if ms != 0 {
		policy["retention.ms"] = strconv.FormatInt(ms, 10)
	}
	if bytes != 0 {
		policy["retention.bytes"] = strconv.FormatInt(bytes, 10)
	}
	return policy
}

// policyProblems are the slim and dead-letter topics whose policy would
// lose what a source topic keeps: not compacted where a source is, or kept
// for a shorter time or fewer bytes. Once the fat topic is deleted (the
// runbook's last step) they hold the only copy.
func (f *Figures) policyProblems() []Problem {
	var problems []Problem
	var configs []string // the fix: the sources' policy
	for _, k := range []string{"cleanup.policy", "retention.ms", "retention.bytes"} {
		if v, ok := f.SourcePolicy()[k]; ok {
			configs = append(configs, k+"="+v)
		}
	}
	for _, t := range append([]TopicInfo{f.Slim}, f.deadLetter()...) {
		if !t.Exists {
			continue
		}
		for _, s := range f.Sources {
			if !s.Exists {
				continue
			}
			var what []string
			if s.compacts() && !t.compacts() {
				what = append(what, fmt.Sprintf("it is not compacted (cleanup.policy=%s) while %s is (%s): after its retention the latest value of each key is gone", t.CleanupPolicy, s.Name, s.CleanupPolicy))
			}
			if !longer(t.keptMs(), s.keptMs()) {
				what = append(what, fmt.Sprintf("it keeps records for retention.ms=%d, %s for %d (-1: no limit)", t.keptMs(), s.Name, s.keptMs()))
			}
			if !longer(t.keptBytes(), s.keptBytes()) {
				what = append(what, fmt.Sprintf("it keeps retention.bytes=%d per partition, %s %d (-1: no limit)", t.keptBytes(), s.Name, s.keptBytes()))
			}
			if len(what) == 0 {
				continue
			}
			problems = append(problems, Problem{
				What: fmt.Sprintf("%s topic %s would lose what source topic %s keeps: %s", t.Role, t.Name, s.Name, strings.Join(what, "; ")),
				Fix: fmt.Sprintf("kafka-configs.sh --bootstrap-server %s --alter --entity-type topics --entity-name %s --add-config '%s'",
					f.Bootstrap, t.Name, strings.Join(configs, ",")),
			})
		}
	}
	return problems
}

func (f *Figures) deadLetter() []TopicInfo {
	if f.DeadLetter == nil {
		return nil
	}
	return []TopicInfo{*f.DeadLetter}
}
