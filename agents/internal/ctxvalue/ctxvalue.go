// Package ctxvalue carries one typed value of a package's own in a
// context: each package of agents keeps what a request's context says for
// it in one struct (as CoreDNS's request.Request), copied and narrowed as
// the request goes down, never written after it is made.
package ctxvalue

import "context"

// key is the context key of the values of type T: one per type, so a
// package's unexported struct is its own key.
type key[T any] struct{}

// Of is ctx's value of type T, or T's zero value.
func Of[T any](ctx context.Context) T {
	if v, _ := ctx.Value(key[T]{}).(*T); v != nil {
		return *v
	}
	var zero T
	return zero
}

// With is ctx whose value of type T is ctx's changed by edit; ctx's own is
// left as it is.
func With[T any](ctx context.Context, edit func(*T)) context.Context {
	v := Of[T](ctx)
	edit(&v)
	return context.WithValue(ctx, key[T]{}, &v)
}
