package integration

import (
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	"sigs.k8s.io/kustomize/api/krusty"
	"sigs.k8s.io/kustomize/kyaml/filesys"
	"sigs.k8s.io/yaml"

	"github.com/offloader/offloader/config"
)

// rendered is one overlay as kustomize builds it, each object decoded
// strictly into its Kubernetes API type.
type rendered struct {
	overlay         string
	statefulSet     *appsv1.StatefulSet
	services        []*corev1.Service
	pdbs            []*policyv1.PodDisruptionBudget
	serviceAccounts []string
	configMaps      map[string]*corev1.ConfigMap
	roles           map[string]*rbacv1.Role
	roleBindings    []*rbacv1.RoleBinding
	// monitors are the ServiceMonitors' and PodMonitors' label selectors, by name.
	monitors map[string]map[string]string
	// monitorLabels are their own labels, by name.
	monitorLabels map[string]map[string]string
}

// renderOverlay builds deploy/overlays/<name> with kustomize's Go API (what
// kubectl apply -k does) and decodes every object; an unknown or misspelt
// field, or a kind not checked here, fails.
func renderOverlay(t *testing.T, name string) *rendered {
	t.Helper()
	m, err := krusty.MakeKustomizer(krusty.MakeDefaultOptions()).Run(filesys.MakeFsOnDisk(), filepath.Join("..", "deploy", "overlays", name))
	if err != nil {
		t.Fatalf("kustomize build deploy/overlays/%s: %v", name, err)
	}
	r := &rendered{overlay: name, configMaps: map[string]*corev1.ConfigMap{}, monitors: map[string]map[string]string{},
		monitorLabels: map[string]map[string]string{}, roles: map[string]*rbacv1.Role{}}
	for _, res := range m.Resources() {
		raw, err := res.AsYAML()
		if err != nil {
			t.Fatal(err)
		}
		strict := func(into any) {
			if err := yaml.UnmarshalStrict(raw, into); err != nil {
				t.Errorf("%s: %s %s: %v", name, res.GetKind(), res.GetName(), err)
			}
		}
		switch res.GetKind() {
		case "StatefulSet":
			if r.statefulSet != nil {
				t.Errorf("%s renders two StatefulSets", name)
			}
			r.statefulSet = &appsv1.StatefulSet{}
			strict(r.statefulSet)
		case "Service":
			s := &corev1.Service{}
			strict(s)
			r.services = append(r.services, s)
		case "PodDisruptionBudget":
			p := &policyv1.PodDisruptionBudget{}
			strict(p)
			r.pdbs = append(r.pdbs, p)
		case "ServiceAccount":
			sa := &corev1.ServiceAccount{}
			strict(sa)
			r.serviceAccounts = append(r.serviceAccounts, sa.Name)
		case "ConfigMap":
			cm := &corev1.ConfigMap{}
			strict(cm)
			r.configMaps[cm.Name] = cm
		case "Role":
			role := &rbacv1.Role{}
			strict(role)
			r.roles[role.Name] = role
		case "RoleBinding":
			rb := &rbacv1.RoleBinding{}
			strict(rb)
			r.roleBindings = append(r.roleBindings, rb)
		case "ServiceMonitor", "PodMonitor":
			var mon struct {
				Spec struct {
					Selector struct {
						MatchLabels map[string]string `json:"matchLabels"`
					} `json:"selector"`
				} `json:"spec"`
			}
			if err := yaml.Unmarshal(raw, &mon); err != nil || len(mon.Spec.Selector.MatchLabels) == 0 {
				t.Errorf("%s: %s %s selects nothing: %v", name, res.GetKind(), res.GetName(), err)
			}
			r.monitors[res.GetKind()+"/"+res.GetName()] = mon.Spec.Selector.MatchLabels
			r.monitorLabels[res.GetKind()+"/"+res.GetName()] = res.GetLabels()
		default:
			t.Errorf("%s renders a %s, which is not checked here", name, res.GetKind())
		}
	}
	if r.statefulSet == nil {
		t.Fatalf("%s renders no StatefulSet", name)
	}
	return r
}

// selects reports whether a label selector selects labels.
func selects(selector, labels map[string]string) bool {
	if len(selector) == 0 {
		return false
	}
	for k, v := range selector {
		if labels[k] != v {
			return false
		}
	}
	return true
}

// The overlays render, and what they render holds together: every
// reference names an object the render ships or one docs/operations.md
// tells the user to create; two pairs side by side in one namespace select
// only their own pods; each monitor selects its own Service only; the image
// is the one make docker tags, with an explicit pull policy; the pods run
// as their ServiceAccount with the workload-identity label; every pipeline
// file validates.
func TestKubernetesOverlaysRenderAndHoldTogether(t *testing.T) {
	t.Parallel()
	overlays, _ := filepath.Glob("../deploy/overlays/*/kustomization.yaml")
	if len(overlays) < 2 {
		t.Fatalf("found %d overlays; two pairs side by side need two", len(overlays))
	}
	ops := mustRead(t, "../docs/operations.md")
	makefile := mustRead(t, "../Makefile")
	image := regexp.MustCompile(`(?m)^IMAGE\s*\?=\s*(\S+?):`).FindStringSubmatch(makefile)
	if image == nil {
		t.Fatal("the Makefile names no IMAGE ?= <repository>:<tag>")
	}
	var all []*rendered
	for _, k := range overlays {
		r := renderOverlay(t, filepath.Base(filepath.Dir(k)))
		all = append(all, r)
		ss := r.statefulSet
		pod := ss.Spec.Template.Spec
		checkStatefulSet(t, r.overlay, ss)
		for _, v := range restrictedViolations(pod) {
			t.Errorf("%s: the restricted Pod Security Standard refuses the pods: %s", r.overlay, v)
		}
		for name, labels := range r.monitorLabels {
			if labels["release"] != ruleRelease(t) {
				t.Errorf("%s: %s has release label %q, the PrometheusRule %q: the operator that loads one does not select the other", r.overlay, name, labels["release"], ruleRelease(t))
			}
		}
		if !slices.Contains(r.serviceAccounts, pod.ServiceAccountName) {
			t.Errorf("%s: the pods run as ServiceAccount %q, which the render does not ship (it ships %v)", r.overlay, pod.ServiceAccountName, r.serviceAccounts)
		}
		if ss.Spec.Template.Labels["azure.workload.identity/use"] != "true" {
			t.Errorf("%s: the pods lack the label azure.workload.identity/use: \"true\"", r.overlay)
		}
		for _, v := range pod.Volumes {
			if v.ConfigMap != nil && r.configMaps[v.ConfigMap.Name] == nil {
				t.Errorf("%s: volume %s names ConfigMap %s, which the render does not ship", r.overlay, v.Name, v.ConfigMap.Name)
			}
			if v.Secret != nil && !strings.Contains(ops, "kubectl create secret generic "+v.Secret.SecretName) {
				t.Errorf("%s: volume %s names Secret %s, which docs/operations.md does not tell the user to create", r.overlay, v.Name, v.Secret.SecretName)
			}
		}
		c := pod.Containers[0]
		// The preStop hook tells a scale-in from a restart: it reads the
		// StatefulSet, which the pods' ServiceAccount must be allowed.
		if c.Lifecycle == nil || c.Lifecycle.PreStop == nil || c.Lifecycle.PreStop.Exec == nil ||
			!strings.Contains(strings.Join(c.Lifecycle.PreStop.Exec.Command, " "), "offloader leave --if-scaled-in --url http://127.0.0.1:9464") {
			t.Errorf("%s: no preStop hook runs offloader leave --if-scaled-in", r.overlay)
		}
		if !canGetStatefulSets(r, pod.ServiceAccountName) {
			t.Errorf("%s: ServiceAccount %s may not get statefulsets (the preStop hook reads its StatefulSet)", r.overlay, pod.ServiceAccountName)
		}
		if g := pod.TerminationGracePeriodSeconds; g == nil || *g < 15+60 {
			t.Errorf("%s: the grace period must cover the preStop hook (15 s) and the stop (60 s)", r.overlay)
		}
		for _, ef := range c.EnvFrom {
			if ef.SecretRef != nil && !strings.Contains(ops, "kubectl create secret generic "+ef.SecretRef.Name) {
				t.Errorf("%s: the container reads Secret %s, which docs/operations.md does not tell the user to create", r.overlay, ef.SecretRef.Name)
			}
			if ef.ConfigMapRef != nil && r.configMaps[ef.ConfigMapRef.Name] == nil {
				t.Errorf("%s: the container reads ConfigMap %s, which the render does not ship", r.overlay, ef.ConfigMapRef.Name)
			}
		}
		for _, e := range c.Env {
			if e.ValueFrom != nil && e.ValueFrom.SecretKeyRef != nil && !strings.Contains(ops, "kubectl create secret generic "+e.ValueFrom.SecretKeyRef.Name) {
				t.Errorf("%s: env %s reads Secret %s, which docs/operations.md does not tell the user to create", r.overlay, e.Name, e.ValueFrom.SecretKeyRef.Name)
			}
		}
		repo, tag, _ := strings.Cut(c.Image, ":")
		if repo != image[1] || tag == "" || tag == "latest" || c.ImagePullPolicy != corev1.PullIfNotPresent {
			t.Errorf("%s: image %q pull policy %q; want %s:<version> (what make docker tags) and IfNotPresent", r.overlay, c.Image, c.ImagePullPolicy, image[1])
		}
		for _, cm := range r.configMaps {
			path := filepath.Join(t.TempDir(), "pipelines.yaml")
			os.WriteFile(path, []byte(cm.Data["pipelines.yaml"]), 0o600)
			if _, err := config.Load(path, config.Options{Environ: []string{"KAFKA_BOOTSTRAP_SERVERS=kafka:9092",
				"AZURE_STORAGE_ACCOUNT_URL=https://acct.blob.core.windows.net", "AZURE_STORAGE_CONNECTION_STRING=" + azureConnStr}}); err != nil {
				t.Errorf("%s: the pipeline file in ConfigMap %s: %v", r.overlay, cm.Name, err)
			}
		}
		// Each monitor selects its own Service, and the Service its own pods.
		for name, sel := range r.monitors {
			if len(r.services) != 1 || !selects(sel, r.services[0].Labels) {
				t.Errorf("%s: %s selects %v, not its own Service", r.overlay, name, sel)
			}
		}
		for _, s := range r.services {
			if !selects(s.Spec.Selector, ss.Spec.Template.Labels) {
				t.Errorf("%s: Service %s selects %v, not its pods %v", r.overlay, s.Name, s.Spec.Selector, ss.Spec.Template.Labels)
			}
		}
	}
	// Side by side in one namespace: no selector of one pair selects the
	// other pair's pods or Service, and no two objects share a name.
	for _, a := range all {
		for _, b := range all {
			if a == b {
				continue
			}
			theirPods := b.statefulSet.Spec.Template.Labels
			sels := map[string]map[string]string{"StatefulSet " + a.statefulSet.Name: a.statefulSet.Spec.Selector.MatchLabels}
			for _, s := range a.services {
				sels["Service "+s.Name] = s.Spec.Selector
			}
			for _, p := range a.pdbs {
				sels["PodDisruptionBudget "+p.Name] = p.Spec.Selector.MatchLabels
			}
			for name, sel := range a.monitors {
				sels[name] = sel
				for _, s := range b.services {
					if selects(sel, s.Labels) {
						t.Errorf("%s's %s selects %s's Service %s", a.overlay, name, b.overlay, s.Name)
					}
				}
			}
			for name, sel := range sels {
				if selects(sel, theirPods) {
					t.Errorf("%s's %s selects %s's pods (%v)", a.overlay, name, b.overlay, sel)
				}
			}
			if a.statefulSet.Name == b.statefulSet.Name || slices.ContainsFunc(a.serviceAccounts, func(n string) bool { return slices.Contains(b.serviceAccounts, n) }) {
				t.Errorf("%s and %s share object names", a.overlay, b.overlay)
			}
		}
	}
}

func checkStatefulSet(t *testing.T, overlay string, ss *appsv1.StatefulSet) {
	t.Helper()
	c := ss.Spec.Template.Spec.Containers[0]
	env := map[string]corev1.EnvVar{}
	for _, e := range c.Env {
		env[e.Name] = e
	}
	if pod, ok := env["POD_NAME"]; !ok || pod.ValueFrom == nil || pod.ValueFrom.FieldRef.FieldPath != "metadata.name" {
		t.Errorf("%s: POD_NAME must come from the pod's name", overlay)
	}
	if !strings.Contains(env["OFFLOADER_KAFKA__TRANSACTIONAL_ID"].Value, "$(POD_NAME)") {
		t.Errorf("%s: the transactional id must be the pod's stable name", overlay)
	}
	if c.LivenessProbe == nil || c.LivenessProbe.HTTPGet.Path != "/healthz" || c.ReadinessProbe == nil || c.ReadinessProbe.HTTPGet.Path != "/readyz" {
		t.Errorf("%s: probes must be /healthz (liveness) and /readyz (readiness)", overlay)
	}
	if len(c.Ports) == 0 || c.Ports[0].ContainerPort != 9464 {
		t.Errorf("%s: the metrics port must be 9464", overlay)
	}
	if g := ss.Spec.Template.Spec.TerminationGracePeriodSeconds; g == nil || *g < 60 {
		t.Errorf("%s: the grace period must let SIGTERM commit the batch in hand (30 s) and leave the group", overlay)
	}
}

// canGetStatefulSets reports whether a RoleBinding of the render gives sa a
// Role of the render that may get statefulsets.
func canGetStatefulSets(r *rendered, sa string) bool {
	for _, rb := range r.roleBindings {
		role := r.roles[rb.RoleRef.Name]
		if rb.RoleRef.Kind != "Role" || role == nil || !slices.ContainsFunc(rb.Subjects, func(s rbacv1.Subject) bool { return s.Kind == "ServiceAccount" && s.Name == sa }) {
			continue
		}
		for _, rule := range role.Rules {
			if slices.Contains(rule.APIGroups, "apps") && slices.Contains(rule.Resources, "statefulsets") && slices.Contains(rule.Verbs, "get") {
				return true
			}
		}
	}
	return false
}

// restrictedViolations are the rules of the restricted Pod Security
// Standard (kubernetes.io/docs/concepts/security/pod-security-standards,
// the baseline's included) that pod breaks: what a namespace labelled
// pod-security.kubernetes.io/enforce: restricted would refuse it for.
func restrictedViolations(pod corev1.PodSpec) []string {
	var out []string
	if pod.HostNetwork || pod.HostPID || pod.HostIPC {
		out = append(out, "host namespaces (hostNetwork, hostPID, hostIPC)")
	}
	sc := pod.SecurityContext
	if sc == nil {
		sc = &corev1.PodSecurityContext{}
	}
	allowedVolume := func(v corev1.Volume) bool {
		s := v.VolumeSource
		return s.ConfigMap != nil || s.Secret != nil || s.EmptyDir != nil || s.Projected != nil || s.DownwardAPI != nil ||
			s.PersistentVolumeClaim != nil || s.Ephemeral != nil || s.CSI != nil
	}
	for _, v := range pod.Volumes {
		if !allowedVolume(v) {
			out = append(out, fmt.Sprintf("volume %s is of a type restricted does not allow", v.Name))
		}
	}
	for _, sysctl := range sc.Sysctls {
		out = append(out, fmt.Sprintf("sysctl %s", sysctl.Name))
	}
	podSeccomp := sc.SeccompProfile != nil && (sc.SeccompProfile.Type == corev1.SeccompProfileTypeRuntimeDefault || sc.SeccompProfile.Type == corev1.SeccompProfileTypeLocalhost)
	if sc.RunAsUser != nil && *sc.RunAsUser == 0 {
		out = append(out, "the pod runs as user 0")
	}
	containers := append(append([]corev1.Container{}, pod.InitContainers...), pod.Containers...)
	for _, c := range containers {
		csc := c.SecurityContext
		if csc == nil {
			csc = &corev1.SecurityContext{}
		}
		if csc.Privileged != nil && *csc.Privileged {
			out = append(out, c.Name+": privileged")
		}
		if csc.AllowPrivilegeEscalation == nil || *csc.AllowPrivilegeEscalation {
			out = append(out, c.Name+": allowPrivilegeEscalation is not false")
		}
		if csc.RunAsNonRoot == nil && (sc.RunAsNonRoot == nil || !*sc.RunAsNonRoot) || csc.RunAsNonRoot != nil && !*csc.RunAsNonRoot {
			out = append(out, c.Name+": runAsNonRoot is not true")
		}
		if csc.RunAsUser != nil && *csc.RunAsUser == 0 {
			out = append(out, c.Name+": runs as user 0")
		}
		switch {
		case csc.SeccompProfile == nil && !podSeccomp:
			out = append(out, c.Name+": no seccompProfile RuntimeDefault or Localhost (pod or container)")
		case csc.SeccompProfile != nil && csc.SeccompProfile.Type == corev1.SeccompProfileTypeUnconfined:
			out = append(out, c.Name+": seccompProfile Unconfined")
		}
		if csc.Capabilities == nil || !slices.Contains(csc.Capabilities.Drop, "ALL") {
			out = append(out, c.Name+": capabilities do not drop ALL")
		}
		if csc.Capabilities != nil {
			for _, add := range csc.Capabilities.Add {
				if add != "NET_BIND_SERVICE" {
					out = append(out, fmt.Sprintf("%s: adds capability %s", c.Name, add))
				}
			}
		}
		if csc.ProcMount != nil && *csc.ProcMount != corev1.DefaultProcMount {
			out = append(out, c.Name+": procMount is not Default")
		}
		for _, p := range c.Ports {
			if p.HostPort != 0 {
				out = append(out, fmt.Sprintf("%s: hostPort %d", c.Name, p.HostPort))
			}
		}
	}
	return out
}

// ruleRelease is the release label of the PrometheusRule in
// deploy/monitoring, which the Prometheus Operator's selectors match.
func ruleRelease(t *testing.T) string {
	t.Helper()
	var rule struct {
		Metadata struct {
			Labels map[string]string `yaml:"labels"`
		} `yaml:"metadata"`
	}
	if err := yaml.Unmarshal([]byte(mustRead(t, "../deploy/monitoring/offloader-alerts.yaml")), &rule); err != nil {
		t.Fatal(err)
	}
	if rule.Metadata.Labels["release"] == "" {
		t.Fatal("the PrometheusRule has no release label")
	}
	return rule.Metadata.Labels["release"]
}

// The restricted check refuses what the restricted profile refuses: each
// of these pods breaks one rule, the first none.
func TestTheRestrictedCheckRefusesWhatTheProfileRefuses(t *testing.T) {
	no, yes, root := false, true, int64(0)
	good := func() corev1.PodSpec {
		return corev1.PodSpec{
			SecurityContext: &corev1.PodSecurityContext{RunAsNonRoot: &yes, SeccompProfile: &corev1.SeccompProfile{Type: corev1.SeccompProfileTypeRuntimeDefault}},
			Containers: []corev1.Container{{Name: "c", SecurityContext: &corev1.SecurityContext{AllowPrivilegeEscalation: &no,
				Capabilities: &corev1.Capabilities{Drop: []corev1.Capability{"ALL"}}}}},
			Volumes: []corev1.Volume{{Name: "v", VolumeSource: corev1.VolumeSource{ConfigMap: &corev1.ConfigMapVolumeSource{}}}},
		}
	}
	if v := restrictedViolations(good()); len(v) != 0 {
		t.Fatalf("a restricted pod breaks %v", v)
	}
	for name, spoil := range map[string]func(*corev1.PodSpec){
		"no seccomp":         func(p *corev1.PodSpec) { p.SecurityContext.SeccompProfile = nil },
		"runAsNonRoot unset": func(p *corev1.PodSpec) { p.SecurityContext.RunAsNonRoot = nil },
		"root":               func(p *corev1.PodSpec) { p.SecurityContext.RunAsUser = &root },
		"escalation":         func(p *corev1.PodSpec) { p.Containers[0].SecurityContext.AllowPrivilegeEscalation = nil },
		"capabilities kept":  func(p *corev1.PodSpec) { p.Containers[0].SecurityContext.Capabilities = nil },
		"a capability added": func(p *corev1.PodSpec) {
			p.Containers[0].SecurityContext.Capabilities.Add = []corev1.Capability{"NET_ADMIN"}
		},
		"privileged":   func(p *corev1.PodSpec) { p.Containers[0].SecurityContext.Privileged = &yes },
		"host network": func(p *corev1.PodSpec) { p.HostNetwork = true },
		"a hostPath volume": func(p *corev1.PodSpec) {
			p.Volumes[0].VolumeSource = corev1.VolumeSource{HostPath: &corev1.HostPathVolumeSource{Path: "/"}}
		},
		"a host port": func(p *corev1.PodSpec) {
			p.Containers[0].Ports = []corev1.ContainerPort{{ContainerPort: 80, HostPort: 80}}
		},
		"an unconfined init": func(p *corev1.PodSpec) {
			p.InitContainers = []corev1.Container{{Name: "i", SecurityContext: &corev1.SecurityContext{AllowPrivilegeEscalation: &no, Capabilities: &corev1.Capabilities{Drop: []corev1.Capability{"ALL"}}, SeccompProfile: &corev1.SeccompProfile{Type: corev1.SeccompProfileTypeUnconfined}}}}
		},
	} {
		p := good()
		spoil(&p)
		if v := restrictedViolations(p); len(v) == 0 {
			t.Errorf("a pod with %s passes the restricted check", name)
		}
	}
}
