package soak

import (
	"bufio"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"
)

// sample is one reading of the gateway's resource gauges.
type sample struct {
	at         time.Duration // since the load started
	goroutines float64
	heapInuse  float64 // bytes
	openFDs    float64
	calls      int64 // answered by then, all load runs
	reloads    int64
	note       string
}

// readSample scrapes /metrics for the three gauges.
func readSample(base string) (sample, error) {
	var s sample
	resp, err := http.Get(base + "/metrics")
	if err != nil {
		return s, err
	}
	defer resp.Body.Close()
	want := map[string]*float64{"go_goroutines": &s.goroutines, "go_memstats_heap_inuse_bytes": &s.heapInuse, "process_open_fds": &s.openFDs}
	found := 0
	sc := bufio.NewScanner(resp.Body)
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		name, value, ok := strings.Cut(sc.Text(), " ")
		if dst, hit := want[name]; ok && hit {
			if *dst, err = strconv.ParseFloat(value, 64); err != nil {
				return s, fmt.Errorf("%s: %w", name, err)
			}
			found++
		}
	}
	if found != len(want) {
		return s, fmt.Errorf("/metrics lacks some of %v", want)
	}
	return s, sc.Err()
}

// table renders samples for the test log.
func table(rows []sample) string {
	var b strings.Builder
	fmt.Fprintf(&b, "%8s %11s %15s %9s %8s %8s  %s\n", "t", "goroutines", "heap_inuse_MiB", "open_fds", "calls", "reloads", "")
	for _, r := range rows {
		fmt.Fprintf(&b, "%8s %11.0f %15.1f %9.0f %8d %8d  %s\n", r.at.Round(time.Second), r.goroutines, r.heapInuse/(1<<20), r.openFDs, r.calls, r.reloads, r.note)
	}
	return b.String()
}

// hangWatch is an http.RoundTripper that counts calls still unanswered
// after limit (a hung call: the load engine itself only stops them when the
// run ends) and calls in total.
type hangWatch struct {
	base  http.RoundTripper
	limit time.Duration

	hung, total atomic.Int64
}

func (h *hangWatch) RoundTrip(req *http.Request) (*http.Response, error) {
	h.total.Add(1)
	timer := time.AfterFunc(h.limit, func() { h.hung.Add(1) })
	resp, err := h.base.RoundTrip(req)
	if err != nil {
		timer.Stop()
		return nil, err
	}
	resp.Body = &watchedBody{ReadCloser: resp.Body, timer: timer}
	return resp, nil
}

// watchedBody stops the hang timer when the answer has been read or closed.
type watchedBody struct {
	io.ReadCloser
	timer *time.Timer
	once  sync.Once
}

func (b *watchedBody) Read(p []byte) (int, error) {
	n, err := b.ReadCloser.Read(p)
	if err != nil {
		b.once.Do(func() { b.timer.Stop() })
	}
	return n, err
}

func (b *watchedBody) Close() error {
	b.once.Do(func() { b.timer.Stop() })
	return b.ReadCloser.Close()
}
