package config

import (
	"regexp"
	"sort"
	"strconv"
	"strings"

	"github.com/offloader/offloader/settings"
)

// secretKey matches the names of settings that may hold a secret, in our
// YAML and in librdkafka's properties (sasl.password, ssl.key.password,
// sasl.oauthbearer.client.secret, sasl.jaas.config).
var secretKey = regexp.MustCompile(`(?i)(password|passwd|secret|token|credential|connection_string|jaas|sas)`)

// secretValues maps a value that problems must not quote to what they say
// instead.
type secretValues map[string]string

func (s secretValues) add(value, instead string) {
	if value == "" {
		return
	}
	if _, ok := s[value]; !ok {
		s[value] = "<" + instead + ">"
	}
}

// collectSecrets adds the string values under secret-looking keys.
func collectSecrets(path string, node any, secrets secretValues) {
	switch n := node.(type) {
	case map[string]any:
		for k, v := range n {
			if str, ok := v.(string); ok && secretKey.MatchString(k) {
				secrets.add(str, "the value of "+joinPath(path, k))
				continue
			}
			collectSecrets(joinPath(path, k), v, secrets)
		}
	case []any:
		for _, v := range n {
			collectSecrets(path, v, secrets)
		}
	}
}

// redact replaces, in every problem, each secret value by what stands for it:
// quoted wherever it appears, and bare where it is long enough not to match
// ordinary words.
func (s secretValues) redact(problems settings.Problems) settings.Problems {
	if len(s) == 0 || len(problems) == 0 {
		return problems
	}
	values := make([]string, 0, len(s))
	for v := range s {
		values = append(values, v)
	}
	// Longest first: a secret that contains another is replaced whole.
	sort.Slice(values, func(i, j int) bool { return len(values[i]) > len(values[j]) })
	pairs := make([]string, 0, 4*len(s))
	for _, v := range values {
		pairs = append(pairs, strconv.Quote(v), s[v])
	}
	for _, v := range values {
		if len(v) >= 6 {
			pairs = append(pairs, v, s[v])
		}
	}
	r := strings.NewReplacer(pairs...)
	out := make(settings.Problems, len(problems))
	for i, p := range problems {
		out[i] = settings.Problem{Path: r.Replace(p.Path), Message: r.Replace(p.Message)}
	}
	return out
}
