package statefulset

import (
	"context"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
)

// A pod at or past the replicas its StatefulSet wants is scaled in; one
// below comes back. The call carries the token; a refusal names the RBAC
// the ServiceAccount needs.
func TestScaledInComparesTheOrdinalWithTheReplicasWanted(t *testing.T) {
	replicas := "2"
	api := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Header.Get("Authorization") != "Bearer tok" {
			http.Error(w, `{"reason":"Forbidden"}`, http.StatusForbidden)
			return
		}
		if r.URL.Path != "/apis/apps/v1/namespaces/streaming/statefulsets/orders-offloader" {
			http.NotFound(w, r)
			return
		}
		w.Write([]byte(`{"kind":"StatefulSet","spec":{"replicas":` + replicas + `}}`))
	}))
	defer api.Close()
	pod := func(name, token string) *Pod {
		return &Pod{Name: name, Namespace: "streaming", API: api.URL, Token: token, Client: api.Client()}
	}
	for name, want := range map[string]bool{"orders-offloader-0": false, "orders-offloader-1": false, "orders-offloader-2": true} {
		got, why, err := pod(name, "tok").ScaledIn(context.Background())
		if err != nil || got != want || !strings.Contains(why, "wants 2 replicas") {
			t.Errorf("%s: scaled in %v (%s), %v; want %v", name, got, why, err, want)
		}
	}
	replicas = "0"
	if got, _, err := pod("orders-offloader-0", "tok").ScaledIn(context.Background()); err != nil || !got {
		t.Errorf("scaled to 0: scaled in %v, %v", got, err)
	}
	if _, _, err := pod("orders-offloader-0", "wrong").ScaledIn(context.Background()); err == nil || !strings.Contains(err.Error(), "get on statefulsets") {
		t.Errorf("a refused read: %v", err)
	}
	if got, why, err := pod("payments-offloader-1", "tok").ScaledIn(context.Background()); err != nil || !got || !strings.Contains(why, "is gone") {
		t.Errorf("a deleted StatefulSet: scaled in %v (%s), %v; want true", got, why, err)
	}
	if _, _, err := pod("offloader", "tok").ScaledIn(context.Background()); err == nil || !strings.Contains(err.Error(), "<statefulset>-<ordinal>") {
		t.Errorf("a pod name without an ordinal: %v", err)
	}
}
