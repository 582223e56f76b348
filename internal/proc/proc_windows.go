package proc

import (
	"errors"
	"fmt"
	"os/exec"
	"sync"
	"unsafe"

	"golang.org/x/sys/windows"
)

// On Windows each server runs in a job object that kills every process in
// it when its last handle closes: at Close, or when the harness exits or
// dies, since the harness holds the only handle.

type spawnerSys struct{}

func (*spawnerSys) init() error               { return nil }
func (*spawnerSys) start(cmd *exec.Cmd) error { return cmd.Start() }
func (*spawnerSys) close(*Spawner) error      { return nil }

func prepare(*exec.Cmd) {}

type processSys struct {
	mu  sync.Mutex
	job windows.Handle // 0 once released
}

// attach puts the started process in a new kill-on-close job. Until it
// returns, a process the child starts is outside the job: that is the
// assignment race the package doc names.
func (ps *processSys) attach(cmd *exec.Cmd) error {
	job, err := windows.CreateJobObject(nil, nil)
	if err != nil {
		return fmt.Errorf("create a job object: %w", err)
	}
	info := windows.JOBOBJECT_EXTENDED_LIMIT_INFORMATION{
		BasicLimitInformation: windows.JOBOBJECT_BASIC_LIMIT_INFORMATION{
			LimitFlags: windows.JOB_OBJECT_LIMIT_KILL_ON_JOB_CLOSE,
		},
	}
	if _, err := windows.SetInformationJobObject(job, windows.JobObjectExtendedLimitInformation,
		uintptr(unsafe.Pointer(&info)), uint32(unsafe.Sizeof(info))); err != nil {
		windows.CloseHandle(job)
		return fmt.Errorf("set kill-on-close: %w", err)
	}
	h, err := windows.OpenProcess(windows.PROCESS_SET_QUOTA|windows.PROCESS_TERMINATE, false, uint32(cmd.Process.Pid))
	if err != nil {
		windows.CloseHandle(job)
		return fmt.Errorf("open the process: %w", err)
	}
	defer windows.CloseHandle(h)
	if err := windows.AssignProcessToJobObject(job, h); err != nil {
		windows.CloseHandle(job)
		return fmt.Errorf("assign the process to its job: %w", err)
	}
	ps.job = job
	return nil
}

// signal terminates the job on kill; there is no polite signal to send.
func (p *Process) signal(kill bool) error {
	if !kill {
		return nil
	}
	p.sys.mu.Lock()
	defer p.sys.mu.Unlock()
	if p.sys.job == 0 {
		return nil
	}
	if err := windows.TerminateJobObject(p.sys.job, 1); err != nil {
		return fmt.Errorf("proc: terminate the job of pid %d: %w", p.Pid(), err)
	}
	return nil
}

// basicAccounting is JOBOBJECT_BASIC_ACCOUNTING_INFORMATION.
type basicAccounting struct {
	TotalUserTime             int64
	TotalKernelTime           int64
	ThisPeriodTotalUserTime   int64
	ThisPeriodTotalKernelTime int64
	TotalPageFaultCount       uint32
	TotalProcesses            uint32
	ActiveProcesses           uint32
	TotalTerminatedProcesses  uint32
}

func (p *Process) alive() bool {
	p.sys.mu.Lock()
	defer p.sys.mu.Unlock()
	if p.sys.job == 0 {
		return false
	}
	var info basicAccounting
	err := windows.QueryInformationJobObject(p.sys.job, windows.JobObjectBasicAccountingInformation,
		uintptr(unsafe.Pointer(&info)), uint32(unsafe.Sizeof(info)), nil)
	return err != nil || info.ActiveProcesses > 0
}

// release terminates the job and closes it.
func (p *Process) release() error {
	err := p.signal(true)
	p.sys.mu.Lock()
	defer p.sys.mu.Unlock()
	if p.sys.job != 0 {
		err = errors.Join(err, windows.CloseHandle(p.sys.job))
		p.sys.job = 0
	}
	return err
}
