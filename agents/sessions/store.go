package sessions

// The shared store (the config's sessions.store): what a session changes,
// kept where every replica reads it, and the channel a replica uses to
// hand another one an answer it is waiting for. memory (the default) means
// no Store at all: the replica's own memory holds everything, and nothing
// is read or written per request. With redis:// the replicas that point at
// the same Redis share:
//
//   - the downstream session of a caller (a session_scope caller server's,
//     agents/mcpclient): its id, protocol version and capabilities, so that
//     a replica that has no session for the caller adopts the one another
//     replica opened instead of initializing its own; the downstream's state
//     for that caller (its log level, subscriptions, tasks, a browser or a
//     shell) follows the caller from replica to replica;
//   - answers to server-to-client requests (agents/endpoint): a caller's
//     answer that reaches a replica other than the one whose call waits for
//     it is published on that replica's channel.
//
// A failed operation is ErrStoreUnavailable: the request that needed it
// is refused with HTTP 503 and Retry-After, requests that need nothing of
// the store go on, and the next one tries again.

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/redis/go-redis/v9"
)

// ErrStoreUnavailable wraps every failure of a Store operation.
var ErrStoreUnavailable = errors.New("the session store is unavailable")

// StoreRetryAfter is what a request refused for ErrStoreUnavailable is
// told to wait.
const StoreRetryAfter = 1 * time.Second

// Store is the shared session store.
type Store interface {
	// Get returns key's value, nil when there is none.
	Get(ctx context.Context, key string) ([]byte, error)
	// Set stores val under key for ttl; an empty val deletes key (of any
	// kind, an index among them).
	Set(ctx context.Context, key string, val []byte, ttl time.Duration) error
	// Claim stores val under key for ttl unless key holds a value, and
	// reports whether it did: a lock among replicas.
	Claim(ctx context.Context, key string, val []byte, ttl time.Duration) (bool, error)
	// IndexAdd adds member to the index key, keeping its newest max
	// members, for ttl after the last addition.
	IndexAdd(ctx context.Context, key, member string, max int, ttl time.Duration) error
	// IndexHas reports which of members the index key holds.
	IndexHas(ctx context.Context, key string, members []string) ([]bool, error)
	// IndexMembers returns every member of the index key; Set on key
	// replaces the index (an empty value deletes it).
	IndexMembers(ctx context.Context, key string) ([]string, error)
	// Publish sends msg on channel and reports how many replicas received it.
	Publish(ctx context.Context, channel string, msg []byte) (int64, error)
	// Subscribe hands every message on channel to fn, in order, until ctx
	// ends; it returns once it listens. A lost connection is re-established
	// by itself; messages published meanwhile are lost (their senders saw
	// no receiver).
	Subscribe(ctx context.Context, channel string, fn func([]byte)) error
	Close() error
}

// keyPrefix keeps the gateway's session keys apart from others.
const keyPrefix = "pallasgw:session:"

// Redis is a Store in Redis (or Valkey).
type Redis struct {
	rdb *redis.Client
	wg  sync.WaitGroup // Subscribe's readers
}

// NewRedis connects lazily to the redis:// (or rediss://) URL; each
// command is bounded by timeout, without retries.
func NewRedis(rawURL string, timeout time.Duration) (*Redis, error) {
	opts, err := redis.ParseURL(rawURL)
	if err != nil {
		// Neither the URL nor its error is quoted: both may hold a password.
		return nil, errors.New("not a valid redis:// URL")
	}
	opts.DialTimeout, opts.ReadTimeout, opts.WriteTimeout = timeout, timeout, timeout
	opts.MaxRetries = -1
	opts.DialerRetries = 1
	return &Redis{rdb: redis.NewClient(opts)}, nil
}

func storeErr(op string, err error) error {
	return fmt.Errorf("%w (%s: %v)", ErrStoreUnavailable, op, err)
}

func (r *Redis) Get(ctx context.Context, key string) ([]byte, error) {
	b, err := r.rdb.Get(ctx, keyPrefix+key).Bytes()
	if errors.Is(err, redis.Nil) {
		return nil, nil
	}
	if err != nil {
		return nil, storeErr("get", err)
	}
	return b, nil
}

func (r *Redis) Set(ctx context.Context, key string, val []byte, ttl time.Duration) error {
	if len(val) == 0 {
		if err := r.rdb.Del(ctx, keyPrefix+key).Err(); err != nil {
			return storeErr("delete", err)
		}
		return nil
	}
	if err := r.rdb.Set(ctx, keyPrefix+key, val, ttl).Err(); err != nil {
		return storeErr("set", err)
	}
	return nil
}

func (r *Redis) Claim(ctx context.Context, key string, val []byte, ttl time.Duration) (bool, error) {
	ok, err := r.rdb.SetNX(ctx, keyPrefix+key, val, ttl).Result()
	if err != nil {
		return false, storeErr("claim", err)
	}
	return ok, nil
}

// IndexAdd keeps the index as a sorted set scored by the time of the
// addition: one pipeline (ZADD, ZREMRANGEBYRANK, EXPIRE).
func (r *Redis) IndexAdd(ctx context.Context, key, member string, max int, ttl time.Duration) error {
	k := keyPrefix + key
	pipe := r.rdb.Pipeline()
	pipe.ZAdd(ctx, k, redis.Z{Score: float64(time.Now().UnixMicro()), Member: member})
	pipe.ZRemRangeByRank(ctx, k, 0, int64(-max-1))
	pipe.Expire(ctx, k, ttl)
	if _, err := pipe.Exec(ctx); err != nil {
		return storeErr("index add", err)
	}
	return nil
}

func (r *Redis) IndexHas(ctx context.Context, key string, members []string) ([]bool, error) {
	if len(members) == 0 {
		return nil, nil
	}
	scores, err := r.rdb.ZMScore(ctx, keyPrefix+key, members...).Result()
	if err != nil {
		return nil, storeErr("index read", err)
	}
	has := make([]bool, len(members))
	for i, s := range scores {
		has[i] = s != 0
	}
	return has, nil
}

func (r *Redis) IndexMembers(ctx context.Context, key string) ([]string, error) {
	members, err := r.rdb.ZRange(ctx, keyPrefix+key, 0, -1).Result()
	if err != nil {
		return nil, storeErr("index members", err)
	}
	return members, nil
}

func (r *Redis) Publish(ctx context.Context, channel string, msg []byte) (int64, error) {
	n, err := r.rdb.Publish(ctx, keyPrefix+channel, msg).Result()
	if err != nil {
		return 0, storeErr("publish", err)
	}
	return n, nil
}

func (r *Redis) Subscribe(ctx context.Context, channel string, fn func([]byte)) error {
	ps := r.rdb.Subscribe(ctx, keyPrefix+channel)
	if _, err := ps.Receive(ctx); err != nil { // the subscription's confirmation
		_ = ps.Close()
		return storeErr("subscribe", err)
	}
	ch := ps.Channel()
	r.wg.Go(func() {
		defer ps.Close()
		for {
			select {
			case <-ctx.Done():
				return
			case m, ok := <-ch:
				if !ok {
					return
				}
				fn([]byte(m.Payload))
			}
		}
	})
	return nil
}

// Close closes the connections; the subscriptions' contexts must have
// ended first (their readers are waited for).
func (r *Redis) Close() error {
	err := r.rdb.Close()
	r.wg.Wait()
	return err
}
