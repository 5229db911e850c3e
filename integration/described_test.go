package integration

import (
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	yaml "go.yaml.in/yaml/v3"

	"github.com/offloader/offloader/admin"
)

// What the deployment files describe, run as processes against the test
// broker and Azurite (no container runtime here). Only what a container or
// a pod changes by nature is substituted: the Kafka and Azurite addresses,
// the path the pipeline file is mounted at, the listener's port (two
// processes share one network here), and the topic names, made unique.

// dockerImage is the Dockerfile's ENTRYPOINT and CMD, and its HEALTHCHECK's
// command after the binary.
func dockerImage(t *testing.T) (entrypoint, cmd []string) {
	t.Helper()
	df := mustRead(t, "../Dockerfile")
	argv := func(directive string) []string {
		m := regexp.MustCompile(`(?m)^` + directive + ` (\[.*\])$`).FindStringSubmatch(df)
		if m == nil {
			t.Fatalf("the Dockerfile has no %s [...]", directive)
		}
		var out []string
		if err := yaml.Unmarshal([]byte(m[1]), &out); err != nil {
			t.Fatalf("%s %s: %v", directive, m[1], err)
		}
		return out
	}
	if regexp.MustCompile(`(?m)^ENV `).MatchString(df) {
		t.Errorf("the image sets environment variables: an OFFLOADER_ one is an override the user did not set")
	}
	return argv("ENTRYPOINT"), argv("CMD")
}

// described turns a container's argv and environment into this machine's:
// the binary for the image's, paths and addresses as replace says.
func described(t *testing.T, argv []string, replace *strings.Replacer) []string {
	t.Helper()
	if len(argv) == 0 || argv[0] != "/usr/local/bin/offloader" {
		t.Fatalf("the command %v does not start the image's offloader", argv)
	}
	out := []string{}
	for _, a := range argv[1:] {
		out = append(out, replace.Replace(a))
	}
	return out
}

// withListen sets the value after --listen (the image's 0.0.0.0:9464).
func withListen(t *testing.T, args []string, addr string) []string {
	t.Helper()
	i := slices.Index(args, "--listen")
	if i < 0 || i+1 >= len(args) {
		t.Fatalf("%v has no --listen ADDR", args)
	}
	args = slices.Clone(args)
	args[i+1] = addr
	return args
}

// docker compose up: Kafka and Azurite, the topics service (the raw topic),
// init (check --create-missing: the slim topic) and offloader (the image's
// command on the mounted pipeline file) make a pipeline that copies records
// produced to the raw topic to the slim topic, each once; the image's
// HEALTHCHECK says healthy.
func TestTheComposeServicesRunAPipelineFromNothing(t *testing.T) {
	t.Parallel()
	var compose struct {
		Services map[string]struct {
			Entrypoint  argList           `yaml:"entrypoint"`
			Command     argList           `yaml:"command"`
			Environment map[string]string `yaml:"environment"`
			Volumes     []string          `yaml:"volumes"`
			Ports       []string          `yaml:"ports"`
			DependsOn   map[string]struct {
				Condition string `yaml:"condition"`
			} `yaml:"depends_on"`
			Healthcheck struct {
				Test []string `yaml:"test"`
			} `yaml:"healthcheck"`
		} `yaml:"services"`
	}
	if err := yaml.Unmarshal([]byte(mustRead(t, "../docker-compose.yml")), &compose); err != nil {
		t.Fatalf("docker-compose.yml: %v", err)
	}
	topics, init, off := compose.Services["topics"], compose.Services["init"], compose.Services["offloader"]
	for svc, dep := range map[string]map[string]string{
		"topics": {"kafka": "service_healthy"}, "init": {"topics": "service_completed_successfully", "azurite": "service_healthy"},
		"offloader": {"init": "service_completed_successfully"},
	} {
		for on, cond := range dep {
			if got := compose.Services[svc].DependsOn[on].Condition; got != cond {
				t.Errorf("service %s waits for %s with condition %q, want %s", svc, on, got, cond)
			}
		}
	}
	for _, svc := range []string{"kafka", "azurite"} {
		if len(compose.Services[svc].Healthcheck.Test) == 0 {
			t.Errorf("service %s has no healthcheck", svc)
		}
	}
	if !slices.Equal(off.Ports, []string{"127.0.0.1:9464:9464"}) {
		t.Errorf("offloader publishes %v; its listener (no admin token) must be on 127.0.0.1 only", off.Ports)
	}
	if len(off.Command) != 0 || !slices.Equal(off.Volumes, init.Volumes) {
		t.Fatalf("offloader must run the image's command on init's pipeline file: command %v, volumes %v and %v", off.Command, off.Volumes, init.Volumes)
	}

	// The pipeline file, mounted read-only where the image reads it.
	host, mount, ok := strings.Cut(strings.TrimSuffix(init.Volumes[0], ":ro"), ":")
	if !ok {
		t.Fatalf("volume %q", init.Volumes[0])
	}
	prefix := uniqueName(t, "c")
	names := strings.NewReplacer("orders.", prefix+".", "offloader-orders", prefix+"-group")
	file := filepath.Join(t.TempDir(), "pipelines.yaml")
	if err := os.WriteFile(file, []byte(names.Replace(mustRead(t, filepath.Join("..", host)))), 0o600); err != nil {
		t.Fatal(err)
	}
	replace := strings.NewReplacer("kafka:29092", bootstrap, mount, file, "orders.", prefix+".")
	env := func(m map[string]string) []string {
		var out []string
		for k, v := range m {
			if k == "AZURE_STORAGE_CONNECTION_STRING" {
				v = azureConnStr // Azurite's address from here
			}
			out = append(out, k+"="+replace.Replace(v))
		}
		return out
	}

	// topics: the Kafka image's kafka-topics.sh is the broker's own tool here.
	if out, err := command(servicesScript, "install", "tools").CombinedOutput(); err != nil {
		t.Fatalf("install tools: %v\n%s", err, out)
	}
	tool := strings.Replace(topics.Entrypoint[0], "/opt/kafka/bin", filepath.Join(filepath.Dir(servicesScript), "..", ".cache", "bin"), 1)
	var args []string
	for _, a := range topics.Command {
		args = append(args, replace.Replace(a))
	}
	if out, err := command(tool, args...).CombinedOutput(); err != nil {
		t.Fatalf("the topics service: %v\n%s", err, out)
	}
	// init, then offloader, with the image's entrypoint.
	entrypoint, cmd := dockerImage(t)
	initArgs := described(t, append(slices.Clone(entrypoint), init.Command...), replace)
	out, err := command(offloaderBinary(t), initArgs...).CombinedOutput()
	if err != nil || !strings.Contains(string(out), "created topic "+prefix+".slim") {
		t.Fatalf("the init service (offloader %v): %v\n%s", initArgs, err, out)
	}
	runArgs := withListen(t, described(t, append(slices.Clone(entrypoint), cmd...), replace), "127.0.0.1:0")
	d := startOffloader(t, runArgs, env(off.Environment)...)
	base := d.metricsURL(t)
	waitReady(t, base, time.Minute)

	recs := numberedRecords(60, 3, 10, 3<<20, 300)
	produceRecords(t, prefix+".raw", recs)
	assertEachOnce(t, consumeAll(t, prefix+".slim", len(recs), 2*time.Minute), len(recs), nil)

	hc := dockerHealthcheck(t, base)
	if code, out := offloaderCLI(t, nil, hc...); code != 0 || !strings.Contains(out, "healthy") {
		t.Errorf("the HEALTHCHECK %v: exit %d\n%s", hc, code, out)
	}
	if code := d.stop(t, 45*time.Second); code != 0 {
		t.Errorf("exit code %d after SIGTERM", code)
	}
}

// argList is a compose command or entrypoint: a list, or a string the shell
// would split on spaces.
type argList []string

func (a *argList) UnmarshalYAML(n *yaml.Node) error {
	if n.Kind == yaml.ScalarNode {
		*a = strings.Fields(n.Value)
		return nil
	}
	var l []string
	err := n.Decode(&l)
	*a = l
	return err
}

// Two pods of the payments overlay's StatefulSet, as Kubernetes would start
// them: the image's entrypoint with the container's args, its env (POD_NAME
// from the pod's name, $(POD_NAME) expanded), the Secret's variables and the
// ConfigMap's pipeline file. They become ready, share the partitions under
// distinct transactional ids, and every record reaches the slim topic once.
func TestTheStatefulSetsPodsShareThePartitions(t *testing.T) {
	t.Parallel() // its own topics and group; runs beside the other parallel tests
	r := renderOverlay(t, "payments")
	ss := r.statefulSet
	c := ss.Spec.Template.Spec.Containers[0]
	var mount string
	for _, vm := range c.VolumeMounts {
		for _, v := range ss.Spec.Template.Spec.Volumes {
			if v.Name == vm.Name && v.ConfigMap != nil && r.configMaps[v.ConfigMap.Name] != nil {
				mount = vm.MountPath
			}
		}
	}
	if mount == "" || len(r.configMaps) != 1 {
		t.Fatalf("the container mounts no ConfigMap of the render (%d ConfigMaps)", len(r.configMaps))
	}
	var pipelineFile string
	for _, cm := range r.configMaps {
		pipelineFile = cm.Data["pipelines.yaml"]
	}
	prefix := uniqueName(t, "k")
	names := strings.NewReplacer("payments.", prefix+".", "offloader-payments", prefix+"-group", "payments-payloads", fmt.Sprintf("k%d-payloads", time.Now().UnixNano()%1e9),
		`listen: "0.0.0.0:9464"`, `listen: "127.0.0.1:0"`) // two pods' ports, on one host here
	dir := t.TempDir()
	file := filepath.Join(dir, "pipelines.yaml")
	if err := os.WriteFile(file, []byte(names.Replace(pipelineFile)), 0o600); err != nil {
		t.Fatal(err)
	}
	createTopic(t, prefix+".raw", 3, map[string]string{"max.message.bytes": "8388608"})
	secret := []string{"KAFKA_BOOTSTRAP_SERVERS=" + bootstrap, "AZURE_STORAGE_CONNECTION_STRING=" + azureConnStr,
		"OFFLOADER_OBSERVABILITY__ADMIN_TOKEN=" + adminToken}
	check := command(offloaderBinary(t), "check", "-F", file, "--create-missing")
	check.Env = append(check.Environ(), secret...)
	if out, err := check.CombinedOutput(); err != nil {
		t.Fatalf("check --create-missing (step 5 of the guide): %v\n%s", err, out)
	}
	entrypoint, _ := dockerImage(t)
	if len(c.Command) != 0 {
		entrypoint = c.Command
	}
	args := described(t, append(slices.Clone(entrypoint), c.Args...), strings.NewReplacer(mount+"/pipelines.yaml", file))
	var urls, instances []string
	for ordinal := range 2 {
		podName := fmt.Sprintf("%s-%d", ss.Name, ordinal)
		env := slices.Clone(secret)
		vars := map[string]string{}
		for _, e := range c.Env {
			v := e.Value
			switch {
			case e.ValueFrom != nil && e.ValueFrom.FieldRef != nil && e.ValueFrom.FieldRef.FieldPath == "metadata.name":
				v = podName
			case e.ValueFrom != nil:
				t.Fatalf("env %s comes from %+v, which this test does not provide", e.Name, e.ValueFrom)
			}
			for name, val := range vars { // Kubernetes expands $(VAR) of the variables before it
				v = strings.ReplaceAll(v, "$("+name+")", val)
			}
			vars[e.Name] = v
			env = append(env, e.Name+"="+v)
		}
		d := startOffloader(t, args, env...)
		u := d.metricsURL(t)
		urls = append(urls, u)
		t.Cleanup(func() {
			if code := d.stop(t, 45*time.Second); code != 0 {
				t.Errorf("pod %s: exit code %d after SIGTERM", podName, code)
			}
		})
	}
	for _, u := range urls {
		st := waitForStatus(t, u, "a pod holding partitions", func(s admin.Status) bool { return len(s.Partitions) > 0 }, 90*time.Second)
		instances = append(instances, st.Instance)
		waitReady(t, u, time.Minute)
	}
	if instances[0] == instances[1] || !strings.HasSuffix(instances[0], ss.Name+"-0") && !strings.HasSuffix(instances[1], ss.Name+"-0") {
		t.Errorf("the pods run as transactional ids %v; want one per pod name", instances)
	}
	recs := numberedRecords(90, 3, 15, 2<<20, 500)
	produceRecords(t, prefix+".raw", recs)
	assertEachOnce(t, consumeAll(t, prefix+".slim", len(recs), 2*time.Minute), len(recs), nil)
}
