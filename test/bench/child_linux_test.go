package bench

import (
	"os/exec"
	"syscall"
)

// endsWithUs has the kernel send sig to cmd's process when this one ends,
// so that a benchmark binary killed by -timeout leaves no child serving on
// its ports (cleanups run only when it ends normally).
func endsWithUs(cmd *exec.Cmd, sig syscall.Signal) {
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: sig}
}
