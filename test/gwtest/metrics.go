package gwtest

import (
	"fmt"
	"io"
	"math"
	"net/http"
	"strconv"
	"strings"

	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
)

// Metrics scrapes /metrics and returns every sample by its series as the
// text format writes it: `name` or `name{label="value",...}`, labels in the
// exposed order; histograms and summaries as their _bucket (le last),
// quantile, _sum and _count series.
func (g *Gateway) Metrics() (map[string]float64, error) {
	resp, err := http.Get(g.Base + "/metrics")
	if err != nil {
		return nil, fmt.Errorf("scraping /metrics: %w", err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("scraping /metrics: HTTP %d", resp.StatusCode)
	}
	return ParseMetrics(resp.Body)
}

// Metric reads one series (labels exactly as exposed) from /metrics; false
// when the scrape fails or the series is absent.
func (g *Gateway) Metric(series string) (float64, bool) {
	m, err := g.Metrics()
	if err != nil {
		return 0, false
	}
	v, ok := m[series]
	return v, ok
}

// ParseMetrics reads the Prometheus text format into samples by series (see
// Gateway.Metrics).
func ParseMetrics(r io.Reader) (map[string]float64, error) {
	p := expfmt.NewTextParser(model.UTF8Validation)
	fams, err := p.TextToMetricFamilies(r)
	if err != nil {
		return nil, fmt.Errorf("parsing /metrics: %w", err)
	}
	out := map[string]float64{}
	for name, f := range fams {
		for _, m := range f.GetMetric() {
			ls := m.GetLabel()
			switch f.GetType() {
			case dto.MetricType_COUNTER:
				out[series(name, ls)] = m.GetCounter().GetValue()
			case dto.MetricType_GAUGE:
				out[series(name, ls)] = m.GetGauge().GetValue()
			case dto.MetricType_UNTYPED:
				out[series(name, ls)] = m.GetUntyped().GetValue()
			case dto.MetricType_SUMMARY:
				s := m.GetSummary()
				for _, q := range s.GetQuantile() {
					out[series(name, ls, "quantile", formatFloat(q.GetQuantile()))] = q.GetValue()
				}
				out[series(name+"_sum", ls)] = s.GetSampleSum()
				out[series(name+"_count", ls)] = float64(s.GetSampleCount())
			case dto.MetricType_HISTOGRAM:
				h := m.GetHistogram()
				for _, b := range h.GetBucket() {
					out[series(name+"_bucket", ls, "le", formatFloat(b.GetUpperBound()))] = float64(b.GetCumulativeCount())
				}
				out[series(name+"_sum", ls)] = h.GetSampleSum()
				out[series(name+"_count", ls)] = float64(h.GetSampleCount())
			}
		}
	}
	return out, nil
}

// series writes name{labels} as the text format does; extra is one more
// label pair (le, quantile), written last.
func series(name string, ls []*dto.LabelPair, extra ...string) string {
	if len(ls) == 0 && len(extra) == 0 {
		return name
	}
	pairs := make([]string, 0, len(ls)+1)
	for _, l := range ls {
		pairs = append(pairs, l.GetName()+`="`+escape(l.GetValue())+`"`)
	}
	if len(extra) == 2 {
		pairs = append(pairs, extra[0]+`="`+escape(extra[1])+`"`)
	}
	return name + "{" + strings.Join(pairs, ",") + "}"
}

var escaper = strings.NewReplacer(`\`, `\\`, "\n", `\n`, `"`, `\"`)

func escape(v string) string { return escaper.Replace(v) }

// formatFloat writes a bound as the text format does.
func formatFloat(f float64) string {
	switch {
	case math.IsInf(f, +1):
		return "+Inf"
	case math.IsInf(f, -1):
		return "-Inf"
	}
	return strconv.FormatFloat(f, 'g', -1, 64)
}
