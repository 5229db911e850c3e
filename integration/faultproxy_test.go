package integration

import (
	"errors"
	"io"
	"net"
	"net/url"
	"strings"
	"sync"
	"testing"
	"time"
)

// faultProxy forwards TCP connections to a service until the test takes it
// down: then every connection it carries is cut and new ones are refused,
// as when the service stops, but for this test's clients only, so that the
// tests beside it go on.
type faultProxy struct {
	target, addr string
	mu           sync.Mutex
	ln           net.Listener
	conns        map[net.Conn]bool
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
	go func() { io.Copy(up, c); up.Close() }()
	io.Copy(c, up)
	c.Close()
	p.mu.Lock()
	delete(p.conns, c)
	delete(p.conns, up)
	p.mu.Unlock()
}

// down cuts every connection and refuses new ones.
func (p *faultProxy) down() {
	p.mu.Lock()
	defer p.mu.Unlock()
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
