package policy

import (
	"bytes"
	"net/http"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"
	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"
)

// counterValue reads one series of a CounterVec (what prometheus/testutil's
// ToFloat64 does; testutil itself needs a module this repo does not carry).
func counterValue(t *testing.T, cv *prometheus.CounterVec, labels ...string) float64 {
	t.Helper()
	var m dto.Metric
	if err := cv.WithLabelValues(labels...).Write(&m); err != nil {
		t.Fatalf("reading counter %v: %v", labels, err)
	}
	return m.GetCounter().GetValue()
}

// bufferLogger returns a JSON logger writing every level into buf, so a
// test can grep the exact bytes an operator would see.
func bufferLogger(buf *bytes.Buffer) *zap.Logger {
	enc := zapcore.NewJSONEncoder(zap.NewProductionEncoderConfig())
	return zap.New(zapcore.NewCore(enc, zapcore.AddSync(buf), zapcore.DebugLevel))
}

// hdr builds an http.Header from name, value pairs with Add (canonical keys).
func hdr(kv ...string) http.Header {
	h := http.Header{}
	for i := 0; i+1 < len(kv); i += 2 {
		h.Add(kv[i], kv[i+1])
	}
	return h
}
