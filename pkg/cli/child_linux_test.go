package cli_test

import (
	"bufio"
	"context"
	"fmt"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/talosc/talosc/pkg/cli"
)

const roleEnv = "TALOSC_TEST_DIE_WITH_PARENT"

// TestDieWithParent kills a parent with SIGKILL; the child it started with
// DieWithParent must go too (it gets SIGTERM from the kernel).
func TestDieWithParent(t *testing.T) {
	if os.Getenv(roleEnv) == "parent" {
		child := exec.CommandContext(context.Background(), "sleep", "60")
		cli.DieWithParent(child)
		if err := child.Start(); err != nil {
			fmt.Println("error", err)
			os.Exit(1)
		}
		fmt.Println(child.Process.Pid)
		time.Sleep(time.Minute)
		os.Exit(0)
	}
	t.Parallel()
	parent := exec.CommandContext(t.Context(), os.Args[0], "-test.run=^TestDieWithParent$")
	parent.Env = append(os.Environ(), roleEnv+"=parent")
	out, err := parent.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := parent.Start(); err != nil {
		t.Fatal(err)
	}
	line, err := bufio.NewReader(out).ReadString('\n')
	if err != nil {
		t.Fatal(err)
	}
	pid, err := strconv.Atoi(strings.TrimSpace(line))
	if err != nil {
		t.Fatalf("parent said %q", line)
	}
	if !alive(pid) {
		t.Fatalf("child %d is not running", pid)
	}
	_ = parent.Process.Kill()
	_ = parent.Wait()
	deadline := time.Now().Add(5 * time.Second)
	for alive(pid) {
		if time.Now().After(deadline) {
			_ = syscall.Kill(pid, syscall.SIGKILL)
			t.Fatalf("child %d outlived its SIGKILLed parent by 5s", pid)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// alive reports a process that exists and is not a zombie (an orphan may
// wait long for a reaper in a container).
func alive(pid int) bool {
	stat, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return false
	}
	_, rest, _ := strings.Cut(string(stat), ") ")
	return !strings.HasPrefix(rest, "Z")
}
