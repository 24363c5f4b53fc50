//go:build !linux

package kafkaiq

import "os/exec"

// start starts cmd and closes exited once it has been reaped.
func start(cmd *exec.Cmd, exited chan struct{}) error {
	if err := cmd.Start(); err != nil {
		return err
	}
	go func() {
		cmd.Wait()
		close(exited)
	}()
	return nil
}
