package polystackreceiver

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"runtime"
	"strings"
	"sync"
	"syscall"
	"time"

	"go.uber.org/zap"
	"golang.org/x/sys/unix"
)

const (
	// stopTimeout bounds the wait for an agent to flush its last interval after SIGTERM.
	stopTimeout = 15 * time.Second
	// maxLogLine bounds one logged line of the child's output; the rest of the line is dropped.
	maxLogLine = 4096
	// outputDrainTimeout bounds the wait for the rest of an exited child's output.
	outputDrainTimeout = 2 * time.Second
	// usageExit is the agent's exit status for arguments it rejects: restarting cannot help.
	usageExit = 2
)

// childSpec is what the supervisor starts.
type childSpec struct {
	path string
	args []string
	env  []string
	// readyPrefixes start the line a child prints once it is up; none when it prints none.
	readyPrefixes []string
}

// supervisor keeps one child process running: it restarts it with exponential backoff when it
// exits on its own, logs its output line by line, and stops it (SIGTERM, then SIGKILL of its
// process group) when asked. A child it started never outlives the supervisor's process: the
// child gets SIGKILL from the kernel when the thread that started it goes away (Pdeathsig).
type supervisor struct {
	logger  *zap.Logger
	spec    childSpec
	restart RestartConfig
	// fatal is called once, from the supervisor's goroutine, when restarting cannot help.
	fatal func(error)
	// stopTimeout is how long shutdown waits after SIGTERM before SIGKILL.
	stopTimeout time.Duration

	stop      chan struct{}
	stopOnce  sync.Once
	done      chan struct{}
	ready     chan struct{} // closed when a child printed a readyPrefixes line
	readyOnce sync.Once

	mu       sync.Mutex
	pid      int // of the running child, 0 between children
	starts   int
	restarts int
	// startErr is why the first child exited before it was ready (then it is not restarted).
	startErr error
}

func newSupervisor(logger *zap.Logger, spec childSpec, restart RestartConfig, fatal func(error)) *supervisor {
	return &supervisor{
		logger:      logger,
		spec:        spec,
		restart:     restart,
		fatal:       fatal,
		stopTimeout: stopTimeout,
		stop:        make(chan struct{}),
		done:        make(chan struct{}),
		ready:       make(chan struct{}),
	}
}

// start launches the first child and the goroutine that watches it. An error means the first
// child could not be started at all (no process is left behind).
func (s *supervisor) start() error {
	started := make(chan error, 1)
	go func() {
		// Pdeathsig fires when the thread that forked the child exits, and Go ends a thread when
		// a goroutine locked to it returns: every child is forked from this one locked thread,
		// which no other goroutine can use, and which ends only after the last child is gone.
		runtime.LockOSThread()
		defer close(s.done)
		first, err := s.launch()
		started <- err
		if err == nil {
			s.run(first)
		}
	}()
	return <-started
}

// shutdown stops the child and waits until it and the watching goroutine are gone.
func (s *supervisor) shutdown() {
	s.stopOnce.Do(func() { close(s.stop) })
	<-s.done
}

// firstExit is why the first child exited before it printed its ready line, once done is
// closed; nil otherwise.
func (s *supervisor) firstExit() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.startErr
}

func (s *supervisor) isReady() bool {
	select {
	case <-s.ready:
		return true
	default:
		return false
	}
}

// currentPID is the pid of the running child, or 0.
func (s *supervisor) currentPID() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.pid
}

// restartCount is how many times a child was restarted after exiting on its own.
func (s *supervisor) restartCount() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.restarts
}

// child is one started process and the channel that receives its exit.
type child struct {
	cmd     *exec.Cmd
	started time.Time
	exited  chan error // receives cmd.Wait's result once the process and its group are gone

	mu       sync.Mutex
	lastLine string // of its stderr, for the message when it exits before it is ready
}

func (c *child) setLastLine(line string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.lastLine = line
}

func (c *child) lastStderrLine() string {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.lastLine
}

func (s *supervisor) launch() (*child, error) {
	cmd := exec.Command(s.spec.path, s.spec.args...)
	cmd.Env = s.spec.env
	// Its own process group, so that a terminal's Ctrl-C to the Collector is not also the
	// agent's and the whole group can be killed; Pdeathsig so that a Collector that dies
	// without shutting down leaves nothing running.
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		return nil, err
	}
	stderr, err := cmd.StderrPipe()
	if err != nil {
		return nil, err
	}
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("cannot start %s: %w", s.spec.path, err)
	}
	pid := cmd.Process.Pid
	s.mu.Lock()
	s.pid = pid
	s.starts++
	s.mu.Unlock()
	logger := s.logger.With(zap.Int("agent.pid", pid))
	logger.Info("polystack agent started", zap.String("command", s.spec.path), zap.Strings("args", s.spec.args))

	c := &child{cmd: cmd, started: time.Now(), exited: make(chan error, 1)}
	seen := func(line string) {
		for _, prefix := range s.spec.readyPrefixes {
			if strings.HasPrefix(line, prefix) {
				s.readyOnce.Do(func() { close(s.ready) })
			}
		}
	}
	var output sync.WaitGroup
	output.Add(2)
	go func() {
		defer output.Done()
		logLines(stderr, logger, "stderr", func(line string) { c.setLastLine(line); seen(line) })
	}()
	go func() { defer output.Done(); logLines(stdout, logger, "stdout", seen) }()

	go func() {
		// Wait without reaping, so that the pid (and so the process group id) cannot be reused
		// while the group is killed: what the agent may have started goes with it.
		var info unix.Siginfo
		for {
			err := unix.Waitid(unix.P_PID, pid, &info, unix.WEXITED|unix.WNOWAIT, nil)
			if err != unix.EINTR {
				break
			}
		}
		_ = unix.Kill(-pid, unix.SIGKILL)
		// cmd.Wait closes the pipes: read them to the end first, unless something outside the
		// group still holds them open.
		drained := make(chan struct{})
		go func() { output.Wait(); close(drained) }()
		select {
		case <-drained:
		case <-time.After(outputDrainTimeout):
		}
		err := cmd.Wait()
		s.mu.Lock()
		s.pid = 0
		s.mu.Unlock()
		c.exited <- err
	}()
	return c, nil
}

// run watches one child after another until shutdown.
func (s *supervisor) run(c *child) {
	wait := s.restart.InitialInterval
	for {
		select {
		case <-s.stop:
			s.terminate(c)
			return
		case err := <-c.exited:
			ran := time.Since(c.started)
			status := exitStatus(err)
			logger := s.logger.With(zap.Int("agent.pid", c.cmd.Process.Pid), zap.String("exit", status),
				zap.Duration("ran", ran.Round(time.Millisecond)))
			if len(s.spec.readyPrefixes) > 0 && !s.isReady() && s.restartCount() == 0 {
				// The first agent never got going: a Collector start that fails says why, where
				// restarts would only repeat it in the log.
				logger.Error("polystack agent exited before it started profiling")
				s.mu.Lock()
				s.startErr = fmt.Errorf("polystack agent exited before it started profiling (%s): %s",
					status, c.lastStderrLine())
				s.mu.Unlock()
				return
			}
			if code := exitCode(err); code == usageExit {
				logger.Error("polystack agent rejected its arguments; not restarting it")
				s.fatal(fmt.Errorf("polystack agent rejected its arguments (%s): see its stderr above, and the receiver's extra_args and selection", status))
				return
			}
			if ran >= s.restart.StableAfter {
				wait = s.restart.InitialInterval
			}
			logger.Warn("polystack agent exited unexpectedly; restarting it", zap.Duration("in", wait))
			select {
			case <-s.stop:
				return
			case <-time.After(wait):
			}
			wait = min(2*wait, s.restart.MaxInterval)
			next, err := s.launch()
			for err != nil {
				s.logger.Error("cannot restart the polystack agent", zap.Error(err), zap.Duration("retry in", wait))
				select {
				case <-s.stop:
					return
				case <-time.After(wait):
				}
				wait = min(2*wait, s.restart.MaxInterval)
				next, err = s.launch()
			}
			s.mu.Lock()
			s.restarts++
			s.mu.Unlock()
			c = next
		}
	}
}

// terminate asks the child to flush and exit (SIGTERM), then kills its group after stopTimeout.
func (s *supervisor) terminate(c *child) {
	pid := c.cmd.Process.Pid
	logger := s.logger.With(zap.Int("agent.pid", pid))
	if err := c.cmd.Process.Signal(syscall.SIGTERM); err != nil && !errors.Is(err, os.ErrProcessDone) {
		logger.Warn("cannot send SIGTERM to the polystack agent", zap.Error(err))
	}
	select {
	case err := <-c.exited:
		if exitCode(err) == 0 {
			logger.Info("polystack agent stopped")
		} else {
			logger.Warn("polystack agent stopped with an error", zap.String("exit", exitStatus(err)))
		}
	case <-time.After(s.stopTimeout):
		logger.Warn("polystack agent did not stop after SIGTERM; killing it", zap.Duration("waited", s.stopTimeout))
		// The watcher has not reaped the child yet, so its process group id is still its own.
		_ = unix.Kill(-pid, unix.SIGKILL)
		<-c.exited
	}
}

// logLines logs each line of r and hands it to seen; a line longer than maxLogLine is cut there.
func logLines(r io.Reader, logger *zap.Logger, stream string, seen func(string)) {
	reader := bufio.NewReaderSize(r, maxLogLine)
	for {
		line, isPrefix, err := reader.ReadLine()
		if len(line) > 0 || (err == nil && !isPrefix) {
			text := string(line)
			if isPrefix {
				text += " [line cut at 4096 bytes]"
			}
			logger.Info(text, zap.String("stream", stream))
			seen(text)
		}
		for isPrefix && err == nil { // drop the rest of a long line
			_, isPrefix, err = reader.ReadLine()
		}
		if err != nil {
			return
		}
	}
}

// exitStatus describes how a child ended, as a shell would: "exit status 3", "signal: killed".
func exitStatus(err error) string {
	if err == nil {
		return "exit status 0"
	}
	var exitErr *exec.ExitError
	if errors.As(err, &exitErr) {
		return exitErr.ProcessState.String()
	}
	return err.Error()
}

// exitCode is the child's exit status, or -1 when a signal ended it.
func exitCode(err error) int {
	if err == nil {
		return 0
	}
	var exitErr *exec.ExitError
	if errors.As(err, &exitErr) {
		return exitErr.ExitCode()
	}
	return -1
}
