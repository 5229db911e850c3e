package settings

import (
	"fmt"
	"slices"
	"strconv"
	"strings"
)

// OneOf is nil when v is one of allowed, else the error that names them: an
// enum setting's Validate.
func OneOf[T ~string](v T, allowed ...T) error {
	if slices.Contains(allowed, v) {
		return nil
	}
	quoted := make([]string, len(allowed))
	for i, a := range allowed {
		quoted[i] = strconv.Quote(string(a))
	}
	list := quoted[0]
	if len(quoted) > 1 {
		list = strings.Join(quoted[:len(quoted)-1], ", ") + " or " + quoted[len(quoted)-1]
	}
	return fmt.Errorf("must be %s, got %q", list, string(v))
}
