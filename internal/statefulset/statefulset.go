// Package statefulset tells a StatefulSet's pod, from inside its cluster,
// whether it is stopping because the StatefulSet was scaled in (its ordinal
// is at or past the replicas wanted) or for another reason (a rolling
// restart, an eviction), which Kubernetes does not say in the signal. It
// asks the Kubernetes API with the pod's ServiceAccount token.
package statefulset

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"strconv"
	"strings"
	"time"
)

// serviceAccount is where Kubernetes mounts a pod's ServiceAccount.
const serviceAccount = "/var/run/secrets/kubernetes.io/serviceaccount"

// Pod is a StatefulSet's pod and the API server it asks.
type Pod struct {
	// Name is the pod's name, <statefulset>-<ordinal>.
	Name, Namespace string
	// API is the API server's base URL; Token its bearer token.
	API, Token string
	Client     *http.Client
}

// InCluster is the pod named name as it runs in its cluster: the API
// server from KUBERNETES_SERVICE_HOST and _PORT, the namespace, token and
// CA from the mounted ServiceAccount.
func InCluster(name string) (*Pod, error) {
	host, port := os.Getenv("KUBERNETES_SERVICE_HOST"), os.Getenv("KUBERNETES_SERVICE_PORT")
	if host == "" || port == "" {
		return nil, errors.New("not in a Kubernetes pod: KUBERNETES_SERVICE_HOST and KUBERNETES_SERVICE_PORT are not set")
	}
	read := func(f string) ([]byte, error) {
		b, err := os.ReadFile(serviceAccount + "/" + f)
		if err != nil {
			return nil, fmt.Errorf("the pod's ServiceAccount (automountServiceAccountToken must be on): %w", err)
		}
		return b, nil
	}
	ns, err := read("namespace")
	if err != nil {
		return nil, err
	}
	token, err := read("token")
	if err != nil {
		return nil, err
	}
	ca, err := read("ca.crt")
	if err != nil {
		return nil, err
	}
	pool := x509.NewCertPool()
	if !pool.AppendCertsFromPEM(ca) {
		return nil, errors.New("the ServiceAccount's ca.crt holds no PEM certificate")
	}
	client := &http.Client{Timeout: 10 * time.Second, Transport: &http.Transport{TLSClientConfig: &tls.Config{RootCAs: pool, MinVersion: tls.VersionTLS12}}}
	return &Pod{Name: name, Namespace: strings.TrimSpace(string(ns)), API: "https://" + net.JoinHostPort(host, port),
		Token: strings.TrimSpace(string(token)), Client: client}, nil
}

// ScaledIn reports whether the pod's ordinal is at or past the replicas its
// StatefulSet wants now, and says why.
func (p *Pod) ScaledIn(ctx context.Context) (bool, string, error) {
	i := strings.LastIndexByte(p.Name, '-')
	ordinal, err := strconv.Atoi(p.Name[i+1:])
	if i <= 0 || err != nil || ordinal < 0 {
		return false, "", fmt.Errorf("pod name %q is not <statefulset>-<ordinal>", p.Name)
	}
	set := p.Name[:i]
	url := fmt.Sprintf("%s/apis/apps/v1/namespaces/%s/statefulsets/%s", p.API, p.Namespace, set)
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return false, "", err
	}
	req.Header.Set("Authorization", "Bearer "+p.Token)
	req.Header.Set("Accept", "application/json")
	resp, err := p.Client.Do(req)
	if err != nil {
		return false, "", fmt.Errorf("reading statefulset %s: %w", set, err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
	if resp.StatusCode == http.StatusNotFound {
		// Deleted: every pod of it goes away for good.
		return true, fmt.Sprintf("statefulset %s is gone: pod %s does not come back", set, p.Name), nil
	}
	if resp.StatusCode != http.StatusOK {
		return false, "", fmt.Errorf("reading statefulset %s: %s: %s (the ServiceAccount needs get on statefulsets: deploy/base/rbac.yaml)", set, resp.Status, strings.TrimSpace(string(body)))
	}
	var sts struct {
		Spec struct {
			Replicas *int `json:"replicas"`
		} `json:"spec"`
	}
	if err := json.Unmarshal(body, &sts); err != nil {
		return false, "", fmt.Errorf("reading statefulset %s: %w", set, err)
	}
	replicas := 1 // the API's default
	if sts.Spec.Replicas != nil {
		replicas = *sts.Spec.Replicas
	}
	if ordinal >= replicas {
		return true, fmt.Sprintf("pod %s has ordinal %d and statefulset %s wants %d replicas: scaled in", p.Name, ordinal, set, replicas), nil
	}
	return false, fmt.Sprintf("pod %s has ordinal %d and statefulset %s wants %d replicas: it comes back (a restart, not a scale-in)", p.Name, ordinal, set, replicas), nil
}
