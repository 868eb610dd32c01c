package metrics

import (
	"strconv"
	"sync"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"
)

func TestCodeCounters(t *testing.T) {
	m := New("test")
	c := m.HTTPRequestsFor("agent")
	var wg sync.WaitGroup
	for range 64 {
		wg.Go(func() {
			for _, code := range []int{200, 404, 200, 500} {
				c.Code(code).Inc()
			}
		})
	}
	wg.Wait()
	for _, tc := range []struct {
		code string
		want float64
	}{{"200", 128}, {"404", 64}, {"500", 64}} {
		t.Run(tc.code, func(t *testing.T) {
			if got := counterValue(t, m.HTTPRequests.WithLabelValues("agent", tc.code)); got != tc.want {
				t.Fatalf("pallasgw_http_requests_total{handler=\"agent\",code=%q} = %v, want %v", tc.code, got, tc.want)
			}
		})
	}
	ch := make(chan prometheus.Metric, 16)
	m.HTTPRequests.Collect(ch)
	if n := len(ch); n != 3 {
		t.Fatalf("%d series, want 3", n)
	}
}

func counterValue(t *testing.T, c prometheus.Counter) float64 {
	t.Helper()
	var m dto.Metric
	if err := c.Write(&m); err != nil {
		t.Fatal(err)
	}
	return m.GetCounter().GetValue()
}

// BenchmarkHTTPRequests compares the per-request lookup ("vec") with the
// cache ("cached"), from parallel goroutines as requests come.
func BenchmarkHTTPRequests(b *testing.B) {
	codes := []int{200, 202, 404, 500}
	b.Run("vec", func(b *testing.B) {
		m := New("test")
		b.RunParallel(func(pb *testing.PB) {
			i := 0
			for pb.Next() {
				m.HTTPRequests.WithLabelValues("agent", strconv.Itoa(codes[i%len(codes)])).Inc()
				i++
			}
		})
	})
	b.Run("cached", func(b *testing.B) {
		c := New("test").HTTPRequestsFor("agent")
		b.RunParallel(func(pb *testing.PB) {
			i := 0
			for pb.Next() {
				c.Code(codes[i%len(codes)]).Inc()
				i++
			}
		})
	})
}
