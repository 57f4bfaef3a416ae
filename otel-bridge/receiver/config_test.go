package polystackreceiver

import (
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	"go.opentelemetry.io/collector/confmap"
)

// launcher is an executable file standing for the polystack launcher.
func launcher(t *testing.T) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "polystack")
	if err := os.WriteFile(path, []byte("#!/bin/sh\nexit 0\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	return path
}

// jdk is a directory laid out like a JDK: bin/java, executable.
func jdk(t *testing.T) string {
	t.Helper()
	home := t.TempDir()
	if err := os.Mkdir(filepath.Join(home, "bin"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(home, "bin", "java"), []byte("#!/bin/sh\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	return home
}

// load reads a receiver config as the Collector does: defaults, then the YAML's map, then
// validation.
func load(t *testing.T, values map[string]any) (*Config, error) {
	t.Helper()
	cfg := createDefaultConfig()
	if err := confmap.NewFromStringMap(values).Unmarshal(cfg); err != nil {
		return nil, err
	}
	return cfg, confmap.Validate(cfg)
}

func TestDefaultsWithAnExecutableAreValid(t *testing.T) {
	cfg, err := load(t, map[string]any{"executable": launcher(t)})
	if err != nil {
		t.Fatal(err)
	}
	if cfg.Rate != 20 || cfg.ExportInterval != 10*time.Second || cfg.Restart.InitialInterval != time.Second ||
		cfg.Restart.MaxInterval != time.Minute || cfg.Restart.StableAfter != time.Minute {
		t.Errorf("defaults: %+v", cfg)
	}
}

func TestExecutableIsFoundOnPath(t *testing.T) {
	t.Setenv("PATH", filepath.Dir(launcher(t))+":/usr/bin:/bin")
	cfg, err := load(t, map[string]any{})
	if err != nil {
		t.Fatal(err)
	}
	if path, _ := cfg.executablePath(); filepath.Base(path) != "polystack" {
		t.Errorf("executable resolved to %q", path)
	}
}

func TestBadConfigNamesTheField(t *testing.T) {
	notExecutable := filepath.Join(t.TempDir(), "polystack")
	if err := os.WriteFile(notExecutable, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	aFile := launcher(t)
	tests := []struct {
		name   string
		values map[string]any
		want   string
	}{
		{"missing executable", map[string]any{"executable": "/nonexistent/polystack"}, "executable: /nonexistent/polystack: no such file or directory"},
		{"executable not executable", map[string]any{"executable": notExecutable}, "executable: " + notExecutable + " is not executable"},
		{"executable not on PATH", map[string]any{"executable": "no-such-polystack"}, `executable: "no-such-polystack" is not on PATH`},
		{"rate 0", map[string]any{"rate": 0}, "rate: 0 Hz is out of range: give 1 to 1000"},
		{"rate too high", map[string]any{"rate": 1001}, "rate: 1001 Hz is out of range"},
		{"short interval", map[string]any{"export_interval": "500ms"}, "export_interval: 500ms is too short: give at least 1s"},
		{"interval below a millisecond", map[string]any{"export_interval": "1s500us"}, "export_interval: 1.0005s is not a whole number of milliseconds"},
		{"bad pid", map[string]any{"pids": []any{123, 0}}, "pids: entry 1 is 0"},
		{"empty comm", map[string]any{"comm": ""}, "comm: is empty"},
		{"empty match", map[string]any{"match": " "}, "match: is empty"},
		{"empty cgroup", map[string]any{"cgroup": ""}, "cgroup: is empty"},
		{"plugin path missing", map[string]any{"plugin_path": "/nonexistent/plugins"}, "plugin_path: /nonexistent/plugins: no such file or directory"},
		{"plugin path a file", map[string]any{"plugin_path": aFile}, "plugin_path: " + aFile + " is not a directory"},
		{"java_home without java", map[string]any{"java_home": t.TempDir()}, "java_home: "},
		{"java missing", map[string]any{"java": "/nonexistent/java"}, "java: /nonexistent/java: no such file or directory"},
		{"both javas", map[string]any{"java_home": jdk(t), "java": aFile}, "java_home: give either java_home or java, not both"},
		{"empty extra arg", map[string]any{"extra_args": []any{"-v", ""}}, "extra_args: entry 1 is empty"},
		{"reserved extra arg", map[string]any{"extra_args": []any{"--otlp-endpoint=http://elsewhere:4317"}}, "extra_args: entry 0 (--otlp-endpoint) is set by the receiver itself"},
		{"duration in extra args", map[string]any{"extra_args": []any{"--duration", "10s"}}, "extra_args: entry 0 (--duration)"},
		{"zero initial backoff", map[string]any{"restart": map[string]any{"initial_interval": "0s"}}, "restart.initial_interval: 0s: must be > 0"},
		{"max below initial", map[string]any{"restart": map[string]any{"initial_interval": "5s", "max_interval": "1s"}}, "restart.max_interval: 1s is less than restart.initial_interval (5s)"},
		{"zero stable_after", map[string]any{"restart": map[string]any{"stable_after": "0s"}}, "restart.stable_after: 0s: must be > 0"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			values := map[string]any{"executable": aFile}
			for k, v := range tt.values {
				values[k] = v
			}
			_, err := load(t, values)
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Errorf("error %v, want it to contain %q", err, tt.want)
			}
		})
	}
}

func TestUnknownFieldIsRejected(t *testing.T) {
	_, err := load(t, map[string]any{"executable": launcher(t), "rates": 99})
	if err == nil || !strings.Contains(err.Error(), "rates") {
		t.Errorf("error %v, want it to name the unknown field", err)
	}
}

func TestAgentArgumentsFollowTheConfig(t *testing.T) {
	plugins := t.TempDir()
	cfg, err := load(t, map[string]any{
		"executable":           launcher(t),
		"rate":                 99,
		"export_interval":      "2500ms",
		"pids":                 []any{10, 20},
		"comm":                 "luajit",
		"match":                "app\\.lua",
		"cgroup":               "system.slice/app.service",
		"plugin_path":          plugins,
		"include_command_line": true,
		"extra_args":           []any{"--stats-json", "/tmp/stats.json"},
	})
	if err != nil {
		t.Fatal(err)
	}
	want := []string{"agent", "--otlp-endpoint", "http://127.0.0.1:4000", "--otlp-protocol", "grpc",
		"--rate", "99", "--export-interval", "2500ms", "--pid", "10", "--pid", "20", "--comm", "luajit",
		"--match", "app\\.lua", "--cgroup", "system.slice/app.service", "--plugin-path", plugins,
		"--command-line", "--stats-json", "/tmp/stats.json"}
	if got := cfg.agentArgs("http://127.0.0.1:4000"); !reflect.DeepEqual(got, want) {
		t.Errorf("args\n got %q\nwant %q", got, want)
	}
	defaults := createDefaultConfig()
	want = []string{"agent", "--otlp-endpoint", "http://x", "--otlp-protocol", "grpc", "--rate", "20", "--export-interval", "10s"}
	if got := defaults.agentArgs("http://x"); !reflect.DeepEqual(got, want) {
		t.Errorf("default args\n got %q\nwant %q", got, want)
	}
}

func TestChildEnvironment(t *testing.T) {
	home := jdk(t)
	cfg, err := load(t, map[string]any{"executable": launcher(t), "java_home": home})
	if err != nil {
		t.Fatal(err)
	}
	parent := []string{"HOME=/root", "PATH=/usr/bin:/bin", "JAVA_HOME=/usr/lib/jvm/other",
		"OTEL_EXPORTER_OTLP_ENDPOINT=http://elsewhere:4317", "OTEL_EXPORTER_OTLP_HEADERS=a=b", "OTEL_SERVICE_NAME=collector"}
	want := []string{"HOME=/root", "OTEL_SERVICE_NAME=collector", "JAVA_HOME=" + home,
		"PATH=" + filepath.Join(home, "bin") + ":/usr/bin:/bin"}
	if got := childEnv(parent, cfg); !reflect.DeepEqual(got, want) {
		t.Errorf("env\n got %q\nwant %q", got, want)
	}

	java := filepath.Join(jdk(t), "bin", "java")
	cfg, err = load(t, map[string]any{"executable": launcher(t), "java": java})
	if err != nil {
		t.Fatal(err)
	}
	want = []string{"HOME=/root", "JAVA_HOME=/usr/lib/jvm/other", "OTEL_SERVICE_NAME=collector",
		"PATH=" + filepath.Dir(java) + ":/usr/bin:/bin"}
	if got := childEnv(parent, cfg); !reflect.DeepEqual(got, want) {
		t.Errorf("env with java\n got %q\nwant %q", got, want)
	}
}
