package quota

import (
	"context"
	"errors"
	"time"

	"github.com/go-redis/redis_rate/v10"
	"github.com/redis/go-redis/v9"
)

// Redis is a Store shared by the replicas that point at the same Redis (or
// Valkey): the request rate is go-redis/redis_rate's GCRA, one script call
// per request; the token budgets are one counter per caller and day.
type Redis struct {
	rdb     *redis.Client
	limiter *redis_rate.Limiter
}

func init() {
	// go-redis logs pool failures to stderr by itself; the Guard reports
	// every failed operation (OnStoreError) to the gateway's log instead.
	redis.SetLogger(silent{})
}

type silent struct{}

func (silent) Printf(context.Context, string, ...any) {}

// keyPrefix keeps the gateway's keys apart from others in the database.
const keyPrefix = "pallasgw:quota:"

// NewRedis connects lazily to the redis:// (or rediss://) URL: an
// unreachable server fails the calls that need it, not the start. Each
// command is bounded by timeout.
func NewRedis(rawURL string, timeout time.Duration) (*Redis, error) {
	opts, err := redis.ParseURL(rawURL)
	if err != nil {
		// Neither the URL nor url's error is quoted: both may hold a password.
		return nil, errors.New("not a valid redis:// URL")
	}
	opts.DialTimeout, opts.ReadTimeout, opts.WriteTimeout = timeout, timeout, timeout
	opts.MaxRetries = -1   // a quota check waits for one round trip, no more
	opts.DialerRetries = 1 // and one dial when the connection is new
	rdb := redis.NewClient(opts)
	return &Redis{rdb: rdb, limiter: redis_rate.NewLimiter(rdb)}, nil
}

func (r *Redis) Allow(ctx context.Context, key string, perMinute int) (bool, time.Duration, error) {
	res, err := r.limiter.Allow(ctx, keyPrefix+"rate:"+key, redis_rate.PerMinute(perMinute))
	if err != nil {
		return false, 0, err
	}
	return res.Allowed > 0, res.RetryAfter, nil
}

func (r *Redis) Used(ctx context.Context, key string) (int64, error) {
	n, err := r.rdb.Get(ctx, keyPrefix+"tokens:"+dayKey(key, time.Now())).Int64()
	if err == redis.Nil {
		return 0, nil
	}
	return n, err
}

func (r *Redis) Spend(ctx context.Context, key string, n int64) error {
	k := keyPrefix + "tokens:" + dayKey(key, time.Now())
	pipe := r.rdb.Pipeline()
	pipe.IncrBy(ctx, k, n)
	pipe.Expire(ctx, k, 48*time.Hour) // the day's counter outlives the day, then goes
	_, err := pipe.Exec(ctx)
	return err
}

func (r *Redis) Close() error { return r.rdb.Close() }
