package storetest

import (
	"context"
	"net/http"
	"strconv"
	"strings"
	"testing"

	"github.com/offloader/offloader/stores"
)

// Classifies checks how a store of an HTTP service reads its refusals: 503,
// 429 and 408 are retryable, 404 not found, 403 permanent, each said in one
// line with its status. answer arranges that the store's next call for key
// is answered with status and the service's error code for it, and returns
// that code.
func Classifies(t *testing.T, s stores.Store, key string, answer func(status int) (code string)) {
	t.Helper()
	for status, kind := range map[int]stores.Kind{
		http.StatusServiceUnavailable: stores.Retryable,
		http.StatusTooManyRequests:    stores.Retryable,
		http.StatusRequestTimeout:     stores.Retryable,
		http.StatusForbidden:          stores.Permanent,
		http.StatusNotFound:           stores.NotFound,
	} {
		code := answer(status)
		_, err := s.Get(context.Background(), key, 10)
		if stores.KindOf(err) != kind || !strings.Contains(err.Error(), "HTTP "+strconv.Itoa(status)) || !strings.Contains(err.Error(), code) {
			t.Errorf("answered %d %s: %v (kind %v), want kind %v", status, code, err, stores.KindOf(err), kind)
		}
	}
}
