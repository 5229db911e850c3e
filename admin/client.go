package admin

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"strings"
	"syscall"
)

// Client calls an instance's admin API (offloader status, pause, resume).
type Client struct {
	// URL is the listener's base URL, such as http://127.0.0.1:9464.
	URL   string
	Token string
	HTTP  *http.Client
}

// BaseURL is the URL that reaches a listener at addr (observability.listen):
// an unspecified host (0.0.0.0, ::, none) is reached on the loopback.
func BaseURL(addr string) string {
	if strings.Contains(addr, "://") {
		return strings.TrimRight(addr, "/")
	}
	host, port, err := net.SplitHostPort(addr)
	if err != nil {
		return "http://" + addr
	}
	switch host {
	case "", "0.0.0.0", "::":
		host = "127.0.0.1"
	}
	return "http://" + net.JoinHostPort(host, port)
}

// Status is GET /status.
func (c *Client) Status(ctx context.Context) (Status, error) {
	st, _, err := c.call(ctx, http.MethodGet, "/status", nil)
	return st, err
}

// Pause is POST /pause with reason; applied is false when the instance was
// still committing its batch in hand as it answered (202).
func (c *Client) Pause(ctx context.Context, reason string) (st Status, applied bool, err error) {
	q := url.Values{}
	if reason != "" {
		q.Set("reason", reason)
	}
	st, code, err := c.call(ctx, http.MethodPost, "/pause", q)
	return st, code == http.StatusOK, err
}

// Resume is POST /resume.
func (c *Client) Resume(ctx context.Context) (st Status, applied bool, err error) {
	st, code, err := c.call(ctx, http.MethodPost, "/resume", nil)
	return st, code == http.StatusOK, err
}

// Leave is POST /leave: at its stop the instance removes its static
// membership from the group.
func (c *Client) Leave(ctx context.Context) (Status, error) {
	st, _, err := c.call(ctx, http.MethodPost, "/leave", nil)
	return st, err
}

// Healthy is GET /healthz: nil when it answers 200.
func (c *Client) Healthy(ctx context.Context) error {
	resp, err := c.do(ctx, http.MethodGet, "/healthz", nil)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(io.LimitReader(resp.Body, 4<<10))
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("%s/healthz answered %s: %s", c.URL, resp.Status, strings.TrimSpace(string(body)))
	}
	return nil
}

func (c *Client) call(ctx context.Context, method, path string, q url.Values) (Status, int, error) {
	resp, err := c.do(ctx, method, path, q)
	if err != nil {
		return Status{}, 0, err
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(io.LimitReader(resp.Body, 16<<20))
	if err != nil {
		return Status{}, 0, fmt.Errorf("%s %s%s: reading the answer: %w", method, c.URL, path, err)
	}
	if resp.StatusCode != http.StatusOK && resp.StatusCode != http.StatusAccepted {
		var ae apiError
		msg := strings.TrimSpace(string(body))
		if json.Unmarshal(body, &ae) == nil && ae.Message != "" {
			msg = ae.Message
		}
		if resp.StatusCode == http.StatusUnauthorized {
			msg += " (pass --token, or set OFFLOADER_OBSERVABILITY__ADMIN_TOKEN, to the pipeline's observability.admin_token)"
		}
		return Status{}, resp.StatusCode, fmt.Errorf("%s %s%s answered %s: %s", method, c.URL, path, resp.Status, msg)
	}
	var st Status
	if err := json.Unmarshal(body, &st); err != nil {
		return Status{}, resp.StatusCode, fmt.Errorf("%s %s%s: the answer is not an offloader status: %w", method, c.URL, path, err)
	}
	return st, resp.StatusCode, nil
}

func (c *Client) do(ctx context.Context, method, path string, q url.Values) (*http.Response, error) {
	u := c.URL + path
	if len(q) > 0 {
		u += "?" + q.Encode()
	}
	req, err := http.NewRequestWithContext(ctx, method, u, nil)
	if err != nil {
		return nil, fmt.Errorf("the admin URL %q: %w", c.URL, err)
	}
	if c.Token != "" {
		req.Header.Set("Authorization", "Bearer "+c.Token)
	}
	hc := c.HTTP
	if hc == nil {
		hc = http.DefaultClient
	}
	resp, err := hc.Do(req)
	if errors.Is(err, syscall.ECONNREFUSED) {
		return nil, fmt.Errorf("nothing answers at %s: is the instance running, and is this its observability.listen address? (--url or -F FILE)", c.URL)
	}
	if err != nil {
		return nil, fmt.Errorf("%s %s: %w", method, u, err)
	}
	return resp, nil
}
