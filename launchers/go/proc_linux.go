package kafkaiq

import (
	"os/exec"
	"runtime"
	"syscall"
)

// start starts cmd and closes exited once it has been reaped. The kernel
// kills the process when the thread that started it ends (Pdeathsig), so
// that thread is held for as long as the process lives: the broker goes
// also when the test binary dies without running its cleanups (a -timeout
// panic, os.Exit).
func start(cmd *exec.Cmd, exited chan struct{}) error {
	started := make(chan error)
	go func() {
		// never unlocked: the thread ends with this goroutine, after the process
		runtime.LockOSThread()
		cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
		err := cmd.Start()
		started <- err
		if err == nil {
			cmd.Wait()
			close(exited)
		}
	}()
	return <-started
}
