package config

import (
	"strings"
	"testing"
)

func TestCheckStoreURL(t *testing.T) {
	for _, c := range []struct{ url, err string }{
		{"memory", ""},
		{"redis://127.0.0.1:6379/0", ""},
		{"redis://127.0.0.1", ""},
		{"redis://127.0.0.1:6379/", ""},
		{"rediss://user:pa%40ss@redis.example.com:6380/3", ""},
		{"redis://[::1]:6379/1", ""},
		{"redis://127.0.0.1:16379/abc", "the path must be a database number"},
		{"redis://127.0.0.1:6379/0/1", "the path must be a database number"},
		{"redis://127.0.0.1:6379/-1", "the path must be a database number"},
		{"redis://127.0.0.1:6379/0?dial_timeout=1s", "takes no query parameters"},
		{"redis://127.0.0.1:6379/0#x", "takes no #fragment"},
		{"redis://:6379/0", "needs a host"},
		{"redis://127.0.0.1:notaport/0", "not a valid URL"},
		{"redis://127.0.0.1:99999/0", "port must be a number from 1 to 65535"},
		{"unix:///run/redis.sock", "must be memory or a redis://"},
		{"Memory", "must be memory or a redis://"},
		{"127.0.0.1:6379", "must be memory or a redis://"},
		{"redis://user:p%zz@h/0", "not a valid URL"},
	} {
		t.Run(c.url, func(t *testing.T) {
			err := CheckStoreURL(c.url)
			switch {
			case c.err == "" && err != nil:
				t.Fatalf("refused: %v", err)
			case c.err != "" && (err == nil || !strings.Contains(err.Error(), c.err)):
				t.Fatalf("err = %v, want %q", err, c.err)
			case err != nil && strings.Contains(err.Error(), "pa%40ss"):
				t.Fatalf("the error quotes the URL: %v", err)
			}
		})
	}
}
