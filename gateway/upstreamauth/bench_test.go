package upstreamauth

import (
	"context"
	"net/http"
	"testing"
)

// BenchmarkAuthorization is what a connected caller's call adds on the
// hot path: the cached token of its principal (no store read, no lock held
// across anything but a map lookup). Run in parallel, as calls are.
func BenchmarkAuthorization(b *testing.B) {
	r := newRig(b)
	ctx := context.Background()
	_, err := r.m.Authorization(ctx, "gh", "token:alice")
	if code, _ := get(b, r.browser(b, "alice"), connectURL(b, err), aliceToken); code != http.StatusOK {
		b.Fatal("connect failed")
	}
	b.ReportAllocs()
	b.ResetTimer()
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			if _, err := r.m.Authorization(ctx, "gh", "token:alice"); err != nil {
				b.Error(err)
				return
			}
		}
	})
}
