package settings

import (
	"reflect"
	"regexp"
	"sort"
	"strings"
	"time"
)

// Redacted replaces the value of a secret setting wherever a config is printed or
// logged.
const Redacted = "[redacted]"

// secretKey matches the names of settings that hold credentials: librdkafka's
// sasl.password, ssl.key.password, ssl.key.pem, sasl.jaas.config and
// sasl.oauthbearer.client.secret, the stores' connection_string, account_key,
// sas_token, and anything named like a password, secret, token or credential.
var secretKey = regexp.MustCompile(`(?i)(password|secret|token|credential|connection_string|account_key|jaas|private|ssl\.key\.pem|(^|[._])sas([._]|$))`)

// IsSecret reports whether a setting named key holds a credential.
func IsSecret(key string) bool { return secretKey.MatchString(key) }

// Encode turns a decoded config back into plain maps, lists and scalars keyed by
// the `key` tags, with Size and time.Duration written the way Decode reads them
// and every secret setting replaced by Redacted. It is for printing and logging.
func Encode(v any) any {
	return encode("", reflect.ValueOf(v))
}

func encode(key string, v reflect.Value) any {
	if !v.IsValid() {
		return nil
	}
	switch v.Type() {
	case durationType:
		return time.Duration(v.Int()).String()
	case sizeType:
		return Size(v.Int()).String()
	case autoSizeType:
		return SizeOrAuto(v.Int()).String()
	}
	switch v.Kind() {
	case reflect.Pointer, reflect.Interface:
		if v.IsNil() {
			return nil
		}
		return encode(key, v.Elem())
	case reflect.Struct:
		out := map[string]any{}
		t := v.Type()
		for i := 0; i < t.NumField(); i++ {
			name, opts, _ := strings.Cut(t.Field(i).Tag.Get("key"), ",")
			if !t.Field(i).IsExported() || name == "-" || opts == "remain" {
				continue
			}
			if name == "" {
				// An untagged exported field holds a decoded part (a store's
				// or step's typed config): flatten it into this mapping.
				if inner, ok := encode(key, v.Field(i)).(map[string]any); ok {
					for k, val := range inner {
						out[k] = val
					}
				}
				continue
			}
			out[name] = encode(name, v.Field(i))
		}
		return out
	case reflect.Map:
		out := map[string]any{}
		keys := v.MapKeys()
		sort.Slice(keys, func(i, j int) bool { return keys[i].String() < keys[j].String() })
		for _, k := range keys {
			out[k.String()] = encode(k.String(), v.MapIndex(k))
		}
		return out
	case reflect.Slice:
		out := make([]any, v.Len())
		for i := range out {
			out[i] = encode(key, v.Index(i))
		}
		return out
	case reflect.String:
		if IsSecret(key) && v.String() != "" {
			return Redacted
		}
		return v.String()
	}
	return v.Interface()
}
