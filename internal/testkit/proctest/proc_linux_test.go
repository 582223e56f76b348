package proctest_test

import (
	"fmt"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/harness-go/harness/internal/testkit/proctest"
)

// A child of this test, found by its command line, seen running, then a
// zombie until it is reaped, then gone.
func TestProc(t *testing.T) {
	t.Parallel()
	// A duration no other process is likely to sleep: its command line.
	secs := fmt.Sprintf("600.%09d", time.Now().Nanosecond())
	cmd := exec.Command("sleep", secs)
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	pid := cmd.Process.Pid
	t.Cleanup(func() { cmd.Process.Kill() })
	if got := proctest.Mentioning(t, "sleep\x00"+secs); len(got) != 1 || got[0] != pid {
		t.Fatalf("Mentioning = %v, want the child %d", got, pid)
	}
	p := proctest.Inspect(pid)
	if !p.Exists || p.Dead() || p.Exiting() || p.PPID != os.Getpid() {
		t.Fatalf("the running child: %+v (this process is %d)", p, os.Getpid())
	}
	if d := proctest.Describe([]int{pid}); !strings.Contains(d, `"sleep `+secs+`"`) {
		t.Errorf("Describe = %q", d)
	}
	if alive := proctest.WaitDead([]int{pid}, 0); len(alive) != 1 {
		t.Fatalf("WaitDead says the running child is dead: %v", alive)
	}
	if err := cmd.Process.Kill(); err != nil {
		t.Fatal(err)
	}
	// Not reaped yet: a zombie, dead but there.
	if ok, p := proctest.WaitProc(pid, 10*time.Second, func(p proctest.Proc) bool { return p.State == 'Z' }); !ok || !p.Exists || !p.Dead() {
		t.Fatalf("the killed child: %v %+v", ok, p)
	}
	if alive := proctest.WaitDead([]int{pid}, 10*time.Second); len(alive) != 0 || !proctest.Dead(pid) {
		t.Fatalf("WaitDead: %v", alive)
	}
	if got := proctest.Mentioning(t, secs); len(got) != 0 {
		t.Errorf("Mentioning lists a zombie: %v", got)
	}
	cmd.Wait()
	if ok, p := proctest.WaitProc(pid, time.Second, func(p proctest.Proc) bool { return !p.Exists }); !ok {
		t.Fatalf("the reaped child is still there: %+v", p)
	}
}
