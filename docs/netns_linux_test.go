package docs_test

import (
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"strings"
	"syscall"
	"testing"

	"golang.org/x/sys/unix"
)

// errNoNamespace: this machine gives the test no network namespace.
var errNoNamespace = errors.New("no network namespace of its own")

// rerunInNamespace runs this test again, in a new user and network
// namespace: a loopback of its own, where the shop's documented ports are
// free whatever else runs on the machine. The user namespace lets a user
// who is not root make the network namespace.
func rerunInNamespace(t *testing.T, bin string) error {
	t.Helper()
	pattern := "^TestDocumentedCommands$"
	if f := flagValue("test.run"); strings.Contains(f, "/") {
		pattern = f // one block, such as -run 'TestDocumentedCommands/lesson-7.md:149'
	}
	args := []string{"-test.run=" + pattern, "-test.timeout=0"}
	if testing.Verbose() {
		args = append(args, "-test.v=true")
	}
	cmd := exec.Command(os.Args[0], args...)
	cmd.Env = append(os.Environ(), namespaceEnv+"=1", binEnv+"="+bin)
	cmd.Stdout = &relay{w: os.Stdout}
	cmd.Stderr = os.Stderr
	cmd.SysProcAttr = &syscall.SysProcAttr{
		Cloneflags:  syscall.CLONE_NEWUSER | syscall.CLONE_NEWNET,
		UidMappings: []syscall.SysProcIDMap{{ContainerID: 0, HostID: os.Getuid(), Size: 1}},
		GidMappings: []syscall.SysProcIDMap{{ContainerID: 0, HostID: os.Getgid(), Size: 1}},
		Pdeathsig:   syscall.SIGKILL, // never outlive this test
	}
	if err := cmd.Start(); err != nil {
		return fmt.Errorf("%w: %v (user namespaces may be switched off: sysctl user.max_user_namespaces)", errNoNamespace, err)
	}
	if err := cmd.Wait(); err != nil {
		return fmt.Errorf("the documented commands, run in their own network namespace: %v (their output is above)", err)
	}
	return nil
}

// loopbackUp brings up the new namespace's loopback interface, which
// starts down.
func loopbackUp() error {
	fd, err := unix.Socket(unix.AF_INET, unix.SOCK_DGRAM|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		return err
	}
	defer unix.Close(fd)
	ifr, err := unix.NewIfreq("lo")
	if err != nil {
		return err
	}
	if err := unix.IoctlIfreq(fd, unix.SIOCGIFFLAGS, ifr); err != nil {
		return fmt.Errorf("lo: %w", err)
	}
	ifr.SetUint16(ifr.Uint16() | unix.IFF_UP)
	if err := unix.IoctlIfreq(fd, unix.SIOCSIFFLAGS, ifr); err != nil {
		return fmt.Errorf("lo up: %w", err)
	}
	return nil
}

// relay passes the inner test's output on, except the lines the outer
// test prints itself: the test's own start and end, and PASS or FAIL.
type relay struct {
	w       io.Writer
	partial string
}

func (d *relay) Write(p []byte) (int, error) {
	lines := strings.SplitAfter(d.partial+string(p), "\n")
	d.partial = lines[len(lines)-1]
	for _, line := range lines[:len(lines)-1] {
		if line == "PASS\n" || line == "FAIL\n" || line == "=== RUN   TestDocumentedCommands\n" ||
			strings.HasPrefix(line, "--- PASS: TestDocumentedCommands (") ||
			strings.HasPrefix(line, "--- FAIL: TestDocumentedCommands (") {
			continue
		}
		if _, err := io.WriteString(d.w, line); err != nil {
			return 0, err
		}
	}
	return len(p), nil
}
