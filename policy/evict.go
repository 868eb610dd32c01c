package policy

// makeRoom drops entries of the cache m until one more fits below max:
// first those expired reports, then arbitrary ones. The JWT verifier's and
// the token exchanger's caches are bounded with it.
func makeRoom[K comparable, V any](m map[K]V, max int, expired func(V) bool) {
	if len(m) < max {
		return
	}
	for k, v := range m {
		if expired(v) {
			delete(m, k)
		}
	}
	for k := range m {
		if len(m) < max {
			break
		}
		delete(m, k)
	}
}
