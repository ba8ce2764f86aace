// Copyright 2026 The kquant Authors.
// SPDX-License-Identifier: Apache-2.0

package scale

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"maps"
	"net/http"
	"os"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync/atomic"
	"time"

	"k8s.io/client-go/rest"
)

// CountingTransport counts the requests that go through it.
type CountingTransport struct {
	next  http.RoundTripper
	count atomic.Int64
}

// Count wraps cfg's transport so that every request is counted, and returns
// the counter.
func Count(cfg *rest.Config) *CountingTransport {
	c := &CountingTransport{}
	cfg.Wrap(func(rt http.RoundTripper) http.RoundTripper {
		c.next = rt
		return c
	})
	return c
}

// RoundTrip counts and forwards.
func (c *CountingTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	c.count.Add(1)
	return c.next.RoundTrip(req)
}

// Requests is how many requests went through so far.
func (c *CountingTransport) Requests() int64 { return c.count.Load() }

// ProcStats is what /proc says about a process.
type ProcStats struct {
	// PeakRSSBytes is VmHWM: the resident set's high-water mark.
	PeakRSSBytes int64
	// CPU is user plus system time.
	CPU time.Duration
}

// ReadProc reads pid's peak RSS and CPU time from /proc.
func ReadProc(pid int) (ProcStats, error) {
	var s ProcStats
	status, err := os.Open(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return s, fmt.Errorf("reading process status: %w", err)
	}
	defer status.Close()
	sc := bufio.NewScanner(status)
	for sc.Scan() {
		if f := strings.Fields(sc.Text()); len(f) >= 2 && f[0] == "VmHWM:" {
			kib, err := strconv.ParseInt(f[1], 10, 64)
			if err != nil {
				return s, fmt.Errorf("parsing VmHWM %q: %w", f[1], err)
			}
			s.PeakRSSBytes = kib * 1024
		}
	}
	stat, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return s, fmt.Errorf("reading process stat: %w", err)
	}
	// Fields after the command name (which may hold spaces, inside parentheses):
	// utime and stime are fields 14 and 15 of the line, in clock ticks (USER_HZ,
	// 100 on Linux).
	rest := string(stat)
	if i := strings.LastIndexByte(rest, ')'); i >= 0 {
		rest = rest[i+1:]
	}
	f := strings.Fields(rest)
	if len(f) < 13 {
		return s, fmt.Errorf("short /proc/%d/stat", pid)
	}
	ut, err1 := strconv.ParseInt(f[11], 10, 64)
	st, err2 := strconv.ParseInt(f[12], 10, 64)
	if err1 != nil || err2 != nil {
		return s, fmt.Errorf("parsing cpu times in /proc/%d/stat", pid)
	}
	s.CPU = time.Duration(ut+st) * 10 * time.Millisecond
	return s, nil
}

// RequestTotals are counters of the API server summed by "verb resource".
type RequestTotals map[string]float64

// APIStats is what the API server counts about the requests it served.
type APIStats struct {
	// Requests is apiserver_request_total.
	Requests RequestTotals
	// Refused is the part of Requests answered with an error ("verb
	// resource code"): conflicts of conditional writes, above all.
	Refused RequestTotals
	// Seconds and Observed are apiserver_request_duration_seconds' sum and count.
	Seconds, Observed RequestTotals
}

// ScrapeRequests reads the API server's own request counters from /metrics.
func ScrapeRequests(ctx context.Context, c rest.Interface) (APIStats, error) {
	body, err := c.Get().AbsPath("/metrics").Stream(ctx)
	if err != nil {
		return APIStats{}, fmt.Errorf("scraping API server metrics: %w", err)
	}
	defer body.Close()
	return parseAPIStats(body)
}

// Sub returns a - b.
func (a APIStats) Sub(b APIStats) APIStats {
	return APIStats{Requests: a.Requests.Sub(b.Requests), Refused: a.Refused.Sub(b.Refused), Seconds: a.Seconds.Sub(b.Seconds), Observed: a.Observed.Sub(b.Observed)}
}

// MeanLatency returns the mean latency of the n most frequent requests as
// "verb resource=latency".
func (a APIStats) MeanLatency(n int) []string {
	var out []string
	for _, kv := range a.Observed.Top(n) {
		key := kv[:strings.LastIndexByte(kv, '=')]
		mean := time.Duration(a.Seconds[key] / a.Observed[key] * float64(time.Second))
		out = append(out, fmt.Sprintf("%s=%s", key, mean.Round(100*time.Microsecond)))
	}
	return out
}

func parseAPIStats(r io.Reader) (APIStats, error) {
	out := APIStats{Requests: RequestTotals{}, Refused: RequestTotals{}, Seconds: RequestTotals{}, Observed: RequestTotals{}}
	metrics := map[string]RequestTotals{
		"apiserver_request_total{":                  out.Requests,
		"apiserver_request_duration_seconds_sum{":   out.Seconds,
		"apiserver_request_duration_seconds_count{": out.Observed,
	}
	err := eachSample(r, slices.Collect(maps.Keys(metrics)), func(prefix, labels string, v float64) {
		key := label(labels, "verb") + " " + label(labels, "resource")
		if sub := label(labels, "subresource"); sub != "" {
			key += "/" + sub
		}
		metrics[prefix][key] += v
		if code := label(labels, "code"); prefix == "apiserver_request_total{" && code != "" && code[0] != '2' {
			out.Refused[key+" "+code] += v
		}
	})
	if err != nil {
		return out, fmt.Errorf("reading API server metrics: %w", err)
	}
	return out, nil
}

// eachSample calls fn with the labels and value of every sample in a
// Prometheus text exposition whose line starts with one of prefixes: a
// metric name and its opening brace, or the name and a space for a metric
// without labels (whose labels are then "").
func eachSample(r io.Reader, prefixes []string, fn func(prefix, labels string, v float64)) error {
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		line := sc.Text()
		for _, prefix := range prefixes {
			rest, ok := strings.CutPrefix(line, prefix)
			if !ok {
				continue
			}
			labels, value := "", rest
			if end := strings.LastIndexByte(rest, '}'); end >= 0 {
				labels, value = rest[:end], rest[end+1:]
			}
			v, err := strconv.ParseFloat(strings.TrimSpace(value), 64)
			if err != nil {
				return fmt.Errorf("parsing %q: %w", line, err)
			}
			fn(prefix, labels, v)
		}
	}
	return sc.Err()
}

// get GETs url and returns the body of a 200 answer.
func get(ctx context.Context, url string) (io.ReadCloser, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return nil, err
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return nil, err
	}
	if resp.StatusCode != http.StatusOK {
		resp.Body.Close()
		return nil, fmt.Errorf("GET %s: %s", url, resp.Status)
	}
	return resp.Body, nil
}

func label(labels, name string) string {
	i := strings.Index(labels, name+`="`)
	if i < 0 || (i > 0 && labels[i-1] != ',') {
		return ""
	}
	rest := labels[i+len(name)+2:]
	return rest[:strings.IndexByte(rest, '"')]
}

// Sub returns a - b.
func (a RequestTotals) Sub(b RequestTotals) RequestTotals {
	out := RequestTotals{}
	for k, v := range a {
		if d := v - b[k]; d > 0 {
			out[k] = d
		}
	}
	return out
}

// writeVerbs are apiserver_request_total's verbs that change an object.
var writeVerbs = map[string]bool{"POST": true, "PUT": true, "PATCH": true, "APPLY": true, "DELETE": true, "DELETECOLLECTION": true}

// Writes sums the counters of writes ("verb resource" keys with a write
// verb), leaving out the resources named in except (e.g. "leases": an
// agent's Lease renewals cost the same whatever the work).
func (a RequestTotals) Writes(except ...string) float64 {
	t := 0.0
	for k, v := range a {
		verb, resource, _ := strings.Cut(k, " ")
		if writeVerbs[verb] && !slices.Contains(except, resource) {
			t += v
		}
	}
	return t
}

// WritesPer returns the write counters ("verb resource=count"), largest
// first, each divided by n (the runs of a scenario).
func (a RequestTotals) WritesPer(n float64) []string {
	keys := make([]string, 0, len(a))
	for k := range a {
		if verb, _, _ := strings.Cut(k, " "); writeVerbs[verb] {
			keys = append(keys, k)
		}
	}
	sort.Slice(keys, func(i, j int) bool { return a[keys[i]] > a[keys[j]] })
	out := make([]string, len(keys))
	for i, k := range keys {
		out[i] = fmt.Sprintf("%s=%.3f", k, a[k]/n)
	}
	return out
}

// Total sums every counter.
func (a RequestTotals) Total() float64 {
	t := 0.0
	for _, v := range a {
		t += v
	}
	return t
}

// Top returns the n largest counters as "verb resource=count".
func (a RequestTotals) Top(n int) []string {
	keys := make([]string, 0, len(a))
	for k := range a {
		keys = append(keys, k)
	}
	sort.Slice(keys, func(i, j int) bool { return a[keys[i]] > a[keys[j]] })
	if len(keys) > n {
		keys = keys[:n]
	}
	out := make([]string, len(keys))
	for i, k := range keys {
		out[i] = fmt.Sprintf("%s=%.0f", k, a[k])
	}
	return out
}

// Percentile returns the p-th percentile (0..100) of ds by nearest rank.
func Percentile(ds []time.Duration, p float64) time.Duration {
	if len(ds) == 0 {
		return 0
	}
	s := append([]time.Duration(nil), ds...)
	sort.Slice(s, func(i, j int) bool { return s[i] < s[j] })
	i := int(p/100*float64(len(s))+0.5) - 1
	return s[min(max(i, 0), len(s)-1)]
}
