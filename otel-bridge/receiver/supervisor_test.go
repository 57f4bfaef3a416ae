package polystackreceiver

import (
	"bufio"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"
	"go.uber.org/zap/zaptest/observer"
)

// shell is a supervisor of `sh -c script` with quick restarts, its logs and its fatal errors.
type shell struct {
	*supervisor
	logs   *observer.ObservedLogs
	fatals atomic.Int32
}

func superviseShell(t *testing.T, script string, restart RestartConfig) *shell {
	t.Helper()
	core, logs := observer.New(zapcore.InfoLevel)
	sh := &shell{logs: logs}
	sh.supervisor = newSupervisor(zap.New(core), childSpec{path: "/bin/sh", args: []string{"-c", script}, env: os.Environ()},
		restart, func(error) { sh.fatals.Add(1) })
	if err := sh.start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(sh.shutdown)
	return sh
}

func quickRestarts() RestartConfig {
	return RestartConfig{InitialInterval: 10 * time.Millisecond, MaxInterval: 40 * time.Millisecond, StableAfter: time.Minute}
}

func (sh *shell) messages(text string) []observer.LoggedEntry {
	return sh.logs.FilterMessageSnippet(text).All()
}

func readPID(t *testing.T, file string) int {
	t.Helper()
	data, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	pid, err := strconv.Atoi(strings.TrimSpace(string(data)))
	if err != nil {
		t.Fatalf("%s: %v", file, err)
	}
	return pid
}

func TestChildThatExitsIsRestartedWithItsExitStatusLogged(t *testing.T) {
	dir := t.TempDir()
	sh := superviseShell(t, `echo $$ >> `+dir+`/pids; echo "cannot load bpf" >&2; exit 3`, quickRestarts())
	await(t, "three restarts", func() bool { return sh.restartCount() >= 3 })

	exits := sh.messages("exited unexpectedly")
	if len(exits) < 3 {
		t.Fatalf("%d restarts logged, want >= 3", len(exits))
	}
	for _, e := range exits {
		if got := e.ContextMap()["exit"]; got != "exit status 3" {
			t.Errorf("exit logged as %v, want exit status 3", got)
		}
	}
	var waits []time.Duration
	for _, e := range exits[:3] {
		waits = append(waits, e.ContextMap()["in"].(time.Duration))
	}
	want := []time.Duration{10 * time.Millisecond, 20 * time.Millisecond, 40 * time.Millisecond}
	if !equalDurations(waits, want) {
		t.Errorf("waits before restarts %v, want %v (doubling up to max_interval)", waits, want)
	}
	if len(sh.messages("cannot load bpf")) == 0 {
		t.Errorf("the child's stderr line was not logged; logs: %v", sh.logs.All())
	}
	pids, _ := os.ReadFile(filepath.Join(dir, "pids"))
	if distinct := len(strings.Fields(string(pids))); distinct < 3 {
		t.Errorf("%d children started, want >= 3", distinct)
	}
	if sh.fatals.Load() != 0 {
		t.Errorf("exit status 3 reported as fatal; it is restarted")
	}
}

func TestBackoffStartsOverAfterAStableRun(t *testing.T) {
	dir := t.TempDir()
	// Runs 1 to 3 exit at once; run 4 runs past stable_after, then exits; run 5 on exit at once.
	script := `n=$(cat ` + dir + `/n 2>/dev/null || echo 0); n=$((n+1)); echo $n > ` + dir + `/n
if [ $n -eq 4 ]; then touch ` + dir + `/stable; while [ ! -e ` + dir + `/go ]; do sleep 0.05; done; fi
exit 1`
	sh := superviseShell(t, script, RestartConfig{InitialInterval: 10 * time.Millisecond, MaxInterval: time.Second, StableAfter: time.Second})
	await(t, "the fourth run", func() bool { _, err := os.Stat(filepath.Join(dir, "stable")); return err == nil })
	started := time.Now()
	// Let run 4 outlive stable_after, measured from here (it started before).
	for time.Since(started) < 1200*time.Millisecond {
		time.Sleep(50 * time.Millisecond)
	}
	if err := os.WriteFile(filepath.Join(dir, "go"), nil, 0o644); err != nil {
		t.Fatal(err)
	}
	await(t, "the fourth restart", func() bool { return len(sh.messages("exited unexpectedly")) >= 4 })
	var waits []time.Duration
	for _, e := range sh.messages("exited unexpectedly")[:4] {
		waits = append(waits, e.ContextMap()["in"].(time.Duration))
	}
	want := []time.Duration{10 * time.Millisecond, 20 * time.Millisecond, 40 * time.Millisecond, 10 * time.Millisecond}
	if !equalDurations(waits, want) {
		t.Errorf("waits before restarts %v, want %v (back to initial_interval after a stable run)", waits, want)
	}
}

func TestKilledChildComesBackWithANewPid(t *testing.T) {
	sh := superviseShell(t, `exec sleep 600`, quickRestarts())
	first := sh.currentPID()
	if err := syscall.Kill(first, syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	await(t, "a new child", func() bool { pid := sh.currentPID(); return pid != 0 && pid != first })
	if e := sh.messages("exited unexpectedly"); len(e) == 0 || e[0].ContextMap()["exit"] != "signal: killed" {
		t.Errorf("the kill was not logged as signal: killed: %v", sh.logs.All())
	}
	if alive(first) {
		t.Errorf("killed child %d still there", first)
	}
}

func TestShutdownLetsTheChildFlushAndExit(t *testing.T) {
	dir := t.TempDir()
	sh := superviseShell(t, `trap 'echo flushed > `+dir+`/flushed; exit 0' TERM; echo ready > `+dir+`/ready; while :; do sleep 0.05; done`, quickRestarts())
	await(t, "the child is ready", func() bool { _, err := os.Stat(filepath.Join(dir, "ready")); return err == nil })
	pid := sh.currentPID()
	sh.shutdown()
	if data, err := os.ReadFile(filepath.Join(dir, "flushed")); err != nil || strings.TrimSpace(string(data)) != "flushed" {
		t.Errorf("the child did not run its SIGTERM handler: %v", err)
	}
	if alive(pid) {
		t.Errorf("child %d still there after shutdown", pid)
	}
	if len(sh.messages("polystack agent stopped")) != 1 || len(sh.messages("exited unexpectedly")) != 0 {
		t.Errorf("logs: %v", sh.logs.All())
	}
}

func TestShutdownKillsAChildThatIgnoresSigtermAndItsGroup(t *testing.T) {
	dir := t.TempDir()
	// A grandchild in the same process group, as a launcher that forked would leave.
	sh := superviseShell(t, `trap '' TERM; sleep 600 & echo $! > `+dir+`/grandchild; while :; do sleep 0.05; done`, quickRestarts())
	sh.stopTimeout = 300 * time.Millisecond
	await(t, "the grandchild", func() bool { data, _ := os.ReadFile(filepath.Join(dir, "grandchild")); return len(data) > 0 })
	pid, grandchild := sh.currentPID(), readPID(t, filepath.Join(dir, "grandchild"))
	sh.shutdown()
	if len(sh.messages("did not stop after SIGTERM")) != 1 {
		t.Errorf("the kill was not logged: %v", sh.logs.All())
	}
	if alive(pid) {
		t.Errorf("child %d still there after shutdown", pid)
	}
	await(t, "the grandchild is gone", func() bool { return !alive(grandchild) })
}

func TestUsageErrorIsFatalAndNotRestarted(t *testing.T) {
	sh := superviseShell(t, `echo "polystack agent: unknown option --bogus" >&2; exit 2`, quickRestarts())
	await(t, "the fatal error", func() bool { return sh.fatals.Load() == 1 })
	<-sh.done
	if sh.restartCount() != 0 {
		t.Errorf("restarted %d times after exit status 2", sh.restartCount())
	}
	if len(sh.messages("unknown option --bogus")) != 1 {
		t.Errorf("the child's message was not logged: %v", sh.logs.All())
	}
}

func TestLongOutputLinesAreCut(t *testing.T) {
	sh := superviseShell(t, `head -c 10000 /dev/zero | tr '\0' x >&2; echo >&2; echo after >&2; exec sleep 600`, quickRestarts())
	await(t, "the line after the long one", func() bool { return len(sh.messages("after")) == 1 })
	long := sh.messages("xxxx")
	if len(long) != 1 || !strings.HasSuffix(long[0].Message, "[line cut at 4096 bytes]") || len(long[0].Message) > maxLogLine+40 {
		t.Errorf("long line logged as %d entries", len(long))
	}
}

func TestCrashedSupervisorLeavesNoChild(t *testing.T) {
	collector := exec.Command(os.Args[0], "/bin/sleep", "600")
	collector.Env = append(os.Environ(), roleVar+"=collector")
	stdout, err := collector.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := collector.Start(); err != nil {
		t.Fatal(err)
	}
	line, err := bufio.NewReader(stdout).ReadString('\n')
	if err != nil {
		_ = collector.Process.Kill()
		t.Fatalf("no child pid from the supervising process: %v", err)
	}
	child, _ := strconv.Atoi(strings.TrimSpace(line))
	if !alive(child) {
		t.Fatalf("child %d is not running", child)
	}
	if err := collector.Process.Kill(); err != nil {
		t.Fatal(err)
	}
	_ = collector.Wait()
	await(t, "the orphaned child is gone", func() bool { return !alive(child) })
}

func equalDurations(a, b []time.Duration) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

func TestFirstChildThatExitsBeforeItIsReadyIsNotRestarted(t *testing.T) {
	core, logs := observer.New(zapcore.InfoLevel)
	s := newSupervisor(zap.New(core), childSpec{path: "/bin/sh", args: []string{"-c", `echo "bpf: operation not permitted" >&2; exit 1`},
		env: os.Environ(), readyPrefixes: agentStartedPrefixes}, quickRestarts(), func(error) { t.Error("fatal reported") })
	if err := s.start(); err != nil {
		t.Fatal(err)
	}
	<-s.done
	want := "polystack agent exited before it started profiling (exit status 1): bpf: operation not permitted"
	if err := s.firstExit(); err == nil || err.Error() != want {
		t.Errorf("error %v, want %q", err, want)
	}
	if s.restartCount() != 0 || s.isReady() {
		t.Errorf("restarts %d, ready %v; logs %v", s.restartCount(), s.isReady(), logs.All())
	}
	s.shutdown()
}

func TestReadyLineThenExitIsRestarted(t *testing.T) {
	core, _ := observer.New(zapcore.InfoLevel)
	s := newSupervisor(zap.New(core), childSpec{path: "/bin/sh", args: []string{"-c", `echo "polystack: agent: profiling every process at 20 Hz per CPU" >&2; exit 1`},
		env: os.Environ(), readyPrefixes: agentStartedPrefixes}, quickRestarts(), func(error) {})
	if err := s.start(); err != nil {
		t.Fatal(err)
	}
	defer s.shutdown()
	<-s.ready
	await(t, "a restart", func() bool { return s.restartCount() >= 1 })
}
