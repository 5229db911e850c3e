package integration

import (
	"os"
	"regexp"
	"strings"
	"testing"

	yaml "go.yaml.in/yaml/v3"
)

// TestComposeMirrorsTheServicesScript: docker-compose.yml (for people with
// Docker; no engine runs here) parses, and runs the same versions on the same
// ports with the same broker settings as scripts/services.sh, which the
// tests use, so that what the tests prove carries over.
func TestComposeMirrorsTheServicesScript(t *testing.T) {
	t.Parallel()
	script, err := os.ReadFile("../scripts/services.sh")
	if err != nil {
		t.Fatal(err)
	}
	def := func(name string) string {
		m := regexp.MustCompile(`\$\{` + name + `:-([^}]+)\}`).FindSubmatch(script)
		if m == nil {
			t.Fatalf("scripts/services.sh has no default for %s", name)
		}
		return string(m[1])
	}
	raw, err := os.ReadFile("../docker-compose.yml")
	if err != nil {
		t.Fatal(err)
	}
	var compose struct {
		Services map[string]struct {
			Image       string            `yaml:"image"`
			Ports       []string          `yaml:"ports"`
			Environment map[string]string `yaml:"environment"`
			Command     any               `yaml:"command"`
		} `yaml:"services"`
	}
	if err := yaml.Unmarshal(raw, &compose); err != nil {
		t.Fatalf("docker-compose.yml: %v", err)
	}
	python, err := os.ReadFile("../scripts/python-env.sh")
	if err != nil {
		t.Fatal(err)
	}
	moto := regexp.MustCompile(`DEV_PY_MOTO:-([^}]+)\}`).FindSubmatch(python)
	for svc, want := range map[string]struct{ image, port string }{
		"kafka":   {"apache/kafka:" + def("DEV_KAFKA_VERSION"), def("DEV_KAFKA_PORT")},
		"azurite": {"mcr.microsoft.com/azure-storage/azurite:" + def("DEV_AZURITE_VERSION"), def("DEV_AZURITE_PORT")},
		"s3":      {"motoserver/moto:" + string(moto[1]), def("DEV_S3_PORT")},
	} {
		s, ok := compose.Services[svc]
		if !ok {
			t.Errorf("docker-compose.yml has no service %s", svc)
			continue
		}
		if s.Image != want.image || len(s.Ports) == 0 || s.Ports[0] != want.port+":"+want.port {
			t.Errorf("%s: image %s ports %v; want %s on %s, as scripts/services.sh", svc, s.Image, s.Ports, want.image, want.port)
		}
	}
	// Every broker setting of the services script, as the image's KAFKA_ variables.
	env := compose.Services["kafka"].Environment
	block := regexp.MustCompile(`(?s)cat >"\$kafka_state/server.properties" <<EOF\n(.*?)\nEOF`).FindSubmatch(script)
	if block == nil {
		t.Fatal("scripts/services.sh writes no server.properties")
	}
	checked := 0
	for _, line := range strings.Split(string(block[1]), "\n") {
		k, v, ok := strings.Cut(line, "=")
		if !ok || strings.HasPrefix(line, "#") || strings.Contains(v, "$") || strings.Contains(k, "listener") || k == "log.dirs" {
			continue // addresses and paths differ in a container by nature
		}
		name := "KAFKA_" + strings.ToUpper(strings.NewReplacer(".", "_").Replace(k))
		if env[name] != v {
			t.Errorf("the broker's %s is %q in scripts/services.sh, %q in docker-compose.yml (%s)", k, v, env[name], name)
		}
		checked++
	}
	if checked < 15 {
		t.Errorf("only %d broker settings compared", checked)
	}
	dockerfile := mustRead(t, "../Dockerfile")
	if _, cmd := dockerImage(t); !strings.Contains(strings.Join(cmd, " "), "--listen 0.0.0.0:9464") {
		t.Errorf("the image's command %v must serve its listener on all interfaces, to answer from outside the container", cmd)
	}
	if !regexp.MustCompile(`(?m)^RUN (GOWORK=off )?make build VERSION=`).MatchString(dockerfile) {
		t.Error("the image must build with the Makefile's build target (one set of build flags)")
	}
}

func mustRead(t *testing.T, path string) string {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}
