package integration

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	"sigs.k8s.io/yaml"

	"github.com/offloader/offloader/config"
)

// TestKubernetesManifestsAreValid: every manifest under deploy/ decodes
// strictly into its Kubernetes API type (an unknown or misspelt field, a
// wrong type fails), the StatefulSet gives each pod its own transactional id
// from its stable name and probes /healthz and /readyz on the metrics port,
// and every pipeline file there validates.
func TestKubernetesManifestsAreValid(t *testing.T) {
	files, _ := filepath.Glob("../deploy/base/*.yaml") // deploy/monitoring: monitoring_test.go
	overlays, _ := filepath.Glob("../deploy/overlays/*/*.yaml")
	files = append(files, overlays...)
	if len(files) < 8 {
		t.Fatalf("found %d manifests under deploy/", len(files))
	}
	kinds := map[string]int{}
	for _, f := range files {
		raw, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		if filepath.Base(f) == "pipelines.yaml" {
			if _, err := config.Load(f, config.Options{Environ: []string{
				"KAFKA_BOOTSTRAP_SERVERS=kafka:9092", "AZURE_STORAGE_ACCOUNT_URL=https://acct.blob.core.windows.net"}}); err != nil {
				t.Errorf("%s: %v", f, err)
			}
			continue
		}
		var head struct{ APIVersion, Kind string }
		if err := yaml.Unmarshal(raw, &head); err != nil || head.Kind == "" {
			t.Errorf("%s: no kind: %v", f, err)
			continue
		}
		kinds[head.Kind]++
		var target any
		switch head.Kind {
		case "StatefulSet":
			target = &appsv1.StatefulSet{}
		case "Service":
			target = &corev1.Service{}
		case "PodDisruptionBudget":
			target = &policyv1.PodDisruptionBudget{}
		case "ServiceMonitor", "Kustomization":
			// Not in the core API: the fields offloader relies on are checked below.
			if !bytes.Contains(raw, []byte("matchLabels")) && head.Kind == "ServiceMonitor" {
				t.Errorf("%s: the ServiceMonitor selects nothing", f)
			}
			continue
		default:
			t.Errorf("%s: kind %s is not checked here", f, head.Kind)
			continue
		}
		if err := yaml.UnmarshalStrict(raw, target); err != nil {
			t.Errorf("%s: %v", f, err)
			continue
		}
		if ss, ok := target.(*appsv1.StatefulSet); ok {
			checkStatefulSet(t, f, ss)
		}
	}
	for _, k := range []string{"StatefulSet", "Service", "PodDisruptionBudget", "ServiceMonitor", "Kustomization"} {
		if kinds[k] == 0 {
			t.Errorf("deploy/ has no %s", k)
		}
	}
}

func checkStatefulSet(t *testing.T, f string, ss *appsv1.StatefulSet) {
	t.Helper()
	c := ss.Spec.Template.Spec.Containers[0]
	env := map[string]corev1.EnvVar{}
	for _, e := range c.Env {
		env[e.Name] = e
	}
	if pod, ok := env["POD_NAME"]; !ok || pod.ValueFrom == nil || pod.ValueFrom.FieldRef.FieldPath != "metadata.name" {
		t.Errorf("%s: POD_NAME must come from the pod's name", f)
	}
	if !strings.Contains(env["OFFLOADER_KAFKA__TRANSACTIONAL_ID"].Value, "$(POD_NAME)") {
		t.Errorf("%s: the transactional id must be the pod's stable name", f)
	}
	if c.LivenessProbe == nil || c.LivenessProbe.HTTPGet.Path != "/healthz" || c.ReadinessProbe == nil || c.ReadinessProbe.HTTPGet.Path != "/readyz" {
		t.Errorf("%s: probes must be /healthz (liveness) and /readyz (readiness)", f)
	}
	if len(c.Ports) == 0 || c.Ports[0].ContainerPort != 9464 {
		t.Errorf("%s: the metrics port must be 9464", f)
	}
	if g := ss.Spec.Template.Spec.TerminationGracePeriodSeconds; g == nil || *g < 60 {
		t.Errorf("%s: the grace period must let SIGTERM commit the batch in hand (30 s) and leave the group", f)
	}
}
