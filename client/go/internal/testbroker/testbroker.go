// Package testbroker starts a real redis-server and the real jobwire-broker
// binary for the Go client's tests. Nothing is mocked.
//
// The broker binary is $JOBWIRE_BROKER_BIN, else
// <repo>/build/broker/jobwire-broker; redis-server comes from PATH.
package testbroker

import (
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// RepoRoot finds the repository root by walking up from the working
// directory to the folder that holds proto/jobwire/v1/broker.proto.
func RepoRoot() (string, error) {
	dir, err := os.Getwd()
	if err != nil {
		return "", err
	}
	for {
		if _, err := os.Stat(filepath.Join(dir, "proto", "jobwire", "v1", "broker.proto")); err == nil {
			return dir, nil
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			return "", errors.New("testbroker: repository root (proto/jobwire/v1/broker.proto) not found above the working directory")
		}
		dir = parent
	}
}

// BrokerBin is the broker binary to test against.
func BrokerBin() (string, error) {
	if p := os.Getenv("JOBWIRE_BROKER_BIN"); p != "" {
		return p, nil
	}
	root, err := RepoRoot()
	if err != nil {
		return "", err
	}
	return filepath.Join(root, "build", "broker", "jobwire-broker"), nil
}

// FreePort returns a TCP port that was free a moment ago (listen on port 0).
func FreePort() (int, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, err
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port, nil
}

// WaitPort polls a TCP connect to 127.0.0.1:port until it succeeds or the
// timeout passes.
func WaitPort(port int, timeout time.Duration, exited <-chan struct{}) error {
	deadline := time.Now().Add(timeout)
	addr := net.JoinHostPort("127.0.0.1", strconv.Itoa(port))
	for {
		c, err := net.DialTimeout("tcp", addr, 200*time.Millisecond)
		if err == nil {
			c.Close()
			return nil
		}
		select {
		case <-exited:
			return fmt.Errorf("process exited before listening on %s", addr)
		default:
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("nothing listening on %s after %s: %v", addr, timeout, err)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// Process is a started child process.
type Process struct {
	Name    string
	Port    int
	LogPath string
	cmd     *exec.Cmd
	exited  chan struct{}
}

func start(name string, port int, logPath string, bin string, args ...string) (*Process, error) {
	logf, err := os.OpenFile(logPath, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return nil, err
	}
	cmd := exec.Command(bin, args...)
	cmd.Stdout = logf
	cmd.Stderr = logf
	// Nothing outlives a crashed test binary.
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	if err := cmd.Start(); err != nil {
		logf.Close()
		return nil, fmt.Errorf("start %s (%s): %w", name, bin, err)
	}
	p := &Process{Name: name, Port: port, LogPath: logPath, cmd: cmd, exited: make(chan struct{})}
	go func() {
		_ = cmd.Wait()
		logf.Close()
		close(p.exited)
	}()
	if err := WaitPort(port, 10*time.Second, p.exited); err != nil {
		p.Kill()
		return nil, fmt.Errorf("%s: %w (log: %s)\n%s", name, err, logPath, Tail(logPath, 20))
	}
	return p, nil
}

// Kill sends SIGKILL and waits for the exit.
func (p *Process) Kill() {
	if p == nil {
		return
	}
	_ = p.cmd.Process.Signal(syscall.SIGKILL)
	<-p.exited
}

// Stop sends SIGTERM and waits up to timeout, then SIGKILL.
func (p *Process) Stop(timeout time.Duration) {
	if p == nil {
		return
	}
	_ = p.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-p.exited:
	case <-time.After(timeout):
		p.Kill()
	}
}

// Addr is 127.0.0.1:port.
func (p *Process) Addr() string { return net.JoinHostPort("127.0.0.1", strconv.Itoa(p.Port)) }

// Tail returns the last n lines of a file.
func Tail(path string, n int) string {
	b, err := os.ReadFile(path)
	if err != nil {
		return ""
	}
	lines := strings.Split(strings.TrimRight(string(b), "\n"), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, "\n")
}

// StartRedis starts redis-server on a free port, without persistence.
func StartRedis(dir string) (*Process, error) {
	port, err := FreePort()
	if err != nil {
		return nil, err
	}
	bin, err := exec.LookPath("redis-server")
	if err != nil {
		return nil, fmt.Errorf("redis-server not on PATH: %w", err)
	}
	return start("redis-server", port, filepath.Join(dir, fmt.Sprintf("redis-%d.log", port)), bin,
		"--port", strconv.Itoa(port), "--bind", "127.0.0.1", "--save", "", "--appendonly", "no",
		"--dir", dir)
}

// StartBroker starts the broker on port (0: a free port) against the Redis on
// redisPort, with extra flags.
func StartBroker(dir string, redisPort, port int, flags ...string) (*Process, error) {
	bin, err := BrokerBin()
	if err != nil {
		return nil, err
	}
	if _, err := os.Stat(bin); err != nil {
		return nil, fmt.Errorf("broker binary %s: %w (build it, or set JOBWIRE_BROKER_BIN)", bin, err)
	}
	if port == 0 {
		if port, err = FreePort(); err != nil {
			return nil, err
		}
	}
	args := append([]string{
		fmt.Sprintf("--listen=127.0.0.1:%d", port),
		fmt.Sprintf("--redis_url=redis://127.0.0.1:%d", redisPort),
	}, flags...)
	return start("jobwire-broker", port, filepath.Join(dir, fmt.Sprintf("broker-%d.log", port)), bin, args...)
}

// Stack is a redis-server and a broker of its own on it: a jobwire
// deployment independent of any other Stack.
type Stack struct {
	Redis  *Process
	Broker *Process
}

// StartStack starts a redis-server and a broker on it (each on a free port,
// logs in dir), the broker with flags.
func StartStack(dir string, flags ...string) (*Stack, error) {
	r, err := StartRedis(dir)
	if err != nil {
		return nil, err
	}
	b, err := StartBroker(dir, r.Port, 0, flags...)
	if err != nil {
		r.Stop(5 * time.Second)
		return nil, err
	}
	return &Stack{Redis: r, Broker: b}, nil
}

// Stop stops the broker, then Redis (SIGTERM, SIGKILL after timeout each).
func (s *Stack) Stop(timeout time.Duration) {
	if s == nil {
		return
	}
	s.Broker.Stop(timeout)
	s.Redis.Stop(timeout)
}
