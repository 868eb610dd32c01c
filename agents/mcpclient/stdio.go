package mcpclient

import (
	"bufio"
	"context"
	"fmt"
	"maps"
	"os"
	"os/exec"
	"slices"
	"sync"
	"time"

	"github.com/mark3labs/mcp-go/client/transport"
	"go.uber.org/zap"
)

// maxStderrLine bounds one logged stderr line; the rest of a longer line is
// dropped.
const maxStderrLine = 4096

// stderrDrainWait is how long release waits for the last stderr lines after
// the process has been stopped, in case a grandchild still holds the pipe.
const stderrDrainWait = time.Second

// stdioProc is the side of one stdio child process that mcp-go does not
// manage: its stderr, read line by line into the log. The end of stderr is
// taken as the end of the process, which is how a crash is noticed before
// the next call (mcp-go stops the process on Client.Close: stdin closed,
// SIGTERM after 2 s, SIGKILL after 3 s more).
type stdioProc struct {
	srv  *remote
	r, w *os.File
	done chan struct{} // closed when stderr reaches EOF

	closeW sync.Once
	closeR sync.Once
}

func (s *session) newStdio() (transport.Interface, *stdioProc, error) {
	spec := s.srv.spec
	if spec.Command == "" {
		return nil, nil, fmt.Errorf("no command configured")
	}
	r, w, err := os.Pipe()
	if err != nil {
		return nil, nil, fmt.Errorf("stderr pipe: %w", err)
	}
	p := &stdioProc{srv: s.srv, r: r, w: w, done: make(chan struct{})}
	if !s.srv.m.track(p.readStderr) {
		_ = r.Close()
		_ = w.Close()
		return nil, nil, errClosed
	}
	tr := transport.NewStdioWithOptions(spec.Command, nil, spec.Args,
		transport.WithCommandFunc(p.command),
		transport.WithCommandLogger(s.srv.m.slog),
	)
	return tr, p, nil
}

// command builds the child: the spec's environment plus PATH and HOME, the
// spec's directory, stderr on our pipe. It ignores ctx: the process lives
// until Close, not until the call that started it ends.
func (p *stdioProc) command(_ context.Context, command string, _ []string, args []string) (*exec.Cmd, error) {
	cmd := exec.Command(command, args...)
	cmd.Env = stdioEnv(p.srv.spec.Env)
	cmd.Dir = p.srv.spec.Dir
	cmd.Stderr = p.w
	return cmd, nil
}

// started is called once the transport's Start has returned: the child has
// its copy of the pipe's write end (or never will), so ours is closed and
// EOF then means the child is gone.
func (p *stdioProc) started() {
	p.closeW.Do(func() { _ = p.w.Close() })
}

// exited reports whether the child's stderr has reached EOF.
func (p *stdioProc) exited() bool {
	select {
	case <-p.done:
		return true
	default:
		return false
	}
}

// release frees the pipe after the process has been stopped, waiting
// briefly for the last lines.
func (p *stdioProc) release() {
	p.started()
	t := time.NewTimer(stderrDrainWait)
	defer t.Stop()
	select {
	case <-p.done:
	case <-t.C:
	}
	p.closeR.Do(func() { _ = p.r.Close() })
}

// readStderr logs each stderr line of the child until EOF.
func (p *stdioProc) readStderr() {
	defer close(p.done)
	log := p.srv.m.log.With(zap.String(fieldServer, p.srv.spec.Name))
	br := bufio.NewReaderSize(p.r, maxStderrLine)
	for {
		line, more, err := br.ReadLine()
		if len(line) > 0 {
			log.Info("downstream stderr", zap.String(fieldLine, scrubString(string(line), p.srv.secrets)))
		}
		for more && err == nil {
			_, more, err = br.ReadLine()
		}
		if err != nil {
			log.Debug("downstream stderr closed")
			return
		}
	}
}

// stdioEnv is the child's environment: PATH and HOME from the parent, then
// the spec's variables (which win), sorted.
func stdioEnv(spec map[string]string) []string {
	env := make([]string, 0, len(spec)+2)
	for _, name := range []string{"HOME", "PATH"} {
		if _, set := spec[name]; set {
			continue
		}
		if v, ok := os.LookupEnv(name); ok {
			env = append(env, name+"="+v)
		}
	}
	for _, name := range slices.Sorted(maps.Keys(spec)) {
		env = append(env, name+"="+spec[name])
	}
	return env
}
