package polystackreceiver

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"time"
)

// Config is the receiver's configuration (docs/otlp.md, "Running the agent inside a Collector").
type Config struct {
	// Executable is the polystack launcher; empty means `polystack` on PATH.
	Executable string `mapstructure:"executable"`
	// Rate is the sampling rate per CPU, in Hz.
	Rate int `mapstructure:"rate"`
	// ExportInterval is how often the agent sends one profiles request.
	ExportInterval time.Duration `mapstructure:"export_interval"`

	// Selection; nothing set means every user-space process on the host.
	PIDs   []int   `mapstructure:"pids"`
	Comm   *string `mapstructure:"comm"`
	Match  *string `mapstructure:"match"`
	Cgroup *string `mapstructure:"cgroup"`

	// PluginPath is a directory of extra plug-in jars.
	PluginPath *string `mapstructure:"plugin_path"`
	// JavaHome is a JDK whose bin/ goes first on the child's PATH; Java is a java binary whose
	// directory does. At most one of them.
	JavaHome *string `mapstructure:"java_home"`
	Java     *string `mapstructure:"java"`
	// ExtraArgs are appended to the agent's command line.
	ExtraArgs          []string `mapstructure:"extra_args"`
	IncludeCommandLine bool     `mapstructure:"include_command_line"`

	Restart RestartConfig `mapstructure:"restart"`

	// prevent unkeyed literal initialization
	_ struct{}
}

// RestartConfig is the backoff between restarts of an agent that exited on its own.
type RestartConfig struct {
	// InitialInterval is the wait before the first restart.
	InitialInterval time.Duration `mapstructure:"initial_interval"`
	// MaxInterval caps the wait, which doubles with each restart in a row.
	MaxInterval time.Duration `mapstructure:"max_interval"`
	// StableAfter is how long an agent must run for the next wait to be InitialInterval again.
	StableAfter time.Duration `mapstructure:"stable_after"`
}

const (
	defaultRate           = 20
	maxRate               = 1000
	defaultExportInterval = 10 * time.Second
	minExportInterval     = time.Second
	launcherName          = "polystack"
)

func createDefaultConfig() *Config {
	return &Config{
		Rate:           defaultRate,
		ExportInterval: defaultExportInterval,
		Restart: RestartConfig{
			InitialInterval: time.Second,
			MaxInterval:     time.Minute,
			StableAfter:     time.Minute,
		},
	}
}

// reservedFlags are the agent flags the receiver sets itself: extra_args may not override them.
var reservedFlags = []string{"--otlp-endpoint", "--otlp-protocol", "--otlp-header", "--duration"}

// Validate is called by the Collector when it loads its configuration: a bad value fails
// Collector start with an error that names the field.
func (c *Config) Validate() error {
	var errs []string
	field := func(name, format string, args ...any) {
		errs = append(errs, name+": "+fmt.Sprintf(format, args...))
	}
	if _, err := c.executablePath(); err != nil {
		field("executable", "%v", err)
	}
	if c.Rate < 1 || c.Rate > maxRate {
		field("rate", "%d Hz is out of range: give 1 to %d (samples per second per CPU)", c.Rate, maxRate)
	}
	if c.ExportInterval < minExportInterval {
		field("export_interval", "%s is too short: give at least %s", c.ExportInterval, minExportInterval)
	} else if c.ExportInterval%time.Millisecond != 0 {
		field("export_interval", "%s is not a whole number of milliseconds", c.ExportInterval)
	}
	for i, pid := range c.PIDs {
		if pid < 1 {
			field("pids", "entry %d is %d: a process id is a positive number", i, pid)
		}
	}
	for _, s := range []struct {
		name  string
		value *string
	}{{"comm", c.Comm}, {"match", c.Match}, {"cgroup", c.Cgroup}} {
		if s.value != nil && strings.TrimSpace(*s.value) == "" {
			field(s.name, "is empty: remove it to profile every process, or give a value")
		}
	}
	if c.PluginPath != nil {
		if err := isDirectory(*c.PluginPath); err != nil {
			field("plugin_path", "%v", err)
		}
	}
	switch {
	case c.JavaHome != nil && c.Java != nil:
		field("java_home", "give either java_home or java, not both")
	case c.JavaHome != nil:
		if err := isExecutable(filepath.Join(*c.JavaHome, "bin", "java")); err != nil {
			field("java_home", "%v: give the directory of a JDK or JRE (the one holding bin/java)", err)
		}
	case c.Java != nil:
		if err := isExecutable(*c.Java); err != nil {
			field("java", "%v: give the path of a java executable", err)
		}
	}
	for i, arg := range c.ExtraArgs {
		if strings.TrimSpace(arg) == "" {
			field("extra_args", "entry %d is empty", i)
			continue
		}
		for _, reserved := range reservedFlags {
			if arg == reserved || strings.HasPrefix(arg, reserved+"=") {
				field("extra_args", "entry %d (%s) is set by the receiver itself: remove it", i, reserved)
			}
		}
	}
	r := c.Restart
	if r.InitialInterval <= 0 {
		field("restart.initial_interval", "%s: must be > 0", r.InitialInterval)
	}
	if r.MaxInterval < r.InitialInterval {
		field("restart.max_interval", "%s is less than restart.initial_interval (%s)", r.MaxInterval, r.InitialInterval)
	}
	if r.StableAfter <= 0 {
		field("restart.stable_after", "%s: must be > 0", r.StableAfter)
	}
	if len(errs) == 0 {
		return nil
	}
	// One line, as the Collector prints it after "receivers::NAME: ".
	return errors.New(strings.Join(errs, "; "))
}

// executablePath is the launcher to run: Executable when set, else polystack on PATH.
func (c *Config) executablePath() (string, error) {
	if c.Executable == "" {
		path, err := exec.LookPath(launcherName)
		if err != nil {
			return "", fmt.Errorf("not set and %q is not on PATH: give the path of the polystack launcher", launcherName)
		}
		return path, nil
	}
	if !strings.Contains(c.Executable, "/") {
		path, err := exec.LookPath(c.Executable)
		if err != nil {
			return "", fmt.Errorf("%q is not on PATH: give its full path", c.Executable)
		}
		return path, nil
	}
	if err := isExecutable(c.Executable); err != nil {
		return "", err
	}
	return c.Executable, nil
}

// javaDir is the directory to put first on the child's PATH, or "" to leave PATH as it is.
func (c *Config) javaDir() string {
	switch {
	case c.JavaHome != nil:
		return filepath.Join(*c.JavaHome, "bin")
	case c.Java != nil:
		return filepath.Dir(*c.Java)
	}
	return ""
}

// agentArgs is the agent's command line after the executable, for an OTLP gRPC endpoint.
func (c *Config) agentArgs(endpoint string) []string {
	args := []string{"agent",
		"--otlp-endpoint", endpoint,
		"--otlp-protocol", "grpc",
		"--rate", fmt.Sprint(c.Rate),
		"--export-interval", formatDuration(c.ExportInterval),
	}
	for _, pid := range c.PIDs {
		args = append(args, "--pid", fmt.Sprint(pid))
	}
	if c.Comm != nil {
		args = append(args, "--comm", *c.Comm)
	}
	if c.Match != nil {
		args = append(args, "--match", *c.Match)
	}
	if c.Cgroup != nil {
		args = append(args, "--cgroup", *c.Cgroup)
	}
	if c.PluginPath != nil {
		args = append(args, "--plugin-path", *c.PluginPath)
	}
	if c.IncludeCommandLine {
		args = append(args, "--command-line")
	}
	return append(args, c.ExtraArgs...)
}

// formatDuration writes d as the agent reads durations: a whole number with ms or s.
func formatDuration(d time.Duration) string {
	if d%time.Second == 0 {
		return fmt.Sprintf("%ds", d/time.Second)
	}
	return fmt.Sprintf("%dms", d/time.Millisecond)
}

func isExecutable(path string) error {
	info, err := os.Stat(path)
	if err != nil {
		return fmt.Errorf("%s: %w", path, unwrapPathError(err))
	}
	if !info.Mode().IsRegular() {
		return fmt.Errorf("%s is not a regular file", path)
	}
	if info.Mode().Perm()&0o111 == 0 {
		return fmt.Errorf("%s is not executable", path)
	}
	return nil
}

func isDirectory(path string) error {
	info, err := os.Stat(path)
	if err != nil {
		return fmt.Errorf("%s: %w", path, unwrapPathError(err))
	}
	if !info.IsDir() {
		return fmt.Errorf("%s is not a directory", path)
	}
	return nil
}

// unwrapPathError drops the operation and path that os.Stat adds, which the message already has.
func unwrapPathError(err error) error {
	var pathErr *os.PathError
	if errors.As(err, &pathErr) {
		return pathErr.Err
	}
	return err
}
