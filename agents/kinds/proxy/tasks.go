package proxy

// The tasks extension (io.modelcontextprotocol/tasks; in the 2025-11-25
// revision the tasks capability) of a proxy agent: a task-augmented
// tools/call, tasks/get, tasks/result, tasks/cancel and tasks/list are
// routed to the downstream that owns the task.
//
// Task ids. The id a caller sees is "<server>/<tag>/<downstream id>": it
// names the server that owns the task, so any replica routes a tasks/*
// request without shared state, and tag, a MAC of the agent, the caller's
// principal (policy.Identity.Principal: its token's name or its JWT
// identity, not its rule), the server and the downstream id under a key derived from state_key
// (Deps.TaskTag), binds the task to the caller that created it. A
// tasks/get, tasks/result or tasks/cancel whose tag is not the caller's is
// "not found", whatever the downstream would say: callers whose outbound
// credentials are alike share downstream sessions (and a stateless or stdio
// downstream keeps one store for everyone), so the downstream cannot tell
// them apart. tasks/list shows the tasks the caller created through this
// replica (the last maxOwnedTasks of the agent), or of every replica with
// a shared session store (Deps.TaskIndex): a downstream's list names no
// owner. Requests also go out with the caller's own outbound
// credentials, exactly as its tools/call did, and only to servers it may
// use (policy.callers).
//
// Session-based downstreams keep a task in the session that created it
// (mcp-go does). Downstream sessions are pooled per outbound credential
// set and can be replaced (a lost connection, an idle expiry, another
// replica's pool): the downstream then answers "task not found", and the
// caller gets -32602 with that reason and the note that the task's
// session may be gone. A stateless downstream keeps its tasks whatever
// session asks.
//
// Advertising. The agent declares tasks (capabilities.tasks and, for
// 2026-07-28 callers, the io.modelcontextprotocol/tasks extension) only
// when a server the caller may use declares them; otherwise tasks/* get
// mcp-go's method-not-found, as for any agent without tasks.

import (
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"sync"
	"time"

	"github.com/mark3labs/mcp-go/mcp"
	"go.uber.org/zap"

	"github.com/pallasgw/pallasgw/agents/mcpclient"
	"github.com/pallasgw/pallasgw/agents/sessions"
	"github.com/pallasgw/pallasgw/agents/wire"
	"github.com/pallasgw/pallasgw/policy"
)

// TasksExtension is the extension id of the tasks extension (MCP 2026-07-28).
const TasksExtension = "io.modelcontextprotocol/tasks"

// relatedTaskKey is the _meta key a downstream names a result's task with.
const relatedTaskKey = "io.modelcontextprotocol/related-task"

// taskError is a tasks/* request (or a task-augmented tools/call) the
// proxy answers with the JSON-RPC error code and message.
func taskError(code int, msg string) error { return &wire.CallerError{Code: code, Message: msg} }

// taskServers are the servers the caller of ctx may use that declare
// tasks, with the merged capability (nil: none does).
func (p *Proxy) taskServers(ctx context.Context, inbound http.Header) ([]string, *mcp.TasksCapability) {
	var out []string
	var merged *mcp.TasksCapability
	for _, srv := range p.servers(policy.CallerFrom(ctx)) {
		c, err := p.d.Downstream.Capabilities(ctx, srv, p.outbound(ctx, srv, inbound, nil))
		if err != nil {
			p.listFailed(ctx, "tasks", srv, err)
			continue
		}
		t := c.Tasks
		if t == nil {
			if _, ext := c.Extensions[TasksExtension]; ext {
				t = &mcp.TasksCapability{}
			}
		}
		if t == nil {
			continue
		}
		out = append(out, srv)
		if merged == nil {
			merged = &mcp.TasksCapability{}
		}
		if t.List != nil {
			merged.List = &struct{}{}
		}
		if t.Cancel != nil {
			merged.Cancel = &struct{}{}
		}
		if t.Requests != nil && t.Requests.Tools != nil && t.Requests.Tools.Call != nil {
			merged.Requests = t.Requests
		}
	}
	return out, merged
}

// TasksCapability is the tasks capability the agent declares to the caller
// of ctx: the merge of its servers', nil when none declares tasks.
func (p *Proxy) TasksCapability(ctx context.Context, inbound http.Header) *mcp.TasksCapability {
	_, c := p.taskServers(ctx, inbound)
	return c
}

// SupportsTasks reports whether a server the caller of ctx may use declares
// tasks.
func (p *Proxy) SupportsTasks(ctx context.Context, inbound http.Header) bool {
	return p.TasksCapability(ctx, inbound) != nil
}

// advertiseTasks adds the tasks capability and extension to caps when a
// server of the caller declares them.
func (p *Proxy) advertiseTasks(ctx context.Context, inbound http.Header, caps *mcp.ServerCapabilities, extension bool) {
	t := p.TasksCapability(ctx, inbound)
	if t == nil {
		return
	}
	caps.Tasks = t
	if extension {
		ext := make(map[string]any, len(caps.Extensions)+1)
		for k, v := range caps.Extensions {
			ext[k] = v
		}
		ext[TasksExtension] = map[string]any{}
		caps.Extensions = ext
	}
}

// CallAsTask runs a task-augmented tools/call (task is the caller's task
// param) and returns the downstream's result with its task id named for
// the caller. The call is decided, audited and counted as any tools/call.
func (p *Proxy) CallAsTask(ctx context.Context, c *wire.Call, task json.RawMessage) (json.RawMessage, error) {
	req := c.Req
	v, ok := p.tools.Load(req.Params.Name)
	if !ok {
		return nil, taskError(mcp.INVALID_PARAMS, fmt.Sprintf("tool %q not found", req.Params.Name))
	}
	srv := v.(route).server
	if !p.serverHasTasks(ctx, srv, req.Header) {
		return nil, taskError(mcp.METHOD_NOT_FOUND, fmt.Sprintf("tool %q does not support task augmentation: server %s does not declare tasks", req.Params.Name, srv))
	}
	call := &wire.Call{Req: req, Sink: c.Sink, ExtraParams: map[string]json.RawMessage{"task": task}} // no stream: its result is held
	res, rr, err := p.forward(ctx, req, true, call)
	switch {
	case err != nil:
		var rpc *mcpclient.RPCError
		if errors.As(err, &rpc) {
			return nil, taskError(rpc.Code, rpc.Message)
		}
		return nil, taskError(mcp.INTERNAL_ERROR, err.Error())
	case rr != nil:
		return renameTasks(rr.JSON, p.ownTask(ctx, srv)), nil
	}
	b, err := json.Marshal(res)
	if err != nil {
		return nil, taskError(mcp.INTERNAL_ERROR, err.Error())
	}
	return renameTasks(b, p.ownTask(ctx, srv)), nil
}

// serverHasTasks reports whether srv declares tasks to the caller's
// credentials.
func (p *Proxy) serverHasTasks(ctx context.Context, srv string, inbound http.Header) bool {
	servers, _ := p.taskServers(ctx, inbound)
	for _, s := range servers {
		if s == srv {
			return true
		}
	}
	return false
}

// Task answers one tasks/get, tasks/result, tasks/cancel or tasks/list of
// the caller of ctx.
func (p *Proxy) Task(ctx context.Context, method string, params json.RawMessage, inbound http.Header) (json.RawMessage, error) {
	if method == string(mcp.MethodTasksList) {
		return p.listTasks(ctx, inbound)
	}
	var p0 struct {
		TaskID string `json:"taskId"`
	}
	if json.Unmarshal(params, &p0) != nil || p0.TaskID == "" {
		return nil, taskError(mcp.INVALID_PARAMS, "taskId: a string is required")
	}
	id := p0.TaskID
	srv, rest, ok := strings.Cut(id, "/")
	if !ok || !p.isServer(srv) {
		return nil, taskError(mcp.INVALID_PARAMS, fmt.Sprintf("task %q not found: it names no server of agent %s", id, p.d.Agent))
	}
	caller, owner := policy.CallerFrom(ctx), ownerOf(ctx)
	tag, downID, ok := strings.Cut(rest, "/")
	if !ok || !hmac.Equal([]byte(tag), []byte(p.taskTag(owner, srv, downID))) {
		return nil, taskError(mcp.INVALID_PARAMS, fmt.Sprintf("task %q not found: it is not a task this caller created through agent %s", id, p.d.Agent))
	}
	if d := p.d.Callers.AllowServer(caller, srv); !d.Allowed {
		p.d.Auditor.Record(ctx, policy.AuditEvent{RequestID: p.d.RequestID(ctx), Caller: caller, Agent: p.d.Agent,
			Server: srv, Tool: method, Decision: d, Outcome: "denied"})
		return nil, taskError(mcp.INVALID_PARAMS, fmt.Sprintf("task %q is refused: server %s is denied by policy (%s)", id, srv, d.Reason))
	}
	if !p.serverHasTasks(ctx, srv, inbound) {
		return nil, taskError(mcp.INVALID_PARAMS, fmt.Sprintf("task %q not found: server %s does not declare tasks (or cannot be reached)", id, srv))
	}
	hdr, err := p.d.Outbound(ctx, srv, inbound, nil)
	if err != nil {
		return nil, taskError(mcp.INTERNAL_ERROR, fmt.Sprintf("composing the credentials of server %s failed (request id %s)", srv, p.d.RequestID(ctx)))
	}
	// A fresh request: the caller's _meta (a 2026-07-28 caller's) would be
	// refused by a session-based downstream.
	out, _ := json.Marshal(map[string]string{"taskId": downID})
	res, err := p.d.Downstream.TaskRequest(ctx, srv, method, out, hdr)
	if err != nil {
		return nil, p.taskFailed(ctx, id, srv, method, err)
	}
	return renameTasks(res, p.nameTask(owner, srv)), nil
}

// taskFailed is the caller's error for a tasks/* request that failed
// downstream.
func (p *Proxy) taskFailed(ctx context.Context, id, srv, method string, err error) error {
	var rpc *mcpclient.RPCError
	if errors.As(err, &rpc) {
		msg := fmt.Sprintf("task %q: server %s: %s", id, srv, rpc.Message)
		if rpc.Code == mcp.INVALID_PARAMS && strings.Contains(rpc.Message, "not found") {
			msg += " (a task lives in the downstream session that created it; that session may have ended or been replaced)"
		}
		return taskError(rpc.Code, msg)
	}
	rid := p.d.RequestID(ctx)
	p.d.Logger.Warn("downstream task request failed", zap.String("request_id", rid), zap.String("server", srv),
		zap.String("op", method), zap.String("outcome", mcpclient.Outcome(err)), zap.Error(err))
	return taskError(mcp.INTERNAL_ERROR, fmt.Sprintf("task %q: server %s: %v (request id %s)", id, srv, err, rid))
}

// listTasks merges the task lists of the caller's servers that declare
// tasks/list (first pages only: the merged list has no cursor), keeping
// the tasks the caller created through this replica.
func (p *Proxy) listTasks(ctx context.Context, inbound http.Header) (json.RawMessage, error) {
	servers, _ := p.taskServers(ctx, inbound)
	owner := ownerOf(ctx)
	type listed struct {
		srv, id string
		item    json.RawMessage
	}
	var found []listed
	for _, srv := range servers {
		hdr, err := p.d.Outbound(ctx, srv, inbound, nil)
		var res json.RawMessage
		if err == nil {
			res, err = p.d.Downstream.TaskRequest(ctx, srv, string(mcp.MethodTasksList), json.RawMessage(`{}`), hdr)
		}
		if err != nil {
			p.listFailed(ctx, string(mcp.MethodTasksList), srv, err)
			continue
		}
		var list struct {
			Tasks []json.RawMessage `json:"tasks"`
		}
		if json.Unmarshal(res, &list) != nil {
			continue
		}
		for _, item := range list.Tasks {
			var t struct {
				TaskID string `json:"taskId"`
			}
			if json.Unmarshal(item, &t) == nil {
				found = append(found, listed{srv, t.TaskID, item})
			}
		}
	}
	owned := make([]bool, len(found))
	if ix := p.d.TaskIndex; ix != nil && len(found) > 0 {
		members := make([]string, len(found))
		for i, f := range found {
			members[i] = f.srv + "\x00" + f.id
		}
		var err error
		if owned, err = ix.IndexHas(ctx, p.indexKey(owner), members); err != nil { // the request's one store read
			return nil, &wire.CallerError{Code: mcp.INTERNAL_ERROR, Status: http.StatusServiceUnavailable, RetryAfter: sessions.StoreRetryAfter,
				Message: fmt.Sprintf("%v; retry in %s (request id %s)", sessions.ErrStoreUnavailable, sessions.StoreRetryAfter, p.d.RequestID(ctx))}
		}
	} else {
		for i, f := range found {
			owned[i] = p.owned.has(owner, f.srv, f.id)
		}
	}
	tasks := []json.RawMessage{}
	for i, f := range found {
		if owned[i] {
			tasks = append(tasks, renameIn(f.item, p.nameTask(owner, f.srv)))
		}
	}
	b, err := json.Marshal(map[string]any{"tasks": tasks})
	if err != nil {
		return nil, taskError(mcp.INTERNAL_ERROR, err.Error())
	}
	return b, nil
}

func (p *Proxy) isServer(srv string) bool {
	for _, s := range p.d.Servers {
		if s == srv {
			return true
		}
	}
	return false
}

// renameTasks names the task ids of a downstream result for the caller
// (name: nameTask or ownTask): the taskId of the result itself
// (tasks/get, tasks/cancel), of its task (a created task), of each of its
// tasks (tasks/list) and of its _meta related-task. Other members are kept
// as the downstream sent them.
func renameTasks(raw json.RawMessage, name func(downID string) string) json.RawMessage {
	var top map[string]json.RawMessage
	if json.Unmarshal(raw, &top) != nil {
		return raw
	}
	renameID(top, name)
	for _, key := range []string{"task"} {
		top[key] = renameIn(top[key], name)
	}
	if list := top["tasks"]; len(list) > 0 {
		var items []json.RawMessage
		if json.Unmarshal(list, &items) == nil {
			for i := range items {
				items[i] = renameIn(items[i], name)
			}
			top["tasks"], _ = json.Marshal(items)
		}
	}
	if meta := top["_meta"]; len(meta) > 0 {
		var m map[string]json.RawMessage
		if json.Unmarshal(meta, &m) == nil && m[relatedTaskKey] != nil {
			m[relatedTaskKey] = renameIn(m[relatedTaskKey], name)
			top["_meta"], _ = json.Marshal(m)
		}
	}
	for k, v := range top {
		if v == nil {
			delete(top, k)
		}
	}
	b, err := json.Marshal(top)
	if err != nil {
		return raw
	}
	return b
}

// renameIn renames the taskId of one JSON object (nil stays nil).
func renameIn(raw json.RawMessage, name func(string) string) json.RawMessage {
	var m map[string]json.RawMessage
	if len(raw) == 0 || json.Unmarshal(raw, &m) != nil {
		return raw
	}
	renameID(m, name)
	b, _ := json.Marshal(m)
	return b
}

func renameID(m map[string]json.RawMessage, name func(string) string) {
	var id string
	if json.Unmarshal(m["taskId"], &id) == nil && id != "" {
		m["taskId"], _ = json.Marshal(name(id))
	}
}

// taskTag binds a task of srv to its owner (package comment).
func (p *Proxy) taskTag(owner, srv, downID string) string {
	if p.d.Host == nil {
		return "-" // tests without a host: ids still route, bound to nothing
	}
	return p.d.TaskTag("task", p.d.Agent, owner, srv, downID)
}

// nameTask names the tasks of srv for owner.
func (p *Proxy) nameTask(owner, srv string) func(string) string {
	return func(downID string) string { return srv + "/" + p.taskTag(owner, srv, downID) + "/" + downID }
}

// ownTask names the tasks of srv that the caller of ctx creates, and
// records them as its own (tasks/list).
func (p *Proxy) ownTask(ctx context.Context, srv string) func(string) string {
	owner := ownerOf(ctx)
	name := p.nameTask(owner, srv)
	return func(downID string) string {
		p.owned.add(owner, srv, downID)
		if ix := p.d.TaskIndex; ix != nil {
			// A failure (the store reports it) leaves the task the
			// caller's all the same, its id says so: only tasks/list
			// through another replica misses it.
			_ = ix.IndexAdd(ctx, p.indexKey(owner), srv+"\x00"+downID, maxOwnedTasks, taskIndexTTL)
		}
		return name(downID)
	}
}

// taskIndexTTL is how long an owner's index outlives its last task.
const taskIndexTTL = 24 * time.Hour

// indexKey is the TaskIndex key of owner's tasks at this agent (a digest:
// the owner is a caller's name).
func (p *Proxy) indexKey(owner string) string {
	sum := sha256.Sum256([]byte(p.d.Agent + "\x00" + owner))
	return "tasks:" + hex.EncodeToString(sum[:])
}

// ownerOf is whom the tasks the caller of ctx creates belong to: its
// principal (two JWT users under one rule are two owners).
func ownerOf(ctx context.Context) string { return policy.IdentityFrom(ctx).Principal() }

// maxOwnedTasks bounds the tasks a proxy remembers the creator of, for
// tasks/list; the oldest go first.
const maxOwnedTasks = 4096

// ownedTasks is a proxy's record of who created which task: a set bounded
// to maxOwnedTasks entries, first in first out.
type ownedTasks struct {
	mu    sync.Mutex
	set   map[string]struct{}
	order []string
}

func ownedKey(owner, srv, downID string) string { return owner + "\x00" + srv + "\x00" + downID }

func (o *ownedTasks) add(owner, srv, downID string) {
	k := ownedKey(owner, srv, downID)
	o.mu.Lock()
	defer o.mu.Unlock()
	if _, ok := o.set[k]; ok {
		return
	}
	if o.set == nil {
		o.set = map[string]struct{}{}
	}
	if len(o.order) >= maxOwnedTasks {
		delete(o.set, o.order[0])
		o.order = o.order[1:]
	}
	o.set[k] = struct{}{}
	o.order = append(o.order, k)
}

func (o *ownedTasks) has(owner, srv, downID string) bool {
	o.mu.Lock()
	defer o.mu.Unlock()
	_, ok := o.set[ownedKey(owner, srv, downID)]
	return ok
}
