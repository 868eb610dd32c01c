package wire

import (
	"context"
	"strings"

	"github.com/mark3labs/mcp-go/mcp"
	"github.com/mark3labs/mcp-go/server"
)

// Notifications with a _meta. Gap: mcp-go v1.2.1 builds a notification's
// params from a map as NotificationParams.AdditionalFields, whose
// MarshalJSON skips an "_meta" member (SendNotificationToClient), so a
// notification the gateway sends can carry no _meta through it. Buys:
// correctness (the tool detail of an llm agent's progress,
// agents.ToolDetailMeta), not speed. Retired by: SendNotificationToClient
// taking the params' "_meta" as NotificationParams.Meta.

// notificationOf is method with params, params' "_meta" (a map) as the
// notification's Meta.
func notificationOf(method string, params map[string]any) mcp.JSONRPCNotification {
	p := mcp.NotificationParams{AdditionalFields: params}
	if meta, ok := params["_meta"].(map[string]any); ok {
		p.Meta = meta
	}
	return mcp.JSONRPCNotification{JSONRPC: mcp.JSONRPC_VERSION, Notification: mcp.Notification{Method: method, Params: p}}
}

// sendWithMeta does what mcp-go's SendNotificationToClient does
// (sendNotificationCore: switch a Streamable HTTP response to SSE, then
// put n in the session's buffer without blocking), for a notification it
// cannot build.
func sendWithMeta(ctx context.Context, n mcp.JSONRPCNotification) error {
	session := server.ClientSessionFromContext(ctx)
	if session == nil || !session.Initialized() {
		return server.ErrNotificationNotInitialized
	}
	if s, ok := session.(server.SessionWithStreamableHTTPConfig); ok {
		s.UpgradeToSSEWhenReceiveNotification()
	}
	select {
	case session.NotificationChannel() <- n:
		return nil
	default:
		return server.ErrNotificationChannelBlocked
	}
}

// ownMetaPrefix starts the _meta keys of pallasgw's own extensions
// (agents.ToolDetailMeta), which the fast path keeps for the handler.
const ownMetaPrefix = "io.pallasgw/"

// isOwnMeta reports a _meta key of pallasgw's own.
func isOwnMeta(key string) bool { return strings.HasPrefix(key, ownMetaPrefix) }
