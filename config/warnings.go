package config

import (
	"fmt"
	"slices"
	"strings"
)

// Warnings are settings that weaken a guarantee without breaking it: run
// logs them at start-up and validate prints them, and both go on.
func (p *Pipeline) Warnings() []string {
	var out []string
	path := "pipelines." + p.Name + ".kafka."
	if v := strings.ToLower(p.Kafka.Consumer["auto.offset.reset"]); slices.Contains([]string{"latest", "largest", "end"}, v) {
		out = append(out, fmt.Sprintf("%sconsumer.auto.offset.reset: %s: when retention deletes records the group has not read yet, the pipeline skips to the end of the partition and never copies the records in between; earliest (the default) loses only what retention deleted", path, v))
	}
	for _, side := range []struct {
		name  string
		props map[string]string
	}{{"consumer", p.Kafka.Consumer}, {"producer", p.Kafka.Producer}} {
		if v := strings.ToLower(side.props["enable.ssl.certificate.verification"]); v == "false" {
			out = append(out, fmt.Sprintf("%s%s.enable.ssl.certificate.verification: false: the broker's certificate is not checked, so anyone between this instance and the cluster can read and change its records", path, side.name))
		}
		if v := strings.ToLower(side.props["ssl.endpoint.identification.algorithm"]); v == "none" {
			out = append(out, fmt.Sprintf("%s%s.ssl.endpoint.identification.algorithm: none: the broker's certificate is not matched to its host name, so any certificate the CA signed passes", path, side.name))
		}
	}
	return out
}
