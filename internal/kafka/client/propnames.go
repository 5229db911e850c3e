package client

/*
#define _GNU_SOURCE
#include <stdio.h>
#include <stdlib.h>

// In the librdkafka that confluent-kafka-go links in; not in its Go API.
void rd_kafka_conf_properties_show(FILE *fp);

// properties_table returns librdkafka's own table of its configuration
// properties (CONFIGURATION.md's text), malloc'd, its length in *n.
static char *properties_table(size_t *n) {
	char *buf = NULL;
	FILE *fp = open_memstream(&buf, n);
	if (fp == NULL)
		return NULL;
	rd_kafka_conf_properties_show(fp);
	fclose(fp);
	return buf;
}
*/
import "C"

import (
	"regexp"
	"strings"
	"sync"
	"unsafe"

	"github.com/offloader/offloader/settings"
)

// propertyRow is a row of librdkafka's property table: the name, whether
// it is a consumer (C), producer (P) or shared (*) property, and, for an
// alias, the property it stands for.
var propertyRow = regexp.MustCompile("(?m)^([a-z0-9_.]+)\\s+\\|\\s+([CP*])\\s+\\|[^|\\n]*\\|[^|\\n]*\\|[^|\\n]*\\|\\s*(?:Alias for `([a-z0-9_.]+)`)?")

// librdkafkaProperties is what the bundled librdkafka knows of its
// configuration properties.
type librdkafkaProperties struct {
	// names by side: "consumer" (C and * rows) and "producer" (P and *),
	// aliases included.
	names map[string][]string
	// canonical maps an alias (linger.ms) to the property it stands for
	// (queue.buffering.max.ms), which is what librdkafka's errors name.
	canonical map[string]string
}

var properties = sync.OnceValue(func() librdkafkaProperties {
	known := librdkafkaProperties{names: map[string][]string{}, canonical: map[string]string{}}
	var n C.size_t
	buf := C.properties_table(&n)
	if buf == nil {
		return known
	}
	table := C.GoStringN(buf, C.int(n))
	C.free(unsafe.Pointer(buf))
	for _, m := range propertyRow.FindAllStringSubmatch(table, -1) {
		if m[2] != "P" {
			known.names["consumer"] = append(known.names["consumer"], m[1])
		}
		if m[2] != "C" {
			known.names["producer"] = append(known.names["producer"], m[1])
		}
		if m[3] != "" {
			known.canonical[m[1]] = m[3]
		}
	}
	return known
})

// namedIn finds the property of props that librdkafka's error names: the
// name itself, an alias of it, or the property it is an alias of.
func namedIn(props map[string]string, name string) (string, bool) {
	if _, ok := props[name]; ok {
		return name, true
	}
	canon := func(n string) string {
		if c, ok := properties().canonical[n]; ok {
			return c
		}
		return n
	}
	for k := range props {
		if canon(k) == canon(name) {
			return k, true
		}
	}
	return "", false
}

// closestProperty is the known property of side nearest to a misspelt name,
// or "" when none is close.
func closestProperty(side, name string) string {
	return settings.Closest(name, properties().names[side])
}

// isUnknownProperty tells librdkafka's "no such property" error.
func isUnknownProperty(msg string) bool {
	return strings.Contains(msg, "No such configuration property")
}
