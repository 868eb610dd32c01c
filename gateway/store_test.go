package gateway

import (
	"os"
	"path/filepath"
	"testing"

	"go.uber.org/zap"

	"github.com/pallasgw/pallasgw/gateway/config"
	"github.com/pallasgw/pallasgw/policy/quota"
)

// storeURLs are store URLs of every shape an operator may write.
var storeURLs = []string{
	"memory", "redis://127.0.0.1:6379/0", "redis://127.0.0.1", "redis://127.0.0.1:6379/", "rediss://u:p%40ss@h.example:6380/3",
	"redis://[::1]:6379/1", "redis://127.0.0.1:16379/abc", "redis://127.0.0.1:6379/0/1", "redis://127.0.0.1:6379/-1",
	"redis://127.0.0.1:6379/0?dial_timeout=1s", "redis://127.0.0.1:6379/0?nosuch=1", "redis://:6379/0",
	"redis://127.0.0.1:notaport/0", "redis://127.0.0.1:99999/0", "unix:///run/redis.sock", "127.0.0.1:6379", "redis://u:p%zz@h/0",
}

// validate and serve accept and refuse the same files with the same
// message: every store URL config.CheckStoreURL accepts, the Redis client
// opens; a refused one stops serve with validate's line.
func TestValidateAndServeAgreeOnStores(t *testing.T) {
	for _, u := range storeURLs {
		t.Run(u, func(t *testing.T) {
			checked := config.CheckStoreURL(u)
			if checked == nil && u != config.StoreMemory {
				if r, err := quota.NewRedis(u, storeTimeout); err != nil {
					t.Fatalf("validate accepts it, the store refuses it: %v", err)
				} else {
					r.Close()
				}
			}
			path := filepath.Join(t.TempDir(), "pallasgw.yaml")
			cfg := "name: t\nlisten: \"127.0.0.1:0\"\npolicy:\n  default: {limits: {requests_per_minute: 10}}\nquotas:\n  store: \"" + u + "\"\nagents:\n  a: {model: passthrough}\n"
			if err := os.WriteFile(path, []byte(cfg), 0o600); err != nil {
				t.Fatal(err)
			}
			_, verr := LoadConfig(path)
			g, serr := New(Options{ConfigPath: path, Logger: zap.NewNop(), Version: "test"})
			if serr == nil {
				g.EndDrainDelay()
				g.Shutdown()
			}
			if (verr == nil) != (checked == nil) || (verr == nil) != (serr == nil) {
				t.Fatalf("check %v, validate %v, serve %v", checked, verr, serr)
			}
			if verr != nil && verr.Error() != serr.Error() {
				t.Fatalf("validate says\n%v\nserve says\n%v", verr, serr)
			}
		})
	}
}
