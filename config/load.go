package config

import (
	"context"
	"errors"
	"fmt"
	"io"
	"maps"
	"os"
	"regexp"
	"slices"
	"sort"
	"strings"

	"github.com/knadh/koanf/providers/confmap"
	"github.com/knadh/koanf/v2"
	yamlv3 "go.yaml.in/yaml/v3"

	"github.com/offloader/offloader/redact"
	"github.com/offloader/offloader/settings"
	"github.com/offloader/offloader/stores"
	"github.com/offloader/offloader/transforms"
)

// Options tune Load.
type Options struct {
	// Pipeline is the pipeline the OFFLOADER_ environment overrides apply to.
	// Empty means the file's only pipeline.
	Pipeline string
	// Environ is the environment as os.Environ returns it: the source of ${VAR}
	// interpolation and OFFLOADER_ overrides. Nil means no environment.
	Environ []string
	// CheckKafka, when set, checks each pipeline's Kafka client settings
	// (the librdkafka properties, which only the Kafka edge knows), in the
	// same pass as the file's other rules, so that every problem is
	// reported at once.
	CheckKafka func(path string, p *Pipeline) settings.Problems
}

// OverridePrefix starts the environment variables that override settings of the
// chosen pipeline: OFFLOADER_SLIM_TOPIC, OFFLOADER_KAFKA__BOOTSTRAP_SERVERS,
// OFFLOADER_KAFKA__CONSUMER__SASL_PASSWORD. Nesting is "__"; inside the librdkafka
// property maps (kafka.consumer, kafka.producer) a single "_" stands for ".".
const OverridePrefix = "OFFLOADER_"

// keyDelim is koanf's path delimiter. librdkafka property names contain dots, so
// the delimiter is a character no YAML key of ours can hold.
const keyDelim = "\x1f"

// Bounds of a pipeline file, checked before it is parsed: a file is input,
// and a large or deeply nested one must cost an error, not memory.
const (
	// MaxFileSize is the largest pipeline file Load reads.
	MaxFileSize = 4 << 20
	// MaxDepth bounds how deeply mappings and lists nest.
	MaxDepth = 64
	// MaxKeys bounds the keys of one mapping, the pipelines of a file among
	// them (the YAML decoder checks each key against all before it).
	MaxKeys = 1000
)

// Load reads, interpolates, overrides, decodes and validates a pipeline file. The
// error, when there is one, is a settings.Problems listing every problem found.
// The file must be a regular file of at most MaxFileSize bytes, nested at most
// MaxDepth deep, with at most MaxKeys keys in a mapping. No problem quotes a value that came from the environment or
// sits under a key that names a secret (password, token, connection_string...).
func Load(path string, opts Options) (*File, error) {
	data, problem := readBounded(path)
	if problem != "" {
		return nil, settings.Problems{{Message: problem}}
	}
	doc, problem := parseBounded(path, data)
	if problem != "" {
		return nil, settings.Problems{{Message: problem}}
	}
	var tree map[string]any
	if err := doc.Decode(&tree); err != nil {
		return nil, settings.Problems{{Message: fmt.Sprintf("%s is not valid YAML: %v", path, err)}}
	}
	// koanf normalises the tree (map keys to strings) and merges overrides.
	k := koanf.NewWithConf(koanf.Conf{Delim: keyDelim})
	if err := k.Load(confmap.Provider(tree, ""), nil); err != nil {
		return nil, settings.Problems{{Message: fmt.Sprintf("%s: %v", path, err)}}
	}
	env := environ(opts.Environ)
	var problems settings.Problems
	var overridden map[string]string // a setting's path: the variable that set it
	secrets := secretValues{}
	// Interpolation first: an override's value is taken as it is, never
	// expanded (a password may contain "${").
	raw := k.Raw()
	interpolate("", raw, env, secrets, &problems)
	if overrides := overridesFrom(env); len(overrides) > 0 {
		for envVar, v := range overrides {
			secrets.add(v, envVar)
		}
		name, err := overrideTarget(raw, opts.Pipeline)
		if err != nil {
			problems.Add("", "%v", err)
		} else {
			merged := koanf.NewWithConf(koanf.Conf{Delim: keyDelim})
			err := merged.Load(confmap.Provider(raw, ""), nil)
			if err == nil {
				err = merged.Load(confmap.Provider(overrides.tree(name, raw), ""), nil)
			}
			if err != nil {
				problems.Add("", "applying %s overrides: %v", OverridePrefix, err)
			} else {
				raw = merged.Raw()
				overridden = overrides.paths(name)
			}
		}
	}
	collectSecrets("", raw, secrets)
	named := secretValues{}
	collectSecrets("", raw, named)
	for v := range named {
		redact.Secret(v) // the values of secret-named settings: nothing printed from now on quotes them
	}
	f := decodeFile(raw, &problems)
	if opts.CheckKafka != nil {
		for _, name := range slices.Sorted(maps.Keys(f.Pipelines)) {
			problems = append(problems, opts.CheckKafka("pipelines."+name, f.Pipelines[name])...)
		}
	}
	nameOverrides(problems, overridden)
	return f, secrets.redact(problems).Err()
}

// nameOverrides says, in each problem at a path an environment override set
// (or under it), which variable set it: the file does not hold that value.
func nameOverrides(problems settings.Problems, overridden map[string]string) {
	for i, p := range problems {
		for path, envVar := range overridden {
			if p.Path == path || strings.HasPrefix(p.Path, path+".") {
				problems[i].Message += " (set by $" + envVar + ")"
				break
			}
		}
	}
}

// readBounded reads a regular file of at most MaxFileSize bytes; the problem
// says what is wrong otherwise.
func readBounded(path string) ([]byte, string) {
	fi, err := os.Stat(path)
	if err != nil {
		var pathErr *os.PathError
		if errors.As(err, &pathErr) {
			err = pathErr.Err
		}
		return nil, fmt.Sprintf("cannot read %s: %v", path, err)
	}
	switch {
	case !fi.Mode().IsRegular():
		return nil, fmt.Sprintf("%s is not a regular file (it is a %s): give the path of a pipeline file", path, fileKind(fi.Mode()))
	case fi.Size() > MaxFileSize:
		return nil, fmt.Sprintf("%s is %d bytes; a pipeline file may be at most %d (4 MiB)", path, fi.Size(), MaxFileSize)
	}
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Sprintf("cannot read %s: %v", path, errors.Unwrap(err))
	}
	defer f.Close()
	data, err := io.ReadAll(io.LimitReader(f, MaxFileSize+1))
	switch {
	case err != nil:
		return nil, fmt.Sprintf("cannot read %s: %v", path, err)
	case len(data) > MaxFileSize:
		return nil, fmt.Sprintf("%s grew past %d bytes (4 MiB) while it was read", path, MaxFileSize)
	}
	return data, ""
}

func fileKind(m os.FileMode) string {
	switch {
	case m.IsDir():
		return "directory"
	case m&os.ModeNamedPipe != 0:
		return "named pipe"
	case m&os.ModeCharDevice != 0, m&os.ModeDevice != 0:
		return "device"
	case m&os.ModeSocket != 0:
		return "socket"
	}
	return "special file"
}

// parseBounded parses data into YAML nodes (which costs memory and time in
// proportion to the file) and refuses mappings or lists nested deeper than
// MaxDepth and mappings of more than MaxKeys keys, before they are decoded
// into maps (quadratic in a mapping's keys) and copied level by level by the
// configuration library.
func parseBounded(path string, data []byte) (*yamlv3.Node, string) {
	var doc yamlv3.Node
	if err := yamlv3.Unmarshal(data, &doc); err != nil {
		return nil, fmt.Sprintf("%s is not valid YAML: %v", path, err)
	}
	var walk func(n *yamlv3.Node, depth int) error
	walk = func(n *yamlv3.Node, depth int) error {
		if depth > MaxDepth {
			return fmt.Errorf("%s: mappings and lists nest deeper than %d levels (line %d); a pipeline needs fewer than ten", path, MaxDepth, n.Line)
		}
		if n.Kind == yamlv3.MappingNode && len(n.Content)/2 > MaxKeys {
			return fmt.Errorf("%s: the mapping at line %d has %d keys; at most %d (a file defines at most %d pipelines, and a pipeline needs far fewer keys)", path, n.Line, len(n.Content)/2, MaxKeys, MaxKeys)
		}
		for _, c := range n.Content {
			next := depth
			if c.Kind == yamlv3.MappingNode || c.Kind == yamlv3.SequenceNode {
				next++
			}
			if err := walk(c, next); err != nil {
				return err
			}
		}
		return nil
	}
	if err := walk(&doc, 0); err != nil {
		return nil, err.Error()
	}
	return &doc, ""
}

func environ(list []string) map[string]string {
	env := make(map[string]string, len(list))
	for _, kv := range list {
		if k, v, ok := strings.Cut(kv, "="); ok {
			env[k] = v
		}
	}
	return env
}

var reference = regexp.MustCompile(`\$\$\{|\$\{([A-Za-z_][A-Za-z0-9_]*)(:-([^}]*))?\}`)

// interpolate replaces ${VAR} and ${VAR:-default} in every string of the tree.
// "$${" stands for a literal "${". A missing variable without a default is a
// problem at the value's path; the value itself is never echoed (it may be
// half a secret). Each value taken from the environment, and each string it
// went into, is added to secrets.
func interpolate(path string, node any, env map[string]string, secrets secretValues, problems *settings.Problems) any {
	switch n := node.(type) {
	case map[string]any:
		for k, v := range n {
			n[k] = interpolate(joinPath(path, k), v, env, secrets, problems)
		}
	case []any:
		for i, v := range n {
			n[i] = interpolate(fmt.Sprintf("%s[%d]", path, i), v, env, secrets, problems)
		}
	case string:
		fromEnv := false
		out := reference.ReplaceAllStringFunc(n, func(ref string) string {
			if ref == "$${" {
				return "${"
			}
			m := reference.FindStringSubmatch(ref)
			v, set := env[m[1]]
			switch {
			case m[2] != "" && v == "":
				return m[3]
			case set:
				secrets.add(v, "${"+m[1]+"}")
				fromEnv = true
				return v
			}
			problems.Add(path, "environment variable %s is not set (write ${%s:-default} to give a default)", m[1], m[1])
			return ""
		})
		if fromEnv {
			secrets.add(out, "a value from the environment")
		}
		return out
	}
	return node
}

// overrides maps the path below a pipeline (segments) to the value.
type overrides map[string]string

func overridesFrom(env map[string]string) overrides {
	o := overrides{}
	for k, v := range env {
		if strings.HasPrefix(k, OverridePrefix) && len(k) > len(OverridePrefix) {
			o[k] = v
		}
	}
	return o
}

func overrideTarget(raw map[string]any, chosen string) (string, error) {
	pipelines, _ := raw["pipelines"].(map[string]any)
	if chosen != "" {
		return chosen, nil
	}
	if len(pipelines) == 1 {
		for name := range pipelines {
			return name, nil
		}
	}
	return "", fmt.Errorf("%s environment overrides are set but the file defines %d pipelines: choose one with --pipeline", OverridePrefix, len(pipelines))
}

// paths are the dotted paths the overrides set under pipelines.<name>, each
// with its variable.
func (o overrides) paths(name string) map[string]string {
	out := map[string]string{}
	for envVar := range o {
		out[strings.Join(o.segments(envVar, name), ".")] = envVar
	}
	return out
}

// segments is the path an override variable sets under pipelines.<name>.
func (o overrides) segments(envVar, name string) []string {
	segs := strings.Split(strings.ToLower(strings.TrimPrefix(envVar, OverridePrefix)), "__")
	if len(segs) == 3 && segs[0] == "kafka" && (segs[1] == "consumer" || segs[1] == "producer") {
		segs[2] = strings.ReplaceAll(segs[2], "_", ".")
	}
	return append([]string{"pipelines", name}, segs...)
}

// tree turns the overrides into a nested map under pipelines.<name>. Where the
// file holds a list at the path, the value is split at commas.
func (o overrides) tree(name string, raw map[string]any) map[string]any {
	root := map[string]any{}
	vars := make([]string, 0, len(o))
	for k := range o {
		vars = append(vars, k)
	}
	sort.Strings(vars)
	for _, envVar := range vars {
		full := o.segments(envVar, name)
		var value any = o[envVar]
		if _, isList := lookup(raw, full).([]any); isList {
			var items []any
			for _, item := range strings.Split(o[envVar], ",") {
				items = append(items, strings.TrimSpace(item))
			}
			value = items
		}
		node := root
		for _, seg := range full[:len(full)-1] {
			next, ok := node[seg].(map[string]any)
			if !ok {
				next = map[string]any{}
				node[seg] = next
			}
			node = next
		}
		node[full[len(full)-1]] = value
	}
	return root
}

func lookup(node any, path []string) any {
	for _, seg := range path {
		m, ok := node.(map[string]any)
		if !ok {
			return nil
		}
		node = m[seg]
	}
	return node
}

func decodeFile(raw map[string]any, problems *settings.Problems) *File {
	f := &File{Pipelines: map[string]*Pipeline{}}
	for k := range raw {
		if k != "pipelines" {
			problems.Add(k, "unknown key (the file's top level holds only `pipelines:`)")
		}
	}
	pipelines, ok := raw["pipelines"].(map[string]any)
	switch {
	case raw["pipelines"] == nil:
		problems.Add("pipelines", "required: the file must define at least one pipeline")
		return f
	case !ok:
		problems.Add("pipelines", "must be a mapping of pipeline names to pipelines")
		return f
	case len(pipelines) == 0:
		problems.Add("pipelines", "required: the file must define at least one pipeline")
		return f
	}
	for name, body := range pipelines {
		path := "pipelines." + name
		if !validName.MatchString(name) {
			problems.Add(path, "pipeline names use letters, digits, '.', '_' and '-' (at most 100)")
		}
		p := defaults(name)
		*problems = append(*problems, settings.Decode(path, body, p)...)
		p.decodeParts(path, problems)
		// A value the decoder refused is reported once: the rules below
		// see the default in its place and would add a second, contrary
		// problem at the same path.
		refused := map[string]bool{}
		for _, pr := range *problems {
			refused[pr.Path] = true
		}
		var rules settings.Problems
		p.validate(path, &rules)
		for _, pr := range rules {
			if !refused[pr.Path] {
				*problems = append(*problems, pr)
			}
		}
		f.Pipelines[name] = p
	}
	f.validatePrefixes(problems)
	return f
}

// decodeParts decodes each store's and step's settings into the typed config its
// type registered.
func (p *Pipeline) decodeParts(path string, problems *settings.Problems) {
	for name, s := range p.Stores {
		storePath := joinPath(path, "stores."+name)
		if s == nil {
			problems.Add(storePath, "must be a mapping with at least `type:`")
			continue
		}
		if s.Type == "" {
			continue
		}
		backend, ok := stores.Backends.Lookup(s.Type)
		if !ok {
			problems.Add(storePath+".type", "unknown store type %q (known: %s)", s.Type, strings.Join(stores.Backends.Types(), ", "))
			continue
		}
		s.Config = backend.NewConfig()
		*problems = append(*problems, settings.Decode(storePath, s.Settings, s.Config)...)
		for i, prefix := range s.GCAdopt {
			if err := stores.ValidateKey(prefix); err != nil {
				problems.Add(fmt.Sprintf("%s.gc_adopt[%d]", storePath, i), "%v", err)
			}
		}
		if s.VerifyWrites == "" {
			s.VerifyWrites = DefaultVerifyWrites
		}
		if err := s.VerifyWrites.Validate(); err != nil {
			problems.Add(storePath+".verify_writes", "%v", err)
		}
	}
	for i, step := range p.Transforms {
		stepPath := fmt.Sprintf("%s.transforms[%d]", path, i)
		if step == nil {
			problems.Add(stepPath, "must be a mapping with at least `type:`")
			continue
		}
		if step.Type == "" {
			continue
		}
		kind, ok := transforms.Kinds.Lookup(step.Type)
		if !ok {
			problems.Add(stepPath+".type", "unknown transform type %q (known: %s)", step.Type, strings.Join(transforms.Kinds.Types(), ", "))
			continue
		}
		step.Config = kind.NewConfig()
		*problems = append(*problems, settings.Decode(stepPath, step.Settings, step.Config)...)
		switch {
		case step.If != nil:
			p.decodeCondition(stepPath+".if", step.If, problems)
		case kind.NeedsPredicate:
			problems.Add(stepPath+".if", "required: %s applies to the records a predicate matches, for example if: {type: has_header, name: skip}", step.Type)
		case step.Negate:
			problems.Add(stepPath+".negate", "has no effect without if: a predicate")
		}
		if user, ok := step.Config.(transforms.StoreUser); ok && user.StoreName() != "" {
			if _, defined := p.Stores[user.StoreName()]; !defined {
				problems.Add(stepPath+".store", "names store %q, which is not defined under %s.stores%s", user.StoreName(), path, definedStores(p.Stores))
			}
		}
	}
}

func (p *Pipeline) decodeCondition(path string, c *Condition, problems *settings.Problems) {
	if c.Type == "" {
		return
	}
	kind, ok := transforms.Predicates.Lookup(c.Type)
	if !ok {
		problems.Add(path+".type", "unknown predicate type %q (known: %s)", c.Type, strings.Join(transforms.Predicates.Types(), ", "))
		return
	}
	c.Config = kind.NewConfig()
	*problems = append(*problems, settings.Decode(path, c.Settings, c.Config)...)
}

func definedStores(m map[string]*Store) string {
	if len(m) == 0 {
		return " (none is)"
	}
	names := make([]string, 0, len(m))
	for n := range m {
		names = append(names, n)
	}
	sort.Strings(names)
	return " (defined: " + strings.Join(names, ", ") + ")"
}

// Select returns the pipeline named name, or the only one when name is empty.
func (f *File) Select(name string) (*Pipeline, error) {
	names := make([]string, 0, len(f.Pipelines))
	for n := range f.Pipelines {
		names = append(names, n)
	}
	sort.Strings(names)
	if name == "" {
		if len(names) == 1 {
			return f.Pipelines[names[0]], nil
		}
		return nil, fmt.Errorf("the file defines %d pipelines (%s): choose one with --pipeline", len(names), strings.Join(names, ", "))
	}
	p, ok := f.Pipelines[name]
	if !ok {
		return nil, fmt.Errorf("no pipeline %q in the file (defined: %s)", name, strings.Join(names, ", "))
	}
	return p, nil
}

func joinPath(path, key string) string {
	if path == "" {
		return key
	}
	return path + "." + key
}

// OpenStores opens the stores a pipeline defines, by the names its pointers use:
// what a consumer needs to resolve them (see package resolver). The store
// backends must be registered (import stores/azblob, stores/filesystem).
func (p *Pipeline) OpenStores(ctx context.Context) (map[string]stores.Store, error) {
	open := map[string]stores.Store{}
	for name, spec := range p.Stores {
		s, err := stores.Open(ctx, name, spec.Type, spec.Config)
		if err != nil {
			for _, o := range open {
				o.Close()
			}
			return nil, fmt.Errorf("payload store %q (%s) is not usable: %w", name, spec.Type, err)
		}
		open[name] = stores.Verified(name, s, spec.VerifyWrites)
	}
	return open, nil
}
