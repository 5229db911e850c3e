package integration

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/url"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/offloader/offloader/stores"
	"github.com/offloader/offloader/stores/azblob"
)

// faultProxy forwards TCP connections to a service until the test takes it
// down: then every connection it carries is cut and new ones are refused,
// as when the service stops, but for this test's clients only, so that the
// tests beside it go on. It can also hold what its clients send after a
// number of bytes (holdAfter): their calls hang mid-request, at a point the
// bytes decide rather than the machine's speed, until the test lets them go.
type faultProxy struct {
	target, addr string
	mu           sync.Mutex
	ln           net.Listener
	conns        map[net.Conn]bool
	// sent counts the bytes forwarded to the service; once it reaches
	// holdAt (0: never) writes to the service wait, held of them now.
	sent, holdAt int64
	held         int
	changed      *sync.Cond // on mu: the hold was lifted, or a write was held
}

// startFaultProxy forwards a port of its own to target (host:port) until
// the test ends.
func startFaultProxy(t testing.TB, target string) *faultProxy {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	p := &faultProxy{target: target, addr: ln.Addr().String(), conns: map[net.Conn]bool{}}
	p.changed = sync.NewCond(&p.mu)
	p.serve(ln)
	t.Cleanup(p.down)
	return p
}

func (p *faultProxy) serve(ln net.Listener) {
	p.mu.Lock()
	p.ln = ln
	p.mu.Unlock()
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			go p.forward(c)
		}
	}()
}

func (p *faultProxy) forward(c net.Conn) {
	up, err := net.DialTimeout("tcp", p.target, 5*time.Second)
	if err != nil {
		c.Close()
		return
	}
	p.mu.Lock()
	if p.ln == nil { // taken down meanwhile
		p.mu.Unlock()
		c.Close()
		up.Close()
		return
	}
	p.conns[c], p.conns[up] = true, true
	p.mu.Unlock()
	go func() { p.copyUp(up, c); up.Close() }()
	io.Copy(c, up)
	c.Close()
	p.mu.Lock()
	delete(p.conns, c)
	delete(p.conns, up)
	p.mu.Unlock()
}

// copyUp copies what a client sends to the service, holding each write
// while the proxy holds.
func (p *faultProxy) copyUp(up, c net.Conn) {
	buf := make([]byte, 32<<10)
	for {
		n, err := c.Read(buf)
		if n > 0 {
			p.mu.Lock()
			for p.holdAt > 0 && p.sent >= p.holdAt {
				p.held++
				p.changed.Broadcast()
				p.changed.Wait()
				p.held--
			}
			p.sent += int64(n)
			p.mu.Unlock()
			if _, werr := up.Write(buf[:n]); werr != nil {
				return
			}
		}
		if err != nil {
			return
		}
	}
}

// holdAfter holds every write to the service once n more bytes have gone
// to it, until release (or down).
func (p *faultProxy) holdAfter(n int64) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.holdAt = p.sent + max(n, 1)
}

// waitHeld waits until a client's write is held: a call is then hanging
// mid-request and stays so until release.
func (p *faultProxy) waitHeld(t testing.TB, timeout time.Duration) {
	t.Helper()
	deadline := within(timeout)
	stop := time.AfterFunc(time.Until(deadline), func() {
		p.mu.Lock()
		p.changed.Broadcast()
		p.mu.Unlock()
	})
	defer stop.Stop()
	p.mu.Lock()
	defer p.mu.Unlock()
	for p.held == 0 {
		if time.Now().After(deadline) {
			t.Fatalf("no write to %s was held in %s: %d bytes sent, holding after %d", p.target, timeout, p.sent, p.holdAt)
		}
		p.changed.Wait()
	}
}

// release lets held writes go on and holds no more.
func (p *faultProxy) release() {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.holdAt = 0
	p.changed.Broadcast()
}

// down cuts every connection and refuses new ones; held writes are let go
// (to the cut connections).
func (p *faultProxy) down() {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.holdAt = 0
	p.changed.Broadcast()
	if p.ln != nil {
		p.ln.Close()
		p.ln = nil
	}
	for c := range p.conns {
		c.Close()
	}
	clear(p.conns)
}

// up accepts connections again, on the same address.
func (p *faultProxy) up(t testing.TB) {
	t.Helper()
	var ln net.Listener
	var err error
	for deadline := within(10 * time.Second); ; time.Sleep(100 * time.Millisecond) {
		if ln, err = net.Listen("tcp", p.addr); err == nil {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("listening again on %s: %v", p.addr, err)
		}
	}
	p.serve(ln)
}

// azureThroughProxy is Azurite's connection string with its endpoint behind
// a fault proxy of the test's own.
func azureThroughProxy(t testing.TB) (connStr string, proxy *faultProxy) {
	t.Helper()
	i := strings.Index(azureConnStr, "BlobEndpoint=")
	if i < 0 {
		t.Fatal(errors.New("the Azurite connection string has no BlobEndpoint"))
	}
	endpoint := strings.TrimSuffix(strings.SplitN(azureConnStr[i+len("BlobEndpoint="):], ";", 2)[0], "/")
	u, err := url.Parse(endpoint)
	if err != nil {
		t.Fatal(err)
	}
	proxy = startFaultProxy(t, u.Host)
	return strings.Replace(azureConnStr, u.Host, proxy.addr, 1), proxy
}

// killMidUpload starts an instance (start) whose store calls go through
// proxy, holds them once it has sent after more bytes, and kills it with
// SIGKILL: with a call held mid-request, so with records consumed and not
// committed, however fast the machine. An instance held this way has sent
// at most after bytes (and a read's worth): rounds whose hold points add up
// to less than the work's payload bytes are each held.
func killMidUpload(t *testing.T, proxy *faultProxy, after int64, start func() *daemon) {
	t.Helper()
	proxy.holdAfter(after)
	d := start()
	proxy.waitHeld(t, 90*time.Second)
	d.kill9()
	proxy.release()
}

// endpointThroughProxy is an http(s) endpoint with its host behind a fault
// proxy of the test's own.
func endpointThroughProxy(t testing.TB, endpoint string) (string, *faultProxy) {
	t.Helper()
	u, err := url.Parse(endpoint)
	if err != nil {
		t.Fatal(err)
	}
	proxy := startFaultProxy(t, u.Host)
	u.Host = proxy.addr
	return u.String(), proxy
}

// heldAzurePipeline creates a raw topic (records up to 8 MiB) and a slim
// topic of partitions each, and a pipeline file named name between them that
// offloads to an Azurite container through a fault proxy of the test's own;
// it returns the topics, the file, the proxy and the container as a store
// (reached directly) to resolve the slim records with.
func heldAzurePipeline(t *testing.T, name string, partitions int) (raw, slim, cfg string, proxy *faultProxy, store stores.Store) {
	t.Helper()
	connStr, proxy := azureThroughProxy(t)
	raw, slim = uniqueName(t, "raw"), uniqueName(t, "slim")
	createTopic(t, raw, partitions, map[string]string{"max.message.bytes": "8388608"})
	createTopic(t, slim, partitions, nil)
	container := uniqueName(t, "c")
	storeYAML := fmt.Sprintf("      payloads: {type: azblob, container: %s, create_container: true, connection_string: %q}", container, connStr)
	cfg = pipelineFile(t, name, raw, slim, uniqueName(t, "g"), storeYAML, "")
	return raw, slim, cfg, proxy, openAzure(t, container)
}

// openAzure opens an Azurite container, reached directly, as a store,
// creating it if it is missing.
func openAzure(t testing.TB, container string) stores.Store {
	t.Helper()
	cfg := azblob.DefaultConfig()
	cfg.ConnectionString, cfg.Container, cfg.CreateContainer = azureConnStr, container, true
	store, err := azblob.Open(context.Background(), "payloads", cfg)
	if err != nil {
		t.Fatal(err)
	}
	return store
}
