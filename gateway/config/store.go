package config

import (
	"errors"
	"net/url"
	"strconv"
	"strings"
)

// StoreMemory is the store URL of the in-process store.
const StoreMemory = "memory"

// CheckStoreURL checks a store URL (quotas.store, sessions.store):
// "memory", or redis://[user:password@]host[:port][/db] (rediss:// for
// TLS). It accepts only what the Redis client accepts, so that a file
// validate passes never fails when serve or a reload opens the store, and
// it refuses query parameters (the gateway sets the client's timeouts and
// retries itself). The error says what is wrong without quoting the URL,
// which may hold a password.
func CheckStoreURL(raw string) error {
	if raw == StoreMemory {
		return nil
	}
	scheme, _, found := strings.Cut(raw, "://")
	if !found || (scheme != "redis" && scheme != "rediss") {
		return errors.New("must be memory or a redis:// (rediss:// for TLS) URL, e.g. redis://127.0.0.1:6379/0")
	}
	u, err := url.Parse(raw)
	if err != nil {
		return errors.New("not a valid URL (a password with reserved characters must be percent-encoded)")
	}
	if u.Hostname() == "" {
		return errors.New("needs a host, e.g. redis://127.0.0.1:6379/0")
	}
	if p := u.Port(); p != "" {
		if n, err := strconv.Atoi(p); err != nil || n < 1 || n > 65535 {
			return errors.New("port must be a number from 1 to 65535")
		}
	} else if strings.HasSuffix(u.Host, ":") {
		return errors.New("port must be a number from 1 to 65535")
	}
	if db := strings.Trim(u.Path, "/"); db != "" {
		if n, err := strconv.Atoi(db); err != nil || n < 0 || strings.Contains(db, "/") {
			return errors.New("the path must be a database number, e.g. redis://127.0.0.1:6379/0")
		}
	}
	if u.RawQuery != "" || u.ForceQuery {
		return errors.New("takes no query parameters (the gateway sets the store's timeouts and retries)")
	}
	if u.Fragment != "" {
		return errors.New("takes no #fragment")
	}
	return nil
}

// checkStore reports the store URL at key when CheckStoreURL refuses it.
func (p *parser) checkStore(key []string, raw string) {
	if err := CheckStoreURL(raw); err != nil {
		p.addPath(key, err.Error())
	}
}
