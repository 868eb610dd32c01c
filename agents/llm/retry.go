package llm

import (
	"context"
	"math/rand/v2"
	"net/http"
	"strconv"
	"strings"
	"time"
)

const (
	backoffBase    = 200 * time.Millisecond
	backoffCap     = 10 * time.Second
	retryAfterCap  = 30 * time.Second
	maxBackoffStep = 16 // 2^16 * base is far past the cap; avoids overflow
)

// backoffDelay is the wait before retry number attempt+1: the provider's
// Retry-After when it gave one (capped at 30 s), otherwise exponential
// backoff from 200 ms capped at 10 s with "equal jitter" (half fixed, half
// random) so that parallel agents do not retry in lockstep.
func backoffDelay(attempt int, retryAfter time.Duration) time.Duration {
	if retryAfter > 0 {
		return min(retryAfter, retryAfterCap)
	}
	d := min(backoffBase<<min(attempt, maxBackoffStep), backoffCap)
	half := d / 2
	return half + rand.N(half+1)
}

// retryAfter reads retry-after-ms (OpenAI, milliseconds) or Retry-After
// (seconds or an HTTP date) relative to now; 0 when absent or unparsable.
func retryAfter(h http.Header, now time.Time) time.Duration {
	if v := strings.TrimSpace(h.Get("Retry-After-Ms")); v != "" {
		if ms, err := strconv.ParseFloat(v, 64); err == nil && ms > 0 {
			return capped(ms / 1000)
		}
	}
	v := strings.TrimSpace(h.Get("Retry-After"))
	if v == "" {
		return 0
	}
	if secs, err := strconv.ParseFloat(v, 64); err == nil {
		return capped(secs)
	}
	if at, err := http.ParseTime(v); err == nil {
		if d := at.Sub(now); d > 0 {
			return min(d, retryAfterCap)
		}
	}
	return 0
}

// capped converts seconds to a duration in [0, retryAfterCap] without
// overflowing on absurd values (NaN and negatives give 0).
func capped(secs float64) time.Duration {
	switch {
	case !(secs > 0):
		return 0
	case secs >= retryAfterCap.Seconds():
		return retryAfterCap
	}
	return time.Duration(secs * float64(time.Second))
}

// sleepCtx waits d or until ctx ends, whichever is first.
func sleepCtx(ctx context.Context, d time.Duration) error {
	if d <= 0 {
		return ctx.Err()
	}
	timer := time.NewTimer(d)
	defer timer.Stop()
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-timer.C:
		return nil
	}
}
