//go:build unix

package cvx

import (
	"os"
	"strconv"
	"syscall"
)

// yieldToFrontEnd lowers the CPU priority of this process (nice +10) for
// the rest of its life: a live explorer's background precomputation then
// leaves the cores to the browser, the Notebook server and the kernel that
// carry a slider's move, which it otherwise delayed by up to 0.5 s on two
// cores. Linux keeps a priority per thread, so every thread is lowered
// (threads started later inherit it); elsewhere the process's. Raising it
// again would need privileges, so the cell keeps it until it ends.
func yieldToFrontEnd() {
	const nice = 10
	tasks, err := os.ReadDir("/proc/self/task")
	if err != nil {
		syscall.Setpriority(syscall.PRIO_PROCESS, 0, nice)
		return
	}
	for _, t := range tasks {
		if tid, err := strconv.Atoi(t.Name()); err == nil {
			syscall.Setpriority(syscall.PRIO_PROCESS, tid, nice)
		}
	}
}
