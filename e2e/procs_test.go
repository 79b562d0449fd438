package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"testing"
	"time"

	"github.com/ironic-conductor-exporter/ironic-conductor-exporter/internal/testenv"
)

// waitFor polls cond every 100ms until it returns true, the process dies or
// the timeout passes. It returns how long it took.
func waitFor(t *testing.T, what string, timeout time.Duration, cond func() (bool, string), procs ...*testenv.Process) time.Duration {
	t.Helper()
	start := time.Now()
	last := ""
	for {
		ok, detail := cond()
		if ok {
			return time.Since(start)
		}
		if detail != "" {
			last = detail
		}
		for _, p := range procs {
			select {
			case <-p.Done():
				t.Fatalf("%s exited (%v) while waiting for %s:\n%s", p.Name(), p.Err(), what, p.Tail(40))
			default:
			}
		}
		if time.Since(start) > timeout {
			t.Fatalf("timed out after %v waiting for %s; last: %s", timeout, what, last)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

var client = &http.Client{Timeout: 5 * time.Second}

// httpOK reports whether GET url answers 200.
func httpOK(u string) (bool, string) {
	resp, err := client.Get(u)
	if err != nil {
		return false, err.Error()
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode == http.StatusOK, fmt.Sprintf("%d %s", resp.StatusCode, b)
}

// getJSON decodes the JSON answer of GET url into v.
func getJSON(ctx context.Context, u string, v any) error {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u, nil)
	if err != nil {
		return err
	}
	resp, err := client.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		return err
	}
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("GET %s: %d %s", u, resp.StatusCode, b)
	}
	return json.Unmarshal(b, v)
}

// prom is the HTTP API of a running Prometheus.
type prom struct{ base string }

// promResult is an instant query's result, whatever its type.
type promResult struct {
	ResultType string          `json:"resultType"`
	Result     json.RawMessage `json:"result"`
	Vector     []promSample    `json:"-"`
}

type promSample struct {
	Metric map[string]string `json:"metric"`
	Value  [2]any            `json:"value"`
}

// query runs an instant query now.
func (p prom) query(expr string) (*promResult, error) {
	var out struct {
		Status string     `json:"status"`
		Error  string     `json:"error"`
		Data   promResult `json:"data"`
	}
	if err := getJSON(context.Background(), p.base+"/api/v1/query?query="+url.QueryEscape(expr), &out); err != nil {
		return nil, err
	}
	if out.Status != "success" {
		return nil, fmt.Errorf("query %q: %s", expr, out.Error)
	}
	if out.Data.ResultType == "vector" {
		if err := json.Unmarshal(out.Data.Result, &out.Data.Vector); err != nil {
			return nil, err
		}
	}
	return &out.Data, nil
}

// empty reports whether a result has no sample (scalars and strings are
// never empty).
func (r *promResult) empty() bool {
	switch r.ResultType {
	case "vector", "matrix":
		var a []json.RawMessage
		return json.Unmarshal(r.Result, &a) != nil || len(a) == 0
	}
	return false
}

// promRule is a rule of /api/v1/rules.
type promRule struct {
	Name           string      `json:"name"`
	Type           string      `json:"type"`
	Health         string      `json:"health"`
	LastError      string      `json:"lastError"`
	State          string      `json:"state"`
	LastEvaluation time.Time   `json:"lastEvaluation"`
	Alerts         []promAlert `json:"alerts"`
}

type promAlert struct {
	Labels      map[string]string `json:"labels"`
	Annotations map[string]string `json:"annotations"`
	State       string            `json:"state"`
}

func (p prom) rules() ([]promRule, error) {
	var out struct {
		Data struct {
			Groups []struct {
				Rules []promRule `json:"rules"`
			} `json:"groups"`
		} `json:"data"`
	}
	if err := getJSON(context.Background(), p.base+"/api/v1/rules", &out); err != nil {
		return nil, err
	}
	var rules []promRule
	for _, g := range out.Data.Groups {
		rules = append(rules, g.Rules...)
	}
	return rules, nil
}

func (p prom) alerts() ([]promAlert, error) {
	var out struct {
		Data struct {
			Alerts []promAlert `json:"alerts"`
		} `json:"data"`
	}
	err := getJSON(context.Background(), p.base+"/api/v1/alerts", &out)
	return out.Data.Alerts, err
}
