package transforms

import (
	"fmt"

	"github.com/offloader/offloader/pipeline"
	"github.com/offloader/offloader/settings"
)

// Step is one step of a chain as the pipeline file gives it: its type, its
// decoded config, and the predicate that gates it.
type Step struct {
	Type   string
	Config any
	// If, when set, applies the step only to the records its predicate
	// matches (with Negate, to those it does not).
	If     *Condition
	Negate bool
}

// Condition is a step's predicate: its type and decoded config.
type Condition struct {
	Type   string
	Config any
}

// Chain is a pipeline's chain, assembled by Build.
type Chain struct {
	Steps pipeline.Chain
	// Names name each step for errors: transforms[i] (type).
	Names []string
	// DeadLetter is the first offload step again, at the dead-letter
	// topic's limit (threshold auto), for the values of records bound for
	// the retry and dead-letter topics; nil without an offload step or a
	// dead-letter topic.
	DeadLetter *Offload
	// Threshold says where the first offload step offloads, for the log.
	Threshold string
}

// Build makes each step with deps and gates it by its predicate. With
// deadLetterLimit above 0 (the dead-letter topic's limit) the first offload
// step is built again at that limit (Chain.DeadLetter). slimGate names the
// gate threshold: auto is derived from, for Chain.Threshold.
func Build(steps []Step, deps Deps, deadLetterLimit int, slimGate string) (*Chain, error) {
	c := &Chain{Threshold: "none (no offload step)"}
	thresholdSaid := false
	for i, step := range steps {
		name := fmt.Sprintf("transforms[%d] (%s)", i, step.Type)
		c.Names = append(c.Names, name)
		cfg, offloads := step.Config.(*OffloadConfig)
		if offloads && c.DeadLetter == nil && deadLetterLimit > 0 {
			// The same store and keys, with the dead-letter topic's limit.
			dltCfg, dltDeps := *cfg, deps
			dltDeps.SlimTopicLimit = deadLetterLimit
			dltCfg.Threshold = settings.Auto
			o, err := NewOffload(dltCfg, dltDeps)
			if err != nil {
				return nil, fmt.Errorf("offloading dead-letter values: %w", err)
			}
			c.DeadLetter = o
		}
		t, err := New(step.Type, step.Config, deps)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", name, err)
		}
		if offloads && !thresholdSaid {
			thresholdSaid = true
			if o, ok := t.(*Offload); ok {
				c.Threshold = fmt.Sprintf("%d bytes (threshold: %s", o.Threshold(), cfg.Threshold)
				if cfg.Threshold.IsAuto() {
					c.Threshold += fmt.Sprintf(", from %s less %s of headroom", slimGate, AutoThresholdHeadroom)
				}
				if step.If != nil {
					c.Threshold += ", for the records its if: takes"
				}
				c.Threshold += ")"
			}
		}
		if step.If != nil {
			pred, err := NewPredicate(step.If.Type, step.If.Config)
			if err != nil {
				return nil, fmt.Errorf("transforms[%d].if (%s): %w", i, step.If.Type, err)
			}
			t = pipeline.Gate{Predicate: pred, Negate: step.Negate, Step: t}
		}
		c.Steps = append(c.Steps, t)
	}
	return c, nil
}

// Thresholds are the offload steps' thresholds (auto, or a size), by the
// steps' index.
func Thresholds(steps []Step) map[int]settings.SizeOrAuto {
	out := map[int]settings.SizeOrAuto{}
	for i, s := range steps {
		if c, offloads := s.Config.(*OffloadConfig); offloads {
			out[i] = c.Threshold
		}
	}
	return out
}

// OffloadThreshold is the first offload step's threshold; ok is false
// without an offload step.
func OffloadThreshold(steps []Step) (t settings.SizeOrAuto, ok bool) {
	for _, s := range steps {
		if c, offloads := s.Config.(*OffloadConfig); offloads {
			return c.Threshold, true
		}
	}
	return t, false
}

// OffloadApplies is the if: predicate of the first step that writes to a
// store (negate applied): the records it takes. nil: it takes every record,
// or there is no such step.
func OffloadApplies(steps []Step) (func(*pipeline.Record) bool, error) {
	for _, s := range steps {
		if _, writes := s.Config.(KeyWriter); !writes || s.If == nil {
			continue
		}
		pred, err := NewPredicate(s.If.Type, s.If.Config)
		if err != nil {
			return nil, fmt.Errorf("the offload step's if: %w", err)
		}
		negate := s.Negate
		return func(r *pipeline.Record) bool { return pred.Test(r) != negate }, nil
	}
	return nil, nil
}
